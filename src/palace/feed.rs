//! Automatic transcript feeding: prepare an export (step 1, palace-free), then mine it through
//! the extension's own MCP client (step 2, `mempalace_mine`), because the palace is
//! single-writer and that client holds it.
//!
//! Triggers: [`Feeder::shutdown`] (pi `session_shutdown`) and [`Feeder::settled`] (debounced
//! `agent_settled` / `agent_end`). Overlapping triggers coalesce: whoever arrives while a feed
//! runs gets that feed's outcome. Two processes never feed at once (non-blocking `flock` on
//! `<agentDir>/mempalace-feed.lock`; the loser returns quietly). Every failure is logged on
//! stderr and returned as [`FeedOutcome::Failed`], never raised; a feed is bounded by the
//! prepare timeout plus the mine timeout.

use super::export::{BuiltinExporter, StagedExport};
use super::process::{resolve_bin, rsync_to_remote, run_external};
use super::{call_bounded, PalaceCaller, PalaceConfig, PalaceError};
use crate::diag;
use crate::sync::lock;
use futures_util::FutureExt;
use serde_json::json;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Why a trigger did not feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `MEMPALACE_BRIDGE=0` or `MEMPALACE_FEED=0`.
    Disabled,
    /// Remote palace without `MEMPALACE_PI_SSH_TARGET`.
    NoSshTarget,
    /// A mid-session trigger within the debounce window.
    Debounced,
    /// Another process holds the feed lock.
    Locked,
    /// The palace can't be had (never connected, or given up on): nothing is staged or run.
    PalaceDown,
}

/// The result of a trigger.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedOutcome {
    /// `mempalace_mine` ran on `source`; `output` is its result text.
    Fed {
        source: String,
        output: String,
    },
    /// Nothing changed since the last export.
    NothingToFeed,
    Skipped(SkipReason),
    /// Already logged on stderr.
    Failed(PalaceError),
}

/// The non-blocking cross-process feed lock (released when dropped).
#[derive(Debug)]
pub struct FeedLock(
    #[allow(dead_code, reason = "held, never read: the flock lasts as long as the open file")] std::fs::File,
);

impl FeedLock {
    /// `flock(LOCK_EX | LOCK_NB)` on `path` (created if missing). `Ok(None)` when another open
    /// file description holds it.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FeedLock>> {
        if let Some(parent) = path.parent() {
            super::files::create_private_dir(parent)?;
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(path)?;
        // SAFETY: flock on a file descriptor we own for the duration of the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Some(FeedLock(file)));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(err)
        }
    }
}

struct State {
    in_flight: Option<watch::Receiver<Option<FeedOutcome>>>,
    last_feed: Option<Instant>,
}

struct Inner {
    cfg: PalaceConfig,
    caller: Arc<dyn PalaceCaller>,
    state: Mutex<State>,
}

/// Feeds pi's transcripts into the palace on pi's triggers. Cheap to clone (shared state).
/// The triggers spawn the feed on the current tokio runtime, so they must be called inside one.
#[derive(Clone)]
pub struct Feeder {
    inner: Arc<Inner>,
}

impl Feeder {
    pub fn new(cfg: PalaceConfig, caller: Arc<dyn PalaceCaller>) -> Self {
        Feeder { inner: Arc::new(Inner { cfg, caller, state: Mutex::new(State { in_flight: None, last_feed: None }) }) }
    }

    /// pi `session_shutdown {reason}`: feed now (or join the feed that is running).
    pub async fn shutdown(&self, reason: &str) -> FeedOutcome {
        self.trigger(reason, false).await
    }

    /// pi `agent_settled` (or `agent_end`): feed unless a feed started less than
    /// `MEMPALACE_FEED_DEBOUNCE_MS` ago; the first one after start always counts. Joins a
    /// running feed.
    pub async fn settled(&self) -> FeedOutcome {
        self.trigger("settled", true).await
    }

    /// True while a feed runs (the tests watch coalescing with it).
    #[cfg(test)]
    pub fn is_feeding(&self) -> bool {
        lock(&self.inner.state).in_flight.is_some()
    }

