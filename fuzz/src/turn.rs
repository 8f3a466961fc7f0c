//! `turn_text`: what the per-turn conversation log extracts from an `agent_end` event's messages.
//!
//! Model (the contract, written again): the last message whose role is `user`; its text is its
//! string content or its `{type: "text"}` blocks joined; the assistant text is the `{type:
//! "text"}` blocks of every `assistant` message after it (all of them when there is no user
//! message), joined; both stripped (Python's strip); nothing when both are empty. The key is the
//! user message's non-null timestamp (as JSON) and its unstripped text. The row's content keeps
//! at most 500 + 1000 codepoints of them.

use crate::util::{py_len, py_prefix, py_strip};
use dotty_pi_ext::voice::turn_log::{extract, Message, Turn};
use serde_json::Value;

pub fn check(data: &[u8]) {
    let Ok(messages) = serde_json::from_slice::<Value>(data) else { return };
    let got = extract(&Message::list_from_json(&messages));
    assert_eq!(got, model(&messages), "extract({messages})");
    if let Some(turn) = got {
        let content = turn.content();
        assert!(py_len(&content) <= 500 + 1000 + "user:  | assistant: ".len(), "content bounded");
        assert_eq!(
            content,
            format!("user: {} | assistant: {}", py_prefix(&turn.user, 500), py_prefix(&turn.assistant, 1000))
        );
    }
}

fn texts(content: &Value) -> String {
    let mut out = String::new();
    if let Value::Array(blocks) = content {
        for b in blocks {
            if b["type"] == "text" {
                if let Value::String(t) = &b["text"] {
                    out.push_str(t);
                }
            }
        }
    }
    out
}

fn model(messages: &Value) -> Option<Turn> {
    let Value::Array(msgs) = messages else { return None };
    let mut last_user = None;
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] == "user" {
            last_user = Some(i);
        }
    }
    let (user, key, from) = match last_user {
        Some(i) => {
            let m = &msgs[i];
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                c => texts(c),
            };
            let key = match &m["timestamp"] {
                Value::Null => None,
                t => Some(format!("{t}\u{0}{text}")),
            };
            (text, key, i + 1)
        }
        None => (String::new(), None, 0),
    };
    let assistant: String =
        msgs[from..].iter().filter(|m| m["role"] == "assistant").map(|m| texts(&m["content"])).collect();
    let (user, assistant) = (py_strip(&user), py_strip(&assistant));
    if user.is_empty() && assistant.is_empty() {
        return None;
    }
    Some(Turn { key, user, assistant })
}
