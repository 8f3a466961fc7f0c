//! Step 1 of a feed: prepare an export of pi's sessions without touching the palace.
//!
//! * Built in ([`BuiltinExporter`]): scan `<agentDir>/sessions/**.jsonl`, keep the sessions that
//!   pass the quality gate and changed since the last export, and copy them into the staging
//!   folder `<agentDir>/mempalace-feed/staging/`, which mirrors `sessions/`. The staging folder is
//!   stable on purpose: MemPalace keys a conversation's drawers by the source file's path and
//!   re-mines a file whose mtime changed, so a session that grew replaces its drawers instead of
//!   being filed a second time under a new path. What was exported is recorded (size + mtime)
//!   in `<agentDir>/mempalace-feed/state.json`, but only once the mine succeeded
//!   ([`StagedExport::commit`]), so a failed mine is retried by the next trigger.
//! * External ([`run_external`]): `<bin> --prepare --reason <r> --wing <w>`, reading the line
//!   `MINE_SOURCE=<path>` it prints.
//! * Remote palace ([`rsync_to_remote`]): the staged folder is copied to the palace host first.

use crate::diag;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

const STATE_FILE: &str = "state.json";
const STATE_VERSION: u32 = 1;
/// Stdout/stderr kept from an exporter or rsync (the rest is read and dropped).
const MAX_CAPTURE: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Quality gate

