//! Redaction of secrets from what a feed stages: every JSON string of every line of a session
//! file (chat text, tool calls, tool results, everything) is scanned, and each secret is replaced
//! with `[REDACTED:<kind>]` inside its string, so every line stays valid JSON with the same entries.
//! pi's own files are never touched: the exporter redacts the bytes it is about to stage.
//!
//! A [`Redactor`] is built once (per feeder) from three layers ([`Sources`]):
//! 1. the values of this process's own secrets, matched exactly (kind `env:<NAME>`, or
//!    `url-password` for the password of a URL in the environment): `MEMPALACE_REMOTE_TOKEN`,
//!    `DOTTY_ADMIN_TOKEN` and every variable whose name says it holds a secret ([`secret_name`]),
//!    for values of [`MIN_EXACT`] characters or more;
//! 2. well-known credential formats: gitleaks' rule set (vendored, kind = the gitleaks rule id)
//!    and a few rules of ours ([`rules`]);
//! 3. the user's patterns (`MEMPALACE_FEED_REDACT`, a file of regular expressions, kind
//!    `user-pattern`); one that doesn't compile is one stderr line, the others still apply.
//!
//! What was redacted is counted per kind ([`Counts`]), never kept.

pub mod calls;
#[cfg(test)]
mod corpus;
mod exact;
#[cfg(test)]
mod heldout;
mod json;
mod learn;
#[cfg(test)]
mod linear;
mod markers;
mod pi_writes;
mod rules;
#[cfg(test)]
mod tests;
mod tree;

pub use exact::secret_name;
pub(crate) use pi_writes::PiWrites;
pub use tree::{for_feed, redact_tree};

use aho_corasick::AhoCorasick;
use exact::{exact_worthy, url_password, Exact};
use learn::learn;
use markers::{between, marker_spans, merge, replace};
use rules::{Hit, Rules};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Shortest value matched exactly: shorter ones are ordinary words (`TOKENIZERS_PARALLELISM=false`).
pub const MIN_EXACT: usize = 8;

/// How many rounds [`Redactor::redact_bytes`] runs at most: a replacement can't make a new secret
/// in practice, but the output is checked again until nothing is found (the fuzz target's property).
const MAX_ROUNDS: usize = 4;

/// Redactions per kind (`aws-access-token` → 2).
pub type Counts = BTreeMap<String, u64>;

/// What a rule set is built from.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    /// The environment (name, value) of the process that feeds.
    pub env: Vec<(String, String)>,
    /// The user's pattern file (`MEMPALACE_FEED_REDACT`), if any.
    pub patterns_file: Option<std::path::PathBuf>,
}

/// One redaction run: the extra exact values (those learned from the file so far) and, while
/// learning, the values found.
#[derive(Default)]
struct Run<'a> {
    extra: Option<&'a Exact>,
    learned: Option<Vec<(Vec<u8>, Arc<str>)>>,
    /// The second pass over a file: the rules already ran on every string and found nothing
    /// more, so a string is looked at again only where a learned value is in it (then fully).
    learned_only: bool,
}

/// The rule set of the three layers.
pub struct Redactor {
    /// Layer 1: the exact values.
    exact: Option<Exact>,
    /// Layers 2 and 3.
    rules: Rules,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values.
        let n = self.exact.as_ref().map_or(0, |e| e.kinds.len());
        write!(f, "Redactor({n} exact values, {} rules)", self.rules.rules.len())
    }
}

