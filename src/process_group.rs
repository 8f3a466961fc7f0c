//! A child's process group, stopped as a whole: a wrapper script's children (the MemPalace server
//! behind a shell script, the exporter's helpers, the ssh under rsync) die with their leader, and
//! nothing of an old child is left running when the next one starts or when pi exits. Also where a
//! child's program is found ([`resolve_bin`]: the server, the exporter, rsync).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `bin` as an executable path: a name containing `/` is taken as is, anything else is looked
/// up in `path_var` (a `PATH` value). `None` when it isn't an executable file.
pub(crate) fn resolve_bin(bin: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if bin.is_empty() {
        return None;
    }
    if bin.contains('/') {
        let p = PathBuf::from(bin);
        return is_executable(&p).then_some(p);
    }
    path_var?.split(':').filter(|d| !d.is_empty()).map(|d| Path::new(d).join(bin)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

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

    pub(crate) fn signal(&self, sig: libc::c_int) {
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
    pub(crate) async fn clear(&mut self, grace: Duration) {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An executable `#!/bin/sh` script `name` in `dir` running `body` (the process tests' children).
    pub(crate) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn resolves_bins() {
        let d = tempfile::tempdir().unwrap();
        let s = script(d.path(), "mempalace-pi-session", "true");
        std::fs::write(d.path().join("not-exec"), "x").unwrap();
        let path = format!("/nonexistent:{}", d.path().display());
        assert_eq!(resolve_bin("mempalace-pi-session", Some(&path)), Some(s.clone()));
        assert_eq!(resolve_bin("not-exec", Some(&path)), None);
        assert_eq!(resolve_bin("mempalace-pi-session", None), None);
        assert_eq!(resolve_bin(s.to_str().unwrap(), None), Some(s));
        assert_eq!(resolve_bin("", Some(&path)), None);
    }
}
