//! `text`: Python-compatible strip, codepoint truncation (`take`, `ellipsize`), `len` and
//! `without_extension`, against the reference model in `util` (Python's definitions).

use crate::util::{params, py_len, py_prefix, py_strip, PY_WHITESPACE};
use dotty_pi_ext::text;

/// Input: two parameter bytes (`n` for `take`, `max` for `ellipsize`), then the text (invalid
/// UTF-8 becomes U+FFFD, so every input is a string).
pub fn check(data: &[u8]) {
    let ([n, max], rest) = params::<2>(data);
    let (n, max) = (n as usize, max as usize);
    let s = String::from_utf8_lossy(rest);
    let s = s.as_ref();

    for c in s.chars() {
        assert_eq!(text::is_py_space(c), PY_WHITESPACE.contains(&c), "is_py_space({c:?})");
    }
    let stripped = text::strip(s);
    assert_eq!(stripped, py_strip(s), "strip({s:?})");
    assert_eq!(text::strip(stripped), stripped, "strip is idempotent");
    // A slice of the input, not a copy: its position says where the strip cut.
    let at = stripped.as_ptr() as usize - s.as_ptr() as usize;
    assert!(s[..at].chars().all(|c| PY_WHITESPACE.contains(&c)));
    assert!(s[at + stripped.len()..].chars().all(|c| PY_WHITESPACE.contains(&c)));

    let len = text::char_count(s);
    assert_eq!(len, py_len(s), "len({s:?})");

    let taken = text::first_chars(s, n);
    assert_eq!(taken, py_prefix(s, n), "take({s:?}, {n})");
    assert_eq!(text::char_count(taken), n.min(len));
    assert!(s.starts_with(taken));

    let e = text::ellipsize(s, max);
    if len <= max {
        assert_eq!(e, s, "ellipsize({s:?}, {max}) keeps a short text");
    } else {
        assert_eq!(e, format!("{}...", py_prefix(s, max.saturating_sub(3))), "ellipsize({s:?}, {max})");
        assert!(py_len(&e) <= max.max(3), "ellipsize is at most max codepoints (3 for '...')");
    }

    let stem = text::without_extension(s);
    assert!(s.starts_with(stem));
    match s.rfind('.') {
        Some(i) => assert_eq!(stem.len(), i),
        None => assert_eq!(stem, s),
    }
}

/// Every codepoint, once: `is_py_space` is Python's `str.isspace()` (the fuzzer only sees the
/// characters its inputs happen to hold).
pub fn all_codepoints() {
    for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
        assert_eq!(text::is_py_space(c), PY_WHITESPACE.contains(&c), "is_py_space({c:?})");
    }
}
