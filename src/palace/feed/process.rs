//! Child processes of a feed: the external exporter (`<bin> --prepare --reason <r> --wing <w>`,
//! printing `MINE_SOURCE=<path>`) and the rsync of the staged folder to a remote palace host.
//!
//! Every child runs with stdin null, its output captured (up to 64 KiB each), the tokens out of its
//! environment, in its own process group, killed as a group at its timeout. An rsync/ssh target
//! that starts with `-` is refused before anything runs.

use super::PalaceError;
use crate::process_group::resolve_bin;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Stdout/stderr kept from an exporter or rsync (the rest is read and dropped).
const MAX_CAPTURE: usize = 64 * 1024;

/// What a finished child process left behind.
struct Finished {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// Variables no child of the feed gets: the palace's bearer token and the xiaozhi admin token
/// (the exporter, rsync and the ssh that rsync starts have no use for them).
pub(crate) const SECRET_VARS: [&str; 2] = ["MEMPALACE_REMOTE_TOKEN", "DOTTY_ADMIN_TOKEN"];

/// Runs `cmd` with stdin null, stdout/stderr captured and the secrets out of its environment, in
/// its own process group; after `timeout` the whole group is killed (SIGKILL) and an error
/// returned.
async fn run_captured(
    mut cmd: tokio::process::Command,
    what: &str,
    timeout: Duration,
) -> Result<Finished, PalaceError> {
    for var in SECRET_VARS {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).process_group(0);
    let mut child = cmd.spawn().map_err(|e| PalaceError::Spawn { what: what.to_string(), error: e.into() })?;
    let mut group = crate::process_group::ProcessGroup::of_leader(child.id().unwrap_or(0));
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        let error = std::io::Error::other("its stdout or stderr is not a pipe").into();
        return Err(PalaceError::Spawn { what: what.to_string(), error });
    };
    let work = async {
        let (o, e, status) = tokio::join!(read_capped(&mut out), read_capped(&mut err), child.wait());
        (o, e, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, status)) => {
            group.clear(Duration::ZERO).await; // helpers it left behind (usually none: a no-op)
            let status = status.map_err(|e| PalaceError::Wait { what: what.to_string(), error: e.into() })?;
            Ok(Finished { status, stdout, stderr })
        }
        Err(_) => {
            // The whole group, and only once none of it runs any more: a wedged exporter's
            // helpers must not write on into the staging folder beside the next feed.
            group.signal(libc::SIGKILL);
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            group.clear(Duration::ZERO).await;
            Err(PalaceError::Killed { what: what.to_string(), after: timeout })
        }
    }
}

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_CAPTURE.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

fn tail(text: &str, lines: usize) -> String {
    let v: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(lines)..].join(" | ")
}

/// Runs the external exporter `bin --prepare --reason <reason> --wing <wing>` (stdin null,
/// killed with its process group after `timeout`) and returns the path of its
/// `MINE_SOURCE=<path>` line. `Ok(None)` when it succeeded without printing one (nothing to
/// feed).
pub(crate) async fn run_external(
    bin: &Path,
    reason: &str,
    wing: &str,
    timeout: Duration,
) -> Result<Option<String>, PalaceError> {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["--prepare", "--reason", reason, "--wing", wing]);
    let what = format!("{} --prepare", bin.display());
    let done = run_captured(cmd, &what, timeout).await?;
    if !done.status.success() {
        let detail = tail(&done.stderr, 3);
        return Err(PalaceError::Exited {
            what,
            status: done.status.to_string(),
            detail: (!detail.is_empty()).then_some(detail),
        });
    }
    let source = done
        .stdout
        .lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix("MINE_SOURCE="))
        .map(str::trim)
        .find(|s| !s.is_empty())
        .map(str::to_string);
    Ok(source)
}