/// True when `content` is a pi session MemPalace's convos miner will file: the first line is a
/// session header (`{"type":"session","version":...}`) and there is at least one user and one
/// assistant message with non-blank text (tool results, tool calls and thinking don't count).
pub fn passes_quality_gate(content: &[u8]) -> bool {
    let mut lines = content.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let Some(first) = lines.next() else { return false };
    let header: serde_json::Value = match serde_json::from_slice(first) {
        Ok(v) => v,
        Err(_) => return false,
    };
    if header.get("type").and_then(|t| t.as_str()) != Some("session") || header.get("version").is_none() {
        return false;
    }
    let (mut user, mut assistant) = (false, false);
    for line in lines {
        // Cheap pre-filter: only message entries matter.
        if !contains(line, b"\"message\"") {
            continue;
        }
        let Ok(entry) = serde_json::from_slice::<serde_json::Value>(line) else { continue };
        if entry.get("type").and_then(|t| t.as_str()) != Some("message") {
            continue;
        }
        let Some(msg) = entry.get("message") else { continue };
        let role = msg.get("role").and_then(|r| r.as_str());
        let has_text = msg.get("content").is_some_and(has_text);
        match role {
            Some("user") if has_text => user = true,
            Some("assistant") if has_text => assistant = true,
            _ => {}
        }
        if user && assistant {
            return true;
        }
    }
    false
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn has_text(content: &serde_json::Value) -> bool {
    match content {
        serde_json::Value::String(s) => !s.trim().is_empty(),
        serde_json::Value::Array(blocks) => blocks.iter().any(|b| {
            b.get("type").and_then(|t| t.as_str()) == Some("text")
                && b.get("text").and_then(|t| t.as_str()).is_some_and(|t| !t.trim().is_empty())
        }),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Built-in exporter

/// What a session file looked like when it was last exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub size: u64,
    #[serde(rename = "mtimeNs")]
    pub mtime_ns: i128,
    /// False when the session failed the quality gate (it is re-examined once it changes).
    pub staged: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    version: u32,
    sessions: BTreeMap<String, Fingerprint>,
}

/// The built-in exporter of pi's session JSONL.
#[derive(Debug, Clone)]
pub struct BuiltinExporter {
    sessions_dir: PathBuf,
    feed_dir: PathBuf,
}

/// Sessions staged by [`BuiltinExporter::prepare`], waiting for a successful mine.
#[derive(Debug)]
pub struct StagedExport {
    /// The staging folder to mine (holds every session staged so far; unchanged ones are skipped
    /// by the miner).
    pub dir: PathBuf,
    /// The staging copies written by this run.
    pub staged: Vec<PathBuf>,
    state_path: PathBuf,
    pending: BTreeMap<String, Fingerprint>,
}

impl BuiltinExporter {
    /// Exports `sessions_dir` into `feed_dir/staging`, keeping its state in `feed_dir/state.json`.
    pub fn new(sessions_dir: impl Into<PathBuf>, feed_dir: impl Into<PathBuf>) -> Self {
        BuiltinExporter { sessions_dir: sessions_dir.into(), feed_dir: feed_dir.into() }
    }

    /// `<agentDir>/sessions` → `<agentDir>/mempalace-feed`.
    pub fn from_config(cfg: &super::PalaceConfig) -> Self {
        Self::new(cfg.sessions_dir(), cfg.feed_dir())
    }

    pub fn staging_dir(&self) -> PathBuf {
        self.feed_dir.join("staging")
    }

    fn state_path(&self) -> PathBuf {
        self.feed_dir.join(STATE_FILE)
    }

    /// Stages the sessions that pass the quality gate and changed since the last committed
    /// export. `Ok(None)` when there is nothing new to mine. Blocking (file I/O).
    pub fn prepare(&self) -> io::Result<Option<StagedExport>> {
        let state = load_state(&self.state_path());
        let mut files = Vec::new();
        if self.sessions_dir.is_dir() {
            walk_jsonl(&self.sessions_dir, &mut files)?;
        }
        files.sort();
        let staging = self.staging_dir();
        let mut pending = BTreeMap::new();
        let mut rejected = BTreeMap::new();
        let mut staged = Vec::new();
        for path in files {
            let Ok(rel) = path.strip_prefix(&self.sessions_dir) else { continue };
            let key = rel.to_string_lossy().into_owned();
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(_) => continue, // vanished meanwhile
            };
            let size = meta.len();
            let mtime_ns = mtime_ns(&meta);
            if let Some(old) = state.sessions.get(&key) {
                if old.size == size && old.mtime_ns == mtime_ns {
                    continue;
                }
            }
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    diag!("mempalace feed: can't read {}: {e}", path.display());
                    continue;
                }
            };
            if !passes_quality_gate(&bytes) {
                rejected.insert(key, Fingerprint { size, mtime_ns, staged: false });
                continue;
            }
            let dest = staging.join(rel);
            if let Some(parent) = dest.parent() {
                super::cache::create_private_dir(parent)?;
            }
            super::cache::write_atomic(&dest, &bytes)?;
            staged.push(dest);
            pending.insert(key, Fingerprint { size, mtime_ns, staged: true });
        }
        if staged.is_empty() {
            // Nothing to mine; remember the rejects so they aren't re-read until they change.
            if !rejected.is_empty() {
                commit_state(&self.state_path(), rejected)?;
            }
            return Ok(None);
        }
        pending.extend(rejected);
        Ok(Some(StagedExport { dir: staging, staged, state_path: self.state_path(), pending }))
    }
}

impl StagedExport {
    /// Records this export as done (call it after the mine succeeded).
    pub fn commit(self) -> io::Result<()> {
        commit_state(&self.state_path, self.pending)
    }
}

fn load_state(path: &Path) -> State {
    match std::fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<State>(&bytes) {
            Ok(s) if s.version == STATE_VERSION => s,
            _ => {
                diag!("mempalace feed: ignoring unreadable {}; re-exporting everything", path.display());
                State::default()
            }
        },
        Err(_) => State::default(),
    }
}

fn commit_state(path: &Path, entries: BTreeMap<String, Fingerprint>) -> io::Result<()> {
    let mut state = load_state(path);
    state.version = STATE_VERSION;
    state.sessions.extend(entries);
    if let Some(parent) = path.parent() {
        super::cache::create_private_dir(parent)?;
    }
    let json = serde_json::to_vec_pretty(&state).map_err(io::Error::other)?;
    super::cache::write_atomic(path, &json)
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128
}

