//! Automatic transcript feeding: prepare an export (step 1, palace-free), then mine it through
//! the extension's own MCP client (step 2, `mempalace_mine`), because the palace is
//! single-writer and that client holds it.
//!
//! Triggers: [`Feeder::shutdown`] (pi `session_shutdown`) and [`Feeder::settled`] (debounced
//! `agent_settled` / `agent_end`). Overlapping triggers coalesce: whoever arrives while a feed
//! runs gets that feed's outcome. Two processes never feed at once ([`lock`]: the loser returns
//! quietly). Every failure is logged on stderr and returned as [`FeedOutcome::Failed`], never
//! raised; a feed is bounded by the prepare timeout plus the mine timeout ([`pipeline`]). The
//! outcome of each feed that ran is kept for the operator ([`outcome`]).
//!
//! This module schedules; the skip rules that depend on the configuration alone are here too
//! ([`SkipReason::of_config`]), for `doctor` and the dry run to say.

pub mod export;
mod lock;
pub(crate) mod no_memory;
mod outcome;
mod pipeline;
pub(crate) mod process;
pub mod redact;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use outcome::path as outcome_path;
pub use outcome::{last_feed_line, redaction_line, LastFeed, Ran};

use super::scope::SessionWing;
use super::{PalaceCaller, PalaceConfig, PalaceError};
// The palace modules the feed's own files (export, process, redact) name as `super::…`.
use super::{config, files};
use crate::diag;
use crate::sync::lock;
use futures_util::FutureExt;
use std::sync::{Arc, Mutex};
use std::time::Instant;
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
    /// pi's own MCP writes the palace and the bridge only reads it through a read-only twin
    /// (`palace::pi_mcp`): a read-only server can't mine.
    PiMcpWrites,
}

impl SkipReason {
    /// Why no feed of this configuration ever runs ([`SkipReason::Disabled`] or
    /// [`SkipReason::NoSshTarget`]), or None. A trigger checks the first before anything else and
    /// the second when its feed starts.
    pub(crate) fn of_config(cfg: &PalaceConfig) -> Option<SkipReason> {
        if is_off(cfg) {
            Some(SkipReason::Disabled)
        } else if reads_only(cfg) {
            Some(SkipReason::PiMcpWrites)
        } else if lacks_ssh_target(cfg) {
            Some(SkipReason::NoSshTarget)
        } else {
            None
        }
    }
}

/// Feeding is off: `MEMPALACE_BRIDGE=0` or `MEMPALACE_FEED=0`.
fn is_off(cfg: &PalaceConfig) -> bool {
    !cfg.enabled() || !cfg.feed
}

/// The bridge reads the palace through a read-only twin of pi's own server: nothing to mine with.
fn reads_only(cfg: &PalaceConfig) -> bool {
    matches!(cfg.pi_mcp, Some(crate::palace::twin::PiRole::Writes { .. }))
}

/// A remote palace the transcripts can't be sent to: no `MEMPALACE_PI_SSH_TARGET`.
fn lacks_ssh_target(cfg: &PalaceConfig) -> bool {
    cfg.remote && cfg.ssh_target.is_none()
}

/// The one stderr line at load when this configuration feeds transcripts unredacted: redaction is
/// off, or an external exporter sends them to a remote palace itself (the extension never sees
/// those files). None when feeding is off or everything fed is redacted.
pub(crate) fn unredacted_warning(cfg: &PalaceConfig) -> Option<String> {
    if SkipReason::of_config(cfg).is_some() {
        return None;
    }
    if cfg.redact == super::config::Redact::Off {
        return Some("mempalace feed: MEMPALACE_FEED_REDACT=off: transcripts are fed to the palace unredacted (unsafe for a shared palace)".into());
    }
    let bin = crate::process_group::resolve_bin(&cfg.feed_bin, cfg.search_path.as_deref())?;
    cfg.remote.then(|| format!(
        "mempalace feed: the external exporter {} sends transcripts to the remote palace itself: they leave unredacted (unset MEMPALACE_FEED_BIN or take it off PATH to use the built-in, redacting exporter)",
        bin.display()
    ))
}

/// The result of a trigger.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedOutcome {
    /// `mempalace_mine` ran on `source`; `output` is its result text.
    Fed {
        source: String,
        output: String,
        /// What redaction replaced in what was fed, per kind (never the values).
        redacted: crate::palace::feed::redact::Counts,
    },
    /// Nothing changed since the last export.
    NothingToFeed,
    Skipped(SkipReason),
    /// Already logged on stderr.
    Failed(PalaceError),
}