/// The rsync arguments that copy the contents of `local_dir` to `target:remote_path`.
/// A leading `~/` in `remote_path` is dropped (rsync paths are relative to the remote home);
/// the remote folder is created first through `--rsync-path`.
pub(crate) fn rsync_args(local_dir: &Path, target: &str, remote_path: &str, ssh_config: Option<&Path>) -> Vec<String> {
    let remote = remote_rel(remote_path);
    let mut ssh = String::from("ssh -o BatchMode=yes");
    if let Some(cfg) = ssh_config {
        ssh.push_str(" -F ");
        ssh.push_str(&sh_quote(&cfg.to_string_lossy()));
    }
    let mut local = local_dir.to_string_lossy().into_owned();
    if !local.ends_with('/') {
        local.push('/');
    }
    vec![
        "-a".into(),
        "-e".into(),
        ssh,
        format!("--rsync-path=mkdir -p {} && rsync", sh_quote(&remote)),
        local,
        format!("{target}:{}/", remote.trim_end_matches('/')),
    ]
}

fn remote_rel(remote_path: &str) -> String {
    match remote_path {
        "~" => ".".into(),
        p => p.strip_prefix("~/").unwrap_or(p).to_string(),
    }
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Copies the staged folder to the palace host with `rsync` (found through `path_var`),
/// killed after `timeout`.
pub(crate) async fn rsync_to_remote(
    local_dir: &Path,
    target: &str,
    remote_path: &str,
    ssh_config: Option<&Path>,
    path_var: Option<&str>,
    timeout: Duration,
) -> Result<(), PalaceError> {
    if let Some(why) = super::config::refused_ssh_target(target) {
        return Err(PalaceError::Target(why));
    }
    let rsync = resolve_bin("rsync", path_var).ok_or(PalaceError::NoRsync)?;
    let mut cmd = tokio::process::Command::new(rsync);
    cmd.args(rsync_args(local_dir, target, remote_path, ssh_config));
    let done = run_captured(cmd, "rsync", timeout).await?;
    if done.status.success() {
        Ok(())
    } else {
        Err(PalaceError::Exited {
            what: format!("rsync to {target}"),
            status: done.status.to_string(),
            detail: Some(tail(&done.stderr, 3)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process_group::tests::script;
    use std::time::Instant;

    #[tokio::test]
    async fn external_exporter_prints_mine_source() {
        let d = tempfile::tempdir().unwrap();
        let args_file = d.path().join("args");
        let s = script(
            d.path(),
            "exp",
            &format!(
                "echo \"$@\" > '{}'\necho 'staging 3 sessions' >&2\necho 'progress'\necho 'MINE_SOURCE=/tmp/export dir'",
                args_file.display()
            ),
        );
        let got = run_external(&s, "quit", "wing_x", Duration::from_secs(10)).await.unwrap();
        assert_eq!(got.as_deref(), Some("/tmp/export dir"));
        assert_eq!(std::fs::read_to_string(&args_file).unwrap().trim(), "--prepare --reason quit --wing wing_x");

        let none = script(d.path(), "none", "echo nothing to do >&2");
        assert_eq!(run_external(&none, "quit", "w", Duration::from_secs(10)).await.unwrap(), None);

        let fails = script(d.path(), "fails", "echo 'MINE_SOURCE=/x'\necho 'palace held by PID 7' >&2\nexit 3");
        let err = run_external(&fails, "quit", "w", Duration::from_secs(10)).await.unwrap_err().to_string();
        assert!(err.contains("palace held by PID 7") && err.contains("3"), "{err}");

        // stdin is null: a script that reads stdin sees EOF at once instead of hanging.
        let reads = script(d.path(), "reads", "cat\necho MINE_SOURCE=/ok");
        assert_eq!(run_external(&reads, "quit", "w", Duration::from_secs(10)).await.unwrap().as_deref(), Some("/ok"));
    }

    /// Blocks until process `pid` (not our child: waitpid can't see it) has exited, through a pidfd
    /// that becomes readable at its exit. An event, not a deadline: on a busy machine a SIGKILLed
    /// process can stay in state R for a while before it is gone. False if it still runs after
    /// `bound` (the test's failure, not its pace).
    fn exits_within(pid: i32, bound: Duration) -> bool {
        // SAFETY: pidfd_open takes two integers and touches no memory of ours; the fd it returns is
        // this function's, closed below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
        if fd < 0 {
            return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            // already gone (and reaped)
        }
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: `p` is one live pollfd, and 1 says so.
        let ready = unsafe { libc::poll(&mut p, 1, bound.as_millis() as i32) };
        // SAFETY: `fd` is this function's own (opened above) and not used after.
        unsafe { libc::close(fd) };
        ready == 1
    }

    #[tokio::test]
    async fn an_exporter_that_cannot_start_keeps_its_io_error() {
        let d = tempfile::tempdir().unwrap();
        let err = run_external(&d.path().join("missing"), "quit", "w", Duration::from_secs(5)).await.unwrap_err();
        assert!(err.to_string().starts_with("can't start "), "{err}");
        let io = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<super::super::super::error::IoError>());
        assert_eq!(io.map(|e| e.kind()), Some(std::io::ErrorKind::NotFound), "{err:?}");
    }

    #[tokio::test]
    async fn a_hanging_exporter_is_killed_at_the_timeout() {
        let d = tempfile::tempdir().unwrap();
        let pid_file = d.path().join("pid");
        // The shell forks a grandchild that keeps stdout open: the process-group kill gets it too.
        // Both sleep far longer than any bound below, so only the kill can end them.
        let s = script(d.path(), "hangs", &format!("sleep 600 &\necho $! > '{}'\nexec sleep 600", pid_file.display()));
        let t0 = Instant::now();
        let err = run_external(&s, "quit", "w", Duration::from_millis(300)).await.unwrap_err().to_string();
        let took = t0.elapsed();
        assert!(err.contains("timed out"), "{err}");
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(60), "{took:?}");
        let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        assert!(
            exits_within(grandchild, Duration::from_secs(60)),
            "grandchild {grandchild} still runs a minute after the kill"
        );
    }

    #[tokio::test]
    async fn children_get_no_tokens_and_an_option_is_no_target() {
        let d = tempfile::tempdir().unwrap();
        let env_file = d.path().join("env");
        let s = script(d.path(), "exp", &format!("env > '{}'", env_file.display()));
        // As if pi had them in its environment (the process environment is shared by the tests).
        let mut cmd = tokio::process::Command::new(&s);
        cmd.env("MEMPALACE_REMOTE_TOKEN", "tok-remote-s3cret")
            .env("DOTTY_ADMIN_TOKEN", "tok-admin-s3cret")
            .env("KEEP_ME", "1");
        assert!(run_captured(cmd, "exp", Duration::from_secs(10)).await.unwrap().status.success());
        let env = std::fs::read_to_string(&env_file).unwrap();
        assert!(!env.contains("s3cret"), "{env}");
        assert!(env.contains("KEEP_ME=1"), "the rest of the environment is kept");

        std::fs::remove_file(&env_file).unwrap();
        script(d.path(), "rsync", &format!("echo \"$@\" > '{}'", env_file.display()));
        let path_var = d.path().display().to_string();
        let err = rsync_to_remote(
            d.path(),
            "-oProxyCommand=touch /tmp/x",
            "/in",
            None,
            Some(&path_var),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("starts with '-'"), "{err}");
        assert!(!env_file.exists(), "rsync never ran");
        rsync_to_remote(d.path(), "me@h", "/in", None, Some(&path_var), Duration::from_secs(10)).await.unwrap();
        assert!(env_file.exists());
    }

    #[test]
    fn rsync_arguments() {
        let args = rsync_args(
            Path::new("/a/staging"),
            "me@host",
            "~/.mempalace/inbox/pi-sessions",
            Some(Path::new("/c/ssh config")),
        );
        assert_eq!(
            args,
            vec![
                "-a",
                "-e",
                "ssh -o BatchMode=yes -F '/c/ssh config'",
                "--rsync-path=mkdir -p '.mempalace/inbox/pi-sessions' && rsync",
                "/a/staging/",
                "me@host:.mempalace/inbox/pi-sessions/",
            ]
        );
        let args = rsync_args(Path::new("/a/s/"), "h", "/srv/in/", None);
        assert_eq!(args[2], "ssh -o BatchMode=yes");
        assert_eq!(args[4], "/a/s/");
        assert_eq!(args[5], "h:/srv/in/");
    }
}
