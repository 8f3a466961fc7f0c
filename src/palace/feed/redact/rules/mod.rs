//! The rules of the three layers, compiled: this process's own secret values (matched exactly, one
//! Aho-Corasick automaton), well-known credential formats (gitleaks' rule set, vendored in
//! `gitleaks-rules.json`, plus a few of ours for what it has no rule for: a URL's password, an
//! `Authorization:` header, a `password=` assignment) and the user's patterns.
//!
//! Matching follows gitleaks: each format rule has keywords, and its regex runs only on a string
//! that holds one of them (one case-insensitive automaton over every keyword, [`Rules::triggered`]);
//! the secret is the rule's secret group (or its first non-empty group), which must reach the rule's
//! minimum entropy and pass its allowlists. Regexes are byte regexes without Unicode classes, as
//! gitleaks' RE2 ones are (`\w` is ASCII).

mod code;
mod gitleaks;
mod keyword;
mod ours;
mod plugins;
mod random;

pub(super) use code::wordy;
pub(super) use random::{entropy, random_token};

use gitleaks::vendored;
use keyword::keyword;
use ours::ours;
use plugins::plugins;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use std::sync::Arc;

/// Cap on one compiled regex (a user's pattern that explodes is refused, not compiled for minutes).
const REGEX_SIZE_LIMIT: usize = 8 << 20;

/// What an allowlist looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Secret,
    Match,
    Line,
}

#[derive(Clone)]
pub(super) struct Allow {
    pub(super) target: Target,
    pub(super) regexes: Vec<Arc<Regex>>,
    /// A secret that contains one of these words (any case) is not a secret: one automaton, as
    /// gitleaks' generic rule has some 1,500 of them.
    pub(super) stopwords: Option<Arc<AhoCorasick>>,
}

/// A check of a secret, given the bytes before and after it: false refuses it.
pub(super) type Check = fn(&[u8], &[u8], &[u8]) -> bool;

/// One regex rule of the format or user layer.
pub(super) struct Rule {
    pub kind: Arc<str>,
    pub(super) regex: Regex,
    pub(super) secret_group: Option<usize>,
    pub(super) entropy: Option<f64>,
    pub(super) allow: Vec<Allow>,
    /// Extra check of ours on the secret and the bytes after it (our rules refuse code and
    /// placeholders).
    pub(super) check: Option<Check>,
    /// Lower sorts first when two matches start at the same place (exact, specific, generic).
    pub priority: u8,
    /// The secret is the whole match: the first group is a fragment of the format, not the secret
    /// (`jwt-base64`'s named alternatives, `microsoft-teams-webhook`'s repeated `([a-z0-9]{4}-)`).
    pub(super) whole: bool,
    /// For a rule whose regex is another rule's too (`bittrex-access-key`, `bittrex-secret-key`):
    /// the word of its id the other lacks. A match without it ranks after the twin's.
    pub(super) twin_word: Option<Vec<u8>>,
    /// The longest match of the regex in bytes, at most [`MAX_REACH`]: a match that holds one of
    /// the rule's keywords lies within this many bytes of it.
    pub(super) reach: usize,
    /// The regex starts at the credential's word of a name (`password`, not `db_password`): a
    /// leading class of the name's letters would make every letter a place a match may begin. An
    /// allowlist of the match sees the name from its start (up to 50 bytes back).
    pub(super) name_first: bool,
    /// The regex begins at a line's start (`(?m)^`): it runs only on the lines that begin in its
    /// window and that this cheap test of the line's bytes lets through (a log whose every line
    /// holds a keyword costs a `memchr` per line, not a regex), with the byte before the line as
    /// context.
    pub(super) line_start: Option<LineTest>,
}

/// A test of one line's bytes (without its end): may the rule's regex match at its start?
pub(super) type LineTest = fn(&[u8]) -> bool;

