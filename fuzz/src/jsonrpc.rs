//! `jsonrpc`: the stdio line reader with its size cap and streaming id scanner, and the
//! classification of each message (`parse`) and of an HTTP body (`parse_body`).
//!
//! - Lines: the same bytes in any chunking give the same lines, equal to a model (split at `\n`,
//!   one `\r` before it dropped, a line over the cap reported with its length and never returned).
//! - The id scanner: the same result in any chunking, and on a line that is a JSON object (unique
//!   keys) it agrees with serde_json: an id it reports is the object's `"id"`, and it finds it when
//!   the id is short; `method`/`result`/`error` flags are the keys present.
//! - Classification agrees with serde_json's view of the message (a `Value` model of the rules).

use crate::util::{chunk_sizes, chunks, now, params, ChunkReader};
use dotty_pi_ext::mcp::framing::{read_line_capped, IdScan, Line};
use dotty_pi_ext::mcp::jsonrpc::{parse, parse_body, Incoming, RpcError};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

/// Input: one byte for the cap (`16 * b + 1` bytes), three for the chunk sizes, then the stream.
pub fn check(data: &[u8]) {
    let ([c, s1, s2, s3], stream) = params::<4>(data);
    let cap = c as usize * 16 + 1;
    let expected = model_lines(stream, cap);

    let mut whole = None;
    for sizes in [vec![stream.len().max(1)], vec![1], chunk_sizes(&[s1, s2, s3], 64)] {
        let got = read_all(stream, cap, sizes.clone());
        for (line, _) in &got {
            if let Got::Ok(l) = line {
                assert!(l.len() <= cap, "a line over the cap was returned");
            }
        }
        let lines: Vec<&Got> = got.iter().map(|(l, _)| l).collect();
        assert_eq!(lines, expected.iter().collect::<Vec<_>>(), "chunks {sizes:?}, cap {cap}");
        // A line read whole: the scan of an over-long line is the scan of its bytes.
        let raw_lines = stream.split(|&b| b == b'\n');
        for ((line, scan), raw) in got.iter().zip(raw_lines) {
            if let Got::TooLong(_) = line {
                let alone = scan_in(raw, &[raw.len().max(1)]);
                assert_eq!(scan, &alone, "the reader's scan of {:?}", String::from_utf8_lossy(raw));
            }
        }
        match &whole {
            None => whole = Some(got),
            Some(w) => assert_eq!(w, &got, "same lines and scans in any chunking"),
        }
    }

    for raw in stream.split(|&b| b == b'\n') {
        let one = scan_in(raw, &[raw.len().max(1)]);
        assert_eq!(one, scan_in(raw, &[1]), "scan byte by byte");
        assert_eq!(one, scan_in(raw, &chunk_sizes(&[s1, s2, s3], 16)), "scan in chunks");
        check_scan(raw, &one);
        check_parse(raw);
    }
    check_parse_body(stream);
}

#[derive(Debug, PartialEq)]
enum Got {
    Ok(Vec<u8>),
    TooLong(usize),
    Eof,
}

type Scan = (Option<Value>, bool, bool);

fn read_all(stream: &[u8], cap: usize, sizes: Vec<usize>) -> Vec<(Got, Scan)> {
    let mut r = ChunkReader::new(stream, sizes);
    let mut buf = Vec::new();
    let mut scan = IdScan::default();
    let mut out = Vec::new();
    // Each call consumes at least one byte or ends: never more calls than bytes.
    for _ in 0..=stream.len() + 1 {
        let line = now(read_line_capped(&mut r, &mut buf, cap, Some(&mut scan))).expect("memory can't fail");
        let got = match line {
            Line::Ok => Got::Ok(buf.clone()),
            Line::TooLong(n) => Got::TooLong(n),
            Line::Eof => Got::Eof,
        };
        let eof = got == Got::Eof;
        out.push((got, (scan.id.clone(), scan.has_method, scan.has_outcome)));
        if eof {
            return out;
        }
    }
    panic!("the reader never reached the end");
}