    async fn trigger(&self, reason: &str, debounced: bool) -> FeedOutcome {
        let cfg = &self.inner.cfg;
        if !cfg.enabled() || !cfg.feed {
            return FeedOutcome::Skipped(SkipReason::Disabled);
        }
        // A palace that can't be had would fail the mine anyway: no staging copies (SD-card
        // wear), no exporter, no rsync, and no line per trigger: the one line that said the
        // palace is down (the bridge's or the client's) also says transcripts are not fed.
        if self.inner.caller.down_reason().is_some() {
            return FeedOutcome::Skipped(SkipReason::PalaceDown);
        }
        let mut rx = {
            let mut st = lock(&self.inner.state);
            match &st.in_flight {
                Some(rx) => rx.clone(),
                None => {
                    if debounced {
                        if let Some(last) = st.last_feed {
                            if last.elapsed() < cfg.feed_debounce {
                                return FeedOutcome::Skipped(SkipReason::Debounced);
                            }
                        }
                    }
                    st.last_feed = Some(Instant::now());
                    let rx = spawn_feed(self.inner.clone(), reason.to_string());
                    st.in_flight = Some(rx.clone());
                    rx
                }
            }
        };
        let outcome = match rx.wait_for(|o| o.is_some()).await {
            Ok(o) => o.clone().expect("checked is_some"),
            Err(_) => FeedOutcome::Failed(PalaceError::NoResult),
        };
        outcome
    }
}

/// Runs a feed in the background; its outcome (said on stderr when it failed) is sent on the
/// returned channel once it ends, after `in_flight` was cleared.
fn spawn_feed(inner: Arc<Inner>, reason: String) -> watch::Receiver<Option<FeedOutcome>> {
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let outcome = std::panic::AssertUnwindSafe(run_feed(&inner, &reason))
            .catch_unwind()
            .await
            .unwrap_or(FeedOutcome::Failed(PalaceError::Panicked));
        if let FeedOutcome::Failed(e) = &outcome {
            diag!("mempalace feed ({reason}) failed: {e}");
        }
        record_outcome(&inner.cfg, &reason, &outcome).await;
        lock(&inner.state).in_flight = None;
        let _ = tx.send(Some(outcome));
    });
    rx
}

/// The file that keeps the last feed's outcome for the operator (`doctor`).
pub const LAST_OUTCOME_FILE: &str = "last-outcome.json";

/// Keeps the outcome of a feed that ran (fed, nothing to feed, failed) in
/// `<agentDir>/mempalace-feed/last-outcome.json`, one small private file replaced per feed, so an
/// operator can see a failed feed after the stderr line has scrolled away. Skips are not kept:
/// nothing ran. Best effort: a feed never fails for this.
async fn record_outcome(cfg: &PalaceConfig, reason: &str, outcome: &FeedOutcome) {
    let (kind, detail) = match outcome {
        FeedOutcome::Fed { source, .. } => ("fed", source.clone()),
        FeedOutcome::NothingToFeed => ("nothing", String::new()),
        FeedOutcome::Failed(e) => ("failed", e.to_string()),
        FeedOutcome::Skipped(_) => return,
    };
    let at_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let body = json!({ "atMs": at_ms, "reason": reason, "outcome": kind, "detail": detail }).to_string();
    let dir = cfg.feed_dir();
    let _ = tokio::task::spawn_blocking(move || {
        crate::palace::files::create_private_dir(&dir)?;
        crate::palace::files::write_atomic(&dir.join(LAST_OUTCOME_FILE), body.as_bytes())
    })
    .await;
}

/// Step 1 + step 2 under the feed lock.
async fn run_feed(inner: &Inner, reason: &str) -> FeedOutcome {
    let cfg = &inner.cfg;
    if cfg.remote && cfg.ssh_target.is_none() {
        return FeedOutcome::Skipped(SkipReason::NoSshTarget);
    }
    let _lock = match FeedLock::try_acquire(&cfg.lock_path()) {
        Ok(Some(l)) => l,
        Ok(None) => return FeedOutcome::Skipped(SkipReason::Locked),
        Err(e) => {
            return FeedOutcome::Failed(PalaceError::Lock {
                path: cfg.lock_path().display().to_string(),
                error: e.to_string(),
            })
        }
    };
    // Each step of `prepare` is bounded by what is left of the prepare timeout (the child
    // processes are killed with their process group when it runs out).
    let prepared = match prepare(cfg, reason).await {
        Ok(Some(p)) => p,
        Ok(None) => return FeedOutcome::NothingToFeed,
        Err(e) => return FeedOutcome::Failed(e),
    };
    let args = json!({ "source": prepared.source, "mode": "convos", "wing": cfg.feed_wing });
    match call_bounded(inner.caller.as_ref(), "mempalace_mine", args, cfg.mine_timeout).await {
        Err(e) => FeedOutcome::Failed(PalaceError::Mine(Box::new(e))),
        Ok(text) => {
            if let Some(err) = mine_failure(&text) {
                return FeedOutcome::Failed(PalaceError::Mine(Box::new(PalaceError::Tool(err))));
            }
            if let Some(staged) = prepared.staged {
                if let Err(e) = staged.commit() {
                    diag!("mempalace feed: mined, but can't record the export state: {e}");
                }
            }
            FeedOutcome::Fed { source: prepared.source, output: text }
        }
    }
}

