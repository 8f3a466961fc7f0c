//! `MEMPALACE_CHECKPOINT_TURNS=N` (off by default; MemPalace's own hooks use 15): every N user
//! turns, a diary entry the bridge composes itself from those turns' user messages, as MemPalace's
//! silent checkpoint does (`hooks_cli.py`'s `_save_diary_direct`: no model turn, no tokens),
//! redacted with the feed's redactor, written with `mempalace_diary_write` under
//! `MEMPALACE_AGENT_NAME` into `wing_<slug>` (project scope: the diary wing of MemPalace's hooks) or
//! the agent's own wing (global scope).
//!
//! Never for a `[no-memory]` turn (it is neither counted nor quoted), never twice for the same
//! turns (they are taken when the entry is due), skipped while the palace is down (those turns
//! are dropped, not written later). What it did is counted for `/mempalace status`.

use crate::palace::{call_bounded, PalaceCaller, PalaceConfig};
use crate::sync::lock;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The diary tool.
const DIARY_WRITE: &str = "mempalace_diary_write";

/// Each turn is quoted by its first this many characters (as MemPalace's checkpoint does).
const TURN_CHARS: usize = 80;

/// The last this many turns are quoted (as MemPalace's checkpoint does).
const TURNS_QUOTED: usize = 10;

/// The checkpoints of this process: the user turns since the last one, and what was done.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// `MEMPALACE_CHECKPOINT_TURNS` (0: off).
    every: usize,
    // A std Mutex: pushed to or taken, never held across an await.
    turns: Mutex<Vec<String>>,
    written: AtomicU64,
    skipped_down: AtomicU64,
    failed: AtomicU64,
}

impl Checkpoints {
    pub(crate) fn new(every: usize) -> Checkpoints {
        Checkpoints { every, ..Checkpoints::default() }
    }

    /// A run the user started with `text` (their own words): the turns of a checkpoint now due
    /// (taken: never written twice), or None. A `[no-memory]` turn is neither counted nor kept.
    pub(crate) fn user_turn(&self, text: &str) -> Option<Vec<String>> {
        if self.every == 0 || crate::palace::feed::no_memory::has_marker(text) || text.trim().is_empty() {
            return None;
        }
        let mut turns = lock(&self.turns);
        turns.push(text.trim().to_string());
        (turns.len() >= self.every).then(|| std::mem::take(&mut *turns))
    }

    /// Writes the checkpoint of `turns` through `caller` (bounded by `timeout`) into `wing` (None:
    /// the agent's own), redacted as palace-tool writes are; skipped while the palace is down.
    pub(crate) async fn write(
        &self,
        cfg: &PalaceConfig,
        caller: &dyn PalaceCaller,
        turns: Vec<String>,
        wing: Option<String>,
        timeout: Duration,
    ) {
        if caller.down_reason().is_some() {
            self.skipped_down.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut args = json!({ "agent_name": cfg.agent_name, "entry": entry(&turns, &today()), "topic": "checkpoint" });
        if let Some(w) = wing {
            args["wing"] = json!(w);
        }
        crate::palace::feed::redact::calls::guard_call(cfg, true, &mut args);
        match call_bounded(caller, DIARY_WRITE, args, timeout).await {
            Ok(text) if !failed(&text) => {
                self.written.fetch_add(1, Ordering::Relaxed);
            }
            Ok(text) => self.said_failure(&text),
            Err(e) => self.said_failure(&e.to_string()),
        }
    }

    fn said_failure(&self, why: &str) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        crate::diag!("mempalace checkpoint: {DIARY_WRITE} failed: {}", crate::text::first_chars(why, 200));
    }

    /// `/mempalace status`'s checkpoint line.
    pub(crate) fn report(&self) -> String {
        if self.every == 0 {
            return "checkpoints: off (MEMPALACE_CHECKPOINT_TURNS=N writes a diary entry every N user turns)".into();
        }
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "checkpoints: every {} user turns; {} written, {} skipped (palace down), {} failed, {} turns since the last",
            self.every,
            n(&self.written),
            n(&self.skipped_down),
            n(&self.failed),
            lock(&self.turns).len()
        )
    }
}

/// The diary entry of `turns` on `date`, in the form of MemPalace's own checkpoint:
/// `CHECKPOINT:<date>|msgs:<n>|recent:<turn>|<turn>…` (the last ten turns, 80 characters each, on one line).
pub(crate) fn entry(turns: &[String], date: &str) -> String {
    let recent: Vec<String> = turns[turns.len().saturating_sub(TURNS_QUOTED)..]
        .iter()
        .map(|t| {
            let line: String = t.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "/");
            crate::text::first_chars(&line, TURN_CHARS).to_string()
        })
        .collect();
    format!("CHECKPOINT:{date}|msgs:{}|recent:{}", turns.len(), recent.join("|"))
}