impl Redactor {
    /// The rule set of `sources`, and one warning per rule that can't be used (a missing pattern
    /// file, a pattern that is not a regular expression): the caller says them on stderr.
    pub fn build(sources: &Sources) -> (Redactor, Vec<String>) {
        let mut warnings = Vec::new();
        let mut user = Vec::new();
        let mut source = String::new();
        if let Some(path) = &sources.patterns_file {
            source = format!("MEMPALACE_FEED_REDACT ({})", path.display());
            match std::fs::read_to_string(path) {
                Ok(text) => user = parse_patterns(&text),
                Err(e) => warnings.push(format!(
                    "mempalace feed: {source} can't be read ({e}); the built-in redaction rules still apply"
                )),
            }
        }
        let (rules, w) = Rules::build(&user, &source);
        warnings.extend(w);
        let mut values: Vec<(Vec<u8>, Arc<str>)> = Vec::new();
        for (name, value) in &sources.env {
            for pw in url_password(value) {
                if exact_worthy(&pw) {
                    values.push((pw.into_bytes(), Arc::from("url-password")));
                }
            }
            if secret_name(name) && exact_worthy(value) {
                let kind: Arc<str> = Arc::from(format!("env:{name}"));
                values.push((value.clone().into_bytes(), kind.clone()));
                if value.trim() != value {
                    values.push((value.trim().as_bytes().to_vec(), kind));
                }
            }
        }
        let exact = Exact::build(values, &mut warnings);
        (Redactor { exact, rules }, warnings)
    }

    /// The built-in formats alone (no environment, no user file): tests, the fuzz target, the bench.
    pub fn builtin() -> Redactor {
        Self::build(&Sources::default()).0
    }

    /// `bytes` with every secret replaced; None when nothing was found. Counts what it replaced.
    pub fn redact_bytes(&self, bytes: &[u8], counts: &mut Counts) -> Option<Vec<u8>> {
        self.redact_run(bytes, counts, &mut Run::default())
    }

    fn redact_run(&self, bytes: &[u8], counts: &mut Counts, run: &mut Run<'_>) -> Option<Vec<u8>> {
        let hits = self.spans(bytes, run);
        (!hits.is_empty()).then(|| replace(bytes, &hits, None, counts))
    }

