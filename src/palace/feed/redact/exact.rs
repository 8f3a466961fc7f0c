//! Layer 1: this process's own secrets, matched exactly (one Aho-Corasick automaton): the values
//! of variables whose names say they hold a secret, and the passwords of URLs in the environment.

use super::rules::Hit;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::sync::Arc;

use super::MIN_EXACT;

/// True when the name of an environment variable says it holds a secret.
pub fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const PARTS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "ACCESS_KEY",
        "CREDENTIAL",
        "AUTH_KEY",
        "SESSION_KEY",
        "SIGNING_KEY",
        "CLIENT_KEY",
    ];
    // AWS_*: all of them but the few that name places, not keys.
    let aws = n.starts_with("AWS_")
        && !["REGION", "PROFILE", "OUTPUT", "ENDPOINT", "CONFIG_FILE", "SHARED_CREDENTIALS_FILE", "CA_BUNDLE", "PAGER"]
            .iter()
            .any(|w| n.contains(w));
    aws || PARTS.iter().any(|p| n.contains(p))
}

/// An exact secret of this process worth matching: long enough, and not a path, number or switch.
pub(super) fn exact_worthy(value: &str) -> bool {
    let v = value.trim();
    v.chars().count() >= MIN_EXACT
        && !v.starts_with('/')
        && !v.starts_with("~/")
        && !v.chars().all(|c| c.is_ascii_digit())
}

/// The password of a URL (`scheme://user:password@host`), percent-decoded as it is also typed.
pub(super) fn url_password(value: &str) -> Vec<String> {
    let Ok(u) = reqwest::Url::parse(value.trim()) else { return Vec::new() };
    let Some(pw) = u.password() else { return Vec::new() };
    let decoded = percent_encoding::percent_decode_str(pw).decode_utf8_lossy().into_owned();
    let mut out = vec![pw.to_string()];
    if decoded != pw {
        out.push(decoded);
    }
    out
}

/// A set of values matched exactly (longest first on overlap), each with its kind.
pub(super) struct Exact {
    pub(super) ac: AhoCorasick,
    pub(super) kinds: Vec<Arc<str>>,
    /// True when a value holds a character a JSON writer escapes: the raw-line fast path can't
    /// vouch for a line then.
    pub(super) escaped: bool,
}

impl Exact {
    /// None for no values (or, said in `warnings`, values the automaton can't take).
    pub(super) fn build(mut values: Vec<(Vec<u8>, Arc<str>)>, warnings: &mut Vec<String>) -> Option<Exact> {
        values.sort();
        values.dedup_by(|a, b| a.0 == b.0);
        if values.is_empty() {
            return None;
        }
        let escaped = values.iter().any(|(v, _)| v.iter().any(|b| *b == b'"' || *b == b'\\' || *b < 0x20));
        match AhoCorasickBuilder::new().match_kind(MatchKind::LeftmostLongest).build(values.iter().map(|v| &v.0)) {
            Ok(ac) => Some(Exact { ac, kinds: values.into_iter().map(|v| v.1).collect(), escaped }),
            Err(e) => {
                warnings.push(format!("mempalace feed: secrets can't be matched exactly ({e})"));
                None
            }
        }
    }

    pub(super) fn find(&self, hay: &[u8], out: &mut Vec<Hit>) {
        for m in self.ac.find_iter(hay) {
            out.push(Hit {
                start: m.start(),
                end: m.end(),
                priority: 0,
                rank: 0,
                kind: self.kinds[m.pattern().as_usize()].clone(),
            });
        }
    }
}
