//! The string tokens of a JSON line, redacted in place: each string is decoded, its secrets are
//! found in the decoded text, and only the raw bytes of the spans found are replaced by the
//! marker, so every other byte of the line (numbers, structure, escapes, untouched strings) stays
//! as it was. It needs no parser that accepts the line: a line serde refuses (a lone surrogate
//! escape, nesting deeper than 128) is tokenised the same way, never redacted as text that a
//! pass could break inside an escape.
//!
//! Two keys of one object that would become the same string are kept apart: the later ones get an
//! index on their last marker (`[REDACTED:aws-access-token#2]`), so no entry is lost.

use super::markers::marker;
use super::{Counts, Hit};
use std::collections::{HashMap, HashSet};

/// A string token: `start` is its opening quote, `content` the raw bytes between the quotes.
struct Tok {
    start: usize,
    content: (usize, usize),
    /// The object it is a key of (an index counting objects in the line).
    key_of: Option<usize>,
}

/// The string tokens of `body`, in order.
fn tokens(body: &[u8]) -> Vec<Tok> {
    // Per open container: Some(object id, expecting a key) or None for an array.
    let mut stack: Vec<Option<(usize, bool)>> = Vec::new();
    let mut objects = 0;
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let mut j = i + 1;
                while j < body.len() && body[j] != b'"' {
                    j += if body[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(body.len());
                let key_of = match stack.last() {
                    Some(Some((id, true))) => Some(*id),
                    _ => None,
                };
                out.push(Tok { start: i, content: (i + 1, end), key_of });
                i = end + 1;
                continue;
            }
            b'{' => {
                stack.push(Some((objects, true)));
                objects += 1;
            }
            b'[' => stack.push(None),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Some((_, expect))) = stack.last_mut() {
                    *expect = false;
                }
            }
            b',' => {
                if let Some(Some((_, expect))) = stack.last_mut() {
                    *expect = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Each unit of a string's raw content, in order: the bytes it decodes to and the raw span it
/// comes from (a run of bytes without an escape, which decodes to itself, or an escape). A lone surrogate decodes to U+FFFD, an escape JSON doesn't know
/// to its two bytes as they are.
fn units(raw: &[u8], mut f: impl FnMut(&[u8], (usize, usize))) {
    let mut i = 0;
    while i < raw.len() {
        // A run without an escape decodes to itself: one unit, byte for byte.
        let plain = raw[i..].iter().position(|b| *b == b'\\').unwrap_or(raw.len() - i);
        if plain > 0 {
            f(&raw[i..i + plain], (i, i + plain));
            i += plain;
            continue;
        }
        if i + 1 >= raw.len() {
            f(&raw[i..i + 1], (i, i + 1));
            i += 1;
            continue;
        }
        let simple = match raw[i + 1] {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            _ => None,
        };
        if let Some(c) = simple {
            f(&[c], (i, i + 2));
            i += 2;
            continue;
        }
        let Some(hi) = (raw[i + 1] == b'u').then(|| hex4(raw, i + 2)).flatten() else {
            f(&raw[i..i + 2], (i, i + 2));
            i += 2;
            continue;
        };
        let (c, len) = if (0xD800..0xDC00).contains(&hi) {
            match (raw.get(i + 6..i + 8) == Some(b"\\u")).then(|| hex4(raw, i + 8)).flatten() {
                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                    (char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), 12)
                }
                _ => (None, 6),
            }
        } else {
            (char::from_u32(hi), 6)
        };
        let mut buf = [0u8; 4];
        let s = c.unwrap_or('\u{FFFD}').encode_utf8(&mut buf);
        f(s.as_bytes(), (i, i + len));
        i += len;
    }
}

/// The decoded bytes of a string's raw content.
fn decode(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    units(raw, |bytes, _| out.extend_from_slice(bytes));
    out
}

/// For each of `hits` (spans of the decoded form, sorted and disjoint), the raw span it covers:
/// from the start of the unit its first byte comes from to the end of the unit of its last.
fn raw_spans(raw: &[u8], hits: &[Hit]) -> Vec<(usize, usize)> {
    let mut out = vec![(0, 0); hits.len()];
    let (mut decoded, mut next_start, mut next_end) = (0usize, 0usize, 0usize);
    units(raw, |bytes, (rs, re)| {
        let (from, to) = (decoded, decoded + bytes.len());
        // In a plain run a decoded byte is the raw byte at the same offset; an escape is whole.
        let plain = re - rs == bytes.len();
        while next_start < hits.len() && hits[next_start].start < to {
            let p = hits[next_start].start;
            if p >= from {
                out[next_start].0 = if plain { rs + (p - from) } else { rs };
            }
            next_start += 1;
        }
        while next_end < hits.len() && hits[next_end].end - 1 < to {
            let p = hits[next_end].end - 1;
            if p >= from {
                out[next_end].1 = if plain { rs + (p - from) + 1 } else { re };
            }
            next_end += 1;
        }
        decoded = to;
    });
    out
}

