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

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

/// The vendored gitleaks rule set (see `LICENSE-gitleaks`, `scripts/redact/vendor-gitleaks.py`).
const GITLEAKS: &str = include_str!("gitleaks-rules.json");

/// Cap on one compiled regex (a user's pattern that explodes is refused, not compiled for minutes).
const REGEX_SIZE_LIMIT: usize = 8 << 20;

#[derive(Deserialize)]
struct VendoredFile {
    rules: Vec<VendoredRule>,
}

#[derive(Deserialize)]
struct VendoredRule {
    id: String,
    regex: String,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(rename = "secretGroup")]
    secret_group: Option<usize>,
    entropy: Option<f64>,
    #[serde(default)]
    allow: Vec<VendoredAllow>,
}

#[derive(Deserialize)]
struct VendoredAllow {
    target: String,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
}

/// What an allowlist looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

#[derive(Clone)]
struct Allow {
    target: Target,
    regexes: Vec<Arc<Regex>>,
    /// A secret that contains one of these words (any case) is not a secret: one automaton, as
    /// gitleaks' generic rule has some 1,500 of them.
    stopwords: Option<Arc<AhoCorasick>>,
}

/// A check of a secret, given the bytes before and after it: false refuses it.
type Check = fn(&[u8], &[u8], &[u8]) -> bool;