struct Prepared {
    /// The path `mempalace_mine` gets (a remote path in remote mode).
    source: String,
    /// The built-in export to commit after a successful mine.
    staged: Option<StagedExport>,
}

async fn prepare(cfg: &PalaceConfig, reason: &str) -> Result<Option<Prepared>, PalaceError> {
    let started = Instant::now();
    if let Some(bin) = resolve_bin(&cfg.feed_bin, cfg.search_path.as_deref()) {
        // The external exporter does its own remote transport.
        let source = run_external(&bin, reason, &cfg.feed_wing, cfg.prepare_timeout).await?;
        return Ok(source.map(|source| Prepared { source, staged: None }));
    }
    let exporter = BuiltinExporter::from_config(cfg);
    let export = tokio::task::spawn_blocking(move || exporter.prepare());
    let staged = tokio::time::timeout(cfg.prepare_timeout, export)
        .await
        .map_err(|_| PalaceError::ExportTimedOut(cfg.prepare_timeout))?
        .map_err(|e| PalaceError::ExportTask(e.to_string()))?
        .map_err(|e| PalaceError::Export(e.to_string()))?;
    let Some(staged) = staged else { return Ok(None) };
    if !cfg.remote {
        return Ok(Some(Prepared { source: staged.dir.to_string_lossy().into_owned(), staged: Some(staged) }));
    }
    let target = cfg.ssh_target.as_deref().expect("checked by run_feed");
    let left = cfg.prepare_timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
    rsync_to_remote(&staged.dir, target, &cfg.remote_path, cfg.ssh_config.as_deref(), cfg.search_path.as_deref(), left)
        .await?;
    Ok(Some(Prepared { source: cfg.remote_path.clone(), staged: Some(staged) }))
}

