//! Per-prompt recall (`MEMPALACE_RECALL=on`): for each run a user's own prompt starts, MemPalace's
//! own search with a short keyword query made from the prompt and, when its best drawer scores at
//! or above `MEMPALACE_RECALL_MIN_SCORE`, the drawers close to it injected as one hidden
//! `mempalace-recall` message.
//!
//! Small and never in the way (docs/mempalace-bridge.md, "Recall"): the prompt waits at most
//! `MEMPALACE_RECALL_BUDGET_MS` (the search is cancelled on the server when it runs out), the
//! message is capped at `MEMPALACE_RECALL_MAX_BYTES`, a drawer already injected in this session is
//! not injected again, and a prompt with no words worth searching for costs no search at all.
//! Irrelevant recall on every prompt costs users real money: the threshold and the cap are the
//! feature.
//!
//! [`query`] makes the search's query of a prompt; [`drawers`] reads the answer and composes the
//! message from the drawers [`select`] keeps (each whole, or from its best-matching turn when too
//! long: [`snippet`]), and keeps the session's memory of what was shown; [`Recall`] here
//! runs the search through the caller the bridge hands it and owns the deadline.

mod drawers;
mod query;
mod select;
mod snippet;

pub(crate) use drawers::{diary_keys, recalled_ids, Injected};

use super::HiddenMessage;
use crate::env::EnvReader;
use crate::palace::{PalaceCaller, PalaceError};
use crate::sync::lock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `customType` of the injected message.
pub(crate) const RECALL_CUSTOM_TYPE: &str = "mempalace-recall";

/// The smallest `MEMPALACE_RECALL_MAX_BYTES` that holds the header and one useful line.
pub(crate) const MIN_MAX_BYTES: usize = 300;

/// `MEMPALACE_RECALL*`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallConfig {
    /// `MEMPALACE_RECALL=on` (default `off`).
    pub on: bool,
    /// `MEMPALACE_RECALL_BUDGET_MS` (default 500, > 0): the longest a prompt waits.
    pub budget: Duration,
    /// `MEMPALACE_RECALL_MAX_BYTES` (default 2000, ≥ [`MIN_MAX_BYTES`]).
    pub max_bytes: usize,
    /// `MEMPALACE_RECALL_MIN_SCORE` (default 0.43, chosen on LoCoMo by bench/recall-locomo.mjs and
    /// the labelled set of bench/recall.mjs):
    /// the least `similarity` of the search's best drawer for anything to be recalled (the other
    /// drawers' floor is relative: `select`).
    pub min_score: f64,
    /// `MEMPALACE_RECALL_OTHER_MIN_SCORE` (default: none): under project scope, the least
    /// `similarity` of a drawer of another wing than the session's; None: never one.
    pub other_min_score: Option<f64>,
}

impl RecallConfig {
    /// Reads the four variables; a malformed value is a warning and the default.
    pub(crate) fn read(r: &EnvReader<'_>) -> RecallConfig {
        let on = match r.text("MEMPALACE_RECALL").map(|v| v.to_ascii_lowercase()) {
            None => false,
            Some(v) if v == "on" => true,
            Some(v) if v == "off" => false,
            Some(v) => {
                r.warn(format!("MEMPALACE_RECALL={v:?} is not on or off; recall stays off"));
                false
            }
        };
        RecallConfig {
            on,
            budget: r.millis("MEMPALACE_RECALL_BUDGET_MS", false),
            max_bytes: r.number(
                "MEMPALACE_RECALL_MAX_BYTES",
                |n: &usize| *n >= MIN_MAX_BYTES,
                &format!("a number ≥ {MIN_MAX_BYTES}"),
            ),
            min_score: r.fraction("MEMPALACE_RECALL_MIN_SCORE"),
            other_min_score: r.optional_fraction("MEMPALACE_RECALL_OTHER_MIN_SCORE"),
        }
    }

    /// `/mempalace status`'s recall line.
    pub(crate) fn report(&self) -> String {
        if !self.on {
            return "recall: off (MEMPALACE_RECALL=on recalls drawers for each prompt)".to_string();
        }
        format!(
            "recall: on, within {} ms, when the best drawer's similarity is ≥ {:.2}, at most {} bytes",
            self.budget.as_millis(),
            self.min_score,
            self.max_bytes
        )
    }
}

/// What the wait leaves of the budget for handing its answer back: the message composed, the
/// promise settled on the JS thread and pi's `await` resumed (2-11 ms measured past a 500 ms
/// budget on a loaded machine when the wait took all of it); a tenth of a short budget.
fn hand_back(budget: Duration) -> Duration {
    Duration::from_millis(15).min(budget / 10)
}