    /// The spans of `hay` to replace, sorted and disjoint. A marker already in `hay` is never
    /// scanned (nor part of a span): the text between markers is, and after a round that found
    /// something, the text next to the new spans ([`NEAR`] bytes each side) is scanned again (a
    /// replacement can make a boundary a rule needs), at most [`MAX_ROUNDS`] times: a round costs
    /// what its spans' neighbourhoods cost, not the whole string again. Learns the values found.
    /// The second pass over a file (`learned_only`) matches the learned values exactly and runs no
    /// rule: the first pass ran them all.
    fn spans(&self, hay: &[u8], run: &mut Run<'_>) -> Vec<Hit> {
        if run.learned_only && !run.extra.is_some_and(|e| e.ac.is_match(hay)) {
            return Vec::new();
        }
        let mut todo = between(hay.len(), &marker_spans(hay));
        let mut done: Vec<Hit> = Vec::new();
        let mut scratch = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let mut next = Vec::new();
            for (s, e) in todo {
                let found = self.hits(&hay[s..e], &mut scratch, run.extra, !run.learned_only);
                if found.is_empty() {
                    continue;
                }
                let mut at = s;
                for mut h in found {
                    h.start += s;
                    h.end += s;
                    if let Some(learned) = &mut run.learned {
                        learn(&hay[h.start..h.end], &h.kind, learned);
                    }
                    near_hits(at, h.start, at != s, true, &mut next);
                    at = h.end;
                    done.push(h);
                }
                near_hits(at, e, at != s, false, &mut next);
            }
            if next.is_empty() {
                break;
            }
            todo = next;
        }
        done.sort_by_key(|h| h.start);
        done
    }

    /// `s` with every secret replaced; None when nothing was found.
    pub fn redact_str(&self, s: &str, counts: &mut Counts) -> Option<String> {
        self.redact_str_run(s, counts, &mut Run::default())
    }

    fn redact_str_run(&self, s: &str, counts: &mut Counts, run: &mut Run<'_>) -> Option<String> {
        // Spans are widened to whole characters and the markers are ASCII: still UTF-8.
        self.redact_run(s.as_bytes(), counts, run).map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// True when `raw` (a line as written, JSON escapes and all) can hold no secret of the rule
    /// set in any of its strings once decoded: no keyword, no exact value, no escape that could
    /// hide one (`\u`, `\/`), no ungated rule. Sound because no keyword or exact value holds a
    /// character JSON writers escape (checked at build, and by a test for the keywords).
    fn raw_line_is_clean(&self, raw: &[u8], run: &Run<'_>) -> bool {
        let exact_hit = |e: Option<&Exact>| e.is_some_and(|e| e.escaped || e.ac.is_match(raw));
        if run.learned_only {
            if exact_hit(run.extra) {
                return false;
            }
        } else if self.rules.any_triggered(raw) || exact_hit(self.exact.as_ref()) || exact_hit(run.extra) {
            return false;
        }
        !hides_a_byte(raw)
    }

    /// The secrets in `hay`, merged: sorted, overlapping spans joined (the first one's kind).
    fn hits(
        &self,
        hay: &[u8],
        scratch: &mut Vec<(usize, usize, usize)>,
        extra: Option<&Exact>,
        rules: bool,
    ) -> Vec<Hit> {
        let mut hits = Vec::new();
        for e in [self.exact.as_ref(), extra].into_iter().flatten() {
            e.find(hay, &mut hits);
        }
        if !rules {
            return merge(hay, hits);
        }
        self.rules.windows(hay, scratch);
        let mut found = Vec::new();
        for &(i, s, e) in scratch.iter() {
            self.rules.rules[i].find_in(hay, s, e, &mut found);
            hits.append(&mut found);
        }
        merge(hay, hits)
    }

    /// A session file (JSON lines) with every string of every line redacted; None when nothing
    /// was found. A line that is valid JSON stays valid JSON with the same entries, and only the
    /// bytes of its strings change (numbers, structure and untouched strings byte for byte); a
    /// line the JSON parser refuses is redacted string token by string token all the same, never
    /// by a text pass that could break an escape; a line that isn't JSON at all is redacted as
    /// text. Line ends are kept as they were.
    ///
    /// A value found by a rule anywhere in the file is a secret everywhere in it, when it looks
    /// like one ([`worth_learning`]): a token the `.env` a tool printed holds is redacted too where
    /// the model repeats it bare, without the `TOKEN=` that made it recognisable (a second pass
    /// matches the values found exactly).
    pub fn redact_jsonl(&self, input: &[u8], counts: &mut Counts) -> Option<Vec<u8>> {
        let mut run = Run { extra: None, learned: Some(Vec::new()), learned_only: false };
        let first = self.jsonl_pass(input, counts, &mut run);
        let learned = run.learned.take().unwrap_or_default();
        if learned.is_empty() {
            return first;
        }
        let extra = Exact::build(learned, &mut Vec::new());
        let mut again = Run { extra: extra.as_ref(), learned: None, learned_only: true };
        let base = first.as_deref().unwrap_or(input);
        self.jsonl_pass(base, counts, &mut again).or(first)
    }

    fn jsonl_pass(&self, input: &[u8], counts: &mut Counts, run: &mut Run<'_>) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        let mut pos = 0;
        while pos < input.len() {
            let end = input[pos..].iter().position(|b| *b == b'\n').map_or(input.len(), |i| pos + i + 1);
            let line = &input[pos..end];
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            match (self.line_run(body, counts, run), &mut out) {
                (Some(new), o) => {
                    let buf = o.get_or_insert_with(|| input[..pos].to_vec());
                    buf.extend_from_slice(&new);
                    buf.extend_from_slice(&line[body.len()..]);
                }
                (None, Some(buf)) => buf.extend_from_slice(line),
                (None, None) => {}
            }
            pos = end;
        }
        out
    }

    /// One line without its end: None when unchanged.
    pub fn redact_line(&self, body: &[u8], counts: &mut Counts) -> Option<Vec<u8>> {
        self.line_run(body, counts, &mut Run::default())
    }

    fn line_run(&self, body: &[u8], counts: &mut Counts, run: &mut Run<'_>) -> Option<Vec<u8>> {
        if self.raw_line_is_clean(body, run) {
            return None;
        }
        match body.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{' | b'[' | b'"') => {
                // Valid JSON: only string tokens may change. Refused: the text between the string
                // tokens (garbage, or nothing) is redacted as text too.
                let valid = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
                json::redact_tokens(body, !valid, counts, &mut |hay: &[u8]| self.spans(hay, run))
            }
            _ => self.redact_run(body, counts, run),
        }
    }

    /// Redacts every string (keys too) of `v` in place, counting what it replaced; true when one
    /// changed. Two keys of one object that become the same marker are kept apart by an index
    /// (`[REDACTED:<kind>#2]`), so no entry is lost. The palace-tool path (a call's arguments).
    pub fn redact_value(&self, v: &mut serde_json::Value, counts: &mut Counts) -> bool {
        use serde_json::Value;
        let run = &mut Run::default();
        match v {
            Value::String(s) => match self.redact_str_run(s, counts, run) {
                Some(new) => {
                    *s = new;
                    true
                }
                None => false,
            },
            Value::Array(items) => items.iter_mut().fold(false, |acc, x| self.redact_value(x, counts) | acc),
            Value::Object(map) => {
                let mut changed = false;
                for (_, x) in map.iter_mut() {
                    changed |= self.redact_value(x, counts);
                }
                if map.keys().any(|k| !self.spans(k.as_bytes(), &mut Run::default()).is_empty()) {
                    let old = std::mem::take(map);
                    let originals: std::collections::HashSet<String> = old.keys().cloned().collect();
                    for (k, x) in old {
                        let hits = self.spans(k.as_bytes(), &mut Run::default());
                        let key = if hits.is_empty() {
                            k
                        } else {
                            let mut index = 1;
                            loop {
                                let suffix = (index > 1).then_some(index);
                                let probe = replace(k.as_bytes(), &hits, suffix, &mut Counts::new());
                                let probe = String::from_utf8_lossy(&probe).into_owned();
                                if !map.contains_key(&probe) && !originals.contains(&probe) {
                                    replace(k.as_bytes(), &hits, suffix, counts);
                                    break probe;
                                }
                                index += 1;
                            }
                        };
                        map.insert(key, x);
                    }
                    changed = true;
                }
                changed
            }
            _ => false,
        }
    }
}