/// One regex rule of the format or user layer.
pub(super) struct Rule {
    pub kind: Arc<str>,
    regex: Regex,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    allow: Vec<Allow>,
    /// Extra check of ours on the secret and the bytes after it (our rules refuse code and
    /// placeholders).
    check: Option<Check>,
    /// Lower sorts first when two matches start at the same place (exact, specific, generic).
    pub priority: u8,
    /// The secret is the whole match: the first group is a fragment of the format, not the secret
    /// (`jwt-base64`'s named alternatives, `microsoft-teams-webhook`'s repeated `([a-z0-9]{4}-)`).
    whole: bool,
    /// For a rule whose regex is another rule's too (`bittrex-access-key`, `bittrex-secret-key`):
    /// the word of its id the other lacks. A match without it ranks after the twin's.
    twin_word: Option<Vec<u8>>,
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
    /// Every secret this rule finds in `hay`.
    pub(super) fn find(&self, hay: &[u8], out: &mut Vec<Hit>) {
        scanned(hay.len());
        for caps in self.regex.captures_iter(hay) {
            let Some(whole) = caps.get(0) else { continue };
            let secret = match self.secret_group {
                Some(g) => caps.get(g),
                None if self.whole => Some(whole),
                None => (1..caps.len()).find_map(|g| caps.get(g).filter(|m| !m.is_empty())).or(Some(whole)),
            };
            let Some(secret) = secret.filter(|m| !m.is_empty()) else { continue };
            let s = secret.as_bytes();
            if self.entropy.is_some_and(|min| entropy(s) < min)
                || self.check.is_some_and(|ok| !ok(s, &hay[..secret.start()], &hay[secret.end()..]))
            {
                continue;
            }
            if self.allowed(s, whole.as_bytes(), line_of(hay, whole.start(), whole.end())) {
                continue;
            }
            let rank = match &self.twin_word {
                Some(w) if !contains_ignore_case(whole.as_bytes(), w) => 1,
                _ => 0,
            };
            out.push(Hit {
                start: secret.start(),
                end: secret.end(),
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

thread_local! {
    /// Bytes handed to a regex or the keyword automaton on this thread: the work a redaction
    /// does, counted so that a test can show it grows linearly with the input.
    static SCANNED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn scanned(n: usize) {
    SCANNED.with(|c| c.set(c.get() + n as u64));
}

/// Bytes handed to a regex on this thread so far.
#[cfg(test)]
pub(super) fn bytes_scanned() -> u64 {
    SCANNED.with(std::cell::Cell::get)
}

fn contains_ignore_case(hay: &[u8], word: &[u8]) -> bool {
    !word.is_empty() && hay.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word))
}

/// True when the regex's first capture group is structural (see [`Rule::whole`]): named, or
/// repeated by a quantifier. A rule without a secret group then redacts its whole match.
fn first_group_is_structural(pattern: &str) -> bool {
    let b = pattern.as_bytes();
    let mut i = 0;
    let mut class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' if !class => class = true,
            b']' if class => class = false,
            b'(' if !class => {
                if b[i + 1..].starts_with(b"?P<") || b[i + 1..].starts_with(b"?<") {
                    return true;
                }
                if b.get(i + 1) == Some(&b'?') {
                    i += 1;
                    continue;
                }
                // The first capture group: find its end, look at what follows.
                let (mut depth, mut j, mut cls) = (0usize, i, false);
                while j < b.len() {
                    match b[j] {
                        b'\\' => j += 1,
                        b'[' if !cls => cls = true,
                        b']' if cls => cls = false,
                        b'(' if !cls => depth += 1,
                        b')' if !cls => {
                            depth -= 1;
                            if depth == 0 {
                                return matches!(b.get(j + 1), Some(b'{' | b'*' | b'+'));
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                return false;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Words, not a secret: most of the letters of `v` are in runs of three or more that read as
/// words of code or prose (`Uint8Array`, `self.headers.get`, `Zeroizing::new`, `db-password`), as
/// a camel-case, dotted, dashed or slashed name has them. A random token's letters rarely are
/// (`Zq8Lw3Xv7Rt2`: every run is two letters; base64 mixes cases every few letters).
pub(super) fn wordy(v: &[u8]) -> bool {
    let mut letters = 0usize;
    let mut in_words = 0usize;
    let mut run = 0usize;
    let flush = |run: &mut usize, in_words: &mut usize| {
        if *run >= 3 {
            *in_words += *run;
        }
        *run = 0;
    };
    for (i, c) in v.iter().enumerate() {
        if c.is_ascii_alphabetic() {
            letters += 1;
            // A new word starts at an upper-case letter after a lower-case one, and after two or
            // more capitals followed by a lower-case letter (`HTTPServer`: HTTP, Server).
            let prev = i.checked_sub(1).map(|p| v[p]);
            let next = v.get(i + 1).copied();
            let camel = c.is_ascii_uppercase()
                && (prev.is_some_and(|p| p.is_ascii_lowercase())
                    || (prev.is_some_and(|p| p.is_ascii_uppercase()) && next.is_some_and(|n| n.is_ascii_lowercase())));
            if camel {
                flush(&mut run, &mut in_words);
            }
            run += 1;
        } else {
            flush(&mut run, &mut in_words);
        }
    }
    flush(&mut run, &mut in_words);
    letters > 0 && in_words * 10 >= letters * 7
}

/// Shannon entropy in bits per byte (gitleaks' measure).
pub(super) fn entropy(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in s {
        counts[*b as usize] += 1;
    }
    let n = s.len() as f64;
    counts.iter().filter(|c| **c > 0).map(|c| f64::from(*c) / n).map(|p| -p * p.log2()).sum()
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
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
    /// Rules that run on every string (the user's patterns).
    always: Vec<usize>,
}

impl Rules {
    /// The built-in rules and `user` (pattern, 1-based line) compiled; a user pattern that isn't a
    /// regular expression gives one warning (never its text, which may hold a secret).
    pub(super) fn build(user: &[(String, usize)], source: &str) -> (Rules, Vec<String>) {
        let mut warnings = Vec::new();
        let mut rules = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
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
        for (rule, words) in vendored.into_iter().chain(ours) {
            gate(rules.len(), &words, &mut keywords);
            rules.push(rule);
        }
        let mut always = Vec::new();
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
                    });
                }
                Err(e) => warnings.push(format!(
                    "mempalace feed: {source} line {line} is not a usable regular expression ({}); it is ignored, every other redaction rule still applies",
                    regex_error_kind(&e)
                )),
            }
        }
        let keywords = match AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&keywords)
        {
            Ok(ac) => Some(ac),
            Err(e) => {
                warnings.push(format!("mempalace feed: the credential keywords can't be compiled ({e}); every format rule runs on every string"));
                always = (0..rules.len()).collect();
                None
            }
        };
        (Rules { rules, keywords, keyword_rules, always }, warnings)
    }

    /// The rules to run on `hay`: those a keyword in it gates, and the ungated ones; sorted, once each.
    pub(super) fn triggered(&self, hay: &[u8], out: &mut Vec<usize>) {
        scanned(hay.len());
        out.clear();
        out.extend_from_slice(&self.always);
        if let Some(ac) = &self.keywords {
            for m in ac.find_overlapping_iter(hay) {
                out.extend_from_slice(&self.keyword_rules[m.pattern().as_usize()]);
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// True when a keyword of a gated rule is in `hay` or an ungated rule exists.
    pub(super) fn any_triggered(&self, hay: &[u8]) -> bool {
        scanned(hay.len());
        !self.always.is_empty() || self.keywords.as_ref().is_some_and(|ac| ac.is_match(hay))
    }

    /// How many keywords there are (a test).
    #[cfg(test)]
    pub(super) fn keyword_count(&self) -> usize {
        self.keyword_rules.len()
    }
}

/// What kind of error a regex is, without the pattern (which the error's text quotes).
fn regex_error_kind(e: &regex::Error) -> &'static str {
    match e {
        regex::Error::CompiledTooBig(_) => "too big once compiled",
        _ => "a syntax error",
    }
}

fn compile_allow(a: VendoredAllow, cache: &mut HashMap<String, Option<Arc<Regex>>>) -> Allow {
    Allow {
        target: match a.target.as_str() {
            "match" => Target::Match,
            "line" => Target::Line,
            _ => Target::Secret,
        },
        regexes: a
            .regexes
            .iter()
            .filter_map(|p| cache.entry(p.clone()).or_insert_with(|| compile(p).ok().map(Arc::new)).clone())
            .collect(),
        stopwords: (!a.stopwords.is_empty())
            .then(|| AhoCorasickBuilder::new().ascii_case_insensitive(true).build(&a.stopwords).ok().map(Arc::new))
            .flatten(),
    }
}

/// gitleaks' rules, compiled, with their keywords (lowercase). A rule that doesn't compile is a
/// defect of the vendored file: said once, never silent (a test keeps the count at zero).
fn vendored(warnings: &mut Vec<String>) -> Vec<(Rule, Vec<String>)> {
    let file: VendoredFile = match serde_json::from_str(GITLEAKS) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(format!("mempalace feed: the built-in credential formats can't be read ({e})"));
            return Vec::new();
        }
    };
    let twins = twin_words(&file.rules);
    // The same allowlist regexes recur in most rules: compiled once.
    let mut cache: HashMap<String, Option<Arc<Regex>>> = HashMap::new();
    let mut out = Vec::new();
    for r in file.rules {
        let regex = match compile(&r.regex) {
            Ok(re) => re,
            Err(e) => {
                warnings.push(format!(
                    "mempalace feed: built-in rule {} can't be compiled ({})",
                    r.id,
                    regex_error_kind(&e)
                ));
                continue;
            }
        };
        let allow = r.allow.into_iter().map(|a| compile_allow(a, &mut cache)).chain(global_allow()).collect();
        let priority = if r.id == "generic-api-key" { 2 } else { 1 };
        let whole = r.secret_group.is_none() && first_group_is_structural(&r.regex);
        let twin_word = twins.get(&r.id).cloned();
        // gitleaks' generic rule fires on code its allowlists don't know (`RegEnumKey =
        // win32api.RegEnumKey`, CPython's distutils): a member chain of identifiers is refused.
        let check: Option<Check> = (r.id == "generic-api-key").then_some(not_code);
        let rule = Rule {
            kind: Arc::from(r.id.as_str()),
            regex,
            secret_group: r.secret_group,
            entropy: r.entropy,
            allow,
            check,
            priority,
            whole,
            twin_word,
        };
        out.push((rule, r.keywords));
    }
    out
}

/// For each rule whose regex another rule has too: the word of its id the other's lacks
/// (`bittrex-secret-key` → `secret`). Such rules can't tell their matches apart: the word in the
/// match decides which kind a match is.
fn twin_words(rules: &[VendoredRule]) -> HashMap<String, Vec<u8>> {
    let mut out = HashMap::new();
    for a in rules {
        for b in rules.iter().filter(|b| b.id != a.id && b.regex == a.regex) {
            let theirs: Vec<&str> = b.id.split('-').collect();
            if let Some(w) = a.id.split('-').find(|w| !theirs.contains(w)) {
                out.insert(a.id.clone(), w.as_bytes().to_vec());
            }
        }
    }
    out
}

/// Formats gitleaks has no rule for (it scans code, we scan what a terminal and a model said).
fn ours() -> Vec<(Rule, Vec<String>)> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rule = |kind: &str, pattern: &str, check: Option<Check>, priority: u8| {
        compile(pattern).ok().map(|regex| Rule {
            kind: Arc::from(kind),
            regex,
            secret_group: Some(1),
            entropy: None,
            allow: global_allow(),
            check,
            priority,
            whole: false,
            twin_word: None,
        })
    };
    [
        // scheme://user:password@host: the password (the user name stays).
        (
            rule(
                "url-password",
                r"\b(?:[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s/:@'`]{1,256}|(?i:redis|rediss|postgres|postgresql|mysql|mariadb|mongodb|mongodb\+srv|amqp|amqps)://):([^\s/@'`]{1,256})@[a-zA-Z0-9\[]",
                Some(url_secret),
                2,
            ),
            words(&["://"]),
        ),
        // ~/.netrc: `machine <host> login <user> password <secret>`, on one line or several.
        (
            rule("netrc-password", r"(?i)\bmachine\s+\S+(?:\s+(?:login|account)\s+\S+)*\s+password\s+(\S{1,256})", Some(url_secret), 2),
            words(&["machine"]),
        ),
        // curl -u user:password, wget --user=u --password=p is the assignment rule's.
        (
            rule("curl-user-password", r#"(?:^|[\s'"])(?:-u|--user)(?:[ \t]+|=)['"]?[^\s:'"]{1,64}:([^\s'"]{1,256})"#, Some(assigned_secret), 2),
            words(&["-u", "--user"]),
        ),
        // token: <value>, X-API-Key: <value>, STRIPE_API_KEY=<value>: a random value of a key that
        // names a credential (gitleaks' generic rule leaves out base64's `+` and `/`).
        (
            rule(
                "key-assignment",
                r#"(?i)\b[a-z0-9_.-]{0,40}(?:token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([A-Za-z0-9+/_.~=-]{16,512})"#,
                Some(random_secret),
                2,
            ),
            words(&["token", "key", "credential"]),
        ),
        // Authorization: Bearer <token> / Basic <b64> / <token>, in headers, curl and code.
        (
            rule(
                "authorization-header",
                r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate)\s+)?([A-Za-z0-9._~+/=:-]{8,})"#,
                Some(header_secret),
                2,
            ),
            words(&["authorization"]),
        ),
        (rule("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)", Some(header_secret), 2), words(&["bearer"])),
        // password=..., SECRET: ..., "passwd": "..." (a .env line, a config file, a command line).
        (
            rule(
                "password-assignment",
                r#"(?i)\b[a-z0-9_.-]{0,40}(?:password|passwd|pwd|passphrase|secret)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([^\s"'`,;<>(){}\[\]]{6,200})"#,
                Some(assigned_secret),
                2,
            ),
            words(&["password", "passwd", "pwd", "passphrase", "secret"]),
        ),
    ]
    .into_iter()
    .filter_map(|(r, w)| r.map(|r| (r, w)))
    .collect()
}

/// Not a placeholder: `$VAR`, `${VAR}`, `<token>`, `***`, `xxxx`, `...`, or a word that names what
/// belongs there (`scheme://user:password@host` in documentation).
fn not_placeholder(s: &[u8]) -> bool {
    let first = s.first().copied().unwrap_or(b'$');
    let count = |c: u8| s.iter().filter(|b| **b == c).count();
    let placeholder = match first {
        b'$' => true,
        // `<token>`, `<unset>`, `<your-token>`; `{{ var }}`, `{VAR}`; `%VAR%`, `%s`.
        b'<' => s.contains(&b'>'),
        b'{' => s.contains(&b'}'),
        b'%' => count(b'%') >= 2 || s.len() <= 3,
        // `***`, `*****abc`: mostly stars.
        b'*' => count(b'*') * 2 >= s.len(),
        _ => false,
    };
    // AWS's documentation marks its made-up keys so (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`).
    if placeholder || s.windows(7).any(|w| w == b"EXAMPLE") {
        return false;
    }
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "pass",
        "secret",
        "token",
        "changeme",
        "example",
        "placeholder",
        "your-password",
        "redacted",
        "null",
        "none",
        "nil",
        "unset",
        "empty",
        "undefined",
    ];
    if WORDS.iter().any(|w| s.eq_ignore_ascii_case(w.as_bytes())) {
        return false;
    }
    let distinct = {
        let mut seen = [false; 256];
        s.iter().for_each(|b| seen[*b as usize] = true);
        seen.iter().filter(|x| **x).count()
    };
    distinct > 2
}

/// The global allowlist of gitleaks (its `[allowlist]` regexes and stopwords: `true`, `${VAR}`,
/// `{{ template }}`, `/usr/...` paths, …), which every one of its rules gets: ours too.
fn global_allow() -> Vec<Allow> {
    GLOBAL_ALLOW.with(|g| g.clone())
}

thread_local! {
    static GLOBAL_ALLOW: Vec<Allow> = {
        #[derive(Deserialize)]
        struct Global {
            #[serde(default)]
            global: Vec<VendoredAllow>,
        }
        let g: Global = serde_json::from_str(GITLEAKS).unwrap_or(Global { global: Vec::new() });
        g.global.into_iter().map(|a| compile_allow(a, &mut HashMap::new())).collect()
    };
}

/// Code, not a value: a call (`self.headers.get(`), a member or path chain of identifiers
/// (`config.db.password`, `X25519.secret_length`, `Zeroizing::new`, `win32api.RegEnumKey`), a
/// member reached with `->` or `::` (`sqlite3_api->column_bytes16`), or an identifier made of
/// words (`_bindgen_ty_3`, `nl80211_key_attributes`, `Uint8Array`).
fn is_code(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    if after.first() == Some(&b'(') || after.starts_with(b"::") || before.ends_with(b"->") || before.ends_with(b"::") {
        return true;
    }
    // An expression: what comes before an operator (`oauth.clientSecret===void`, `headingPrefix=`),
    // optional chaining and non-null marks read as member access (`security?.basic.password`).
    let cut = s.iter().position(|b| b"=|&+*%".contains(b)).unwrap_or(s.len());
    let owned: Vec<u8> = String::from_utf8_lossy(&s[..cut]).replace("?.", ".").replace("!.", ".").into_bytes();
    let s = if owned.is_empty() { s } else { &owned[..] };
    let identifier = s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$');
    let camel = s.windows(2).any(|w| (w[0].is_ascii_lowercase() || w[0].is_ascii_digit()) && w[1].is_ascii_uppercase());
    if identifier && (camel || s.contains(&b'_') || s.contains(&b'$')) && wordy(s) {
        return true;
    }
    let text = String::from_utf8_lossy(s);
    let pieces: Vec<&str> = text.split(['.', ':']).filter(|p| !p.is_empty()).collect();
    let ident = |p: &&str| {
        let mut c = p.bytes();
        c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == b'_' || f == b'$' || f == b'#')
            && c.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    };
    (text.contains('.') || text.contains("::")) && pieces.len() >= 2 && pieces.iter().all(ident) && !random_token(s)
}