/// What the reader must return for `stream`: its `\n`-separated lines, a final unterminated one
/// included, each either returned (without one trailing `\r`) or, over the cap, reported.
fn model_lines(stream: &[u8], cap: usize) -> Vec<Got> {
    let mut pieces: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let last = pieces.pop().unwrap_or_default();
    let mut out = Vec::new();
    let one = |p: &[u8]| {
        if p.len() > cap {
            Got::TooLong(p.len())
        } else {
            Got::Ok(p.strip_suffix(b"\r").unwrap_or(p).to_vec())
        }
    };
    out.extend(pieces.into_iter().map(one));
    if !last.is_empty() {
        out.push(one(last));
    }
    out.push(Got::Eof);
    out
}

fn scan_in(raw: &[u8], sizes: &[usize]) -> Scan {
    let mut s = IdScan::default();
    for c in chunks(raw, sizes) {
        s.feed(c);
    }
    (s.id, s.has_method, s.has_outcome)
}

/// The top-level keys of a JSON object, in order, with their values' raw text; `None` when `bytes`
/// is not one JSON object.
fn object_entries(bytes: &[u8]) -> Option<Vec<(String, Box<RawValue>)>> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(String, Box<RawValue>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(e) = m.next_entry::<String, Box<RawValue>>()? {
                out.push(e);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let entries = (&mut de).deserialize_map(Entries).ok()?;
    de.end().ok()?;
    Some(entries)
}

fn unique(entries: &[(String, Box<RawValue>)]) -> bool {
    entries.iter().enumerate().all(|(i, (k, _))| entries[..i].iter().all(|(k2, _)| k2 != k))
}

fn check_scan(raw: &[u8], (id, has_method, has_outcome): &Scan) {
    let Some(entries) = object_entries(raw) else { return };
    if !unique(&entries) {
        return;
    }
    let get = |k: &str| entries.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    // (A number past f64 has no `Value`: nothing to compare.)
    let Ok(model_id) = get("id").map(|v| serde_json::from_str::<Value>(v.get())).transpose() else { return };
    if let Some(id) = id {
        assert_eq!(Some(id), model_id.as_ref(), "the scanned id is the object's");
    }
    let method = get("method").is_some();
    let outcome = get("result").is_some() || get("error").is_some();
    assert!(!has_method || method, "a method flag without a method key");
    assert!(!has_outcome || outcome, "an outcome flag without result/error");
    let done = id.is_some() && (*has_method || *has_outcome);
    if !done {
        assert_eq!((*has_method, *has_outcome), (method, outcome), "flags of {:?}", String::from_utf8_lossy(raw));
    }
    // The scanner reads the raw bytes of the value (up to 128 of them, spaces included): a short
    // id written without escapes in its key is always found.
    let spaces = raw.iter().filter(|b| b.is_ascii_whitespace()).count();
    if let Some(v) = get("id") {
        if v.get().len() <= 96 && spaces < 32 && !raw.contains(&b'\\') {
            assert!(id.is_some(), "the id {} of {:?} was not found", v.get(), String::from_utf8_lossy(raw));
        }
    }
}

/// What `parse` must say of some bytes.
#[derive(Debug)]
enum Expect {
    Is(Incoming),
    /// Not JSON to serde_json: `NotJson`, or `Invalid` when the envelope's typed read meets a
    /// wrong type before the syntax error; never a message.
    NotAMessage,
    /// JSON that serde_json's `Value` refuses for what the envelope skips unread (nesting past
    /// 128, a number past f64, invalid UTF-8 or a lone surrogate in a string): serde_json checks
    /// none of these in a skipped value (`IgnoredAny`), so the message is classified from its
    /// envelope alone. Either answer is right.
    Any,
}

const ENVELOPE_KEYS: [&str; 4] = ["id", "method", "result", "error"];

/// The expectation from serde_json's view of the bytes (a `Value`, and the raw key list for
/// repeated keys, which a `Value` hides).
fn model_parse(bytes: &[u8]) -> Expect {
    let v = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v,
        Err(e)
            if ["recursion limit", "number out of range", "unicode code point", "surrogate"]
                .iter()
                .any(|m| e.to_string().contains(m)) =>
        {
            return Expect::Any;
        }
        Err(_) => return Expect::NotAMessage,
    };
    if !envelope(&v, bytes) {
        return Expect::Is(Incoming::Invalid(String::new()));
    }
    let Some(o) = v.as_object() else { return Expect::Is(Incoming::Invalid(String::new())) };
    let absent_if_null = |k: &str| o.get(k).filter(|v| !v.is_null());
    let method = absent_if_null("method").and_then(Value::as_str).map(String::from);
    let id = absent_if_null("id").cloned();
    if let Some(method) = method {
        return Expect::Is(match id {
            Some(id) => Incoming::Request { id, method },
            None => Incoming::Notification { method },
        });
    }
    let result = o.get("result");
    let error = absent_if_null("error");
    if result.is_none() && error.is_none() {
        return Expect::Is(Incoming::Invalid(String::new()));
    }
    let Some(n) = id.as_ref().and_then(Value::as_u64) else {
        let shown = id.map_or_else(|| "null".to_string(), |v| v.to_string().chars().take(64).collect());
        return Expect::Is(Incoming::Orphan(shown));
    };
    let outcome = match error {
        Some(e) => Err(RpcError {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            message: e.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_string(),
            data: e.get("data").cloned(),
        }),
        None => Ok(result.cloned().unwrap_or(Value::Null)),
    };
    Expect::Is(Incoming::Response { id: n, outcome })
}

