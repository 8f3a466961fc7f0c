//! One feed, start to end, under the feed lock: step 1 prepares an export without the palace (the
//! external exporter, or the built-in one and, for a remote palace, an rsync), step 2 mines it
//! through the extension's own MCP client (`mempalace_mine`), and the built-in export's state is
//! committed only once the mine succeeded. Bounded by the prepare timeout plus the mine timeout.
//!
//! Redaction ([`crate::palace::feed::redact`]) happens in step 1: the built-in exporter redacts what it
//! stages; in local mode the files under an external exporter's `MINE_SOURCE` are redacted in
//! place before the mine (a remote external exporter has sent them already: said once at load).

use super::lock::FeedLock;
use super::{lacks_ssh_target, FeedOutcome, SkipReason};
use crate::diag;
use crate::palace::feed::export::{BuiltinExporter, StagedExport, WingOf};
use crate::palace::feed::process::{rsync_to_remote, run_external};
use crate::palace::feed::redact::{self, Counts, Redactor};
use crate::palace::scope::Wing;
use crate::palace::{call_bounded, PalaceCaller, PalaceConfig, PalaceError};
use crate::process_group::resolve_bin;
use serde_json::json;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Step 1 + step 2 under the feed lock.
/// `wing`: the session's wing (`MEMPALACE_FEED_WING` under global scope); under project scope the
/// built-in export stages each session under its own wing and each is mined into it.
pub(super) async fn run(
    cfg: &PalaceConfig,
    caller: &dyn PalaceCaller,
    reason: &str,
    redactor: &Arc<RedactorCell>,
    wing: &Wing,
) -> FeedOutcome {
    if lacks_ssh_target(cfg) {
        return FeedOutcome::Skipped(SkipReason::NoSshTarget);
    }
    let _lock = match FeedLock::try_acquire(&cfg.lock_path()) {
        Ok(Some(l)) => l,
        Ok(None) => return FeedOutcome::Skipped(SkipReason::Locked),
        Err(e) => {
            return FeedOutcome::Failed(PalaceError::Lock {
                path: cfg.lock_path().display().to_string(),
                error: e.into(),
            })
        }
    };
    // Each step of `prepare` is bounded by what is left of the prepare timeout (the child
    // processes are killed with their process group when it runs out).
    let prepared = match prepare(cfg, reason, redactor, wing).await {
        Ok(Some(p)) => p,
        Ok(None) => return FeedOutcome::NothingToFeed,
        Err(e) => return FeedOutcome::Failed(e),
    };
    // One mine per wing: the session's, or under project scope each wing the export staged into
    // (its folder of the staging folder), all within the mine timeout.
    let wings = prepared.staged.as_ref().map(|s| s.wings.clone()).unwrap_or_default();
    let mines: Vec<(String, String)> = if wings.is_empty() {
        vec![(prepared.source.clone(), wing.name.clone())]
    } else {
        wings.into_iter().map(|w| (format!("{}/{w}", prepared.source.trim_end_matches('/')), w)).collect()
    };
    let started = Instant::now();
    let mut outputs = Vec::new();
    for (source, wing) in &mines {
        let left = match outputs.is_empty() {
            true => cfg.mine_timeout,
            false => cfg.mine_timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1)),
        };
        let args = json!({ "source": source, "mode": "convos", "wing": wing });
        match call_bounded(caller, "mempalace_mine", args, left).await {
            Err(e) => return FeedOutcome::Failed(PalaceError::Mine(Box::new(e))),
            Ok(text) => {
                if let Some(err) = mine_failure(&text) {
                    return FeedOutcome::Failed(PalaceError::Mine(Box::new(PalaceError::Tool(err))));
                }
                outputs.push(text);
            }
        }
    }
    if let Some(staged) = prepared.staged {
        if let Err(e) = staged.commit() {
            diag!("mempalace feed: mined, but can't record the export state: {e}");
        }
    }
    let source = mines.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>().join(", ");
    FeedOutcome::Fed { source, output: outputs.join("\n"), redacted: prepared.redacted }
}

struct Prepared {
    /// The path `mempalace_mine` gets (a remote path in remote mode).
    source: String,
    /// The built-in export to commit after a successful mine.
    staged: Option<StagedExport>,
    /// What redaction replaced, per kind.
    redacted: Counts,
}

