//! The stdio server's process side: spawning it in a group of its own without our secrets,
//! reaping it and stopping its whole group, keeping its last stderr lines, and the kernel facts
//! that tell whether a line we wrote reached it (an exit peeked without reaping, a pending
//! SIGKILL, the bytes still unread in its stdin pipe). A leaf: it knows nothing of JSON-RPC.

use super::config::McpConfig;
use super::error::McpError;
use super::framing::{self, Line};
use crate::process_group::ProcessGroup;
use crate::sync::lock;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

/// The env of the child never holds these (docs/trust.md).
const SECRET_ENV: &[&str] = &["MEMPALACE_REMOTE_TOKEN", "DOTTY_ADMIN_TOKEN"];

/// A started child, its pipes and its process group.
pub(crate) struct Spawned {
    pub child: Child,
    pub pid: u32,
    pub group: ProcessGroup,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// Starts the child in a process group of its own. It inherits our environment minus
/// [`SECRET_ENV`]. The default command missing from `PATH` is [`McpError::NotInstalled`], not a
/// failed start: nothing is spawned.
pub(super) fn spawn(cfg: &McpConfig) -> Result<Spawned, McpError> {
    if cfg.not_installed() {
        return Err(McpError::NotInstalled { bin: cfg.bin.clone() });
    }
    let mut cmd = Command::new(&cfg.bin);
    cmd.args(&cfg.args).envs(cfg.child_env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &cfg.cwd {
        cmd.current_dir(dir);
    }
    for k in SECRET_ENV {
        cmd.env_remove(k);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: a wrapper script's children are killed with it (kill(-pgid)).
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| McpError::Spawn(format!("`{}`: {e}", cfg.bin)))?;
    let pid = child.id().unwrap_or(0);
    let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(i), Some(o), Some(e)) => (i, o, e),
        _ => return Err(McpError::Spawn("the child's pipes are missing".into())),
    };
    Ok(Spawned { child, pid, group: ProcessGroup::of_leader(pid), stdin, stdout, stderr })
}

/// The child's last few stderr lines, quoted in crash messages ("mempalace not installed ...").
pub(crate) struct StderrTail {
    /// std `Mutex`: held for a push or a join, never across an `.await`.
    lines: Mutex<VecDeque<String>>,
    /// The child's stderr reached EOF.
    done: watch::Sender<bool>,
}

impl StderrTail {
    pub(super) fn new() -> Self {
        StderrTail { lines: Mutex::new(VecDeque::new()), done: watch::channel(false).0 }
    }

    /// The kept lines, joined; `None` when the child said nothing.
    pub(super) fn text(&self) -> Option<String> {
        let t = lock(&self.lines);
        (!t.is_empty()).then(|| t.iter().cloned().collect::<Vec<_>>().join(" | "))
    }

    /// Reads the child's stderr to its end (Node closes fd 2 for its children, so stderr must be
    /// piped, never inherited), keeping the last 3 lines; each line goes to ours when debugging.
    pub(crate) async fn drain(&self, stderr: ChildStderr, debug: bool) {
        let mut r = BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            match framing::read_line_capped(&mut r, &mut buf, 64 * 1024, None).await {
                Ok(Line::Ok) => {
                    let line = String::from_utf8_lossy(&buf);
                    if debug {
                        crate::diag_info!("mempalace: {line}");
                    }
                    if !line.trim().is_empty() {
                        let mut t = lock(&self.lines);
                        if t.len() == 3 {
                            t.pop_front();
                        }
                        t.push_back(crate::text::first_chars(line.trim(), 300).to_string());
                    }
                }
                Ok(Line::TooLong(_)) => {}
                Ok(Line::Eof) | Err(_) => break,
            }
        }
        self.done.send_replace(true);
    }
}

/// Owns the `Child` until it is reaped: the only place that reaps it, and that signals its
/// process group, so a signal never hits a reused pid. Waits for the child to exit, or for a kill
/// (stop with that grace); then clears its group and lets `stderr` reach EOF. Returns the exit
/// status as text.
pub(crate) async fn reap(
    mut child: Child,
    mut group: ProcessGroup,
    kill_rx: oneshot::Receiver<Duration>,
    stderr: &StderrTail,
) -> String {
    let (status, grace) = tokio::select! {
        s = child.wait() => (s, Duration::from_secs(2)),
        g = kill_rx => {
            let grace = g.unwrap_or(Duration::from_secs(2));
            (stop(&mut child, &group, grace).await, grace)
        }
    };
    // However the leader ended, nothing of its group outlives it: a wrapper's children too.
    group.clear(grace).await;
    let text = match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("wait failed: {e}"),
    };
    // Its last stderr lines explain the exit ("mempalace not installed ..."): let the drainer
    // reach EOF (the group is gone, so it comes at once) before the reason is fixed.
    let mut drained = stderr.done.subscribe();
    let _ = tokio::time::timeout(Duration::from_millis(300), drained.wait_for(|d| *d)).await;
    text
}

/// SIGTERM + SIGCONT to the group, then SIGKILL to the group after `grace`; reaps the leader.
async fn stop(child: &mut Child, group: &ProcessGroup, grace: Duration) -> std::io::Result<std::process::ExitStatus> {
    group.signal(libc::SIGTERM);
    group.signal(libc::SIGCONT);
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(s) => s,
        Err(_) => {
            group.signal(libc::SIGKILL);
            let _ = child.start_kill();
            child.wait().await
        }
    }
}

/// True when child `pid` is dead or about to be: exited (peeked with `WNOWAIT`, so it stays for
/// the reaper), or with a SIGKILL pending. A SIGKILLed process blocked in `read` can still take
/// a line from the pipe before it dies, so a line must not be written to it at all.
pub(crate) fn is_gone(pid: u32) -> bool {
    has_exited(pid) || sigkill_pending(pid)
}

/// A SIGKILL is pending for `pid` (the kernel queues it until the process next runs).
pub(crate) fn sigkill_pending(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    status
        .lines()
        .filter_map(|l| l.strip_prefix("SigPnd:").or_else(|| l.strip_prefix("ShdPnd:")))
        .any(|m| u64::from_str_radix(m.trim(), 16).is_ok_and(|m| m & SIGKILL_BIT != 0))
}

/// True when child `pid` has exited: peeked with `WNOWAIT`, so it stays for the reaper to reap.
/// `ECHILD` means the reaper already did.
fn has_exited(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    // SAFETY: waitid with WNOHANG|WNOWAIT on our own child only reads its state; `info` is zeroed
    // and fully owned here.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
        if r == 0 {
            info.si_pid() != 0
        } else {
            std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
        }
    }
}

/// `write_all` that counts every byte the pipe took, also when a later write fails.
pub(crate) async fn write_counted(stdin: &mut ChildStdin, mut buf: &[u8], written: &mut u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = stdin.write(buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        *written += n as u64;
        buf = &buf[n..];
    }
    stdin.flush().await
}

/// Bytes written to the pipe and not yet read by anyone (FIONREAD works on either end).
pub(crate) fn unread_bytes(stdin: &ChildStdin) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through a valid pointer; the fd is owned by `stdin`.
    let r = unsafe { libc::ioctl(stdin.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0 && n >= 0).then_some(n as u64)
}
