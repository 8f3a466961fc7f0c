//! The user's opt-out: `[no-memory]` (any case) in a user message keeps that turn (the message
//! and everything after it up to the next user message: the reply, its tool calls and results)
//! out of the staged copy; in the first user message of a session, the whole session. The marker
//! itself is never mined: the lines that hold it are the ones left out. pi's file is not touched.
//!
//! A line kept whose `parentId` named a line left out gets the parent of the turn left out, so the
//! staged copy is still one tree (only that string changes, byte for byte elsewhere).

use serde_json::Value;
use std::collections::HashMap;

/// The marker.
pub(crate) const MARKER: &str = "[no-memory]";

/// What the opt-out does to a session file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opt {
    /// No user message holds the marker.
    Unchanged,
    /// The first user message holds it: the session is not staged at all.
    Session,
    /// These bytes are staged instead (that many turns left out).
    Without(Vec<u8>, usize),
}

/// `[no-memory]` (any case) is in `s`.
pub(crate) fn has_marker(s: &str) -> bool {
    s.as_bytes().windows(MARKER.len()).any(|w| w.eq_ignore_ascii_case(MARKER.as_bytes()))
}

/// The text of a user message entry (`content` a string or text blocks), if the line is one.
fn user_text(entry: &Value) -> Option<String> {
    if entry.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    let msg = entry.get("message")?;
    if msg.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    Some(match msg.get("content")? {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    })
}

/// The opt-out applied to a session file (JSON lines).
pub(crate) fn apply(bytes: &[u8]) -> Opt {
    let needle = MARKER.as_bytes();
    // JSON writers never escape the marker's characters: a file without it verbatim has none.
    if !bytes.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle)) {
        return Opt::Unchanged;
    }
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let parsed: Vec<Option<Value>> = lines.iter().map(|l| serde_json::from_slice(l.trim_ascii()).ok()).collect();
    let mut keep = vec![true; lines.len()];
    let (mut dropping, mut first_user, mut turns) = (false, true, 0);
    // id of a line left out → the parent its turn hangs from.
    let mut reparent: HashMap<String, Option<String>> = HashMap::new();
    let mut turn_parent: Option<String> = None;
    for (i, v) in parsed.iter().enumerate() {
        let Some(v) = v else {
            keep[i] = !dropping;
            continue;
        };
        if let Some(text) = user_text(v) {
            let marked = has_marker(&text);
            if marked && first_user {
                return Opt::Session;
            }
            first_user = false;
            dropping = marked;
            if marked {
                turns += 1;
                turn_parent = v.get("parentId").and_then(Value::as_str).map(String::from);
                // The parent of a turn left out may itself be left out (two in a row).
                if let Some(p) = &turn_parent {
                    if let Some(up) = reparent.get(p) {
                        turn_parent = up.clone();
                    }
                }
            }
        }
        if dropping {
            keep[i] = false;
            if let Some(id) = v.get("id").and_then(Value::as_str) {
                reparent.insert(id.to_string(), turn_parent.clone());
            }
        }
    }
    if turns == 0 {
        return Opt::Unchanged;
    }
    let mut out = Vec::with_capacity(bytes.len());
    for (i, line) in lines.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        let parent = parsed[i].as_ref().and_then(|v| v.get("parentId")).and_then(Value::as_str);
        match parent.and_then(|p| reparent.get(p).map(|np| (p, np))) {
            Some((old, new)) => {
                let old_raw = format!("\"parentId\":{}", serde_json::to_string(old).unwrap_or_default());
                let new_raw = match new {
                    Some(n) => format!("\"parentId\":{}", serde_json::to_string(n).unwrap_or_default()),
                    None => "\"parentId\":null".to_string(),
                };
                let s = String::from_utf8_lossy(line);
                if s.contains(&old_raw) {
                    out.extend_from_slice(s.replacen(&old_raw, &new_raw, 1).as_bytes());
                } else {
                    out.extend_from_slice(line);
                }
            }
            None => out.extend_from_slice(line),
        }
    }
    Opt::Without(out, turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: &str, parent: Option<&str>, role: &str, text: &str) -> String {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":role,"content":[{"type":"text","text":text}]}}).to_string() + "\n"
    }

    const HEADER: &str =
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n";

    #[test]
    fn a_marked_turn_is_left_out_with_its_reply_and_the_tree_holds() {
        let file = [
            HEADER.to_string(),
            msg("a", None, "user", "set up the project"),
            msg("b", Some("a"), "assistant", "done"),
            msg("c", Some("b"), "user", "[No-Memory] my bank PIN is 4711, remind me"),
            msg("d", Some("c"), "assistant", "I will not keep it"),
            msg("e", Some("d"), "toolResult", "ok"),
            msg("f", Some("e"), "user", "now run the tests"),
            msg("g", Some("f"), "assistant", "green"),
        ]
        .concat();
        let Opt::Without(out, 1) = apply(file.as_bytes()) else { panic!() };
        let out = String::from_utf8(out).unwrap();
        assert!(
            !out.contains("4711") && !out.contains("will not keep") && !out.to_lowercase().contains("[no-memory]"),
            "{out}"
        );
        assert!(out.contains("set up the project") && out.contains("now run the tests") && out.contains("green"));
        // f now hangs from b (the parent of the turn left out); the other lines are byte for byte.
        assert!(out.contains(&msg("f", Some("b"), "user", "now run the tests")), "{out}");
        assert!(out.contains(&msg("g", Some("f"), "assistant", "green")));
        assert_eq!(apply(out.as_bytes()), Opt::Unchanged);
    }

    #[test]
    fn the_marker_in_the_first_user_message_keeps_the_session_out() {
        let file = [
            HEADER.to_string(),
            msg("a", None, "user", "[no-memory] private chat"),
            msg("b", Some("a"), "assistant", "ok"),
        ]
        .concat();
        assert_eq!(apply(file.as_bytes()), Opt::Session);
        // In the assistant's text only, it is no opt-out.
        let file = [
            HEADER.to_string(),
            msg("a", None, "user", "hello"),
            msg("b", Some("a"), "assistant", "say [no-memory] to opt out"),
        ]
        .concat();
        assert_eq!(apply(file.as_bytes()), Opt::Unchanged);
    }
}