/// The feeder's redactor, built on the first feed (compiling the rules takes a moment: not at
/// pi's load) and kept; None inside when `MEMPALACE_FEED_REDACT=off`.
pub(super) type RedactorCell = OnceLock<Option<Arc<Redactor>>>;

/// Runs `work` with the redactor on the blocking pool, bounded by `left`.
async fn blocking<T: Send + 'static>(
    cfg: &PalaceConfig,
    cell: &Arc<RedactorCell>,
    left: Duration,
    work: impl FnOnce(Option<Arc<Redactor>>) -> std::io::Result<T> + Send + 'static,
) -> Result<T, PalaceError> {
    let (cell, cfg2) = (cell.clone(), cfg.clone());
    let task = tokio::task::spawn_blocking(move || work(cell.get_or_init(|| redact::for_feed(&cfg2)).clone()));
    tokio::time::timeout(left, task)
        .await
        .map_err(|_| PalaceError::ExportTimedOut(cfg.prepare_timeout))?
        .map_err(|e| PalaceError::ExportTask(e.to_string()))?
        .map_err(|e| PalaceError::Export(e.into()))
}

async fn prepare(
    cfg: &PalaceConfig,
    reason: &str,
    cell: &Arc<RedactorCell>,
    wing: &Wing,
) -> Result<Option<Prepared>, PalaceError> {
    let started = Instant::now();
    let left = || cfg.prepare_timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
    if let Some(bin) = resolve_bin(&cfg.feed_bin, cfg.search_path.as_deref()) {
        // The external exporter does its own remote transport.
        let Some(source) = run_external(&bin, reason, &wing.name, cfg.prepare_timeout).await? else {
            return Ok(None);
        };
        let mut redacted = Counts::new();
        if !cfg.remote {
            // Local: the exporter's files are here, and are redacted in place before the mine.
            let dir = std::path::PathBuf::from(&source);
            redacted = blocking(cfg, cell, left(), move |r| {
                let mut counts = Counts::new();
                if let Some(r) = r {
                    if dir.exists() {
                        redact::redact_tree(&r, &dir, &mut counts)?;
                    }
                }
                Ok(counts)
            })
            .await?;
        }
        return Ok(Some(Prepared { source, staged: None, redacted }));
    }
    let cfg2 = cfg.clone();
    let by_wing =
        wing.cwd.clone().map(|own_cwd| WingOf { own_cwd, own_wing: wing.name.clone(), home: cfg.home.clone() });
    let staged = blocking(cfg, cell, cfg.prepare_timeout, move |r| {
        BuiltinExporter::from_config(&cfg2, r).by_wing(by_wing).prepare()
    })
    .await?;
    let Some(mut staged) = staged else { return Ok(None) };
    let redacted = std::mem::take(&mut staged.redacted);
    if !cfg.remote {
        return Ok(Some(Prepared {
            source: staged.dir.to_string_lossy().into_owned(),
            staged: Some(staged),
            redacted,
        }));
    }
    // `run` skips a remote palace without a target before this.
    let target = cfg.ssh_target.as_deref().ok_or_else(|| PalaceError::Target("no MEMPALACE_PI_SSH_TARGET".into()))?;
    rsync_to_remote(
        &staged.dir,
        target,
        &cfg.remote_path,
        cfg.ssh_config.as_deref(),
        cfg.search_path.as_deref(),
        left(),
    )
    .await?;
    Ok(Some(Prepared { source: cfg.remote_path.clone(), staged: Some(staged), redacted }))
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

    #[test]
    fn mine_failures_in_the_text() {
        let mined = r#"{"success": true, "mode": "convos", "dry_run": false, "output": "Drawers filed: 1"}"#;
        assert_eq!(mine_failure(mined), None);
        assert_eq!(mine_failure("Drawers filed: 1"), None);
        assert_eq!(mine_failure(r#"{"success": false, "error": "no palace"}"#).as_deref(), Some("no palace"));
        assert_eq!(mine_failure(r#"{"error": "Chroma database missing"}"#).as_deref(), Some("Chroma database missing"));
        assert_eq!(mine_failure(r#"{"success": false}"#).as_deref(), Some(r#"{"success": false}"#));
    }
}