/// A recall search under way for the run being started. The search bounds itself: its call is
/// given what is left of the budget as its timeout, so the caller cancels the request on the server
/// (`notifications/cancelled`) at the deadline, whether or not anyone still waits for it. The
/// answer is read in the search's own task (on the blocking pool), before the deadline: what is
/// left to do after the wait (composing the message from at most
/// [`drawers::SEARCH_TEXT_MAX_BYTES`] of each drawer) is small whatever the server answered.
struct PendingRecall {
    query: String,
    /// The budget's end, counted from when pi began waiting for the run's handlers
    /// ([`RunStart::at`](super::RunStart)).
    deadline: tokio::time::Instant,
    /// The session's wing under project scope: drawers of other wings only above
    /// `other_min_score`.
    wing: Option<String>,
    search: tokio::task::JoinHandle<Result<Result<Vec<drawers::Hit>, drawers::Unreadable>, PalaceError>>,
}

/// Recall in this process: the search of the run being started (`before_agent_start` starts it,
/// pi's second handler of that event waits for it until its deadline, [`Recall::message`]) and what
/// recall did ([`RecallCounters`]).
#[derive(Default)]
pub(crate) struct Recall {
    // A std Mutex: set or taken, never held across an await.
    pending: Mutex<Option<PendingRecall>>,
    counters: RecallCounters,
}

impl Recall {
    /// A new session thread: a search nobody waited for is forgotten (it ends at its own deadline).
    pub(crate) fn forget(&self) {
        *lock(&self.pending) = None;
    }

    /// Starts this run's recall search in the background through `caller` (when recall is on and
    /// `words`, the prompt's own, hold any worth searching for), bounded by the recall budget from
    /// `at` (when pi began waiting for the run's handlers; None: now); any earlier run's search
    /// nobody waited for is forgotten.
    /// `wing`: the session's wing under project scope: the search keeps to it (MemPalace's `wing`
    /// filter) unless `MEMPALACE_RECALL_OTHER_MIN_SCORE` lets other wings' drawers in.
    pub(crate) fn start(
        &self,
        cfg: &RecallConfig,
        caller: Arc<dyn PalaceCaller>,
        words: Option<&str>,
        wing: Option<&str>,
        at: Option<std::time::Instant>,
    ) {
        let mut pending = lock(&self.pending);
        *pending = None;
        if !cfg.on {
            return;
        }
        let Some(query) = words.and_then(query::query_of) else {
            return;
        };
        let deadline = at.map_or_else(tokio::time::Instant::now, tokio::time::Instant::from_std) + cfg.budget
            - hand_back(cfg.budget);
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            self.counters.late::<()>();
            return;
        }
        let mut args = query::search_args(&query);
        if let (Some(w), None) = (wing, cfg.other_min_score) {
            args["wing"] = serde_json::Value::from(w);
        }
        let search = tokio::spawn(async move {
            let answer = caller.call(query::SEARCH_TOOL, args, Some(left)).await?;
            // Read on the blocking pool: however long a huge answer takes to read, no thread that
            // runs timers waits for it, and the prompt's wait ends at its deadline.
            let read = tokio::task::spawn_blocking(move || drawers::hits(&answer)).await;
            Ok(read.unwrap_or_else(|e| Err(drawers::Unreadable::Failed(format!("reading its answer ended: {e}")))))
        });
        let wing = wing.map(str::to_string);
        *pending = Some(PendingRecall { query, deadline, wing, search });
    }

    /// The recall message of the run being started, or None (recall off, a run a user didn't
    /// start, nothing scored high enough or everything was already `injected`, the budget ran out,
    /// the palace is down). Waits at most until the budget's end; never fails.
    pub(crate) async fn message(&self, cfg: &RecallConfig, injected: &Injected) -> Option<HiddenMessage> {
        let mut pending = lock(&self.pending).take()?;
        let answer = tokio::time::timeout_at(pending.deadline, &mut pending.search).await;
        let counters = &self.counters;
        let read = match answer {
            Ok(Ok(Ok(read))) => read,
            Err(_) | Ok(Ok(Err(PalaceError::TimedOut { .. }))) => return counters.late(),
            Ok(Ok(Err(e))) => return counters.failed(&e.to_string()),
            Ok(Err(e)) => return counters.failed(&format!("the search task ended: {e}")),
        };
        match read {
            Ok(mut hits) => {
                keep_to_wing(&mut hits, pending.wing.as_deref(), cfg.other_min_score);
                let message = injected.compose(&pending.query, &hits, cfg);
                counters.answered(message.as_deref());
                message.map(HiddenMessage::recall)
            }
            Err(why) => counters.failed(&why.to_string()),
        }
    }

    /// After a handshake, with recall on: one search in the background through `caller`, so the
    /// server loads its embedding model now rather than on the first prompt's recall.
    pub(crate) fn warm(cfg: &RecallConfig, caller: Arc<dyn PalaceCaller>, timeout: Duration) {
        if !cfg.on || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        tokio::spawn(async move {
            let _ = caller.call(query::SEARCH_TOOL, query::search_args("warm up"), Some(timeout)).await;
        });
    }

    /// `/mempalace status`'s recall line: the settings and what recall did.
    pub(crate) fn report(&self, cfg: &RecallConfig) -> String {
        self.counters.report(cfg)
    }
}

