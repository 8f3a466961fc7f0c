//! gitleaks' rule set, vendored (`gitleaks-rules.json`, see `LICENSE-gitleaks` and
//! `scripts/redact/vendor-gitleaks.py`): read and compiled once, with each rule's keywords, secret
//! group, entropy and allowlists, and gitleaks' global allowlist, which every rule gets (ours too).

use super::code::not_code;
use super::{compile, reach, regex_error_kind, Allow, Check, Rule, Target};
use aho_corasick::AhoCorasickBuilder;
use regex::bytes::Regex;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

/// How a rule of gitleaks' that reads a name begins: up to 50 of the name's characters, lazily.
const NAME_PREFIX: &str = r"(?i)[\w.-]{0,50}?";
/// The same, twice (5 rules: `[\w.-]{0,50}?(?i:[\w.-]{0,50}?(?:(?-i:[Oo]kta|OKTA))…`).
const NAME_PREFIX_TWICE: &str = r"[\w.-]{0,50}?(?i:[\w.-]{0,50}?";

/// The vendored gitleaks rule set (see `LICENSE-gitleaks`, `scripts/redact/vendor-gitleaks.py`).
const GITLEAKS: &str = include_str!("../gitleaks-rules.json");

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
pub(super) fn vendored(warnings: &mut Vec<String>) -> Vec<(Rule, Vec<String>)> {
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
        let whole = r.secret_group.is_none() && first_group_is_structural(&r.regex);
        // 100 of gitleaks' rules begin with the name's letters before their keyword
        // (`[\w.-]{0,50}?`): every letter of a line is then a place a match may begin. Begun at the
        // keyword instead (`name_first`), the secret is the same and an allowlist of the match still
        // sees the name; a rule whose secret is its whole match keeps its form.
        let (pattern, name_first) = match (r.regex.strip_prefix(NAME_PREFIX), r.regex.strip_prefix(NAME_PREFIX_TWICE)) {
            (Some(rest), _) if !whole => (format!("(?i){rest}"), true),
            (_, Some(rest)) if !whole => (format!("(?i:{rest}"), true),
            _ => (r.regex.clone(), false),
        };
        let regex = match compile(&pattern) {
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
            reach: reach(&r.regex),
            name_first,
            line_start: None,
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

/// The global allowlist of gitleaks (its `[allowlist]` regexes and stopwords: `true`, `${VAR}`,
/// `{{ template }}`, `/usr/...` paths, …), which every one of its rules gets: ours too.
pub(super) fn global_allow() -> Vec<Allow> {
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

#[cfg(test)]
mod tests {
    use super::super::{ours::ours, Rules};
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
}