/// gitleaks' generic rule, refused on code and on file names of words (`rsa-2048-private-key.pk8`).
fn not_code(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    !is_code(s, before, after) && !is_file_name(s) && !is_digest(s, before)
}

/// A digest or fingerprint, not a key: a value right after words that say so (`ping-sha256:`,
/// `Release GPG key:`, `integrity`), or a hexadecimal digest keyed by a file name
/// (`"qwen-token-plan.json":"600e…"` in a manifest).
fn is_digest(s: &[u8], before: &[u8]) -> bool {
    let near = &before[before.len().saturating_sub(40)..];
    const WORDS: &[&[u8]] = &[
        b"sha1",
        b"sha256",
        b"sha384",
        b"sha512",
        b"md5",
        b"hash",
        b"digest",
        b"checksum",
        b"fingerprint",
        b"integrity",
        b"gpg",
        b"pgp",
    ];
    if WORDS.iter().any(|w| contains_ignore_case(near, w)) {
        return true;
    }
    let hex = s.iter().all(u8::is_ascii_hexdigit) && [32, 40, 64, 128].contains(&s.len());
    let key = near.iter().rposition(|b| b.is_ascii_alphanumeric()).map_or(&near[..0], |e| &near[..=e]);
    hex && [&b".json"[..], b".js", b".tgz", b".tar.gz", b".zip", b".whl", b".txt"].iter().any(|x| key.ends_with(x))
}

