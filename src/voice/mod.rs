//! Dotty's seven voice tools and the per-turn conversation log.
//!
//! Every tool takes the raw JSON arguments the model produced and always answers with the contract's
//! reply string: bad input and service failures are replies, not errors.

pub(crate) mod clean_turns;
pub(crate) mod descriptors;
// Production's one-shot direct calls: called by the binding only, so public (the boundary's API).
pub mod direct;
mod memory;
mod play_song;
pub mod scaffolding;
mod senses;
pub mod songs;
pub mod turn_log;

use crate::brain::{Brain, BrainCounts};
use crate::config::VoiceConfig;
use crate::services::xiaozhi::Admin;
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// The seven voice tools: the one list of their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    MemoryLookup,
    Remember,
    RecallPerson,
    RememberPerson,
    ThinkHard,
    TakePhoto,
    PlaySong,
}

impl Tool {
    /// Every voice tool, in the stable order pi registers them.
    pub(crate) const ALL: [Tool; 7] = [
        Tool::MemoryLookup,
        Tool::Remember,
        Tool::RecallPerson,
        Tool::RememberPerson,
        Tool::ThinkHard,
        Tool::TakePhoto,
        Tool::PlaySong,
    ];

    /// The name pi and the model call it by.
    pub fn name(self) -> &'static str {
        match self {
            Tool::MemoryLookup => "memory_lookup",
            Tool::Remember => "remember",
            Tool::RecallPerson => "recall_person",
            Tool::RememberPerson => "remember_person",
            Tool::ThinkHard => "think_hard",
            Tool::TakePhoto => "take_photo",
            Tool::PlaySong => "play_song",
        }
    }

    /// Every voice tool's name: the names the palace's tools may never take.
    pub fn names() -> Vec<&'static str> {
        Tool::ALL.into_iter().map(Tool::name).collect()
    }

    /// The voice tool called `name`, if one is.
    pub(crate) fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The tools that only touch brain.db: answered through a callback from the store's own
    /// threads ([`Voice::start`]), with no future and no tokio in between.
    pub fn is_direct(self) -> bool {
        matches!(self, Tool::MemoryLookup | Tool::Remember | Tool::RecallPerson)
    }
}

/// The voice half of the extension: configuration, the store, the HTTP clients, the log.
pub struct Voice {
    cfg: VoiceConfig,
    brain: Arc<Brain>,
    http: crate::services::Http,
    admin: Option<Admin>,
    log: Arc<turn_log::TurnLog>,
    /// The `session_id` of the rows remember and remember_person write: none in pi (NULL), a
    /// direct call's `sessionId` when it gave one ([`direct`]).
    session_id: Option<String>,
}

/// What the voice half counted so far (tests and benchmarks read it).
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceStats {
    pub brain_db: PathBuf,
    pub brain: BrainCounts,
    pub turn_log: turn_log::TurnLogCounts,
    /// Song catalogue fetches from the xiaozhi admin API (0 without one).
    pub song_catalogue_fetches: usize,
}

impl Voice {
    pub fn new(cfg: VoiceConfig) -> Voice {
        let brain = Arc::new(Brain::new(cfg.brain_db.clone(), !cfg.brain_db_explicit));
        let http = crate::services::client(None);
        let admin = Admin::new(&cfg, &http);
        Voice { cfg, brain, http, admin, log: Arc::default(), session_id: None }
    }