struct State {
    in_flight: Option<watch::Receiver<Option<FeedOutcome>>>,
    last_feed: Option<Instant>,
}

struct Inner {
    cfg: PalaceConfig,
    /// The session's wing, which the bridge sets at `session_start`.
    wing: Arc<SessionWing>,
    caller: Arc<dyn PalaceCaller>,
    state: Mutex<State>,
    redactor: Arc<pipeline::RedactorCell>,
}

/// Feeds pi's transcripts into the palace on pi's triggers. Cheap to clone (shared state).
/// The triggers spawn the feed on the current tokio runtime, so they must be called inside one.
#[derive(Clone)]
pub struct Feeder {
    inner: Arc<Inner>,
}

impl Feeder {
    /// The feeder of `cfg`; says at load, once, when transcripts would be fed unredacted
    /// ([`unredacted_warning`]).
    pub fn new(cfg: PalaceConfig, caller: Arc<dyn PalaceCaller>) -> Self {
        Self::for_wing(cfg, caller, Arc::default())
    }

    /// The same, feeding each session into the wing `wing` holds (set at `session_start`; until
    /// then the wing of the process's cwd, [`SessionWing::or_default`]).
    pub fn for_wing(cfg: PalaceConfig, caller: Arc<dyn PalaceCaller>, wing: Arc<SessionWing>) -> Self {
        if let Some(line) = unredacted_warning(&cfg) {
            diag!("{line}");
        }
        let state = Mutex::new(State { in_flight: None, last_feed: None });
        Feeder { inner: Arc::new(Inner { cfg, wing, caller, state, redactor: Arc::default() }) }
    }

    /// pi `session_shutdown {reason}`: feed now (or join the feed that is running).
    pub async fn shutdown(&self, reason: &str) -> FeedOutcome {
        self.trigger(reason, false).await
    }

    /// pi `session_before_compact`: feed now, not debounced (what pi is about to summarise away
    /// is in the palace first), or join the feed that is running. The debounce window starts again.
    pub async fn compacting(&self) -> FeedOutcome {
        self.trigger("compact", false).await
    }

    /// pi `agent_settled` (or `agent_end`): feed unless a feed started less than
    /// `MEMPALACE_FEED_DEBOUNCE_MS` ago; the first one after start always counts. Joins a
    /// running feed.
    pub async fn settled(&self) -> FeedOutcome {
        self.trigger("settled", true).await
    }

    /// True while a feed runs (the tests watch coalescing with it).
    #[cfg(test)]
    pub(crate) fn is_feeding(&self) -> bool {
        lock(&self.inner.state).in_flight.is_some()
    }

    async fn trigger(&self, reason: &str, debounced: bool) -> FeedOutcome {
        let cfg = &self.inner.cfg;
        if is_off(cfg) {
            return FeedOutcome::Skipped(SkipReason::Disabled);
        }
        if reads_only(cfg) {
            return FeedOutcome::Skipped(SkipReason::PiMcpWrites);
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
        let outcome = rx.wait_for(|o| o.is_some()).await.ok().and_then(|o| o.clone());
        outcome.unwrap_or(FeedOutcome::Failed(PalaceError::NoResult))
    }
}

/// Runs a feed in the background; its outcome (said on stderr when it failed) is sent on the
/// returned channel once it ends, after `in_flight` was cleared.
fn spawn_feed(inner: Arc<Inner>, reason: String) -> watch::Receiver<Option<FeedOutcome>> {
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let wing = inner.wing.or_default(inner.cfg.scope, &inner.cfg.feed_wing, inner.cfg.home.as_deref());
        let outcome = std::panic::AssertUnwindSafe(pipeline::run(
            &inner.cfg,
            inner.caller.as_ref(),
            &reason,
            &inner.redactor,
            &wing,
        ))
        .catch_unwind()
        .await
        .unwrap_or(FeedOutcome::Failed(PalaceError::Panicked));
        if let FeedOutcome::Failed(e) = &outcome {
            diag!("mempalace feed ({reason}) failed: {e}");
        }
        outcome::record(inner.cfg.feed_dir(), &reason, &outcome).await;
        lock(&inner.state).in_flight = None;
        let _ = tx.send(Some(outcome));
    });
    rx
}
