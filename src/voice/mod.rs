//! Dotty's seven voice tools and the per-turn conversation log.
//!
//! Every tool takes the raw JSON arguments the model produced and always answers with the contract's
//! reply string: bad input and service failures are replies, not errors.

pub mod clean_turns;
pub mod descriptors;
mod memory;
mod play_song;
pub mod scaffolding;
mod senses;
pub mod songs;
pub mod turn_log;

use crate::brain::Brain;
use crate::config::VoiceConfig;
use crate::services::xiaozhi::Admin;
use serde_json::Value;
use std::sync::Arc;

/// The voice half of the extension: configuration, the store, the HTTP clients, the log.
pub struct Voice {
    pub cfg: VoiceConfig,
    pub brain: Arc<Brain>,
    http: crate::services::Http,
    pub admin: Option<Admin>,
    pub log: Arc<turn_log::TurnLog>,
}

impl Voice {
    pub fn new(cfg: VoiceConfig) -> Voice {
        let brain = Arc::new(Brain::new(cfg.brain_db.clone(), !cfg.brain_db_explicit));
        let http = crate::services::client(None);
        let admin = Admin::new(&cfg, &http);
        Voice { cfg, brain, http, admin, log: Arc::default() }
    }

    /// Runs the tool `name`; `None` when no voice tool has that name.
    pub async fn call(&self, name: &str, args: &Value) -> Option<String> {
        Some(match name {
            n if is_direct(n) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                self.start(n, args, move |text| drop(tx.send(text)));
                // The sender is dropped unanswered only by a panic on the store's thread: passed on
                // as a panic, which the caller reports as an internal error.
                #[allow(clippy::expect_used, reason = "re-raises a panic that happened on the store's thread")]
                rx.await.expect("the brain.db job panicked")
            }
            "remember_person" => memory::remember_person(self, &text_arg(args, "name"), &text_arg(args, "fact")).await,
            "think_hard" => senses::think_hard(self, &text_arg(args, "question")).await,
            "take_photo" => senses::take_photo(self).await,
            "play_song" => play_song::play_song(self, &text_arg(args, "name")).await,
            _ => return None,
        })
    }

    /// Starts a tool for which [`is_direct`] holds: the arguments are checked here, the work is
    /// queued for the store's threads, and `done` gets the reply there (or here, at once, for an
    /// empty argument). Does nothing for another name.
    pub fn start(&self, name: &str, args: &Value, done: impl FnOnce(String) + Send + 'static) {
        match name {
            "memory_lookup" => memory::memory_lookup(self, &text_arg(args, "query"), done),
            "remember" => memory::remember(self, &text_arg(args, "fact"), done),
            "recall_person" => memory::recall_person(self, &text_arg(args, "name"), done),
            _ => {}
        }
    }
}

/// The voice tools that only touch brain.db: answered through a callback from the store's own
/// threads ([`Voice::start`]), with no future and no tokio in between.
pub fn is_direct(name: &str) -> bool {
    matches!(name, "memory_lookup" | "remember" | "recall_person")
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
