//! What the palace says into a session: the wake-up on a fresh session's first prompt
//! ([`wakeup`]), the drawers recalled for each prompt ([`recall`]), the `/mempalace-diary` prompt
//! ([`diary`]), and the session's memory they share: which runs a user started ([`runs`]) and what
//! the palace already showed this session (recall doesn't repeat it). The bridge hands each of
//! them its caller and budget; [`Context`] holds the session's state.

pub(crate) mod diary;
pub(crate) mod recall;
pub(crate) mod runs;
pub(crate) mod wakeup;

pub use runs::RunStart;

use super::twin::PiRole;
use crate::palace::PalaceCaller;
use recall::{Injected, Recall, RecallConfig};
use runs::SentPrompts;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wakeup::WakeupGate;

/// A message pi injects before a run (`before_agent_start`'s `{message}`): hidden from the user,
/// read by the model. The wake-up's, and recall's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenMessage {
    pub custom_type: &'static str,
    pub content: String,
    pub display: bool,
}

impl HiddenMessage {
    /// The wake-up message.
    pub fn hidden(content: String) -> HiddenMessage {
        HiddenMessage { custom_type: wakeup::WAKEUP_CUSTOM_TYPE, content, display: false }
    }

    /// A recall message.
    pub fn recall(content: String) -> HiddenMessage {
        HiddenMessage { custom_type: recall::RECALL_CUSTOM_TYPE, content, display: false }
    }
}

/// A hidden message an extension put on the session's branch before this process saw it (pi's
/// `custom_message` entries, told at `session_start`): a resumed session's memory of what the
/// palace showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierMessage {
    pub custom_type: String,
    pub text: String,
}

impl EarlierMessage {
    /// What the palace showed in it (recall's keys): the diary entries of a wake-up, the drawers
    /// of a recall; nothing for another extension's message.
    pub(crate) fn shown(&self) -> Vec<String> {
        match self.custom_type.as_str() {
            wakeup::WAKEUP_CUSTOM_TYPE => wakeup::shown_in(&self.text),
            recall::RECALL_CUSTOM_TYPE => recall::recalled_ids(&self.text),
            _ => Vec::new(),
        }
    }
}

/// A session's context as the palace sees it: whether the wake-up is armed or owed, the prompts
/// this extension sent, what the palace showed the session, and the recall under way.
#[derive(Default)]
pub(crate) struct Context {
    wakeup: WakeupGate,
    /// The diary prompts handed to pi's `sendUserMessage`: their runs get no wake-up.
    sent_prompts: SentPrompts,
    /// What this session has injected (the wake-up's diary entries, recalled drawers).
    injected: Injected,
    recall: Recall,
}

impl Context {
    /// pi's `session_start`. `has_messages`: the session already holds messages. pi 0.74 starts a
    /// `--continue`d or `--session`-picked thread with reason `startup`; its context is already in
    /// the thread, so it is a resume, not a fresh session.
    /// `earlier`: the hidden messages already on the session's branch; the drawers and diary
    /// entries they showed are not injected again.
    pub(crate) fn session_start(&self, reason: &str, has_messages: bool, earlier: &[EarlierMessage]) {
        self.wakeup.session_start(if has_messages && reason == "startup" { "resume" } else { reason });
        // A new session thread: what the last one was shown is not in it, but what its own
        // history shows (a resumed or forked thread) is.
        self.injected.forget();
        self.injected.add(earlier.iter().flat_map(EarlierMessage::shown));
        self.recall.forget();
    }

    /// Whether a user started the run `start` describes (not an extension's custom message, nor a
    /// prompt this extension sent); starts its recall search through `caller` when one did and
    /// recall is on (`words`: the prompt's own, the voice provider's scaffolding cut off; `wing`:
    /// the session's wing under project scope, which the search keeps to).
    pub(crate) fn run_starts(
        &self,
        start: RunStart<'_>,
        words: Option<&str>,
        recall: &RecallConfig,
        caller: Arc<dyn PalaceCaller>,
        wing: Option<&str>,
    ) -> bool {
        let user = self.sent_prompts.user_started(start);
        self.recall.start(recall, caller, if user { words } else { None }, wing, start.at);
        user
    }

    /// The wake-up message on the first prompt a user sends in a fresh session, or None (not
    /// fresh, already done, the palace didn't answer within `budget`: then the first prompt after
    /// the palace is back gets it). `connected`: whether the palace is connected now (an owed
    /// wake-up is given once it is back on its own: a prompt never waits for a try of a palace that
    /// is down). `connect`: the handshake, true once done; it counts against `budget` (a cold
    /// palace doesn't hold the prompt) and the calls get what is left (each bounded by `caller`).
    pub(crate) async fn wakeup(
        &self,
        caller: &dyn PalaceCaller,
        agent_name: &str,
        wing: Option<&str>,
        budget: Duration,
        connected: impl FnOnce() -> bool,
        connect: impl Future<Output = bool>,
    ) -> Option<HiddenMessage> {
        let session = self.wakeup.session();
        let fire = self.wakeup.take() || (connected() && self.wakeup.take_owed());
        if !fire {
            return None;
        }
        let t0 = Instant::now();
        if !matches!(tokio::time::timeout(budget, connect).await, Ok(true)) {
            self.wakeup.owe(session);
            return None;
        }
        let left = budget.saturating_sub(t0.elapsed()).max(Duration::from_millis(1));
        let woke = wakeup::compose_wakeup(caller, agent_name, wing, left).await?;
        self.injected.add(woke.shown);
        Some(HiddenMessage::hidden(woke.content))
    }

    /// pi's second `before_agent_start` handler: the recall message of the run being started, or
    /// None ([`Recall::message`]). Never fails.
    pub(crate) async fn recall(&self, cfg: &RecallConfig) -> Option<HiddenMessage> {
        self.recall.message(cfg, &self.injected).await
    }

    /// `/mempalace status`'s recall line.
    pub(crate) fn recall_report(&self, cfg: &RecallConfig) -> String {
        self.recall.report(cfg)
    }

    /// The `/mempalace-diary [topic]` user message, remembered as this extension's own. `reach`:
    /// how the model reaches `mempalace_diary_write` when it is not declared to it. `pi_mcp`: pi's
    /// own MCP offers the palace's tools, so the model knows them by pi's names.
    pub(crate) fn diary_prompt(
        &self,
        agent_name: &str,
        topic: &str,
        reach: Option<&str>,
        pi_mcp: Option<&PiRole>,
    ) -> String {
        let topic = topic.trim();
        let named = |t: &str| pi_mcp.map_or_else(|| t.to_string(), |r| r.tool(t));
        let prompt = diary::diary_prompt(agent_name, (!topic.is_empty()).then_some(topic), reach, &named);
        self.sent_prompts.remember(&prompt);
        prompt
    }
}