fn hex4(raw: &[u8], at: usize) -> Option<u32> {
    let h = raw.get(at..at + 4)?;
    std::str::from_utf8(h).ok().and_then(|h| u32::from_str_radix(h, 16).ok())
}

/// The raw content of a string with `hits` (spans of its decoded form) replaced by markers, JSON-
/// escaped; the last marker indexed with `index` if given. Counted.
fn render(raw: &[u8], hits: &[Hit], index: Option<usize>, counts: &mut Counts) -> Vec<u8> {
    let spans = raw_spans(raw, hits);
    let mut out = Vec::with_capacity(raw.len());
    let mut at = 0;
    for (n, (h, (s, e))) in hits.iter().zip(spans).enumerate() {
        out.extend_from_slice(&raw[at..s]);
        let m = marker(&h.kind, if n + 1 == hits.len() { index } else { None });
        let escaped = serde_json::to_string(&m).unwrap_or_default();
        out.extend_from_slice(escaped.trim_matches('"').as_bytes());
        *counts.entry(h.kind.to_string()).or_default() += 1;
        at = e;
    }
    out.extend_from_slice(&raw[at..]);
    out
}

/// A string token that changes: its hits in its decoded form, and the index its last marker gets.
struct Change {
    tok: usize,
    hits: Vec<Hit>,
    index: Option<usize>,
}

/// `body` with the secrets of its string tokens replaced ([`spans`] finds them in a decoded
/// string); with `gaps_too` (a line the parser refuses), the bytes between the tokens as text
/// too. None when nothing was found.
pub(super) fn redact_tokens(
    body: &[u8],
    gaps_too: bool,
    counts: &mut Counts,
    spans: &mut dyn FnMut(&[u8]) -> Vec<Hit>,
) -> Option<Vec<u8>> {
    let toks = tokens(body);
    let mut changes: Vec<Change> = Vec::new();
    for (n, t) in toks.iter().enumerate() {
        let decoded = decode(&body[t.content.0..t.content.1]);
        let hits = spans(&decoded);
        if !hits.is_empty() {
            changes.push(Change { tok: n, hits, index: None });
        }
    }
    // The text between the tokens of a refused line: (start, end, hits).
    let mut gaps: Vec<(usize, usize, Vec<Hit>)> = Vec::new();
    if gaps_too {
        let mut at = 0;
        let bounds = toks.iter().map(|t| (t.start, (t.content.1 + 1).min(body.len())));
        for (s, e) in bounds.chain(std::iter::once((body.len(), body.len()))) {
            if s > at {
                let hits = spans(&body[at..s]);
                if !hits.is_empty() {
                    gaps.push((at, s, hits));
                }
            }
            at = e.max(at);
        }
    }
    if changes.is_empty() && gaps.is_empty() {
        return None;
    }
    keep_keys_apart(body, &toks, &mut changes);
    let mut out = Vec::with_capacity(body.len());
    let mut at = 0;
    let mut edits: Vec<(usize, usize, Vec<u8>)> = changes
        .iter()
        .map(|c| {
            let (s, e) = toks[c.tok].content;
            (s, e, render(&body[s..e], &c.hits, c.index, counts))
        })
        .collect();
    for (s, e, hits) in gaps {
        edits.push((s, e, super::replace(&body[s..e], &hits, None, counts)));
    }
    edits.sort_by_key(|x| x.0);
    for (s, e, new) in edits {
        out.extend_from_slice(&body[at..s]);
        out.extend_from_slice(&new);
        at = e;
    }
    out.extend_from_slice(&body[at..]);
    Some(out)
}

/// Gives a changed key that would equal another key of its object an index (2, 3, …).
fn keep_keys_apart(body: &[u8], toks: &[Tok], changes: &mut [Change]) {
    let objects: HashSet<usize> = changes.iter().filter_map(|c| toks[c.tok].key_of).collect();
    if objects.is_empty() {
        return;
    }
    let changed: HashSet<usize> = changes.iter().map(|c| c.tok).collect();
    let mut taken: HashMap<usize, HashSet<Vec<u8>>> = HashMap::new();
    for (n, t) in toks.iter().enumerate() {
        if let Some(o) = t.key_of.filter(|o| objects.contains(o) && !changed.contains(&n)) {
            taken.entry(o).or_default().insert(decode(&body[t.content.0..t.content.1]));
        }
    }
    for c in changes.iter_mut() {
        let Some(o) = toks[c.tok].key_of else { continue };
        let decoded = decode(&body[toks[c.tok].content.0..toks[c.tok].content.1]);
        let set = taken.entry(o).or_default();
        let mut index = None;
        loop {
            let new = super::replace(&decoded, &c.hits, index, &mut Counts::new());
            if set.insert(new) {
                break;
            }
            index = Some(index.map_or(2, |i| i + 1));
        }
        c.index = index;
    }
}
