//! `redact`: the feed's redactor (`palace::feed::redact`) on pi session JSONL, as the exporter stages it.
//!
//! The rule set is the built-in one plus one exact secret of the process ([`SECRET`], as an
//! environment variable whose name says token). Checks: the output has the input's lines and line
//! ends; a line that was valid JSON still is, with the same structure (keys in order, types; only
//! strings change); a line left unchanged is byte-identical; no string of the output (keys too)
//! holds anything the rule set finds, and none holds [`SECRET`]; redacting the output again changes
//! nothing; something was counted exactly when something changed. Issue 28's properties: in a line
//! that was valid JSON every byte outside the strings (numbers, literals, structure) is identical;
//! no marker is inside a marker; the counts equal the markers written (output minus input).

use dotty_pi_ext::palace::feed::redact::{Counts, Redactor, Sources};
use serde_json::Value;
use std::sync::OnceLock;

/// The feeding process's own secret (`FUZZ_SERVICE_TOKEN`).
pub const SECRET: &str = "fz-Q7mX2vK9pL4w";

fn redactor() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        let sources = Sources { env: vec![("FUZZ_SERVICE_TOKEN".into(), SECRET.into())], patterns_file: None };
        Redactor::build(&sources).0
    })
}

pub fn check(data: &[u8]) {
    let r = redactor();
    let mut counts = Counts::new();
    let out = r.redact_jsonl(data, &mut counts);
    let total: u64 = counts.values().sum();
    let Some(out) = out else {
        assert_eq!(total, 0, "counted {counts:?} without a change");
        return;
    };
    assert!(total > 0, "changed without counting");
    assert_eq!(markers(&out) - markers(data), total, "counts are the markers written: {counts:?}");
    assert!(!out.windows(20).any(|w| w == b"[REDACTED:[REDACTED:"), "a marker inside a marker");
    assert_ne!(out, data, "a change that changed nothing");
    let (a, b) = (lines(data), lines(&out));
    assert_eq!(a.len(), b.len(), "line count");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(end(x), end(y), "line end");
        match serde_json::from_slice::<Value>(body(x)) {
            Ok(vx) => {
                let vy: Value = serde_json::from_slice(body(y))
                    .unwrap_or_else(|e| panic!("valid JSON in, not out ({e}): {:?}", String::from_utf8_lossy(y)));
                assert_eq!(shape(&vx), shape(&vy), "structure");
                assert_eq!(outside_strings(body(x)), outside_strings(body(y)), "a byte outside the strings changed");
                every_string(&vy, &mut |s| {
                    assert!(!s.contains(SECRET), "the process's secret survived: {s:?}");
                    assert_eq!(r.redact_str(s, &mut Counts::new()), None, "a secret survived in {s:?}");
                });
            }
            Err(_) => {
                if x != y {
                    assert!(!String::from_utf8_lossy(y).contains(SECRET), "secret survived in a text line");
                }
            }
        }
    }
    assert_eq!(r.redact_jsonl(&out, &mut Counts::new()), None, "redacting again changed it");
}

/// How many markers (`[REDACTED:<kind>]`, `<kind>` without brackets or quotes) `d` holds.
fn markers(d: &[u8]) -> u64 {
    let mut n = 0;
    let mut i = 0;
    while let Some(p) = d[i..].windows(10).position(|w| w == b"[REDACTED:") {
        let s = i + p + 10;
        let k =
            d[s..].iter().take(129).position(|b| matches!(b, b']' | b'[' | b'"' | b'\\') || b.is_ascii_whitespace());
        match k {
            Some(k) if k > 0 && d[s + k] == b']' => {
                n += 1;
                i = s + k + 1;
            }
            _ => i = s,
        }
    }
    n
}

/// The bytes of a JSON line outside its string tokens (each string kept as `""`).
fn outside_strings(l: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'"' {
            let mut j = i + 1;
            while j < l.len() && l[j] != b'"' {
                j += if l[j] == b'\\' { 2 } else { 1 };
            }
            out.extend_from_slice(b"\"\"");
            i = j + 1;
        } else {
            out.push(l[i]);
            i += 1;
        }
    }
    out
}

fn lines(d: &[u8]) -> Vec<&[u8]> {
    d.split_inclusive(|b| *b == b'\n').collect()
}

fn end(l: &[u8]) -> &[u8] {
    &l[body(l).len()..]
}

fn body(l: &[u8]) -> &[u8] {
    let l = l.strip_suffix(b"\n").unwrap_or(l);
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn shape(v: &Value) -> String {
    match v {
        Value::Object(m) => format!("{{{}}}", m.values().map(shape).collect::<Vec<_>>().join(",")),
        Value::Array(a) => format!("[{}]", a.iter().map(shape).collect::<Vec<_>>().join(",")),
        Value::String(_) => "s".into(),
        other => other.to_string(),
    }
}

fn every_string(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| every_string(x, f)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            f(k);
            every_string(x, f);
        }),
        _ => {}
    }
}