/// A JSON-RPC envelope at all: an object, none of its four keys twice, a `method` (when not null)
/// a string.
fn envelope(v: &Value, bytes: &[u8]) -> bool {
    let Some(o) = v.as_object() else { return false };
    let entries = object_entries(bytes).expect("an object");
    let repeated = ENVELOPE_KEYS.iter().any(|k| entries.iter().filter(|(key, _)| key == k).count() > 1);
    !repeated && o.get("method").is_none_or(|m| m.is_null() || m.is_string())
}

/// `Invalid`'s reason text is free: compare kinds for it.
fn same(got: &Incoming, want: &Incoming) -> bool {
    match (got, want) {
        (Incoming::Invalid(_), Incoming::Invalid(_)) => true,
        _ => got == want,
    }
}

fn agrees(got: &Incoming, want: &Expect) -> bool {
    match want {
        Expect::Is(w) => same(got, w),
        Expect::NotAMessage => matches!(got, Incoming::NotJson | Incoming::Invalid(_)),
        Expect::Any => true,
    }
}

fn check_parse(bytes: &[u8]) {
    let got = parse(bytes);
    let want = model_parse(bytes);
    assert!(agrees(&got, &want), "parse({:?}) = {got:?}, serde_json says {want:?}", String::from_utf8_lossy(bytes));
}

fn check_parse_body(bytes: &[u8]) {
    let got = parse_body(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'[') {
        match (got, model_parse(bytes)) {
            (Ok(msgs), want) => assert!(msgs.len() == 1 && agrees(&msgs[0], &want), "{msgs:?} vs {want:?}"),
            (Err(_), want) => {
                assert!(matches!(want, Expect::NotAMessage | Expect::Any), "refused a body serde_json reads: {want:?}")
            }
        }
        return;
    }
    let Ok(elems) = serde_json::from_slice::<Vec<&RawValue>>(bytes) else {
        assert!(got.is_err(), "not a JSON array yet read as a batch: {got:?}");
        return;
    };
    let wants: Vec<Expect> = elems.iter().map(|e| model_parse(e.get().as_bytes())).collect();
    match got {
        Ok(msgs) => {
            assert_eq!(msgs.len(), elems.len());
            for ((m, want), e) in msgs.iter().zip(&wants).zip(&elems) {
                assert!(agrees(m, want), "batch element {} = {m:?}, serde_json says {want:?}", e.get());
            }
        }
        // A batch is refused whole when an element is no envelope (or serde_json's limits meet).
        Err(e) => {
            let whole_ok = serde_json::from_slice::<Value>(bytes).is_ok();
            let no_envelope = elems.iter().zip(&wants).any(|(el, w)| {
                matches!(w, Expect::Any)
                    || serde_json::from_str::<Value>(el.get()).is_ok_and(|v| !envelope(&v, el.get().as_bytes()))
            });
            assert!(!whole_ok || no_envelope, "a batch of envelopes refused: {e}");
        }
    }
}
