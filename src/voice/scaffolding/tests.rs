use super::*;
use serde_json::Value;

/// The provider's real per-turn suffix (`build_turn_suffix` in its `custom-providers/textUtils.py`),
/// copied exactly into the tests' fixtures.
fn suffix(kid_mode: bool) -> String {
    let j: Value = serde_json::from_str(include_str!("../../../__test__/fixtures/voice-turn-suffix.json")).unwrap();
    let part = |k: &str| j[k].as_str().unwrap().to_string();
    part("base") + &(if kid_mode { part("kid_mode_lines") } else { String::new() }) + &part("end")
}

const ROUTING: &str = "\n\nVOICE TOOL ROUTING: Decide whether to use a registered tool before composing.";
const MEMORY: &str = "\n\nMEMORY SEARCH RESULTS (from earlier conversations):\nuser: old | assistant: older";

// Production's own cases (dotty-pi-ext/tests/turn_boilerplate.test.ts in its repository).
const RULES: &str =
    "\n\n---\nHARD CONSTRAINTS for THIS reply (overrides everything else):\n1. Reply in ENGLISH ONLY.\nBegin your reply now.";

#[test]
fn production_cases() {
    assert_eq!(spoken("What is your name?"), "What is your name?");
    assert_eq!(spoken(&format!("What is your name?{ROUTING}{RULES}")), "What is your name?");
    assert_eq!(spoken(&format!("Tell me a joke.{RULES}")), "Tell me a joke.");
    assert_eq!(spoken(&format!("Do you remember my colour?{MEMORY}{ROUTING}{RULES}")), "Do you remember my colour?");
    assert_eq!(
        spoken("{\"content\": \"Dotty, what is my favourite colour?\"}\n---\nHARD CONSTRAINTS for THIS reply"),
        "Dotty, what is my favourite colour?"
    );
    assert_eq!(spoken("{not json} hello"), "{not json} hello");
    assert_eq!(spoken("what are hard constraints for this reply"), "what are hard constraints for this reply");
    assert_eq!(
        clean_row("user: {\"content\": \"My favourite colour is purple.\"}\n---\nHARD CONSTRAINTS for THIS reply (overr | assistant: 😊 Purple is lovely!"),
        "user: My favourite colour is purple. | assistant: 😊 Purple is lovely!"
    );
    assert_eq!(clean_row(&format!("user: Hello there{RULES}")), "user: Hello there");
    assert_eq!(clean_row("Brett's favourite colour is purple."), "Brett's favourite colour is purple.");
}

#[test]
fn the_real_suffix_in_both_modes_is_cut() {
    for kid in [false, true] {
        let s = suffix(kid);
        assert_eq!(spoken(&format!("How tall is a giraffe?{s}")), "How tall is a giraffe?");
        assert_eq!(spoken(&format!("  ¿Qué tal? 😊 你好  {ROUTING}{s}")), "¿Qué tal? 😊 你好");
        assert_eq!(spoken(&format!("{{\"content\": \"hi there\"}}{s}")), "hi there");
        // Words that are only whitespace: nothing is left.
        assert_eq!(spoken(&format!(" \t {s}")), "");
    }
}

#[test]
fn a_marker_needs_a_newline_before_it_and_its_exact_case() {
    // Said by a person, on one line: their words.
    assert_eq!(spoken("say VOICE TOOL ROUTING: please"), "say VOICE TOOL ROUTING: please");
    assert_eq!(spoken("a\n\n---\nhard constraints for this reply"), "a\n\n---\nhard constraints for this reply");
    assert_eq!(spoken("a\nMEMORY SEARCH RESULTS without paren"), "a\nMEMORY SEARCH RESULTS without paren");
    // One newline is enough, and several are dropped with it; the earliest marker wins.
    assert_eq!(spoken("a\nVOICE TOOL ROUTING: x"), "a");
    assert_eq!(spoken("a\n\nb\n\n\nMEMORY SEARCH RESULTS (x\nVOICE TOOL ROUTING: y"), "a\n\nb");
    // A marker not after a newline, then the same marker after one: cut at the second.
    assert_eq!(spoken("VOICE TOOL ROUTING: one\nVOICE TOOL ROUTING: two"), "VOICE TOOL ROUTING: one");
    // A prompt that is only scaffolding.
    assert_eq!(spoken(&suffix(false)), "");
}

#[test]
fn only_a_json_object_with_a_string_content_is_an_envelope() {
    assert_eq!(spoken("{\"content\": 5}"), "{\"content\": 5}");
    assert_eq!(spoken("{\"text\": \"hi\"}"), "{\"text\": \"hi\"}");
    assert_eq!(spoken("{\"content\": \"hi\"} and more"), "{\"content\": \"hi\"} and more");
    assert_eq!(spoken("{}"), "{}");
    assert_eq!(spoken("{ broken"), "{ broken");
    assert_eq!(spoken("[\"content\"]"), "[\"content\"]");
    // The envelope's own text is stripped too, and escapes are read as JSON reads them.
    assert_eq!(spoken("  {\"content\": \"  caf\\u00e9 \\ud83d\\ude00 \"}  "), "café 😀");
    // An envelope around nothing is nothing.
    assert_eq!(spoken("{\"content\": \"\"}"), "");
}