/// Regular `*.jsonl` files under `dir`, recursively; symlinks are not followed.
fn walk_jsonl(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(ft) = entry.file_type() else { continue };
        let path = entry.path();
        if ft.is_dir() {
            if let Err(e) = walk_jsonl(&path, out) {
                diag!("mempalace feed: can't scan {}: {e}", path.display());
            }
        } else if ft.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// External exporter and rsync

/// `bin` as an executable path: a name containing `/` is taken as is, anything else is looked
/// up in `path_var` (a `PATH` value). `None` when it isn't an executable file.
pub fn resolve_bin(bin: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if bin.is_empty() {
        return None;
    }
    if bin.contains('/') {
        let p = PathBuf::from(bin);
        return is_executable(&p).then_some(p);
    }
    path_var?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(bin))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What a finished child process left behind.
struct Finished {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// Variables no child of the feed gets: the palace's bearer token and the xiaozhi admin token
/// (the exporter, rsync and the ssh that rsync starts have no use for them).
pub const SECRET_VARS: [&str; 2] = ["MEMPALACE_REMOTE_TOKEN", "DOTTY_ADMIN_TOKEN"];

/// Runs `cmd` with stdin null, stdout/stderr captured and the secrets out of its environment, in
/// its own process group; after `timeout` the whole group is killed (SIGKILL) and an error
/// returned.
async fn run_captured(mut cmd: tokio::process::Command, what: &str, timeout: Duration) -> Result<Finished, String> {
    for var in SECRET_VARS {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("can't start {what}: {e}"))?;
    let mut group = crate::process_group::ProcessGroup::of_leader(child.id().unwrap_or(0));
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let work = async {
        let (o, e, status) = tokio::join!(read_capped(&mut out), read_capped(&mut err), child.wait());
        (o, e, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, status)) => {
            group.clear(Duration::ZERO).await; // helpers it left behind (usually none: a no-op)
            let status = status.map_err(|e| format!("{what}: {e}"))?;
            Ok(Finished { status, stdout, stderr })
        }
        Err(_) => {
            // The whole group, and only once none of it runs any more: a wedged exporter's
            // helpers must not write on into the staging folder beside the next feed.
            group.signal(libc::SIGKILL);
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            group.clear(Duration::ZERO).await;
            Err(format!("{what} timed out after {} ms and was killed", timeout.as_millis()))
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
pub async fn run_external(bin: &Path, reason: &str, wing: &str, timeout: Duration) -> Result<Option<String>, String> {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["--prepare", "--reason", reason, "--wing", wing]);
    let what = format!("{} --prepare", bin.display());
    let done = run_captured(cmd, &what, timeout).await?;
    if !done.status.success() {
        let detail = tail(&done.stderr, 3);
        return Err(format!("{what} failed ({}){}", done.status, if detail.is_empty() { String::new() } else { format!(": {detail}") }));
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
pub fn rsync_args(local_dir: &Path, target: &str, remote_path: &str, ssh_config: Option<&Path>) -> Vec<String> {
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

/// Why an rsync/ssh target is refused: one starting with `-` would reach rsync or ssh as an
/// option (`-oProxyCommand=...` runs a command), and an empty one is no host.
pub fn refused_ssh_target(target: &str) -> Option<String> {
    if target.starts_with('-') {
        return Some(format!(
            "MEMPALACE_PI_SSH_TARGET {} starts with '-' and would be read as an option by rsync/ssh: refused, remote feeding is off",
            super::tools::shown(target)
        ));
    }
    target.trim().is_empty().then(|| "MEMPALACE_PI_SSH_TARGET is empty: remote feeding is off".to_string())
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
pub async fn rsync_to_remote(
    local_dir: &Path,
    target: &str,
    remote_path: &str,
    ssh_config: Option<&Path>,
    path_var: Option<&str>,
    timeout: Duration,
) -> Result<(), String> {
    if let Some(why) = refused_ssh_target(target) {
        return Err(why);
    }
    let rsync = resolve_bin("rsync", path_var).ok_or_else(|| "rsync is not on PATH".to_string())?;
    let mut cmd = tokio::process::Command::new(rsync);
    cmd.args(rsync_args(local_dir, target, remote_path, ssh_config));
    let done = run_captured(cmd, "rsync", timeout).await?;
    if done.status.success() {
        Ok(())
    } else {
        Err(format!("rsync to {target} failed ({}): {}", done.status, tail(&done.stderr, 3)))
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::palace::testutil::{session_jsonl, write_session};
    use std::os::unix::fs::PermissionsExt;
    use std::time::Instant;

    fn good() -> String {
        session_jsonl(&[("user", "hello there"), ("assistant", "hi, how can I help?")])
    }

    #[test]
    fn quality_gate() {
        assert!(passes_quality_gate(good().as_bytes()));
        // Tool traffic around the text is fine.
        let s = session_jsonl(&[("user", "run ls"), ("assistantToolCall", "ls"), ("toolResult", "a b"), ("assistant", "two files")]);
        assert!(passes_quality_gate(s.as_bytes()));
        // Only a user message.
        assert!(!passes_quality_gate(session_jsonl(&[("user", "hello")]).as_bytes()));
        // The assistant only called tools: no assistant text.
        let s = session_jsonl(&[("user", "run ls"), ("assistantToolCall", "ls"), ("toolResult", "a b")]);
        assert!(!passes_quality_gate(s.as_bytes()));
        // Blank texts don't count.
        assert!(!passes_quality_gate(session_jsonl(&[("user", "  "), ("assistant", "hi")]).as_bytes()));
        // No header / header not first / header without version.
        let body: String = good().lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert!(!passes_quality_gate(body.as_bytes()));
        let g = good();
        let mut lines: Vec<&str> = g.lines().collect();
        lines.swap(0, 1);
        assert!(!passes_quality_gate(lines.join("\n").as_bytes()));
        let no_version = good().replacen("\"version\":3,", "", 1);
        assert!(!passes_quality_gate(no_version.as_bytes()));
        // A user message with plain string content (older pi) counts; a garbage line is skipped.
        let s = format!(
            "{}\n{{not json\n{}\n{}\n",
            r#"{"type":"session","version":1,"id":"x","timestamp":"t","cwd":"/"}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"plain","timestamp":1}}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":2}}"#
        );
        assert!(passes_quality_gate(s.as_bytes()));
        assert!(!passes_quality_gate(b""));
        assert!(!passes_quality_gate(&[0xff, 0x00, b'\n']));
    }

    #[test]
    fn stages_only_good_changed_sessions_and_commits_after_success() {
        let agent = tempfile::tempdir().unwrap();
        let a = write_session(agent.path(), "2026-01-01T00-00-00-000Z_a", &good());
        write_session(agent.path(), "2026-01-01T00-00-00-000Z_b", &session_jsonl(&[("user", "only me")]));
        std::fs::write(agent.path().join("sessions/notes.txt"), good()).unwrap();
        let ex = BuiltinExporter::new(agent.path().join("sessions"), agent.path().join("mempalace-feed"));

        let first = ex.prepare().unwrap().expect("a good session to stage");
        assert_eq!(first.dir, agent.path().join("mempalace-feed/staging"));
        let staged_a = first.dir.join("--work-project--/2026-01-01T00-00-00-000Z_a.jsonl");
        assert_eq!(first.staged, vec![staged_a.clone()]);
        assert_eq!(std::fs::read_to_string(&staged_a).unwrap(), good());
        assert!(!first.dir.join("--work-project--/2026-01-01T00-00-00-000Z_b.jsonl").exists());

        // Not committed (the mine failed): the next run stages it again.
        drop(first);
        let again = ex.prepare().unwrap().expect("uncommitted export is retried");
        again.commit().unwrap();
        assert!(ex.prepare().unwrap().is_none(), "nothing changed since the committed export");

        // The session grows: staged again, same path, new content.
        let grown = session_jsonl(&[("user", "hello there"), ("assistant", "hi"), ("user", "more"), ("assistant", "sure")]);
        std::fs::write(&a, &grown).unwrap();
        let third = ex.prepare().unwrap().expect("changed session");
        assert_eq!(third.staged, vec![staged_a.clone()]);
        assert_eq!(std::fs::read_to_string(&staged_a).unwrap(), grown);
        third.commit().unwrap();

        // The rejected session becomes good once it has an answer.
        write_session(agent.path(), "2026-01-01T00-00-00-000Z_b", &good());
        let fourth = ex.prepare().unwrap().unwrap();
        assert_eq!(fourth.staged.len(), 1);
        assert!(fourth.staged[0].ends_with("2026-01-01T00-00-00-000Z_b.jsonl"));

        // No temp files anywhere in staging.
        let names: Vec<String> = std::fs::read_dir(fourth.dir.join("--work-project--"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.ends_with(".jsonl")), "{names:?}");
    }

    #[test]
    fn no_sessions_or_corrupt_state() {
        let agent = tempfile::tempdir().unwrap();
        let ex = BuiltinExporter::new(agent.path().join("sessions"), agent.path().join("mempalace-feed"));
        assert!(ex.prepare().unwrap().is_none());
        write_session(agent.path(), "s", &good());
        ex.prepare().unwrap().unwrap().commit().unwrap();
        std::fs::write(agent.path().join("mempalace-feed/state.json"), b"{oops").unwrap();
        assert!(ex.prepare().unwrap().is_some(), "a corrupt state re-exports");
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
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
        let err = run_external(&fails, "quit", "w", Duration::from_secs(10)).await.unwrap_err();
        assert!(err.contains("palace held by PID 7") && err.contains("3"), "{err}");

        // stdin is null: a script that reads stdin sees EOF at once instead of hanging.
        let reads = script(d.path(), "reads", "cat\necho MINE_SOURCE=/ok");
        assert_eq!(run_external(&reads, "quit", "w", Duration::from_secs(10)).await.unwrap().as_deref(), Some("/ok"));
    }

    #[tokio::test]
    async fn a_hanging_exporter_is_killed_at_the_timeout() {
        let d = tempfile::tempdir().unwrap();
        let pid_file = d.path().join("pid");
        // The shell forks a grandchild that keeps stdout open: the process-group kill gets it too.
        let s = script(d.path(), "hangs", &format!("sleep 30 &\necho $! > '{}'\nexec sleep 30", pid_file.display()));
        let t0 = Instant::now();
        let err = run_external(&s, "quit", "w", Duration::from_millis(300)).await.unwrap_err();
        let took = t0.elapsed();
        assert!(err.contains("timed out"), "{err}");
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
        let grandchild: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // Killed (possibly a zombie until init reaps it): not sleeping any more. SIGKILL is
        // delivered at once but the exit takes a moment on a busy machine: poll briefly.
        let state = || {
            let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
            stat.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("gone").to_string()
        };
        let t0 = Instant::now();
        while !matches!(state().as_str(), "gone" | "Z" | "X") && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(matches!(state().as_str(), "gone" | "Z" | "X"), "grandchild {grandchild} state {}", state());
    }

    #[tokio::test]
    async fn children_get_no_tokens_and_an_option_is_no_target() {
        let d = tempfile::tempdir().unwrap();
        let env_file = d.path().join("env");
        let s = script(d.path(), "exp", &format!("env > '{}'", env_file.display()));
        // As if pi had them in its environment (the process environment is shared by the tests).
        let mut cmd = tokio::process::Command::new(&s);
        cmd.env("MEMPALACE_REMOTE_TOKEN", "tok-remote-s3cret").env("DOTTY_ADMIN_TOKEN", "tok-admin-s3cret").env("KEEP_ME", "1");
        assert!(run_captured(cmd, "exp", Duration::from_secs(10)).await.unwrap().status.success());
        let env = std::fs::read_to_string(&env_file).unwrap();
        assert!(!env.contains("s3cret"), "{env}");
        assert!(env.contains("KEEP_ME=1"), "the rest of the environment is kept");

        std::fs::remove_file(&env_file).unwrap();
        script(d.path(), "rsync", &format!("echo \"$@\" > '{}'", env_file.display()));
        let path_var = d.path().display().to_string();
        let err = rsync_to_remote(d.path(), "-oProxyCommand=touch /tmp/x", "/in", None, Some(&path_var), Duration::from_secs(10)).await.unwrap_err();
        assert!(err.contains("starts with '-'"), "{err}");
        assert!(!env_file.exists(), "rsync never ran");
        rsync_to_remote(d.path(), "me@h", "/in", None, Some(&path_var), Duration::from_secs(10)).await.unwrap();
        assert!(env_file.exists());
    }

    #[test]
    fn rsync_arguments() {
        let args = rsync_args(Path::new("/a/staging"), "me@host", "~/.mempalace/inbox/pi-sessions", Some(Path::new("/c/ssh config")));
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

    /// The real MemPalace 3.11.0 (installed by ../shared/tools/mempalace/install.sh) files the
    /// built-in exporter's staging folder and finds it again with `mempalace search`.
    #[test]
    fn real_mempalace_mines_the_staged_export() {
        let root = std::env::var_os("MEMPALACE_ROOT").map(PathBuf::from).unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache"));
            cache.join("mempalace-test")
        });
        let cli = root.join("venv/bin/mempalace");
        assert!(
            cli.is_file(),
            "the real MemPalace is not installed at {} (set MEMPALACE_ROOT or run ../shared/tools/mempalace/install.sh)",
            cli.display()
        );
        let agent = tempfile::tempdir().unwrap();
        let session = session_jsonl(&[
            ("user", "Please remember the zebrafish quokka protocol for the aquarium migration."),
            ("assistantToolCall", "ls /tanks"),
            ("toolResult", "tank-1 tank-2"),
            ("assistant", "Noted: the zebrafish quokka protocol moves tank-1 and tank-2 on Tuesday at dawn."),
            ("user", "And who signs off on it?"),
            ("assistant", "Marguerite from the aquarium board signs off on the zebrafish quokka protocol."),
        ]);
        write_session(agent.path(), "2026-01-01T00-00-00-000Z_real", &session);
        write_session(agent.path(), "2026-01-01T00-00-00-000Z_rejected", &session_jsonl(&[("user", "platypus lighthouse")]));
        let ex = BuiltinExporter::new(agent.path().join("sessions"), agent.path().join("mempalace-feed"));
        let staged = ex.prepare().unwrap().expect("one session staged");
        assert_eq!(staged.staged.len(), 1);

        let work = tempfile::tempdir().unwrap();
        let palace = work.path().join("p/palace");
        let run = |args: &[&str]| {
            let out = std::process::Command::new(&cli)
                .arg("--palace")
                .arg(&palace)
                .args(args)
                .env("HOME", root.join("home"))
                .env("MEMPALACE_CONFIG_DIR", work.path().join("cfg"))
                .env("HF_HUB_OFFLINE", "1")
                .env("TRANSFORMERS_OFFLINE", "1")
                .env("MEMPALACE_HUB_FORWARD", "0")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "mempalace {args:?} failed: {text}");
            text
        };
        let dir = staged.dir.to_str().unwrap().to_string();
        let mined = run(&["mine", &dir, "--mode", "convos", "--wing", "wing_conversations"]);
        assert!(mined.contains("Files processed: 1") && mined.contains("Drawers filed:"), "{mined}");
        assert!(!mined.contains("Drawers filed: 0"), "{mined}");
        let found = run(&["search", "who signs off on the zebrafish quokka protocol"]);
        assert!(found.contains("wing_conversations"), "{found}");
        assert!(found.contains("Marguerite"), "{found}");
        assert!(found.contains("2026-01-01T00-00-00-000Z_real.jsonl"), "{found}");
        assert!(!found.contains("platypus"), "{found}");
        staged.commit().unwrap();
    }
}
