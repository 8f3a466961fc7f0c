//! The voice provider's prompt scaffolding: what it appends to every prompt, and how the person's
//! own words are told apart from it (docs/voice-tools.md, "Prompt scaffolding").
//!
//! Dotty's voice provider sends pi the person's words followed by its per-turn rules
//! (`\n\n---\nHARD CONSTRAINTS for THIS reply …`), sometimes a `VOICE TOOL ROUTING:` paragraph and,
//! for recall, a `MEMORY SEARCH RESULTS (` block; older ASR builds wrapped the words in a
//! `{"content": "…"}` envelope. None of it is conversation: the turn log stores the words alone
//! ([`spoken`]), memory_lookup reads old polluted rows back clean ([`clean_row`]), and the
//! operator's `clean-turns` rewrites them in place ([`repair_row`]).

use crate::text::{char_count, first_chars, strip};
use serde_json::Value;

/// Where the scaffolding starts: one of these right after one or more newlines (case-sensitive,
/// exactly as the provider emits them). Without a newline before it, it is the person's sentence.
const MARKERS: [&str; 3] = ["MEMORY SEARCH RESULTS (", "VOICE TOOL ROUTING:", "---\nHARD CONSTRAINTS for THIS reply"];

/// How a stored conversation row begins, and what separates its two halves.
const USER_PREFIX: &str = "user: ";
const ASSISTANT_SEPARATOR: &str = " | assistant: ";
/// The separator as it ends a row whose assistant half was empty (the store stripped its space).
const ASSISTANT_SEPARATOR_AT_END: &str = " | assistant:";

/// The person's words in a prompt as pi received it: cut at the first scaffolding marker, the
/// legacy envelope unwrapped, stripped (Python's `str.strip`).
pub fn spoken(prompt: &str) -> String {
    let words = &prompt[..scaffolding_start(prompt).unwrap_or(prompt.len())];
    strip(&unwrap_envelope(words)).to_string()
}

/// Byte offset where the scaffolding starts: the first newline of the run that precedes the
/// earliest marker, or `None` when there is none.
fn scaffolding_start(text: &str) -> Option<usize> {
    let at = MARKERS.iter().filter_map(|m| find_after_newline(text, m)).min()?;
    // Walk back over the newlines before the marker: the cut is at the first of them.
    Some(text[..at].trim_end_matches('\n').len())
}

/// Byte offset of the earliest `marker` that directly follows a `\n`.
fn find_after_newline(text: &str, marker: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(marker) {
        let at = from + i;
        if text[..at].ends_with('\n') {
            return Some(at);
        }
        from = at + marker.len();
    }
    None
}

/// The legacy ASR envelope: text that, stripped, begins with `{`, ends with `}` and parses as a JSON
/// object whose `content` is a string is replaced by that string. Anything else stays as it is.
fn unwrap_envelope(text: &str) -> std::borrow::Cow<'_, str> {
    let t = strip(text);
    if t.starts_with('{') && t.ends_with('}') {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(t) {
            if let Some(Value::String(s)) = o.get("content") {
                return s.clone().into();
            }
        }
    }
    text.into()
}

/// A stored row as memory_lookup reads it (the contract's step 5): a row that starts with exactly
/// `user: ` is split at the first ` | assistant: `; its user half is cleaned as a prompt and the
/// rest is stripped. Any other row is returned as it is.
pub fn clean_row(content: &str) -> std::borrow::Cow<'_, str> {
    let Some(row) = content.strip_prefix(USER_PREFIX) else { return content.into() };
    match row.split_once(ASSISTANT_SEPARATOR) {
        Some((user, rest)) => format!("{USER_PREFIX}{}{ASSISTANT_SEPARATOR}{}", spoken(user), strip(rest)).into(),
        None => format!("{USER_PREFIX}{}", spoken(row)).into(),
    }
}