/// MemPalace reports most failures inside the result text: `{"success": false, "error": ...}`.
fn mine_failure(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let obj = v.as_object()?;
    let failed = obj.get("success").and_then(|s| s.as_bool()) == Some(false)
        || (obj.get("success").is_none() && obj.contains_key("error"));
    if !failed {
        return None;
    }
    Some(obj.get("error").and_then(|e| e.as_str()).map_or_else(|| text.trim().to_string(), str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palace::testutil::{session_jsonl, write_session, Behaviour, FakeCaller};
    use serde_json::Value;
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;
    use tokio::sync::Semaphore;

    const MINED: &str = r#"{"success": true, "mode": "convos", "dry_run": false, "output": "Drawers filed: 1"}"#;

    fn config(agent: &Path, extra: &[(&str, &str)]) -> PalaceConfig {
        let mut map: HashMap<String, String> = HashMap::from([
            ("PI_CODING_AGENT_DIR".to_string(), agent.display().to_string()),
            // Never pick up a real exporter from the host.
            ("MEMPALACE_FEED_BIN".to_string(), "/nonexistent/mempalace-pi-session".to_string()),
            ("PATH".to_string(), "/nonexistent".to_string()),
        ]);
        for (k, v) in extra {
            map.insert(k.to_string(), v.to_string());
        }
        let (cfg, warnings) = PalaceConfig::from_lookup(&move |k: &str| map.get(k).cloned());
        assert!(warnings.is_empty(), "{warnings:?}");
        cfg
    }

    fn good() -> String {
        session_jsonl(&[("user", "hello there"), ("assistant", "hi, how can I help?")])
    }

    /// The stderr text of a failed outcome.
    fn failed_text(o: FeedOutcome) -> Option<String> {
        match o {
            FeedOutcome::Failed(e) => Some(e.to_string()),
            _ => None,
        }
    }

    fn feeder(cfg: PalaceConfig, caller: &Arc<FakeCaller>) -> Feeder {
        Feeder::new(cfg, caller.clone() as Arc<dyn PalaceCaller>)
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[tokio::test]
    async fn builtin_feed_mines_the_staging_folder_once() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let f = feeder(
            config(agent.path(), &[("MEMPALACE_FEED_WING", "wing_test"), ("MEMPALACE_FEED_MINE_TIMEOUT_MS", "4321")]),
            &caller,
        );

        let staging = agent.path().join("mempalace-feed/staging");
        assert_eq!(
            f.shutdown("quit").await,
            FeedOutcome::Fed { source: staging.display().to_string(), output: MINED.into() }
        );
        let calls = caller.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool, "mempalace_mine");
        assert_eq!(
            calls[0].args,
            json!({"source": staging.display().to_string(), "mode": "convos", "wing": "wing_test"})
        );
        assert_eq!(calls[0].timeout, Some(Duration::from_millis(4321)));
        assert!(staging.join("--work-project--/s1.jsonl").is_file());

        // Nothing changed: no second mine.
        assert_eq!(f.shutdown("new").await, FeedOutcome::NothingToFeed);
        assert_eq!(caller.calls().len(), 1);
        assert!(!f.is_feeding());
    }

    #[tokio::test]
    async fn a_failed_mine_is_retried_by_the_next_trigger() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(r#"{"success": false, "error": "mine already running"}"#.into()));
        let f = feeder(config(agent.path(), &[]), &caller);
        assert_eq!(failed_text(f.shutdown("quit").await).as_deref(), Some("mempalace_mine: mine already running"));
        caller.set("mempalace_mine", Behaviour::Fail("Peer MCP writer active".into()));
        assert_eq!(failed_text(f.shutdown("quit").await).as_deref(), Some("mempalace_mine: Peer MCP writer active"));
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let last = || -> Value {
            serde_json::from_slice(&std::fs::read(agent.path().join("mempalace-feed").join(LAST_OUTCOME_FILE)).unwrap())
                .unwrap()
        };
        assert_eq!(
            (last()["outcome"].clone(), last()["detail"].clone()),
            (json!("failed"), json!("mempalace_mine: Peer MCP writer active"))
        );
        assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }));
        assert_eq!(last()["outcome"], "fed");
        assert_eq!(f.shutdown("quit").await, FeedOutcome::NothingToFeed);
        assert_eq!((last()["outcome"].clone(), last()["reason"].clone()), (json!("nothing"), json!("quit")));
        assert_eq!(caller.calls_to("mempalace_mine").len(), 3);
    }

    #[tokio::test]
    async fn disabled_or_remote_without_target_does_nothing() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        for off in [("MEMPALACE_FEED", "0"), ("MEMPALACE_BRIDGE", "0")] {
            let f = feeder(config(agent.path(), &[off]), &caller);
            assert_eq!(f.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::Disabled));
            assert_eq!(f.settled().await, FeedOutcome::Skipped(SkipReason::Disabled));
        }
        let f = feeder(config(agent.path(), &[("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp")]), &caller);
        assert_eq!(f.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::NoSshTarget));
        assert!(caller.calls().is_empty());
        assert!(!agent.path().join("mempalace-feed").exists(), "nothing staged");
    }

    #[tokio::test]
    async fn remote_feed_rsyncs_then_mines_the_remote_path() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let bin = tempfile::tempdir().unwrap();
        let log = bin.path().join("rsync.args");
        script(bin.path(), "rsync", &format!("for a in \"$@\"; do echo \"$a\"; done > '{}'", log.display()));
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let cfg = config(
            agent.path(),
            &[
                ("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp"),
                ("MEMPALACE_PI_SSH_TARGET", "me@palace-host"),
                ("MEMPALACE_PI_SSH_CONFIG", "/etc/ssh/pi_config"),
                ("PATH", &bin.path().display().to_string()),
            ],
        );
        let f = feeder(cfg, &caller);
        assert!(
            matches!(f.shutdown("quit").await, FeedOutcome::Fed { ref source, .. } if source == "~/.mempalace/inbox/pi-sessions")
        );
        let args: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect();
        assert_eq!(args[2], "ssh -o BatchMode=yes -F '/etc/ssh/pi_config'");
        assert_eq!(args[4], format!("{}/", agent.path().join("mempalace-feed/staging").display()));
        assert_eq!(args[5], "me@palace-host:.mempalace/inbox/pi-sessions/");
        assert_eq!(caller.calls()[0].args["source"], "~/.mempalace/inbox/pi-sessions");

        // A failing rsync fails the feed without mining.
        write_session(agent.path(), "s2", &good());
        script(
            bin.path(),
            "rsync",
            "echo 'ssh: connect to host palace-host port 22: Connection refused' >&2; exit 255",
        );
        let out = f.shutdown("quit").await;
        assert!(matches!(&out, FeedOutcome::Failed(e) if e.to_string().contains("Connection refused")), "{out:?}");
        assert_eq!(caller.calls().len(), 1);
    }

    #[tokio::test]
    async fn external_exporter_is_preferred_when_on_path() {
        let agent = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir().unwrap();
        let args = bin.path().join("args");
        script(
            bin.path(),
            "mempalace-pi-session",
            &format!("echo \"$@\" > '{}'\necho MINE_SOURCE=/srv/export", args.display()),
        );
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let cfg = config(
            agent.path(),
            &[("MEMPALACE_FEED_BIN", "mempalace-pi-session"), ("PATH", &bin.path().display().to_string())],
        );
        let f = feeder(cfg, &caller);
        assert_eq!(f.shutdown("fork").await, FeedOutcome::Fed { source: "/srv/export".into(), output: MINED.into() });
        assert_eq!(std::fs::read_to_string(&args).unwrap().trim(), "--prepare --reason fork --wing wing_conversations");
        assert_eq!(
            caller.calls()[0].args,
            json!({"source": "/srv/export", "mode": "convos", "wing": "wing_conversations"})
        );
    }

    #[tokio::test]
    async fn a_feed_is_bounded_by_prepare_plus_mine_timeouts() {
        let agent = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir().unwrap();
        let hang = script(bin.path(), "hang", "exec sleep 30");
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Hang);
        let cfg = config(
            agent.path(),
            &[
                ("MEMPALACE_FEED_BIN", hang.to_str().unwrap()),
                ("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", "200"),
                ("MEMPALACE_FEED_MINE_TIMEOUT_MS", "200"),
            ],
        );
        let t0 = Instant::now();
        let out = feeder(cfg, &caller).shutdown("quit").await;
        assert!(matches!(&out, FeedOutcome::Failed(e) if e.to_string().contains("timed out")), "{out:?}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert!(caller.calls().is_empty());

        // The mine hangs: cut at the mine timeout.
        write_session(agent.path(), "s1", &good());
        let cfg = config(agent.path(), &[("MEMPALACE_FEED_MINE_TIMEOUT_MS", "200")]);
        let t0 = Instant::now();
        let out = feeder(cfg, &caller).shutdown("quit").await;
        let took = t0.elapsed();
        assert!(matches!(&out, FeedOutcome::Failed(e) if e.to_string().contains("timed out")), "{out:?}");
        assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(3), "{took:?}");
    }

    #[tokio::test]
    async fn the_second_process_loses_the_lock_quietly() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let gate = Arc::new(Semaphore::new(0));
        let caller_a = Arc::new(FakeCaller::new());
        caller_a.set("mempalace_mine", Behaviour::Gated(gate.clone(), MINED.into()));
        let caller_b = Arc::new(FakeCaller::new());
        caller_b.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let a = feeder(config(agent.path(), &[]), &caller_a);
        let b = feeder(config(agent.path(), &[]), &caller_b);

        let running = tokio::spawn({
            let a = a.clone();
            async move { a.shutdown("quit").await }
        });
        caller_a.called.notified().await; // A holds the lock and is mining.
        assert_eq!(b.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::Locked));
        assert!(caller_b.calls().is_empty());
        gate.add_permits(1);
        assert!(matches!(running.await.unwrap(), FeedOutcome::Fed { .. }));
        // Released: B can feed now (nothing new, but it got the lock).
        assert_eq!(b.shutdown("quit").await, FeedOutcome::NothingToFeed);

        // An unrelated holder of the lock file (another pi) blocks both.
        let held = FeedLock::try_acquire(&agent.path().join("mempalace-feed.lock")).unwrap().unwrap();
        assert!(FeedLock::try_acquire(&agent.path().join("mempalace-feed.lock")).unwrap().is_none());
        assert_eq!(a.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::Locked));
        drop(held);
    }

    #[tokio::test]
    async fn overlapping_triggers_coalesce() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let gate = Arc::new(Semaphore::new(0));
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Gated(gate.clone(), MINED.into()));
        let f = feeder(config(agent.path(), &[]), &caller);

        let settled = tokio::spawn({
            let f = f.clone();
            async move { f.settled().await }
        });
        caller.called.notified().await;
        assert!(f.is_feeding());
        // A shutdown (and another settled) while the feed runs join it. `join!` polls in order,
        // so both have joined before the third branch lets the mine finish.
        let (b, c, ()) = tokio::join!(f.shutdown("quit"), f.settled(), async { gate.add_permits(1) });
        let a = settled.await.unwrap();
        assert!(matches!(a, FeedOutcome::Fed { .. }), "{a:?}");
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(caller.calls_to("mempalace_mine").len(), 1);
    }

    #[tokio::test]
    async fn settled_is_debounced_but_shutdown_is_not() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let f = feeder(config(agent.path(), &[("MEMPALACE_FEED_DEBOUNCE_MS", "3600000")]), &caller);
        assert!(matches!(f.settled().await, FeedOutcome::Fed { .. }), "the first settled counts");
        write_session(agent.path(), "s2", &good());
        assert_eq!(f.settled().await, FeedOutcome::Skipped(SkipReason::Debounced));
        assert_eq!(caller.calls().len(), 1);
        assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }), "shutdown ignores the debounce");
        assert_eq!(caller.calls().len(), 2);

        // Debounce 0: every settled feeds.
        let f = feeder(config(agent.path(), &[("MEMPALACE_FEED_DEBOUNCE_MS", "0")]), &caller);
        write_session(agent.path(), "s3", &good());
        assert!(matches!(f.settled().await, FeedOutcome::Fed { .. }));
        write_session(agent.path(), "s4", &good());
        assert!(matches!(f.settled().await, FeedOutcome::Fed { .. }));
        assert_eq!(caller.calls().len(), 4);
    }

    #[tokio::test]
    async fn a_palace_that_is_down_costs_no_work_and_feeding_resumes_when_it_is_back() {
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let bin = tempfile::tempdir().unwrap();
        let ran = bin.path().join("ran");
        let exporter = script(bin.path(), "exp", &format!("touch '{}'\necho MINE_SOURCE=/x", ran.display()));
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        *caller.down.lock().unwrap() = Some("cannot start MemPalace".into());
        let f = feeder(config(agent.path(), &[("MEMPALACE_FEED_DEBOUNCE_MS", "0")]), &caller);
        for _ in 0..3 {
            assert_eq!(f.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::PalaceDown));
            assert_eq!(f.settled().await, FeedOutcome::Skipped(SkipReason::PalaceDown));
        }
        assert!(!agent.path().join("mempalace-feed").exists(), "no staging copies");
        assert!(!agent.path().join("mempalace-feed.lock").exists(), "not even the lock");
        let ext = feeder(config(agent.path(), &[("MEMPALACE_FEED_BIN", exporter.to_str().unwrap())]), &caller);
        assert_eq!(ext.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::PalaceDown));
        assert!(!ran.exists(), "no exporter run");
        assert!(caller.calls().is_empty());
        // Back: the next trigger feeds.
        *caller.down.lock().unwrap() = None;
        assert!(matches!(f.settled().await, FeedOutcome::Fed { .. }));
    }

    #[tokio::test]
    async fn what_the_feed_writes_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let agent = tempfile::tempdir().unwrap();
        write_session(agent.path(), "s1", &good());
        let caller = Arc::new(FakeCaller::new());
        caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
        let f = feeder(config(agent.path(), &[]), &caller);
        assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }));
        let mode = |p: PathBuf| {
            std::fs::metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
        };
        let a = agent.path();
        assert_eq!(mode(a.join("mempalace-feed.lock")), 0o600);
        assert_eq!(mode(a.join("mempalace-feed")), 0o700);
        assert_eq!(mode(a.join("mempalace-feed/staging")), 0o700);
        assert_eq!(mode(a.join("mempalace-feed/staging/--work-project--")), 0o700);
        assert_eq!(mode(a.join("mempalace-feed/staging/--work-project--/s1.jsonl")), 0o600);
        assert_eq!(mode(a.join("mempalace-feed/state.json")), 0o600);
    }

    #[test]
    fn mine_failures_in_the_text() {
        assert_eq!(mine_failure(MINED), None);
        assert_eq!(mine_failure("Drawers filed: 1"), None);
        assert_eq!(mine_failure(r#"{"success": false, "error": "no palace"}"#).as_deref(), Some("no palace"));
        assert_eq!(mine_failure(r#"{"error": "Chroma database missing"}"#).as_deref(), Some("Chroma database missing"));
        assert_eq!(mine_failure(r#"{"success": false}"#).as_deref(), Some(r#"{"success": false}"#));
    }
}
