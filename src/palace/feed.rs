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

use super::export::{resolve_bin, rsync_to_remote, run_external, BuiltinExporter, StagedExport};
use super::{call_bounded, PalaceCaller, PalaceConfig};
use crate::diag;
use futures_util::FutureExt;
use serde_json::json;
use std::os::fd::AsRawFd;
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
}

/// The result of a trigger.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedOutcome {
    /// `mempalace_mine` ran on `source`; `output` is its result text.
    Fed { source: String, output: String },
    /// Nothing changed since the last export.
    NothingToFeed,
    Skipped(SkipReason),
    /// Already logged on stderr.
    Failed(String),
}

/// The non-blocking cross-process feed lock (released when dropped).
#[derive(Debug)]
pub struct FeedLock(#[allow(dead_code)] std::fs::File);

impl FeedLock {
    /// `flock(LOCK_EX | LOCK_NB)` on `path` (created if missing). `Ok(None)` when another open
    /// file description holds it.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FeedLock>> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
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

    /// True while a feed runs.
    pub fn is_feeding(&self) -> bool {
        self.inner.state.lock().unwrap().in_flight.is_some()
    }

    async fn trigger(&self, reason: &str, debounced: bool) -> FeedOutcome {
        let cfg = &self.inner.cfg;
        if !cfg.enabled || !cfg.feed {
            return FeedOutcome::Skipped(SkipReason::Disabled);
        }
        let mut rx = {
            let mut st = self.inner.state.lock().unwrap();
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
                    let (tx, rx) = watch::channel(None);
                    st.in_flight = Some(rx.clone());
                    st.last_feed = Some(Instant::now());
                    let inner = self.inner.clone();
                    let reason = reason.to_string();
                    tokio::spawn(async move {
                        let outcome = std::panic::AssertUnwindSafe(run_feed(&inner, &reason))
                            .catch_unwind()
                            .await
                            .unwrap_or_else(|_| FeedOutcome::Failed("the feed panicked".into()));
                        if let FeedOutcome::Failed(e) = &outcome {
                            diag!("mempalace feed ({reason}) failed: {e}");
                        }
                        inner.state.lock().unwrap().in_flight = None;
                        let _ = tx.send(Some(outcome));
                    });
                    rx
                }
            }
        };
        let outcome = match rx.wait_for(|o| o.is_some()).await {
            Ok(o) => o.clone().expect("checked is_some"),
            Err(_) => FeedOutcome::Failed("the feed task ended without a result".into()),
        };
        outcome
    }
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
        Err(e) => return FeedOutcome::Failed(format!("can't lock {}: {e}", cfg.lock_path().display())),
    };
    let prepared = match tokio::time::timeout(cfg.prepare_timeout, prepare(cfg, reason)).await {
        Ok(Ok(Some(p))) => p,
        Ok(Ok(None)) => return FeedOutcome::NothingToFeed,
        Ok(Err(e)) => return FeedOutcome::Failed(e),
        Err(_) => return FeedOutcome::Failed(format!("preparing the export took over {} ms", cfg.prepare_timeout.as_millis())),
    };
    let args = json!({ "source": prepared.source, "mode": "convos", "wing": cfg.feed_wing });
    match call_bounded(inner.caller.as_ref(), "mempalace_mine", args, cfg.mine_timeout).await {
        Err(e) => FeedOutcome::Failed(format!("mempalace_mine: {e}")),
        Ok(text) => {
            if let Some(err) = mine_failure(&text) {
                return FeedOutcome::Failed(format!("mempalace_mine: {err}"));
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

async fn prepare(cfg: &PalaceConfig, reason: &str) -> Result<Option<Prepared>, String> {
    let started = Instant::now();
    if let Some(bin) = resolve_bin(&cfg.feed_bin, cfg.search_path.as_deref()) {
        // The external exporter does its own remote transport.
        let source = run_external(&bin, reason, &cfg.feed_wing, cfg.prepare_timeout).await?;
        return Ok(source.map(|source| Prepared { source, staged: None }));
    }
    let exporter = BuiltinExporter::from_config(cfg);
    let staged = tokio::task::spawn_blocking(move || exporter.prepare())
        .await
        .map_err(|e| format!("the export task failed: {e}"))?
        .map_err(|e| format!("exporting sessions: {e}"))?;
    let Some(staged) = staged else { return Ok(None) };
    if !cfg.remote {
        return Ok(Some(Prepared { source: staged.dir.to_string_lossy().into_owned(), staged: Some(staged) }));
    }
    let target = cfg.ssh_target.as_deref().expect("checked by run_feed");
    let left = cfg.prepare_timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
    rsync_to_remote(&staged.dir, target, &cfg.remote_path, cfg.ssh_config.as_deref(), cfg.search_path.as_deref(), left).await?;
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

