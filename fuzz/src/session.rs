//! `session_jsonl`: the quality gate the built-in exporter applies to pi's session JSONL files.
//! (Blank lines: ASCII whitespace as WHATWG defines it, the crate's `u8::is_ascii_whitespace`.)
//!
//! Model (the rule as documented): the first non-blank line is a JSON object with
//! `"type": "session"` and a `version` key; some later line is a `"type": "message"` entry whose
//! `message.role` is `user` with non-blank text, and some is one whose role is `assistant` with
//! non-blank text (a string `content`, or a `{type: "text"}` block). Plus invariances: blank lines
//! anywhere, CRLF line ends and lines appended to a passing session change nothing.

use dotty_pi_ext::palace::feed::export::passes_quality_gate;
use serde_json::Value;

pub fn check(data: &[u8]) {
    let pass = passes_quality_gate(data);
    assert_eq!(pass, model(data), "gate of {:?}", String::from_utf8_lossy(data));
    assert_eq!(pass, passes_quality_gate(data), "deterministic");

    let crlf: Vec<u8> = data.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
    assert_eq!(passes_quality_gate(&crlf), pass, "CRLF line ends");
    let spaced: Vec<u8> = data.iter().flat_map(|&b| if b == b'\n' { b"\n \t\n".to_vec() } else { vec![b] }).collect();
    assert_eq!(passes_quality_gate(&spaced), pass, "blank lines");
    if pass {
        let mut more = data.to_vec();
        more.extend_from_slice(b"\n{\"type\":\"message\",\"message\":{\"role\":\"user\"}}\n{not json\n");
        assert!(passes_quality_gate(&more), "lines appended to a passing session");
    }
}

fn model(data: &[u8]) -> bool {
    let mut lines = data.split(|&b| b == b'\n').filter(|l| l.iter().any(|b| !b" \t\r\n\x0c".contains(b)));
    let Some(Ok(Value::Object(header))) = lines.next().map(serde_json::from_slice::<Value>) else { return false };
    if header.get("type") != Some(&Value::from("session")) || !header.contains_key("version") {
        return false;
    }
    let (mut user, mut assistant) = (false, false);
    for line in lines {
        let Ok(entry) = serde_json::from_slice::<Value>(line) else { continue };
        if entry.get("type") != Some(&Value::from("message")) {
            continue;
        }
        let msg = &entry["message"];
        let text = match &msg["content"] {
            Value::String(s) => !blank(s),
            Value::Array(blocks) => {
                blocks.iter().any(|b| b["type"] == "text" && b["text"].as_str().is_some_and(|t| !blank(t)))
            }
            _ => false,
        };
        user |= text && msg["role"] == "user";
        assistant |= text && msg["role"] == "assistant";
    }
    user && assistant
}

fn blank(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}