/// The old loggers' cut of the user half, in codepoints (the turn log's own limit).
const USER_CUT: usize = 500;

/// A stored row as `clean-turns` rewrites it: the row the current turn log would have written for
/// that turn, or `None` when it needs no change. Beyond [`clean_row`], it
/// - also removes scaffolding that the old loggers' 500-codepoint cut left incomplete: a user half of
///   exactly 500 codepoints that ends in one or more newlines followed by a proper prefix of a
///   marker (`…\n\n---\nHARD CONSTRAIN`), where no whole marker is left to find;
/// - keeps an empty assistant half (` | assistant:` at the end) as the store writes it;
/// - finds the logger's own separator when the scaffolding quoted an earlier row (see [`split_turn`]);
/// - strips the row as the store step does, and repeats until nothing changes, so a second run
///   changes nothing.
pub fn repair_row(content: &str) -> Option<String> {
    let mut row = content.to_string();
    // Each round shortens the row or leaves it as it is; a few rounds reach the fixed point of any
    // real row (an envelope inside an envelope needs two).
    for _ in 0..8 {
        let next = repair_once(&row);
        if next == row {
            break;
        }
        row = next;
    }
    (row != content).then_some(row)
}

fn repair_once(content: &str) -> String {
    let Some(row) = content.strip_prefix(USER_PREFIX) else { return content.to_string() };
    let (user, rest) = split_turn(row);
    let user = spoken(without_cut_marker(user));
    let row = match rest {
        Some(rest) => format!("{USER_PREFIX}{user}{ASSISTANT_SEPARATOR}{rest}"),
        None => format!("{USER_PREFIX}{user}"),
    };
    strip(&row).to_string()
}

/// A turn row (after `user: `) split into the user half and the stripped answer, as the logger
/// wrote them. Usually at the first ` | assistant: `; but when that one lies inside the scaffolding
/// (a `MEMORY SEARCH RESULTS (` block quoting an earlier row), the logger's own separator is the one
/// right after its 500-codepoint cut of the prompt, which every polluted prompt reached (the rules
/// alone are longer). An empty answer ends the row in ` | assistant:`.
fn split_turn(row: &str) -> (&str, Option<&str>) {
    let first = row.find(ASSISTANT_SEPARATOR);
    if matches!((scaffolding_start(row), first), (Some(s), Some(f)) if s < f) {
        let cut = first_chars(row, USER_CUT).len();
        let (user, after) = row.split_at(cut);
        if char_count(user) == USER_CUT {
            if let Some(rest) = after.strip_prefix(ASSISTANT_SEPARATOR) {
                return (user, Some(strip(rest)));
            }
            if after == ASSISTANT_SEPARATOR_AT_END {
                return (user, Some(""));
            }
        }
    }
    match first {
        Some(i) => (&row[..i], Some(strip(&row[i + ASSISTANT_SEPARATOR.len()..]))),
        None => match row.strip_suffix(ASSISTANT_SEPARATOR_AT_END) {
            Some(user) => (user, Some("")),
            None => (row, None),
        },
    }
}

/// A user half cut at [`USER_CUT`] codepoints inside a marker, minus that partial marker and the
/// newlines before it (`…\n\n---\nHARD CONSTRAIN` → `…`); any other text as it is.
fn without_cut_marker(user: &str) -> &str {
    if char_count(user) != USER_CUT {
        return user;
    }
    // Every proper prefix of every marker (the markers are ASCII, so each length is a char boundary),
    // the empty one included: a half that ends in newlines lost at most whitespace.
    let cut = MARKERS
        .iter()
        .flat_map(|m| (0..m.len()).map(move |k| &m[..k]))
        .filter_map(|partial| user.strip_suffix(partial))
        .filter(|before| before.ends_with('\n'))
        .map(|before| before.trim_end_matches('\n').len())
        .min();
    cut.map_or(user, |at| &user[..at])
}

#[cfg(test)]
mod tests;