/// What decides that a rule runs on a string: one of its keywords is in it (gitleaks' way), or
/// a regex of its own matches it (a format whose tokens begin with letters prose is full of, or
/// with any letter: a literal search is cheaper than keywords that hit every few bytes).
pub(super) enum Gate {
    Keywords(Vec<String>),
    Regex(&'static str),
}

/// A span of the input to replace with `[REDACTED:<kind>]`.
#[derive(Debug, Clone)]
pub(super) struct Hit {
    pub start: usize,
    pub end: usize,
    pub priority: u8,
    /// Among hits of one span and priority, lower first (the twin whose word is in the match).
    pub rank: u8,
    pub kind: Arc<str>,
}

impl Rule {
    /// A rule of this crate's own (not gitleaks'): `pattern` compiled, gitleaks' global allowlist,
    /// its check, priority 2 (after gitleaks' rule of the same span), the secret its first group
    /// (or, without `group`, its first non-empty group), reaching `reach` bytes from its keyword.
    pub(super) fn own(kind: &str, pattern: &str, group: bool, check: Option<Check>, reach: usize) -> Option<Rule> {
        compile(pattern).ok().map(|regex| Rule {
            kind: Arc::from(kind),
            regex,
            secret_group: group.then_some(1),
            entropy: None,
            allow: gitleaks::global_allow(),
            check,
            priority: 2,
            whole: false,
            twin_word: None,
            reach,
            name_first: false,
            line_start: None,
        })
    }

    /// Every secret this rule finds in `hay[s..e]` (a window of it), at their places in `hay`.
    pub(super) fn find_in(&self, hay: &[u8], s: usize, e: usize, out: &mut Vec<Hit>) {
        let Some(may) = self.line_start else {
            let from = out.len();
            self.find_from(&hay[s..e], 0, out);
            shift(&mut out[from..], s);
            return;
        };
        // The lines that begin in the window: at `s` only when it is the string's start or a
        // line's; a window that begins inside a line skips to the next.
        scanned(e - s);
        let mut line = if s == 0 || hay[s - 1] == b'\n' {
            s
        } else {
            match memchr::memchr(b'\n', &hay[s..e]) {
                Some(i) => s + i + 1,
                None => return,
            }
        };
        while line < e {
            let end = memchr::memchr(b'\n', &hay[line..e]).map_or(e, |i| line + i);
            if may(&hay[line..end]) {
                let lo = line.saturating_sub(1);
                let from = out.len();
                self.find_from(&hay[lo..end], line - lo, out);
                shift(&mut out[from..], lo);
            }
            line = end + 1;
        }
    }

    /// Every secret this rule finds in `hay` (a test's or a measurement's).
    #[cfg(test)]
    pub(super) fn find(&self, hay: &[u8], out: &mut Vec<Hit>) {
        self.find_from(hay, 0, out)
    }

    /// Every secret this rule finds in `hay` from `at` on, the bytes before `at` its context.
    fn find_from(&self, hay: &[u8], at: usize, out: &mut Vec<Hit>) {
        scanned(hay.len() - at);
        // One set of capture slots for every match (a `Captures` a match would allocate).
        let mut locs = self.regex.capture_locations();
        let mut pos = at;
        while pos <= hay.len() {
            let Some(whole) = self.regex.captures_read_at(&mut locs, hay, pos) else { break };
            pos = if whole.end() > whole.start() { whole.end() } else { whole.end() + 1 };
            let group = |g: usize| locs.get(g).map(|(a, b)| a..b);
            let secret = match self.secret_group {
                Some(g) => group(g),
                None if self.whole => Some(whole.range()),
                None => (1..locs.len()).find_map(|g| group(g).filter(|r| !r.is_empty())).or(Some(whole.range())),
            };
            let Some(secret) = secret.filter(|r| !r.is_empty()) else { continue };
            let s = &hay[secret.clone()];
            if self.entropy.is_some_and(|min| entropy(s) < min)
                || self.check.is_some_and(|ok| !ok(s, &hay[..secret.start], &hay[secret.end..]))
            {
                continue;
            }
            let from = if self.name_first { name_start(hay, whole.start()) } else { whole.start() };
            if self.allowed(s, &hay[from..whole.end()], line_of(hay, whole.start(), whole.end())) {
                continue;
            }
            let rank = match &self.twin_word {
                Some(w) if !contains_ignore_case(whole.as_bytes(), w) => 1,
                _ => 0,
            };
            out.push(Hit {
                start: secret.start,
                end: secret.end,
                priority: self.priority,
                rank,
                kind: self.kind.clone(),
            });
        }
    }