/// Today (UTC) as `YYYY-MM-DD` (Howard Hinnant's days → civil date, as brain's clock does; the
/// palace floor doesn't name brain).
fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    date_of_day(secs.div_euclid(86_400))
}

/// Day `z` since the Unix epoch as `YYYY-MM-DD` (proleptic Gregorian).
fn date_of_day(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// MemPalace reports a failed write inside the text: `{"success": false, ...}`.
fn failed(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text.trim())
        .ok()
        .and_then(|v| v.get("success").and_then(serde_json::Value::as_bool))
        == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use test_support::{Behaviour, FakeCaller};

    #[test]
    fn every_n_user_turns_once_and_never_a_no_memory_turn() {
        let c = Checkpoints::new(2);
        assert_eq!(c.user_turn("first"), None);
        assert_eq!(c.user_turn("second"), Some(vec!["first".to_string(), "second".to_string()]));
        assert_eq!(c.user_turn("[No-Memory] my bank pin"), None, "not counted");
        assert_eq!(c.user_turn("  "), None);
        assert_eq!(c.user_turn("third"), None);
        assert_eq!(
            c.user_turn("fourth"),
            Some(vec!["third".to_string(), "fourth".to_string()]),
            "the same turns never twice"
        );
        assert_eq!(Checkpoints::new(0).user_turn("off"), None);
    }

    #[test]
    fn dates() {
        assert_eq!(date_of_day(0), "1970-01-01");
        assert_eq!(date_of_day(20_427), "2025-12-05");
        assert_eq!(date_of_day(11_016), "2000-02-29");
        assert_eq!(today().len(), 10);
    }

    #[test]
    fn the_entry_is_mempalace_s_checkpoint_form() {
        let long = "x".repeat(100);
        let turns = vec!["fix the\nbuild | now".to_string(), long.clone()];
        assert_eq!(
            entry(&turns, "2026-12-05"),
            format!("CHECKPOINT:2026-12-05|msgs:2|recent:fix the build / now|{}", &long[..80])
        );
        let many: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
        assert!(entry(&many, "d").ends_with("|msgs:12|recent:t2|t3|t4|t5|t6|t7|t8|t9|t10|t11"));
    }

    fn cfg(agent: &std::path::Path) -> PalaceConfig {
        let map = HashMap::from([
            ("PI_CODING_AGENT_DIR".to_string(), agent.display().to_string()),
            ("MEMPALACE_AGENT_NAME".to_string(), "pi-test".to_string()),
        ]);
        PalaceConfig::from_lookup(&move |k: &str| map.get(k).cloned()).0
    }

    #[tokio::test]
    async fn written_redacted_into_the_wing_and_skipped_while_the_palace_is_down() {
        let d = tempfile::tempdir().unwrap();
        let cfg = cfg(d.path());
        let caller = FakeCaller::new();
        caller.set(DIARY_WRITE, Behaviour::Reply(r#"{"success": true}"#.into()));
        let c = Checkpoints::new(1);
        let turns = c.user_turn("deploy with ghp_4Fq9ZkT2mX8vR1pL6sW3yN0bC5hJ7dA2eG9u please").unwrap();
        c.write(&cfg, &caller, turns, Some("wing_alpha_app".into()), Duration::from_secs(5)).await;
        let calls = caller.calls();
        assert_eq!(calls.len(), 1);
        let args = &calls[0].args;
        assert_eq!((args["agent_name"].as_str(), args["topic"].as_str()), (Some("pi-test"), Some("checkpoint")));
        assert_eq!(args["wing"], "wing_alpha_app");
        let e = args["entry"].as_str().unwrap();
        assert!(e.contains("deploy with [REDACTED:github-pat] please") && !e.contains("ghp_"), "{e}");
        // Global scope: the agent's own wing (no `wing`).
        c.write(&cfg, &caller, vec!["t".into()], None, Duration::from_secs(5)).await;
        assert!(caller.calls()[1].args.get("wing").is_none());
        *caller.down.lock().unwrap() = Some("cannot start MemPalace".into());
        c.write(&cfg, &caller, vec!["t".into()], None, Duration::from_secs(5)).await;
        assert_eq!(caller.calls().len(), 2, "nothing is called while the palace is down");
        assert!(
            c.report().contains("every 1 user turns; 2 written, 1 skipped (palace down), 0 failed"),
            "{}",
            c.report()
        );
    }
}
