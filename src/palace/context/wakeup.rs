//! Wake-up injection: once per fresh session, on the first `before_agent_start`, the palace's
//! status and this agent's diary are injected as a hidden `mempalace-wakeup` message.
//!
//! Bounded: both calls run concurrently, each capped by a timeout; whatever answered in time is
//! used, and if nothing did there is no injection. The prompt is never held hostage.

use crate::diag;
use crate::palace::{call_bounded, PalaceCaller};
use serde_json::json;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

/// The `customType` of the injected message.
pub(crate) const WAKEUP_CUSTOM_TYPE: &str = "mempalace-wakeup";

const IDLE: u8 = 0;
const ARMED: u8 = 1;
const OWED: u8 = 2;

/// "Fresh session" state machine: `session_start` with reason `startup` or `new` arms it, any
/// other reason (`resume`, `fork`, `reload`, unknown) disarms it; [`WakeupGate::take`] fires
/// once per arming. A wake-up that fired but couldn't reach the palace is [owed](WakeupGate::owe)
/// to a later prompt of the session, given once the palace is back ([`WakeupGate::take_owed`]).
#[derive(Debug, Default)]
pub(crate) struct WakeupGate(AtomicU8, AtomicU64);

impl WakeupGate {
    /// Which `session_start` the gate is on (each one counts): an owed wake-up belongs to one.
    pub(crate) fn session(&self) -> u64 {
        self.1.load(Ordering::SeqCst)
    }

    /// True for the `session_start` reasons that begin a fresh thread.
    pub(crate) fn is_fresh_reason(reason: &str) -> bool {
        matches!(reason, "startup" | "new")
    }

    /// pi's `session_start {reason}`.
    pub(crate) fn session_start(&self, reason: &str) {
        let next = if Self::is_fresh_reason(reason) { ARMED } else { IDLE };
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.store(next, Ordering::SeqCst);
    }