/// True when a raw JSON line holds an escape that can spell a byte a keyword or value is made of
/// (`\u`, `\/`): the raw-line fast path can't vouch for it then.
fn hides_a_byte(raw: &[u8]) -> bool {
    static ESCAPES: std::sync::OnceLock<Option<AhoCorasick>> = std::sync::OnceLock::new();
    match ESCAPES.get_or_init(|| AhoCorasick::new([&b"\\u"[..], b"\\/"]).ok()) {
        Some(ac) => ac.is_match(raw),
        None => raw.windows(2).any(|w| w[0] == b'\\' && (w[1] == b'u' || w[1] == b'/')),
    }
}

/// How far from a new span a later round looks again.
const NEAR: usize = 256;

/// The part of the gap `a..b` a later round scans: next to the span before it (`after_hit`) and the
/// span after it (`before_hit`), [`NEAR`] bytes each; all of a gap that short.
fn near_hits(a: usize, b: usize, after_hit: bool, before_hit: bool, next: &mut Vec<(usize, usize)>) {
    if b <= a || !(after_hit || before_hit) {
        return;
    }
    if b - a <= 2 * NEAR {
        next.push((a, b));
        return;
    }
    if after_hit {
        next.push((a, a + NEAR));
    }
    if before_hit {
        next.push((b - NEAR, b));
    }
}

/// Adds `more` into `counts`.
pub fn merge_counts(counts: &mut Counts, more: Counts) {
    for (k, n) in more {
        *counts.entry(k).or_default() += n;
    }
}

/// "3 (aws-access-token 1, jwt 2)", or "none".
pub fn describe(counts: &Counts) -> String {
    let total: u64 = counts.values().sum();
    if total == 0 {
        return "none".into();
    }
    let each: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!("{total} ({})", each.join(", "))
}

/// The patterns of a file: one regular expression a line; blank lines and `#` comments skipped.
fn parse_patterns(text: &str) -> Vec<(String, usize)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (l.trim_end_matches('\r'), i + 1))
        .filter(|(l, _)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(l, n)| (l.to_string(), n))
        .collect()
}