/// A file name of words with an extension (`rsa-2048-private-key.pk8`, `s_rsa1024_priv.pem`).
fn is_file_name(s: &[u8]) -> bool {
    let Some(dot) = s.iter().rposition(|b| *b == b'.') else { return false };
    let ext = &s[dot + 1..];
    (2..=4).contains(&ext.len())
        && ext[0].is_ascii_lowercase()
        && ext.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s[..dot].iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && wordy(&s[..dot])
}

/// A version or a range of versions (`^4.0.10`, `~1.2`, `>=2.0.0-rc.1`, `v3.11.0`).
fn is_version(s: &[u8]) -> bool {
    let t = s.iter().position(|b| b.is_ascii_digit()).map_or(&s[s.len()..], |i| &s[i..]);
    let prefix = &s[..s.len() - t.len()];
    prefix.iter().all(|b| matches!(b, b'^' | b'~' | b'<' | b'>' | b'=' | b'v' | b'V'))
        && t.first().is_some_and(u8::is_ascii_digit)
        && t.contains(&b'.')
        && t.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+' | b'*'))
        && t.split(|b| *b == b'.').next().is_some_and(|m| m.iter().all(u8::is_ascii_digit))
}

/// A URL's password: not a placeholder, and not one the text says is missing.
fn url_secret(s: &[u8], _before: &[u8], _after: &[u8]) -> bool {
    not_placeholder(s)
}

