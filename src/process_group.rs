//! A child's process group, stopped as a whole: a wrapper script's children (the MemPalace server
//! behind a shell script, the exporter's helpers, the ssh under rsync) die with their leader, and
//! nothing of an old child is left running when the next one starts or when pi exits.

use std::time::Duration;

/// A child's process group (the child started with `process_group(0)`). Dropped while still armed
/// (the runtime going away with the child running), it SIGKILLs the whole group.
pub(crate) struct ProcessGroup {
    pgid: libc::pid_t,
    armed: bool,
}

impl ProcessGroup {
    /// The group a child started with `process_group(0)` leads (its pgid is its pid; 0 = none).
    pub(crate) fn of_leader(pid: u32) -> Self {
        ProcessGroup { pgid: pid as libc::pid_t, armed: pid > 0 }
    }

    pub fn signal(&self, sig: libc::c_int) {
        if self.pgid > 0 {
            // SAFETY: kill(2) on our child's group. The group id stays reserved while any member
            // (zombies included) exists, and we stop signalling once none does.
            unsafe { libc::kill(-self.pgid, sig) };
        }
    }

    /// A process of the group is still running (zombies don't count: they hold nothing).
    fn has_live_member(&self) -> bool {
        // SAFETY: signal 0 only checks existence.
        if self.pgid <= 0 || unsafe { libc::kill(-self.pgid, 0) } != 0 {
            return false;
        }
        live_group_members(self.pgid) > 0
    }

    /// SIGTERM (plus SIGCONT, so a stopped process can act on it) to the group, then SIGKILL after
    /// `grace`; returns once no member runs (bounded).
    pub async fn clear(&mut self, grace: Duration) {
        if self.has_live_member() {
            self.signal(libc::SIGTERM);
            self.signal(libc::SIGCONT);
            if !self.wait_empty(grace).await {
                self.signal(libc::SIGKILL);
                self.wait_empty(Duration::from_secs(2)).await;
            }
        }
        self.armed = false;
    }

    /// Polls (no event tells us about grandchildren) until no member runs or `limit` passes.
    async fn wait_empty(&self, limit: Duration) -> bool {
        let t0 = std::time::Instant::now();
        loop {
            if !self.has_live_member() {
                return true;
            }
            if t0.elapsed() >= limit {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            self.signal(libc::SIGKILL);
        }
    }
}

/// Processes in group `pgid` that are not zombies, from /proc.
fn live_group_members(pgid: libc::pid_t) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 1 };
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { return false };
            // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            let fields: Vec<&str> =
                stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
            fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<libc::pid_t>() == Ok(pgid)
        })
        .count()
}
