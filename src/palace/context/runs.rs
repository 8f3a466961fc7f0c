//! Which runs a user started: pi reports a run an extension's own `sendUserMessage` started as a
//! user's, so the prompts this extension sent are remembered ([`SentPrompts`]) to tell them apart.
//! Only a run a user started gets the wake-up and recall.

use std::sync::Mutex;

/// What started a run, as pi's `before_agent_start` says it: `messageType` (pi 1.2+: `"user"` for
/// a prompt or `pi.sendUserMessage()`, `"custom"` for an extension's custom message; absent in
/// older pi, where only prompts start runs) and the prompt text.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStart<'a> {
    pub message_type: Option<&'a str>,
    pub prompt: Option<&'a str>,
    /// When pi began waiting for this run's handlers (the addon's entry, on the JS thread); the
    /// recall budget counts from it. None: from when the core sees the run.
    pub at: Option<std::time::Instant>,
}

/// How many prompts [`SentPrompts`] keeps (a diary command sent while a run is going is queued).
const SENT_PROMPTS_KEPT: usize = 4;

/// The user messages this extension itself sent (`/mempalace-diary`'s prompt, through
/// `pi.sendUserMessage`): pi reports the run they start as `messageType: "user"`, so the core
/// remembers them to tell that run apart from one a user started.
#[derive(Debug, Default)]
pub(crate) struct SentPrompts(Mutex<Vec<String>>);

impl SentPrompts {
    /// Remembers a prompt about to be sent (the oldest is forgotten past a few).
    pub(crate) fn remember(&self, prompt: &str) {
        let mut sent = crate::sync::lock(&self.0);
        if sent.len() >= SENT_PROMPTS_KEPT {
            sent.remove(0);
        }
        sent.push(prompt.trim().to_string());
    }

    /// True (and forgotten) when `prompt` is one this extension sent.
    pub(crate) fn take(&self, prompt: &str) -> bool {
        let mut sent = crate::sync::lock(&self.0);
        match sent.iter().position(|p| p == prompt.trim()) {
            Some(i) => {
                sent.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether the run `start` describes was started by a user: not by an extension's custom
    /// message, nor by a prompt this extension sent itself. Only such runs get the wake-up.
    pub(crate) fn user_started(&self, start: RunStart<'_>) -> bool {
        if start.message_type.is_some_and(|t| t != "user") {
            return false;
        }
        !start.prompt.is_some_and(|p| self.take(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_a_user_started_count() {
        let sent = SentPrompts::default();
        let user = |prompt| RunStart { message_type: Some("user"), prompt: Some(prompt), at: None };
        assert!(sent.user_started(user("hi")));
        assert!(
            sent.user_started(RunStart { message_type: None, prompt: Some("hi"), at: None }),
            "older pi: no messageType"
        );
        assert!(sent.user_started(RunStart::default()));
        assert!(!sent.user_started(RunStart { message_type: Some("custom"), prompt: None, at: None }));
        sent.remember("Write your diary entry\n");
        assert!(!sent.user_started(user("Write your diary entry")), "our own prompt");
        assert!(sent.user_started(user("Write your diary entry")), "remembered once: the user may type it too");
        for i in 0..10 {
            sent.remember(&format!("p{i}"));
        }
        assert!(sent.user_started(user("p0")), "only the last few are kept");
        assert!(!sent.user_started(user("p9")));
    }
}