    /// Runs the tool `tool`.
    pub async fn call(&self, tool: Tool, args: &Value) -> String {
        match tool {
            Tool::MemoryLookup | Tool::Remember | Tool::RecallPerson => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                self.start(tool, args, move |text| drop(tx.send(text)));
                // The sender is dropped unanswered only by a panic on the store's thread: passed on
                // as a panic, which the caller reports as an internal error.
                #[allow(clippy::expect_used, reason = "re-raises a panic that happened on the store's thread")]
                rx.await.expect("the brain.db job panicked")
            }
            Tool::RememberPerson => {
                memory::remember_person(self, &text_arg(args, "name"), &text_arg(args, "fact")).await
            }
            Tool::ThinkHard => senses::think_hard(self, &text_arg(args, "question")).await,
            Tool::TakePhoto => senses::take_photo(self).await,
            Tool::PlaySong => play_song::play_song(self, &text_arg(args, "name")).await,
        }
    }

    /// Starts a tool for which [`Tool::is_direct`] holds: the arguments are checked here, the work
    /// is queued for the store's threads, and `done` gets the reply there (or here, at once, for an
    /// empty argument). Does nothing for another tool.
    pub fn start(&self, tool: Tool, args: &Value, done: impl FnOnce(String) + Send + 'static) {
        match tool {
            Tool::MemoryLookup => memory::memory_lookup(self, &text_arg(args, "query"), done),
            Tool::Remember => memory::remember(self, &text_arg(args, "fact"), done),
            Tool::RecallPerson => memory::recall_person(self, &text_arg(args, "name"), done),
            Tool::RememberPerson | Tool::ThinkHard | Tool::TakePhoto | Tool::PlaySong => {}
        }
    }

    /// Opens brain.db (creating the embedded default when it may), reporting a failure on stderr;
    /// the caller runs it in the background.
    pub fn warm_up(&self) -> impl Future<Output = ()> + Send + 'static {
        let brain = self.brain.clone();
        async move {
            let warm = brain.clone();
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || warm.warm_up()).await {
                e.report(&format!("brain.db unavailable at {}", brain.path().display()));
            }
        }
    }

    /// Queues the turn's conversation row ([`turn_log::TurnLog::submit`]): the write to run in the
    /// background, or `None` when there is nothing to write.
    pub fn log_turn(&self, messages: &[turn_log::Message]) -> Option<impl Future<Output = ()> + Send + 'static> {
        self.log.submit(self.brain.clone(), messages)
    }

    /// Resolves when every queued conversation row has been written.
    pub async fn flush_log(&self) {
        self.log.flush().await
    }

    pub fn stats(&self) -> VoiceStats {
        VoiceStats {
            brain_db: self.brain.path().to_path_buf(),
            brain: self.brain.stats(),
            turn_log: self.log.counts(),
            song_catalogue_fetches: self.admin.as_ref().map_or(0, Admin::catalogue_fetches),
        }
    }
}

/// A text argument as the tools read it: a string as given; a number or boolean as its JSON text
/// (what pi's own argument coercion would make of it); anything else (missing, null, object,
/// array) as empty, which every tool answers with its "empty" reply.
pub fn text_arg(args: &Value, key: &str) -> String {
    match args.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_tool_is_found_by_its_name() {
        for t in Tool::ALL {
            assert_eq!(Tool::named(t.name()), Some(t));
        }
        assert_eq!(Tool::named("bash"), None);
        assert_eq!(
            Tool::names(),
            crate::palace::offer::tools::RESERVED_IN_TESTS,
            "the palace's tests reserve the same names"
        );
        let direct: Vec<&str> = Tool::ALL.into_iter().filter(|t| t.is_direct()).map(Tool::name).collect();
        assert_eq!(direct, ["memory_lookup", "remember", "recall_person"]);
    }

    #[test]
    fn text_arg_normalises_every_json_type() {
        let a = json!({"s": "x", "n": 42, "f": 1.5, "b": true, "z": null, "o": {"a": 1}, "l": [1]});
        assert_eq!(text_arg(&a, "s"), "x");
        assert_eq!(text_arg(&a, "n"), "42");
        assert_eq!(text_arg(&a, "f"), "1.5");
        assert_eq!(text_arg(&a, "b"), "true");
        for k in ["z", "o", "l", "missing"] {
            assert_eq!(text_arg(&a, k), "");
        }
        assert_eq!(text_arg(&json!("not an object"), "s"), "");
        assert_eq!(text_arg(&Value::Null, "s"), "");
    }
}
