//! Python-compatible text handling: the byte-exactness of every reply lives here.
//!
//! "Codepoints" are Unicode scalar values (Python `str[:N]`), never UTF-16 units or bytes.

/// Python's `str.isspace()`: Unicode `White_Space` plus the four information separators
/// U+001C..U+001F, which Python counts as whitespace and Rust's `char::is_whitespace` does not.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Python's `s[:n]`: the first `n` codepoints.
pub fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The contract's snippet rule: more than `max` codepoints → the first `max - 3` and `...`.
pub fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().nth(max).is_some() {
        format!("{}...", first_chars(s, max.saturating_sub(3)))
    } else {
        s.to_string()
    }
}

/// The largest character boundary of `s` at or before byte `at` (`s.len()` when `at` is past it):
/// where a text cut to at most `at` bytes ends.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Number of codepoints.
pub fn char_count(s: &str) -> usize {
    s.chars().count()
}

/// An FTS5 phrase that matches `q` literally: wrapped in double quotes with inner quotes doubled,
/// so no user text can become an FTS operator (`AND`, `NEAR`, `*`, `:`, parentheses...). A NUL is
/// kept: FTS5 reads the query only up to it and refuses the phrase ("unterminated string"), which
/// the contract answers with `(no memories found)`, byte for byte what the production extension
/// (better-sqlite3, the same SQLite error) answers.
pub fn fts_phrase(q: &str) -> String {
    format!("\"{}\"", q.replace('"', "\"\""))
}

/// `name` minus its extension: the text before the last `.` (the whole name when there is none).
pub fn without_extension(name: &str) -> &str {
    match name.rfind('.') {
        Some(i) => &name[..i],
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_ends_at_a_character_boundary() {
        assert_eq!([0, 1, 2, 3, 4, 9].map(|at| floor_char_boundary("aé€", at)), [0, 1, 1, 3, 3, 6]);
        assert_eq!(floor_char_boundary("", 5), 0);
    }

    #[test]
    fn strip_matches_python() {
        assert_eq!(strip("  hi \n\t"), "hi");
        // U+001C..U+001F, NEL, NBSP, ideographic space and line/paragraph separators are Python whitespace.
        assert_eq!(strip("\u{1c}\u{85}\u{a0}x\u{3000}\u{2028}\u{2029}\u{1f}"), "x");
        // Zero-width space and BOM are not (JS `trim()` removes the BOM; Python doesn't).
        assert_eq!(strip("\u{200b}x\u{feff}"), "\u{200b}x\u{feff}");
        assert_eq!(strip("   "), "");
    }

    #[test]
    fn take_counts_codepoints_not_units_or_bytes() {
        // Each emoji is one codepoint, two UTF-16 units, four bytes.
        let s = "😀😀😀";
        assert_eq!(first_chars(s, 2), "😀😀");
        assert_eq!(first_chars("é", 5), "é");
        assert_eq!(first_chars("abc", 0), "");
        // A combining sequence is two codepoints: Python cuts between them, so do we.
        assert_eq!(first_chars("e\u{301}x", 1), "e");
    }

    #[test]
    fn ellipsize_at_200() {
        let exact: String = "a".repeat(200);
        assert_eq!(ellipsize(&exact, 200), exact);
        let long: String = "😀".repeat(201);
        let got = ellipsize(&long, 200);
        assert_eq!(got.chars().count(), 200);
        assert!(got.starts_with(&"😀".repeat(197)));
        assert!(got.ends_with("..."));
    }

    #[test]
    fn fts_phrase_doubles_quotes() {
        assert_eq!(fts_phrase("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(fts_phrase("a OR b*"), "\"a OR b*\"");
        // A NUL stays (FTS5 refuses the phrase, and the reply is the contract's `(no memories found)`).
        assert_eq!(fts_phrase("a\0b"), "\"a\0b\"");
    }

    #[test]
    fn extension() {
        assert_eq!(without_extension("Song.MP3"), "Song");
        assert_eq!(without_extension("a.b.mp3"), "a.b");
        assert_eq!(without_extension("noext"), "noext");
        assert_eq!(without_extension(".mp3"), "");
    }
}