/// An `Authorization:` header's or `Bearer` token's value: not a placeholder, not code, not words.
fn header_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    not_placeholder(s) && (random_token(s) || (!is_code(s, before, after) && !wordy(s)))
}

/// A reference to a secret kept elsewhere, not the secret: a secret manager's or a file's
/// (`vault:kv/app#3`, `op://vault/item/field`, `arn:aws:secretsmanager:…`, `env:DB_PASSWORD`).
fn is_reference(s: &[u8]) -> bool {
    const SCHEMES: &[&[u8]] = &[
        b"vault:",
        b"op://",
        b"arn:",
        b"ssm:",
        b"sm://",
        b"secretsmanager:",
        b"gcpsm:",
        b"azurekv:",
        b"keyvault:",
        b"env:",
        b"file:",
        b"k8s:",
        b"secret:",
        b"ref+",
    ];
    SCHEMES.iter().any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}

/// Random characters, not a name: long enough, varied (gitleaks' generic entropy, 3.5 bits; 3 from
/// 24 characters on, where a hex UUID's 16 symbols are at home), of two kinds of characters at
/// least (cases, digits, symbols), and not reading as words ([`reads_as_words`]); or base64 with its padding.
pub(super) fn random_token(s: &[u8]) -> bool {
    // Base64 with its padding (`…kyg==`, a Kubernetes secret's data) is encoded bytes.
    let body = s.strip_suffix(b"==").or_else(|| s.strip_suffix(b"=")).unwrap_or(s);
    let padded = body.len() < s.len()
        && s.len().is_multiple_of(4)
        && body.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'));
    if padded && s.len() >= 16 && entropy(s) >= 3.0 {
        return true;
    }
    let kinds = [
        s.iter().any(u8::is_ascii_lowercase),
        s.iter().any(u8::is_ascii_uppercase),
        s.iter().any(u8::is_ascii_digit),
        s.iter().any(|b| b"+/=~!@%^*#-".contains(b)),
    ];
    let min = if s.len() >= 24 { 3.0 } else { 3.5 };
    // Hexadecimal (a UUID, a hex key): its letters are a to f, whose pairs read as words.
    let hex = s.iter().filter(|b| b.is_ascii_hexdigit()).count() >= 16
        && s.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-');
    // Letters alone are a name more often than not (`AlgorithmType`): random only when long.
    let letters_only = !kinds[2] && !kinds[3];
    let long_enough = if letters_only { 20 } else { 12 };
    s.len() >= long_enough
        && entropy(s) >= min
        && kinds.iter().filter(|k| **k).count() >= 2
        && (hex || !reads_as_words(s))
}

