//! The markers a redaction writes (`[REDACTED:<kind>]`) and the spans it replaces: found hits
//! merged into disjoint spans, markers already in a text found (never scanned again), the text
//! between them, and the replacement that counts each marker written.

use super::rules::Hit;
use super::Counts;

/// Sorted by start (then priority, then longest), overlapping spans joined, each widened to whole
/// UTF-8 characters.
pub(super) fn merge(hay: &[u8], mut hits: Vec<Hit>) -> Vec<Hit> {
    for h in &mut hits {
        while h.start > 0 && is_continuation(hay[h.start]) {
            h.start -= 1;
        }
        while h.end < hay.len() && is_continuation(hay[h.end]) {
            h.end += 1;
        }
    }
    // A marker of an earlier round is not a secret again (a URL's password rule would take it).
    hits.retain(|h| !is_marker(&hay[h.start..h.end]));
    hits.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(a.priority.cmp(&b.priority))
            .then(b.end.cmp(&a.end))
            .then(a.rank.cmp(&b.rank))
            .then(a.kind.cmp(&b.kind))
    });
    let mut out: Vec<Hit> = Vec::with_capacity(hits.len());
    for h in hits {
        match out.last_mut() {
            Some(last) if h.start < last.end => last.end = last.end.max(h.end),
            _ => out.push(h),
        }
    }
    out
}

/// `[REDACTED:<kind>]` and nothing else.
pub(super) fn is_marker(s: &[u8]) -> bool {
    s.strip_prefix(b"[REDACTED:").and_then(|r| r.strip_suffix(b"]")).is_some_and(|k| !k.contains(&b']'))
}

/// Longest kind a marker found in text may have.
pub(super) const MAX_KIND: usize = 128;

/// The markers in `hay` (`[REDACTED:<kind>]`, the kind without brackets, space, quote or
/// backslash), as sorted disjoint spans: never scanned, never part of a redaction.
pub(super) fn marker_spans(hay: &[u8]) -> Vec<(usize, usize)> {
    const OPEN: &[u8] = b"[REDACTED:";
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = hay[i..].iter().position(|b| *b == b'[') {
        let s = i + p;
        if !hay[s..].starts_with(OPEN) {
            i = s + 1;
            continue;
        }
        let rest = &hay[s + OPEN.len()..];
        let stop = rest
            .iter()
            .take(MAX_KIND + 1)
            .position(|b| matches!(b, b']' | b'[' | b'"' | b'\\') || b.is_ascii_whitespace() || *b < 0x20);
        match stop {
            Some(k) if k > 0 && rest[k] == b']' => {
                let e = s + OPEN.len() + k + 1;
                out.push((s, e));
                i = e;
            }
            _ => i = s + 1,
        }
    }
    out
}

/// The spans of `0..len` between `taken` (sorted, disjoint), empty ones left out.
pub(super) fn between(len: usize, taken: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(taken.len() + 1);
    let mut at = 0;
    for (s, e) in taken {
        if *s > at {
            out.push((at, *s));
        }
        at = *e;
    }
    if len > at {
        out.push((at, len));
    }
    out
}

pub(super) fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The marker of `kind` (`#<index>` appended for a key kept apart from another).
pub(super) fn marker(kind: &str, index: Option<usize>) -> String {
    match index {
        Some(i) => format!("[REDACTED:{kind}#{i}]"),
        None => format!("[REDACTED:{kind}]"),
    }
}

/// `hay` with each (merged, sorted) hit replaced by its marker, the last one indexed with
/// `index` if given; counted, one per marker written.
pub(super) fn replace(hay: &[u8], hits: &[Hit], index: Option<usize>, counts: &mut Counts) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut at = 0;
    for (n, h) in hits.iter().enumerate() {
        out.extend_from_slice(&hay[at..h.start]);
        let i = if n + 1 == hits.len() { index } else { None };
        out.extend_from_slice(marker(&h.kind, i).as_bytes());
        *counts.entry(h.kind.to_string()).or_default() += 1;
        at = h.end;
    }
    out.extend_from_slice(&hay[at..]);
    out
}