#[test]
fn rows_are_cleaned_only_when_they_start_with_user() {
    let polluted = format!("user: hi{RULES} | assistant: 😊 Hello!");
    assert_eq!(clean_row(&polluted), "user: hi | assistant: 😊 Hello!");
    assert_eq!(clean_row(&format!("User: hi{RULES}")), format!("User: hi{RULES}"));
    assert_eq!(clean_row(&format!(" user: hi{RULES}")), format!(" user: hi{RULES}"));
    // Clean rows come back as they are, byte for byte.
    for row in [
        "user: hi | assistant: there",
        "user:  | assistant: hi",
        "user: hi | assistant:",
        "user: a | assistant: b | assistant: c",
    ] {
        assert_eq!(clean_row(row), row);
    }
    // The assistant half is stripped; the split is at the first separator.
    assert_eq!(clean_row("user: a | assistant:  b  "), "user: a | assistant: b");
}

/// A user half as the old logger stored it: the prompt stripped, cut at 500 codepoints.
fn old_cut(prompt: &str) -> String {
    strip(prompt).chars().take(500).collect()
}

#[test]
fn repair_removes_a_marker_the_old_cut_left_incomplete() {
    let s = suffix(false);
    // Words so long that the cut falls inside the marker, at every place in it.
    for words_len in 460..500 {
        let words: String = "w".repeat(words_len);
        let user = old_cut(&format!("{words}{s}"));
        let row = format!("user: {user} | assistant: ok");
        assert_eq!(repair_row(&row).as_deref(), Some(&*format!("user: {words} | assistant: ok")), "{words_len}");
        // Idempotent.
        assert_eq!(repair_row(&format!("user: {words} | assistant: ok")), None);
    }
    // Emoji and CJK before it: the cut counts codepoints.
    let words: String = "😀你".repeat(240);
    let user = old_cut(&format!("{words}{s}"));
    assert_eq!(user.chars().count(), 500);
    assert_eq!(
        repair_row(&format!("user: {user} | assistant: ok")).as_deref(),
        Some(&*format!("user: {words} | assistant: ok"))
    );
}

#[test]
fn repair_leaves_a_partial_marker_alone_when_the_half_was_not_cut() {
    // Shorter than the cut: a person's `---` at the end of a line is theirs.
    assert_eq!(repair_row("user: draw a line\n--- | assistant: ok"), None);
    // 500 codepoints that end in a word: nothing to remove.
    let full = format!("user: {} | assistant: ok", "w".repeat(500));
    assert_eq!(repair_row(&full), None);
}

#[test]
fn repair_keeps_an_empty_assistant_half_and_strips_as_the_store_does() {
    assert_eq!(repair_row(&format!("user: hi{RULES} | assistant:")).as_deref(), Some("user: hi | assistant:"));
    assert_eq!(repair_row(&format!("user: hi{RULES}")).as_deref(), Some("user: hi"));
    // Only scaffolding in the user half: the row keeps its answer.
    assert_eq!(repair_row(&format!("user: {RULES} | assistant: hello")).as_deref(), Some("user:  | assistant: hello"));
    // Other rows are never touched.
    assert_eq!(repair_row(&format!("Brett likes {RULES}")), None);
    assert_eq!(repair_row("user: hi | assistant: there"), None);
}

#[test]
fn repair_reaches_a_fixed_point() {
    // An envelope inside an envelope, with scaffolding inside the inner text.
    let nested =
        "user: {\"content\": \"{\\\"content\\\": \\\"hi\\\\n\\\\nVOICE TOOL ROUTING: x\\\"}\"} | assistant: ok";
    let once = repair_row(nested).unwrap();
    assert_eq!(once, "user: hi | assistant: ok");
    assert_eq!(repair_row(&once), None);
}

#[test]
fn repair_finds_the_loggers_separator_when_the_scaffolding_quotes_a_row() {
    // A recall turn: the MEMORY SEARCH RESULTS block quotes an earlier row, separator included.
    let prompt = format!(
        "Do you remember my cat?\n\nMEMORY SEARCH RESULTS (from earlier conversations):\n- user: what is my cat called | assistant: 😊 Miso.{ROUTING}{}",
        suffix(false)
    );
    let row = format!("user: {} | assistant: 😊 Your cat is Miso!", old_cut(&prompt));
    assert_eq!(repair_row(&row).as_deref(), Some("user: Do you remember my cat? | assistant: 😊 Your cat is Miso!"));
    let no_answer = format!("user: {} | assistant:", old_cut(&prompt));
    assert_eq!(repair_row(&no_answer).as_deref(), Some("user: Do you remember my cat? | assistant:"));
    // The read rule is the contract's: it splits at the first separator, inside the quote.
    assert!(clean_row(&row).contains("HARD CONSTRAINTS") || clean_row(&row).contains("VOICE TOOL ROUTING"));
}