/// The letter pairs of words of code and prose: those that make 97 % of the pairs in the words of
/// Python 3.11's standard library (`scripts/redact/bigrams.py`), 262 of the 676. A random string's
/// pairs are common four times in ten; a name of code's, nineteen times in twenty; the line is drawn
/// at three in four.
const COMMON_BIGRAMS: &str = concat!(
    "ab ac ad ag ai ak al am an ap ar as at au av aw ax ay ba be bi bj bl bo br bs bu by ca cc ce ch ",
    "ci ck cl co cr cs ct cu cy da dd de di dl do dr ds du ea eb ec ed ee ef eg el em en eo ep eq er ",
    "es et ev ew ex ey fa fe ff fi fl fo fr ft fu ge gh gi gl gn gr gs gu ha he hi ho hr ht ia ib ic ",
    "id ie if ig il im in io ip ir is it iv ix iz je ke ki ks la ld le lf li ll lo ls lt lu ly ma mb ",
    "me mi mm mo mp ms mu na nc nd ne nf ng ni nk nl nn no np ns nt nu nv oa ob oc od of og oi ok ol ",
    "om on oo op or os ot ou ov ow ox pa pe pi pl po pp pr ps pt pu py qu ra rc rd re rg ri rk rl rm ",
    "rn ro rr rs rt ru rv ry sa sc se sg sh si sk sl sm so sp ss st su sy ta tc td te tf th ti tl to ",
    "tp tr ts tt tu ty ua ub uc ue uf ui ul um un up ur us ut va ve vi wa we wh wi wn wo wr xc xe xi ",
    "xp xt yp ys yt ze ",
);