    /// On `before_agent_start`: true exactly once after an arming `session_start`.
    pub(crate) fn take(&self) -> bool {
        self.0.compare_exchange(ARMED, IDLE, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// The wake-up [`take`](Self::take) fired in `session` didn't reach the palace (down, or no
    /// handshake within its budget): a later prompt of that session gets it. After another
    /// `session_start` (which decided afresh) nothing is owed.
    pub(crate) fn owe(&self, session: u64) {
        if self.session() == session {
            let _ = self.0.compare_exchange(IDLE, OWED, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// True once for an owed wake-up.
    pub(crate) fn take_owed(&self) -> bool {
        self.0.compare_exchange(OWED, IDLE, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }
}

/// The wake-up's content, and the keys of the diary entries it shows (recall doesn't repeat them).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wakeup {
    pub content: String,
    pub shown: Vec<String>,
}

/// How the diary's section of a wake-up message begins (`agent_name` follows).
const DIARY_SECTION: &str = "## Your diary (mempalace_diary_read, agent_name ";

/// The diary entries a wake-up message of [`compose_wakeup`]'s showed (its diary section holds
/// `mempalace_diary_read`'s answer), as recall's keys: a resumed session doesn't inject them again.
pub(crate) fn shown_in(message: &str) -> Vec<String> {
    let Some((_, section)) = message.split_once(&format!("\n\n{DIARY_SECTION}")) else {
        return Vec::new();
    };
    let answer = section.split_once('\n').map_or("", |(_, rest)| rest);
    super::recall::diary_keys(answer.split("\n\n## ").next().unwrap_or(""))
}

/// Calls `mempalace_status {}` and `mempalace_diary_read {agent_name}` concurrently, each bounded
/// by `timeout`, and composes the wake-up message content from whatever answered. `None` when
/// neither did. Failures are logged on stderr.
/// `wing`: the wing this session files into under project scope (said in the message).
pub(crate) async fn compose_wakeup(
    caller: &dyn PalaceCaller,
    agent_name: &str,
    wing: Option<&str>,
    timeout: Duration,
) -> Option<Wakeup> {
    let status = call_bounded(caller, "mempalace_status", json!({}), timeout);
    let diary = call_bounded(caller, "mempalace_diary_read", json!({ "agent_name": agent_name }), timeout);
    let (status, diary) = tokio::join!(status, diary);
    let mut sections = Vec::new();
    let shown = diary.as_deref().map(super::recall::diary_keys).unwrap_or_default();
    match status {
        Ok(text) => sections.push(format!("## Palace status (mempalace_status)\n{}", text.trim_end())),
        Err(e) => diag!("mempalace wake-up: mempalace_status failed: {e}"),
    }
    match diary {
        Ok(text) => sections.push(format!("{DIARY_SECTION}\"{agent_name}\")\n{}", text.trim_end())),
        Err(e) => diag!("mempalace wake-up: mempalace_diary_read failed: {e}"),
    }
    if sections.is_empty() {
        return None;
    }
    if let Some(w) = wing {
        sections.insert(
            0,
            format!(
                "## This project's wing\nThis session files into the wing \"{w}\" (MEMPALACE_SCOPE=project): \
             search it with mempalace_search's wing filter for this project's past work."
            ),
        );
    }
    let content = format!(
        "[MemPalace wake-up] Your long-term memory palace is connected (mempalace_* tools). \
         Orient yourself with what it reports below; search it before answering questions about \
         past work.\n\n{}",
        sections.join("\n\n")
    );
    Some(Wakeup { content, shown })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palace::context::EarlierMessage;
    use std::time::Instant;
    use test_support::{Behaviour, FakeCaller};

    #[test]
    fn armed_only_by_startup_and_new_and_fires_once() {
        let g = WakeupGate::default();
        assert!(!g.take(), "not armed before any session_start");
        for reason in ["startup", "new"] {
            g.session_start(reason);
            assert!(g.take(), "{reason} arms");
            assert!(!g.take(), "fires once");
        }
        for reason in ["resume", "fork", "reload", "something-else"] {
            g.session_start(reason);
            assert!(!g.take(), "{reason} must not arm");
        }
        // A resume after a startup that never reached before_agent_start disarms it.
        g.session_start("startup");
        g.session_start("resume");
        assert!(!g.take());
        // A wake-up that didn't reach the palace is owed once.
        g.session_start("new");
        assert!(!g.take_owed(), "armed is not owed");
        assert!(g.take());
        g.owe(g.session());
        assert!(g.take_owed() && !g.take_owed() && !g.take());
        g.owe(g.session());
        g.session_start("resume");
        assert!(!g.take_owed(), "a resume forgets what the last session was owed");
        // A wake-up still trying when another session started owes that one nothing.
        g.session_start("new");
        let session = g.session();
        assert!(g.take());
        g.session_start("resume");
        g.owe(session);
        assert!(!g.take_owed() && !g.take());
    }

    #[tokio::test]
    async fn both_results_labelled() {
        let caller = FakeCaller::new();
        caller.set("mempalace_status", Behaviour::Reply("{\"total_drawers\": 3}".into()));
        caller.set("mempalace_diary_read", Behaviour::Reply("SESSION:x|did.things|★\n".into()));
        let text = compose_wakeup(&caller, "pi-laptop", None, Duration::from_secs(5)).await.unwrap().content;
        assert!(text.contains("## Palace status (mempalace_status)\n{\"total_drawers\": 3}"), "{text}");
        assert!(text.contains("agent_name \"pi-laptop\")\nSESSION:x|did.things|★"), "{text}");
        let calls = caller.calls();
        assert_eq!(calls.len(), 2);
        assert!(calls.iter().any(|c| c.tool == "mempalace_status" && c.args == json!({})));
        assert!(calls.iter().any(|c| c.tool == "mempalace_diary_read" && c.args == json!({"agent_name": "pi-laptop"})));
        assert!(calls.iter().all(|c| c.timeout == Some(Duration::from_secs(5))));
    }

    #[tokio::test]
    async fn a_resumed_session_knows_the_diary_entries_its_wake_up_showed() {
        let caller = FakeCaller::new();
        let diary = json!({"agent": "pi", "entries": [{"date": "2026-12-01", "content": "SESSION:a|chose.postgres|★"}, {"content": "SESSION:b|two"}], "total": 2});
        caller.set("mempalace_status", Behaviour::Reply("{\"total_drawers\": 3}\n\n## not a section".into()));
        caller.set("mempalace_diary_read", Behaviour::Reply(serde_json::to_string_pretty(&diary).unwrap()));
        let woke = compose_wakeup(&caller, "pi", None, Duration::from_secs(5)).await.unwrap();
        assert_eq!(woke.shown.len(), 2);
        let earlier = EarlierMessage { custom_type: WAKEUP_CUSTOM_TYPE.into(), text: woke.content.clone() };
        assert_eq!(earlier.shown(), woke.shown);
        // Only the wake-up's and recall's own messages count.
        assert!(EarlierMessage { custom_type: "other-ext".into(), text: woke.content }.shown().is_empty());
        // A wake-up whose diary didn't answer showed none.
        caller.set("mempalace_diary_read", Behaviour::Fail("down".into()));
        let woke = compose_wakeup(&caller, "pi", None, Duration::from_secs(5)).await.unwrap();
        assert!(shown_in(&woke.content).is_empty());
    }

    #[tokio::test]
    async fn a_hanging_call_is_cut_at_the_timeout_and_the_other_result_kept() {
        let caller = FakeCaller::new();
        caller.set("mempalace_status", Behaviour::Reply("status ok".into()));
        caller.set("mempalace_diary_read", Behaviour::Hang);
        let t0 = Instant::now();
        let text = compose_wakeup(&caller, "pi", None, Duration::from_millis(200)).await.unwrap().content;
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(2), "{took:?}");
        assert!(text.contains("status ok") && !text.contains("diary"), "{text}");
    }

    #[tokio::test]
    async fn nothing_answers_means_no_injection() {
        let caller = FakeCaller::new();
        caller.set("mempalace_status", Behaviour::Fail("Chroma database missing".into()));
        caller.set("mempalace_diary_read", Behaviour::Hang);
        let t0 = Instant::now();
        assert_eq!(compose_wakeup(&caller, "pi", None, Duration::from_millis(150)).await, None);
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}
