//! The session is the unit: a value a rule found is matched exactly in the rest of its file, when
//! it looks like a secret itself, and so are its lines and `user:password` parts.

use super::rules;
use std::sync::Arc;

/// Shortest value learned from a file (matched exactly everywhere in it afterwards).
pub(super) const MIN_LEARNED: usize = 12;

/// A value a rule found is matched exactly in the rest of its file only when it looks like a
/// secret itself: long enough, varied enough (entropy), and not words of code (an identifier or a
/// member chain made of words: `Uint8Array`, `self.headers.get`), which the rest of the file uses
/// for something else. A password of words and symbols (`hunter2-zyoPobsar2`) is learned.
pub(super) fn worth_learning(v: &[u8]) -> bool {
    let code_chars = v.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b':'));
    v.len() >= MIN_LEARNED && rules::entropy(v) >= 3.0 && !(code_chars && rules::wordy(v) && !rules::random_token(v))
}

/// Learns `v` (a value a rule found) and, for a value of several lines (a private key's block) or
/// parts (`user:password`, as gitleaks' `curl-auth-user` takes it), each line and part: a line of a
/// key or a password quoted alone later is a secret all the same.
pub(super) fn learn(v: &[u8], kind: &Arc<str>, learned: &mut Vec<(Vec<u8>, Arc<str>)>) {
    if worth_learning(v) {
        learned.push((v.to_vec(), kind.clone()));
    }
    if v.contains(&b'\n') || v.contains(&b':') {
        for part in v.split(|b| *b == b'\n' || *b == b':').map(|l| l.strip_suffix(b"\r").unwrap_or(l)) {
            if part != v && worth_learning(part) && !part.starts_with(b"-----") {
                learned.push((part.to_vec(), kind.clone()));
            }
        }
    }
}