    fn allowed(&self, secret: &[u8], whole: &[u8], line: &[u8]) -> bool {
        self.allow.iter().any(|a| {
            let target = match a.target {
                Target::Secret => secret,
                Target::Match => whole,
                Target::Line => line,
            };
            scanned(target.len());
            a.regexes.iter().any(|r| r.is_match(target)) || a.stopwords.as_ref().is_some_and(|ac| ac.is_match(secret))
        })
    }
}

/// Hits found in a slice that begins at `by`, at their places in the whole.
fn shift(hits: &mut [Hit], by: usize) {
    for h in hits {
        h.start += by;
        h.end += by;
    }
}

/// The secrets `rules` find in `line` (a test of a rule file's own rules).
#[cfg(test)]
pub(super) fn secrets_found<'a>(rules: impl IntoIterator<Item = &'a Rule>, line: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for r in rules {
        r.find(line.as_bytes(), &mut hits);
    }
    hits.iter().map(|h| line[h.start..h.end].to_string()).collect()
}

/// Where the name that ends at `at` starts: up to 50 bytes of `[A-Za-z0-9_.-]` before it (as
/// gitleaks' `[\w.-]{0,50}?`).
fn name_start(hay: &[u8], at: usize) -> usize {
    let lo = at.saturating_sub(50);
    hay[lo..at]
        .iter()
        .rposition(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')))
        .map_or(lo, |i| lo + i + 1)
}

/// The farthest a rule's match reaches from its keyword when its pattern has no longest match
/// (`[\s\S-]{64,}?`, `+`): a private key's block (4096-bit RSA is 3.2 KiB of base64; a PGP key
/// block more).
const MAX_REACH: usize = 16 * 1024;

/// The longest match of `pattern` in bytes (as compiled: bytes, no Unicode classes), at most
/// [`MAX_REACH`]; [`MAX_REACH`] when it has none or can't be parsed.
pub(super) fn reach(pattern: &str) -> usize {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()
        .and_then(|h| h.properties().maximum_len())
        .map_or(MAX_REACH, |n| n.min(MAX_REACH))
}

/// `s..e` widened to the next whitespace or quote within `reach` more bytes each side (a window
/// never cuts a token it can avoid cutting).
fn widen(hay: &[u8], s: usize, e: usize, reach: usize) -> (usize, usize) {
    let cut = |b: &u8| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`');
    let s = if s == 0 {
        0
    } else {
        let lo = s.saturating_sub(reach);
        hay[lo..s].iter().rposition(cut).map_or(lo, |i| lo + i)
    };
    let e = if e == hay.len() {
        e
    } else {
        let hi = (e + reach).min(hay.len());
        hay[e..hi].iter().position(cut).map_or(hi, |i| e + i)
    };
    (s, e)
}

/// The line of `hay` that holds `start..end` (gitleaks' allowlists of a line look at one line of a
/// file; a 20 MB tool output is thousands of them), at most 4 KiB each side: an allowlist costs
/// what its line costs, never the whole string per match.
fn line_of(hay: &[u8], start: usize, end: usize) -> &[u8] {
    const MAX: usize = 4096;
    let lo = start.saturating_sub(MAX);
    let hi = (end + MAX).min(hay.len());
    let s = hay[lo..start].iter().rposition(|b| *b == b'\n').map_or(lo, |i| lo + i + 1);
    let e = hay[end..hi].iter().position(|b| *b == b'\n').map_or(hi, |i| end + i);
    &hay[s..e]
}

#[cfg(test)]
thread_local! {
    /// Bytes handed to a regex or the keyword automaton on this thread: the work a redaction
    /// does, counted so that a test can show it grows linearly with the input (tests only).
    static SCANNED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` bytes scanned (a test build's measure; nothing in the addon).
#[inline]
fn scanned(n: usize) {
    #[cfg(test)]
    SCANNED.with(|c| c.set(c.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

/// Bytes handed to a regex on this thread so far.
#[cfg(test)]
pub(super) fn bytes_scanned() -> u64 {
    SCANNED.with(std::cell::Cell::get)
}

pub(super) fn contains_ignore_case(hay: &[u8], word: &[u8]) -> bool {
    !word.is_empty() && hay.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word))
}

pub(super) fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).unicode(false).size_limit(REGEX_SIZE_LIMIT).dfa_size_limit(REGEX_SIZE_LIMIT).build()
}

/// The compiled format and user layers, with the keyword prefilter.
pub(super) struct Rules {
    pub rules: Vec<Rule>,
    /// Every keyword of every keyword-gated rule, ASCII case-insensitive (None: it could not be
    /// built, and every rule runs on every string).
    keywords: Option<AhoCorasick>,
    /// Keyword pattern id → the rules it gates.
    keyword_rules: Vec<Vec<usize>>,
    /// Keyword pattern id → the farthest reach of the rules it gates: two of its occurrences
    /// closer than twice this share one span ([`Rules::windows`]).
    keyword_reach: Vec<usize>,
    /// Rules that run on every string (the user's patterns).
    always: Vec<usize>,
    /// Rules gated by a regex of their own ([`Gate::Regex`]), each with its gate: a rule runs on
    /// all of a string its gate matches.
    bare: Vec<(usize, Regex)>,
}

impl Rules {
    /// The built-in rules and `user` (pattern, 1-based line) compiled; a user pattern that isn't a
    /// regular expression gives one warning (never its text, which may hold a secret).
    pub(super) fn build(user: &[(String, usize)], source: &str) -> (Rules, Vec<String>) {
        let mut warnings = Vec::new();
        let mut rules = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        let mut gate = |rule: usize, words: &[String], keywords: &mut Vec<String>| {
            for w in words {
                match keywords.iter().position(|k| k == w) {
                    Some(i) => keyword_rules[i].push(rule),
                    None => {
                        keywords.push(w.clone());
                        keyword_rules.push(vec![rule]);
                    }
                }
            }
        };
        let vendored = vendored(&mut warnings);
        // Our assignment rule fires on code as gitleaks' generic rule does: it gets its allowlists
        // of the match and the line (`secret_name = ...`, `key_length = ...`, Docker build
        // secrets, imports), not its stopwords (a password may hold a common word). Not the header
        // rules: the generic match allowlist has `author`, which `Authorization` holds.
        let generic: Vec<Allow> = vendored
            .iter()
            .filter(|(r, _)| &*r.kind == "generic-api-key")
            .flat_map(|(r, _)| r.allow.iter().filter(|a| a.target != Target::Secret))
            .map(|a| Allow { target: a.target, regexes: a.regexes.clone(), stopwords: None })
            .collect();
        let ours = ours().into_iter().map(|(mut r, w)| {
            if &*r.kind == "password-assignment" {
                r.allow.extend(generic.iter().cloned());
            }
            (r, w)
        });
        let mut bare = Vec::new();
        let words = |(r, w): (Rule, Vec<String>)| (r, Gate::Keywords(w));
        for (rule, how) in vendored
            .into_iter()
            .map(words)
            .chain(ours.map(words))
            .chain(keyword().into_iter().map(words))
            .chain(plugins())
        {
            match how {
                Gate::Keywords(words) => gate(rules.len(), &words, &mut keywords),
                // A gate's alphabet has nothing a JSON writer escapes, so the raw line is enough
                // to tell (the fast path); one that doesn't compile leaves its rule on every string.
                Gate::Regex(p) => match compile(p) {
                    Ok(re) => bare.push((rules.len(), re)),
                    Err(_) => always.push(rules.len()),
                },
            }
            rules.push(rule);
        }
        for (pattern, line) in user {
            match compile(pattern) {
                Ok(regex) => {
                    always.push(rules.len());
                    rules.push(Rule {
                        kind: Arc::from("user-pattern"),
                        regex,
                        secret_group: None,
                        entropy: None,
                        allow: Vec::new(),
                        check: None,
                        priority: 1,
                        whole: false,
                        twin_word: None,
                        reach: reach(pattern),
                        name_first: false,
                        line_start: None,
                    });
                }
                Err(e) => warnings.push(format!(
                    "mempalace feed: {source} line {line} is not a usable regular expression ({}); it is ignored, every other redaction rule still applies",
                    regex_error_kind(&e)
                )),
            }
        }
        // A DFA: every keyword occurrence of a 20 MB line is reported (overlapping), at a table
        // lookup a byte (a few hundred keywords: a few MB of table).
        let keywords = match AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&keywords)
        {
            Ok(ac) => Some(ac),
            Err(e) => {
                warnings.push(format!("mempalace feed: the credential keywords can't be compiled ({e}); every format rule runs on every string"));
                always = (0..rules.len()).collect();
                None
            }
        };
        let keyword_reach =
            keyword_rules.iter().map(|rs| rs.iter().map(|r| rules[*r].reach).max().unwrap_or(0)).collect();
        (Rules { rules, keywords, keyword_rules, keyword_reach, always, bare }, warnings)
    }

    /// Where to run which rule in `hay`: (rule, start, end), sorted and, per rule, disjoint. A
    /// keyword-gated rule runs around each of its keywords (as far as its longest match reaches,
    /// [`Rule::reach`], each side, widened to the nearest whitespace; overlapping windows merged),
    /// so a 20 MB line with a few keywords costs a few windows, not 20 MB per rule. An ungated rule
    /// (the user's patterns) runs on all of `hay`.
    pub(super) fn windows(&self, hay: &[u8], out: &mut Vec<(usize, usize, usize)>) {
        scanned(hay.len());
        out.clear();
        out.extend(self.always.iter().map(|r| (*r, 0, hay.len())));
        for (r, gate) in &self.bare {
            scanned(hay.len());
            if gate.is_match(hay) {
                out.push((*r, 0, hay.len()));
            }
        }
        if let Some(ac) = &self.keywords {
            // Each keyword's span so far, grown while its occurrences are closer than twice the
            // farthest reach of its rules: a keyword every few bytes (a short one in base64, a
            // `password:` on every line of a log) costs a comparison, not a window per rule. Each
            // span then opens a window for each rule it gates (a superset of the rule's own
            // windows around each occurrence). Made at the first keyword: most strings hold none.
            let mut open: Vec<Option<(usize, usize)>> = Vec::new();
            let mut spans: Vec<(usize, usize, usize)> = Vec::new();
            for m in ac.find_overlapping_iter(hay) {
                if open.is_empty() {
                    open.resize(self.keyword_rules.len(), None);
                }
                let p = m.pattern().as_usize();
                let gap = 2 * self.keyword_reach[p];
                match &mut open[p] {
                    Some((_, e)) if m.start() <= *e + gap => *e = (*e).max(m.end()),
                    slot => {
                        if let Some((s, e)) = slot.replace((m.start(), m.end())) {
                            spans.push((p, s, e));
                        }
                    }
                }
            }
            spans.extend(open.iter().enumerate().filter_map(|(p, w)| w.map(|(s, e)| (p, s, e))));
            for (p, s, e) in spans {
                for &r in &self.keyword_rules[p] {
                    let reach = self.rules[r].reach;
                    out.push((r, s.saturating_sub(reach), (e + reach).min(hay.len())));
                }
            }
        }
        for w in out.iter_mut() {
            let reach = self.rules[w.0].reach;
            (w.1, w.2) = widen(hay, w.1, w.2, reach);
        }
        out.sort_unstable();
        let mut merged: Vec<(usize, usize, usize)> = Vec::with_capacity(out.len());
        for &(r, s, e) in out.iter() {
            match merged.last_mut() {
                Some(last) if last.0 == r && s <= last.2 => last.2 = last.2.max(e),
                _ => merged.push((r, s, e)),
            }
        }
        *out = merged;
    }

    /// The rules a keyword in `hay` gates, and the ungated ones; sorted, once each (a measurement).
    #[cfg(test)]
    pub(super) fn triggered(&self, hay: &[u8], out: &mut Vec<usize>) {
        let mut w = Vec::new();
        self.windows(hay, &mut w);
        out.clear();
        out.extend(w.iter().map(|x| x.0));
        out.dedup();
    }

    /// True when a keyword of a gated rule is in `hay` or an ungated rule exists.
    pub(super) fn any_triggered(&self, hay: &[u8]) -> bool {
        scanned(hay.len());
        !self.always.is_empty() || self.keywords.as_ref().is_some_and(|ac| ac.is_match(hay)) || self.bare_hit(hay)
    }

    /// True when a regex-gated rule's token may be in `hay` (its gate matches).
    fn bare_hit(&self, hay: &[u8]) -> bool {
        self.bare.iter().any(|(_, gate)| {
            scanned(hay.len());
            gate.is_match(hay)
        })
    }

    /// How many keywords there are (a test).
    #[cfg(test)]
    pub(super) fn keyword_count(&self) -> usize {
        self.keyword_rules.len()
    }
}

/// What kind of error a regex is, without the pattern (which the error's text quotes).
pub(super) fn regex_error_kind(e: &regex::Error) -> &'static str {
    match e {
        regex::Error::CompiledTooBig(_) => "too big once compiled",
        _ => "a syntax error",
    }
}