/// Under project scope (`wing`), the drawers of other wings scoring below `other_min_score` (all
/// of them when it is None) are dropped.
fn keep_to_wing(hits: &mut Vec<drawers::Hit>, wing: Option<&str>, other_min_score: Option<f64>) {
    if let Some(w) = wing {
        hits.retain(|h| h.wing == w || other_min_score.is_some_and(|m| h.similarity >= m));
    }
}

/// What recall did in this process, for `/mempalace status`; a failing search is said once on
/// stderr until one succeeds again.
#[derive(Debug, Default)]
struct RecallCounters {
    searched: AtomicU64,
    injected: AtomicU64,
    bytes: AtomicU64,
    late: AtomicU64,
    failed: AtomicU64,
    said_failure: AtomicBool,
}

impl RecallCounters {
    /// A search answered in time; `message` is what it injected.
    pub(crate) fn answered(&self, message: Option<&str>) {
        self.searched.fetch_add(1, Ordering::Relaxed);
        self.said_failure.store(false, Ordering::Relaxed);
        if let Some(m) = message {
            self.injected.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(m.len() as u64, Ordering::Relaxed);
        }
    }

    /// The budget ran out: nothing is injected.
    pub(crate) fn late<T>(&self) -> Option<T> {
        self.late.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// The search failed (`why`): nothing is injected; said once until a search succeeds.
    pub(crate) fn failed<T>(&self, why: &str) -> Option<T> {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if !self.said_failure.swap(true, Ordering::Relaxed) {
            crate::diag!("mempalace recall: {why}; prompts go on without recall");
        }
        None
    }

    /// `/mempalace status`'s recall line: the settings and what recall did.
    pub(crate) fn report(&self, cfg: &RecallConfig) -> String {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        if !cfg.on {
            return cfg.report();
        }
        format!(
            "{}; {} searched, {} injected ({} bytes), {} over the budget, {} failed",
            cfg.report(),
            n(&self.searched),
            n(&self.injected),
            n(&self.bytes),
            n(&self.late),
            n(&self.failed)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_scope_keeps_other_wings_out_unless_they_score_above_their_threshold() {
        let hit = |wing: &str, similarity| drawers::Hit {
            id: format!("{wing}-{similarity}"),
            wing: wing.into(),
            room: "r".into(),
            similarity,
            text: "t".into(),
        };
        let all = vec![hit("alpha_app", 0.5), hit("beta_service", 0.9), hit("beta_service", 0.6)];
        let kept = |wing, other| {
            let mut h = all.clone();
            keep_to_wing(&mut h, wing, other);
            h.into_iter().map(|h| h.id).collect::<Vec<_>>()
        };
        assert_eq!(kept(None, None).len(), 3, "global scope: every wing");
        assert_eq!(kept(Some("alpha_app"), None), ["alpha_app-0.5"]);
        assert_eq!(kept(Some("alpha_app"), Some(0.8)), ["alpha_app-0.5", "beta_service-0.9"]);
        let vars = |k: &str| (k == "MEMPALACE_RECALL_OTHER_MIN_SCORE").then(|| "2".to_string());
        let r = EnvReader::new(&vars);
        assert_eq!(RecallConfig::read(&r).other_min_score, None, "a malformed value: never");
        assert_eq!(r.finish().0.len(), 1);
    }

    fn on(budget_ms: u64) -> RecallConfig {
        RecallConfig {
            on: true,
            budget: Duration::from_millis(budget_ms),
            max_bytes: 2000,
            min_score: 0.43,
            other_min_score: None,
        }
    }

    #[tokio::test]
    async fn the_budget_counts_from_when_the_prompt_began_waiting() {
        // A stalled search server: the budget alone ends the wait.
        let fake = Arc::new(test_support::FakeCaller::new());
        fake.set(query::SEARCH_TOOL, test_support::Behaviour::Hang);
        let (recall, injected, cfg) = (Recall::default(), Injected::default(), on(500));
        // pi began waiting 400 ms before the core's handler ran (the hop to a worker thread of a
        // busy runtime, the JS handler's own work): 100 ms are left.
        let at = std::time::Instant::now() - Duration::from_millis(400);
        recall.start(&cfg, fake.clone(), Some("billing database"), None, Some(at));
        assert_eq!(recall.message(&cfg, &injected).await, None);
        let held = at.elapsed();
        // The budget less what handing the answer back takes; the slack is for a loaded machine
        // (the wait was 500 ms more before).
        assert!(
            held >= cfg.budget - hand_back(cfg.budget) && held < Duration::from_millis(800),
            "the prompt waited {held:?} in all"
        );
        let searched = fake.calls_to(query::SEARCH_TOOL);
        // What is left, less the hand-back: the search's own timeout ends before the budget does.
        let left = Duration::from_millis(100) - hand_back(cfg.budget);
        assert!(searched[0].timeout.is_some_and(|t| t <= left), "{searched:?}");
        // Past the budget already: no search at all, and it is counted as over the budget.
        let at = std::time::Instant::now() - Duration::from_millis(600);
        recall.start(&cfg, fake.clone(), Some("billing database"), None, Some(at));
        assert_eq!(recall.message(&cfg, &injected).await, None);
        assert_eq!(fake.calls_to(query::SEARCH_TOOL).len(), 1);
        let report = recall.report(&cfg);
        assert!(report.contains("0 searched, 0 injected (0 bytes), 2 over the budget"), "{report}");
    }

    #[tokio::test]
    async fn a_huge_answer_does_not_hold_the_prompt_past_the_budget() {
        // A server that answers at once with ten drawers of 2 MB each: reading and composing that
        // took seconds after the wait was over.
        let drawer = "Great! I painted a sunrise over the lake with the kids on Sunday.\n".repeat(32_000);
        let results: Vec<_> = (0..10)
            .map(|i| serde_json::json!({"drawer_id": format!("d{i}"), "wing": "w", "room": "r", "similarity": 0.9, "text": drawer}))
            .collect();
        let fake = Arc::new(test_support::FakeCaller::new());
        fake.set(
            query::SEARCH_TOOL,
            test_support::Behaviour::Reply(serde_json::json!({ "results": results }).to_string()),
        );
        let (recall, injected, cfg) = (Recall::default(), Injected::default(), on(100));
        let t0 = std::time::Instant::now();
        recall.start(&cfg, fake, Some("painting sunrise lake"), None, None);
        let message = recall.message(&cfg, &injected).await;
        let held = t0.elapsed();
        // The budget plus slack for a loaded machine; the message, if the answer was read in time,
        // is within its cap.
        assert!(held < Duration::from_millis(400), "held {held:?} at a budget of 100 ms");
        assert!(message.is_none_or(|m| m.content.len() <= cfg.max_bytes));
    }

    #[test]
    fn the_variables() {
        let read = |vars: &[(&str, &str)]| {
            let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
            let r = EnvReader::new(&get);
            let c = RecallConfig::read(&r);
            (c, r.finish().0)
        };
        let (c, w) = read(&[]);
        assert_eq!(
            c,
            RecallConfig {
                on: false,
                budget: Duration::from_millis(500),
                max_bytes: 2000,
                min_score: 0.43,
                other_min_score: None
            }
        );
        assert!(w.is_empty());
        let (c, w) = read(&[
            ("MEMPALACE_RECALL", "ON"),
            ("MEMPALACE_RECALL_BUDGET_MS", "250"),
            ("MEMPALACE_RECALL_MAX_BYTES", "800"),
            ("MEMPALACE_RECALL_MIN_SCORE", "0.55"),
        ]);
        assert_eq!(
            c,
            RecallConfig {
                on: true,
                budget: Duration::from_millis(250),
                max_bytes: 800,
                min_score: 0.55,
                other_min_score: None
            }
        );
        assert!(w.is_empty(), "{w:?}");
        let (c, w) = read(&[
            ("MEMPALACE_RECALL", "yes"),
            ("MEMPALACE_RECALL_BUDGET_MS", "0"),
            ("MEMPALACE_RECALL_MAX_BYTES", "10"),
            ("MEMPALACE_RECALL_MIN_SCORE", "1.5"),
        ]);
        assert_eq!(
            c,
            RecallConfig {
                on: false,
                budget: Duration::from_millis(500),
                max_bytes: 2000,
                min_score: 0.43,
                other_min_score: None
            }
        );
        assert_eq!(w.len(), 4, "{w:?}");
    }
}
