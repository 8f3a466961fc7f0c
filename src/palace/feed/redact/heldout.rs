//! The redactor judged on what it was not tuned on (issue 33): the held-out credential corpus of
//! `test-support` (real-world shapes in every placement, values from each format's whole alphabet)
//! and detect-secrets' own positive test cases. Recall per format and per placement must be at
//! least 99 %; `bench/redact_heldout.rs` prints the whole table.

use super::*;
use std::collections::BTreeMap;
use test_support::credentials::{corpus, detect_secrets_cases, left, tool_output_session, Placement, HELD_OUT, TUNING};

/// detect-secrets' positive cases, committed as data (Apache-2.0; see the file's `about`).
const DETECT_SECRETS: &str = include_str!("../../../../__test__/fixtures/redact/detect-secrets-cases.json");

/// Cases of each format in each placement.
const PER: usize = 20;

/// (caught, total) per (format, placement).
type Table = BTreeMap<(&'static str, Placement), (usize, usize)>;

/// The table of `seed`'s corpus, and the secrets left.
fn measure(seed: u64) -> (Table, Vec<String>) {
    let r = Redactor::builtin();
    let mut table = BTreeMap::new();
    let mut misses = Vec::new();
    for case in corpus(seed, PER) {
        let out = r.redact_jsonl(&case.session, &mut Counts::new()).unwrap_or_else(|| case.session.clone());
        let left = left(&case, &out);
        let e = table.entry((case.format, case.placement)).or_insert((0, 0));
        e.0 += case.secrets.len() - left.len();
        e.1 += case.secrets.len();
        for s in left {
            misses.push(format!("{} / {}: {s}", case.format, case.placement.name()));
        }
    }
    (table, misses)
}

fn below_99(table: &Table) -> Vec<String> {
    table
        .iter()
        .filter(|(_, (c, t))| *c * 100 < *t * 99)
        .map(|((f, p), (c, t))| format!("{f} / {}: {c}/{t}", p.name()))
        .collect()
}

#[test]
fn held_out_recall_is_99_per_cent_for_every_format_and_placement() {
    let (table, misses) = measure(HELD_OUT);
    assert_eq!(table.len(), test_support::credentials::FORMATS.len() * Placement::ALL.len());
    let low = below_99(&table);
    assert!(low.is_empty(), "below 99 %: {low:#?}\nleft: {:#?}", &misses[..misses.len().min(40)]);
}

/// The held-out corpus written through a palace tool (the bridge's `mempalace_*` calls and pi's
/// own `mcp__mempalace__*` ones go through [`calls::redact_call_arguments`]): a drawer's content,
/// a diary entry and a fact's object, each holding one format's text. Recall per format and tool.
#[test]
fn held_out_secrets_written_through_a_palace_tool_are_redacted() {
    use serde_json::json;
    let r = Redactor::builtin();
    let mut table: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    for (format, text, secrets) in test_support::credentials::texts(HELD_OUT, PER) {
        for (tool, mut args) in [
            (
                "mempalace_add_drawer",
                json!({"wing": "ops", "room": "setup", "content": format!("What we set up today:\n{text}")}),
            ),
            ("mempalace_diary_write", json!({"agent_name": "pi", "entry": text, "topic": "deploy"})),
            ("mempalace_kg_add", json!({"subject": "staging", "predicate": "configured with", "object": text})),
        ] {
            let counts = super::calls::redact_call_arguments(&r, tool, &[], &mut args);
            let written = args.to_string();
            let left: Vec<&String> = secrets.iter().filter(|s| written.contains(s.as_str())).collect();
            let e = table.entry((format, tool)).or_insert((0, 0));
            e.0 += secrets.len() - left.len();
            e.1 += secrets.len();
            if !left.is_empty() {
                misses.push(format!("{format} / {tool}: {left:?} (counts {counts:?})"));
            }
        }
    }
    assert_eq!(table.len(), test_support::credentials::FORMATS.len() * 3);
    let low: Vec<String> = table
        .iter()
        .filter(|(_, (c, t))| *c * 100 < *t * 99)
        .map(|((f, tool), (c, t))| format!("{f} / {tool}: {c}/{t}"))
        .collect();
    assert!(low.is_empty(), "below 99 %: {low:#?}\nleft: {:#?}", &misses[..misses.len().min(40)]);
}

#[test]
#[ignore = "the tuning set is looked at, not judged on (bench/redact_heldout.rs prints both): --ignored"]
fn tuning_recall_is_99_per_cent_for_every_format_and_placement() {
    let (table, misses) = measure(TUNING);
    let low = below_99(&table);
    assert!(low.is_empty(), "below 99 %: {low:#?}\nleft: {:#?}", &misses[..misses.len().min(40)]);
}

/// detect-secrets' plugins whose positives are not credentials a palace must not hold, each with
/// why: they are reported, not counted.
pub(crate) const NOT_CREDENTIALS: &[(&str, &str)] = &[("ip_public", "a public IP address is not a credential")];

/// A detect-secrets case is caught when the secret it names is gone, or, for a line it flags whole,
/// when something in the line was redacted.
fn detect_secrets_caught(r: &Redactor, line: &str, secret: Option<&str>) -> bool {
    let session = tool_output_session(line);
    let Some(out) = r.redact_jsonl(&session, &mut Counts::new()) else { return false };
    match secret {
        Some(s) => {
            let escaped = serde_json::to_string(s).unwrap_or_default();
            let text = String::from_utf8_lossy(&out);
            !text.contains(s) && !text.contains(escaped.trim_matches('"'))
        }
        None => true,
    }
}

/// (caught, total, the lines missed) per detect-secrets plugin.
pub(crate) fn detect_secrets_table() -> BTreeMap<String, (usize, usize, Vec<String>)> {
    let r = Redactor::builtin();
    let mut t: BTreeMap<String, (usize, usize, Vec<String>)> = BTreeMap::new();
    for (plugin, line, secret) in detect_secrets_cases(DETECT_SECRETS) {
        if NOT_CREDENTIALS.iter().any(|(p, _)| *p == plugin) {
            continue;
        }
        let e = t.entry(plugin).or_default();
        e.1 += 1;
        if detect_secrets_caught(&r, &line, secret.as_deref()) {
            e.0 += 1;
        } else {
            e.2.push(line);
        }
    }
    t
}

/// detect-secrets' positives this redactor lets through on purpose, each with why (a plugin, a
/// piece of the line, the reason): docs/trust.md gives the cost of catching them.
pub(crate) const KNOWN_MISSES: &[(&str, &str, &str)] = &[
    (
        "high_entropy_strings",
        "",
        "a quoted random string with nothing around it: checksums, base64 and long identifiers look the same and stay as they are (docs/trust.md)",
    ),
    (
        "basic_auth",
        "username:password@",
        "a URL whose password is the word `password` says it is a placeholder (documentation's form); taking it costs 288 markers in 26 files of the real-file corpus",
    ),
];

#[test]
fn detect_secrets_own_positive_cases_are_caught() {
    let t = detect_secrets_table();
    let known = |p: &str, l: &str| KNOWN_MISSES.iter().any(|(kp, kl, _)| *kp == p && l.contains(kl));
    let missed: Vec<String> = t
        .iter()
        .flat_map(|(p, (_, _, m))| m.iter().filter(|l| !known(p, l)).map(move |l| format!("{p}: {l}")))
        .collect();
    assert!(missed.is_empty(), "missed: {missed:#?}");
    // The list stays true: what it names is still let through (docs/trust.md says so).
    for (p, l, _) in KNOWN_MISSES {
        assert!(t.get(*p).is_some_and(|(_, _, m)| m.iter().any(|x| x.contains(l))), "{p}: {l} is caught now");
    }
}

#[test]
#[ignore = "prints the tuning set's misses: --ignored --nocapture"]
fn print_tuning_misses() {
    let (table, misses) = measure(TUNING);
    for ((f, p), (c, t)) in &table {
        println!("{f:24} {:20} {c}/{t}", p.name());
    }
    for m in misses.iter().take(200) {
        println!("left: {m}");
    }
    for (p, (c, t, m)) in detect_secrets_table() {
        println!("detect-secrets {p}: {c}/{t}");
        for l in m {
            println!("  missed: {l}");
        }
    }
}

#[test]
fn a_build_log_on_one_line_has_only_its_three_secrets_redacted() {
    use test_support::credentials::{build_log, one_output_session, LOG_SECRETS};
    let session = one_output_session(&build_log(400_000));
    let mut counts = Counts::new();
    let out = Redactor::builtin().redact_jsonl(&session, &mut counts).unwrap_or_default();
    let text = String::from_utf8_lossy(&out);
    for s in LOG_SECRETS {
        assert!(!text.contains(s), "{s} left");
    }
    let total: u64 = counts.values().sum();
    assert_eq!(total, 3, "markers where nothing is secret: {counts:?}");
}
