//! `turn_text`: what the per-turn conversation log extracts from an `agent_end` event's messages.
//!
//! Model (the contract, written again): the last message whose role is `user`; its text is its
//! string content or its `{type: "text"}` blocks joined; the assistant text is the `{type:
//! "text"}` blocks of every `assistant` message after it (all of them when there is no user
//! message), joined; both stripped (Python's strip); nothing when both are empty. The key is the
//! user message's non-null timestamp (as JSON) and its unstripped text. The row's content keeps
//! at most 500 + 1000 codepoints of them. The user text is first cleaned of the voice provider's
//! prompt scaffolding (docs/voice-tools.md, "Prompt scaffolding"), modelled here by a scan of its
//! own: the cut is at the first newline whose run of newlines is followed by a marker.
//!
//! The same bytes, read as a stored row, check memory_lookup's reading of it (`clean_row`) against
//! the model, and `clean-turns`' rewrite (`repair_row`): only rows starting `user: ` change, they
//! stay rows, and a second rewrite changes nothing.

use crate::util::{py_len, py_prefix, py_strip};
use dotty_pi_ext::voice::scaffolding::{clean_row, repair_row, spoken};
use dotty_pi_ext::voice::turn_log::{extract, Turn};
use serde_json::Value;

const MARKERS: [&str; 3] = ["MEMORY SEARCH RESULTS (", "VOICE TOOL ROUTING:", "---\nHARD CONSTRAINTS for THIS reply"];

/// The person's words of a prompt, per the contract's three steps.
fn model_spoken(text: &str) -> String {
    let b = text.as_bytes();
    let mut cut = text.len();
    for p in 0..b.len() {
        if b[p] != b'\n' {
            continue;
        }
        let mut q = p;
        while q < b.len() && b[q] == b'\n' {
            q += 1;
        }
        if MARKERS.iter().any(|m| b[q..].starts_with(m.as_bytes())) {
            cut = p;
            break;
        }
    }
    let words = &text[..cut];
    let t = py_strip(words);
    let unwrapped = match serde_json::from_str::<Value>(&t) {
        Ok(Value::Object(o)) if t.starts_with('{') && t.ends_with('}') => match o.get("content") {
            Some(Value::String(s)) => s.clone(),
            _ => words.to_string(),
        },
        _ => words.to_string(),
    };
    py_strip(&unwrapped)
}

fn check_row(row: &str) {
    let want = match row.strip_prefix("user: ") {
        None => row.to_string(),
        Some(rest) => match rest.find(" | assistant: ") {
            Some(i) => format!("user: {} | assistant: {}", model_spoken(&rest[..i]), py_strip(&rest[i + 14..])),
            None => format!("user: {}", model_spoken(rest)),
        },
    };
    assert_eq!(clean_row(row), want, "clean_row({row:?})");
    match repair_row(row) {
        None => {}
        Some(fixed) => {
            assert!(row.starts_with("user: ") && fixed.starts_with("user:"), "repair_row({row:?}) = {fixed:?}");
            assert_eq!(repair_row(&fixed), None, "repair_row is idempotent on {row:?}");
        }
    }
}

pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(spoken(text), model_spoken(text), "spoken({text:?})");
        check_row(text);
        check_row(&format!("user: {text}"));
    }
    let Ok(messages) = serde_json::from_slice::<Value>(data) else { return };
    let got = extract(&messages);
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
    let (user, assistant) = (model_spoken(&user), py_strip(&assistant));
    if user.is_empty() && assistant.is_empty() {
        return None;
    }
    Some(Turn { key, user, assistant })
}
