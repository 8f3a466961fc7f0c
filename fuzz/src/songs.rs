//! `songs`: the song matcher. The contract's rule written again as a model; the answer is an
//! element of the catalogue (the very string) or none; the first file whose stem is exactly the
//! query wins whenever there is one; the same call gives the same answer.

use crate::util::{py_len, py_strip};
use dotty_pi_ext::voice::songs::{best_match, no_match_reply};

/// Input: the spoken name, then the catalogue's file names, one per line.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let name = lines.next().unwrap_or_default();
    let catalogue: Vec<String> = lines.take(64).map(String::from).collect();

    let got = best_match(name, &catalogue);
    assert_eq!(got, best_match(name, &catalogue), "deterministic");
    let index =
        got.map(|g| catalogue.iter().position(|f| std::ptr::eq(f.as_str(), g)).expect("an element of the catalogue"));
    assert_eq!(index, model(name, &catalogue), "best_match({name:?}, {catalogue:?})");

    let reply = no_match_reply(name, &catalogue);
    assert!(reply.contains(name));
}

fn stem(s: &str) -> &str {
    s.rsplit_once('.').map_or(s, |(a, _)| a)
}

/// The index the contract picks.
fn model(name: &str, catalogue: &[String]) -> Option<usize> {
    let lowered = py_strip(name).to_lowercase();
    let q = py_strip(stem(&lowered));
    if q.is_empty() {
        return None;
    }
    let files: Vec<String> = catalogue.iter().map(|f| stem(&f.to_lowercase()).to_string()).collect();
    if let Some(i) = files.iter().position(|s| *s == q) {
        return Some(i);
    }
    let score = |s: &str| py_len(s).abs_diff(py_len(&q));
    let candidates = (0..files.len()).filter(|&i| files[i].contains(q.as_str()) || q.contains(files[i].as_str()));
    // The lowest score, the first on ties (min_by_key keeps the first of equal keys).
    candidates.min_by_key(|&i| score(&files[i]))
}