/// Three in four of the letter pairs of `s` (inside its words: camel case, digits and symbols split them)
/// are [`COMMON_BIGRAMS`]: names of code (`win32api.RegEnumKey`, `MODEL_NONSTREAMING_TOKENS`),
/// not random characters (`RlfdKYDHtZdhzyZosqPiuMmxuas299Sr`).
fn reads_as_words(s: &[u8]) -> bool {
    let (mut pairs, mut common) = (0usize, 0usize);
    for w in s.windows(2) {
        let (a, b) = (w[0], w[1]);
        // A pair inside a word: two letters, not a lower-case letter before a capital.
        if !(a.is_ascii_alphabetic() && b.is_ascii_alphabetic()) || (a.is_ascii_lowercase() && b.is_ascii_uppercase()) {
            continue;
        }
        pairs += 1;
        let pair = [a.to_ascii_lowercase(), b.to_ascii_lowercase()];
        if COMMON_BIGRAMS.as_bytes().chunks(3).any(|c| c[..2] == pair) {
            common += 1;
        }
    }
    pairs >= 4 && common * 4 >= pairs * 3
}

/// A value of a key that names a credential (`token:`, `X-API-Key:`): random characters that are
/// not a placeholder, a reference or code.
fn random_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    not_placeholder(s)
        && !is_reference(s)
        && random_token(s)
        && !is_digest(s, before)
        && !is_file_name(s)
        && !is_version(s)
        && !(after.first() == Some(&b'(') || before.ends_with(b"->") || before.ends_with(b"::"))
}

/// The value of a `password=` assignment is a secret, unless it is code or a placeholder: an
/// identifier or a call (`getPassword()`, `config.db.password`, `Zeroizing::new(`), a word
/// (`required`, `true`), a path (`/etc/x`, a cloud secret manager's `projects/p/secrets/s`), a
/// version (`"@inquirer/password": "^4.0.10"`), or a number. A secret has a digit or a symbol, and
/// isn't only letters and dots.
fn assigned_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    if !not_placeholder(s) || is_reference(s) {
        return false;
    }
    // A path (`/etc/x`, `~/.pgpass`, `./secrets/db`), unless what follows the slash is no words.
    if (s.starts_with(b"/") || s.starts_with(b"~") || s.starts_with(b"./")) && (wordy(s) || !random_token(s)) {
        return false;
    }
    // Random characters are a secret whatever symbol they start or hold (`=AyLBh5…`, `2DkpC+jT/…`):
    // code is made of words.
    if random_token(s.strip_prefix(b"=").unwrap_or(s)) {
        return true;
    }
    // A reference, a path or a deref (`secret_key: &HpkePrivateKey`, `Secrets::Aes128Gcm`), a
    // hexadecimal literal (`ExtendedMasterSecret => 0x0017`).
    let hex = s.len() > 2 && s[..2].eq_ignore_ascii_case(b"0x") && s[2..].iter().all(u8::is_ascii_hexdigit);
    if matches!(s[0], b'&' | b':' | b'=' | b'|' | b'!' | b'?' | b'*') || hex {
        return false;
    }
    if is_code(s, before, after) || is_version(s) || (s.iter().filter(|b| **b == b'/').count() >= 2 && wordy(s)) {
        return false;
    }
    let letters_only = s.iter().all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b'-'));
    let digits_only = s.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    let lower = s.to_ascii_lowercase();
    let word = ["true", "false", "null", "none", "undefined", "required", "optional", "redacted", "hidden", "changeme"]
        .iter()
        .any(|w| lower == w.as_bytes());
    !(letters_only || digits_only || word || lower.starts_with(b"[redacted"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendored_rule_compiles() {
        let mut w = Vec::new();
        let rules = vendored(&mut w);
        assert!(w.is_empty(), "{w:?}");
        assert!(rules.len() > 200, "{}", rules.len());
        assert!(rules.iter().all(|(_, k)| !k.is_empty()), "every gitleaks rule is keyword-gated");
        // The fast path's soundness: no keyword holds a character a JSON writer escapes.
        let (r, _) = Rules::build(&[], "x");
        assert!(r.keyword_count() > 100);
        for (_, words) in rules.iter().chain(ours().iter()) {
            for k in words {
                assert!(!k.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20), "{k:?}");
            }
        }
    }

    #[test]
    fn entropy_is_shannon() {
        assert_eq!(entropy(b""), 0.0);
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
    }

    #[test]
    fn assignments_that_are_code_are_not_secrets() {
        for s in [
            "getPassword",
            "config.db.password",
            "true",
            "required",
            "$DB_PASSWORD",
            "${PW}",
            "<password>",
            "/etc/x",
            "12345678",
            "********",
        ] {
            assert!(!assigned_secret(s.as_bytes(), b"", b""), "{s}");
        }
        for s in ["hunter2hunter2", "Xy7!pQ9#", "s3cr3t-v4lue"] {
            assert!(assigned_secret(s.as_bytes(), b"", b""), "{s}");
        }
        // A URL's placeholder password is not one; a real-looking one is.
        assert!(!not_placeholder(b"password") && !not_placeholder(b"Secret") && not_placeholder(b"p%40ss-9"));
    }
}
