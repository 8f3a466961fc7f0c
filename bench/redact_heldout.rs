//! The redactor on what it was not tuned on (issue 33): recall per format and per placement on the
//! held-out credential corpus (test-support's `credentials`: real-world shapes, values from each
//! format's whole alphabet), beside the tuning set's, and per plugin on detect-secrets' own
//! positive test cases (`__test__/fixtures/redact/detect-secrets-cases.json`). Prints tables; never
//! fails (the ≥ 99 % floor is a unit test: `cargo test --lib redact::heldout`).
//!
//!   cargo bench --no-default-features --bench redact_heldout -- [--per 50] [--misses]
//!
//! `--misses` prints what the tuning set let through (never the held-out sets': they are judged,
//! not read).

#![allow(clippy::unwrap_used, reason = "a benchmark: a failure ends the run, with its message")]

use dotty_pi_ext::palace::feed::redact::{Counts, Redactor};
use std::collections::BTreeMap;
use test_support::credentials::{
    corpus, detect_secrets_cases, left, tool_output_session, Placement, FRESH, HELD_OUT, TUNING,
};

fn per() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == "--per").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(50)
}

fn main() {
    let r = Redactor::builtin();
    let per = per();
    let show_misses = std::env::args().any(|a| a == "--misses");
    let mut table: BTreeMap<(&str, Placement), [(usize, usize); 3]> = BTreeMap::new();
    for (i, seed) in [TUNING, HELD_OUT, FRESH].into_iter().enumerate() {
        for case in corpus(seed, per) {
            let out = r.redact_jsonl(&case.session, &mut Counts::new()).unwrap_or_else(|| case.session.clone());
            let e = &mut table.entry((case.format, case.placement)).or_default()[i];
            let missed = left(&case, &out);
            // Only the tuning set's misses are shown: the held-out sets are judged, never read.
            if show_misses && i == 0 {
                for m in &missed {
                    let text = String::from_utf8_lossy(&case.session);
                    let at = text.find(m.as_str()).unwrap_or(0);
                    let from = text[..at].char_indices().rev().nth(60).map_or(0, |x| x.0);
                    let to = text[at..].char_indices().nth(m.len() + 20).map_or(text.len(), |x| at + x.0);
                    println!("miss {} / {}: {m:?} in {:?}", case.format, case.placement.name(), &text[from..to]);
                }
            }
            e.0 += case.secrets.len() - missed.len();
            e.1 += case.secrets.len();
        }
    }
    println!("## Recall on the credential corpus ({per} cases of each format in each placement)\n");
    println!("| format | placement | tuning set | held-out set | fresh held-out set |\n|---|---|---:|---:|---:|");
    let pct = |(c, t): (usize, usize)| format!("{:.1} % ({c}/{t})", 100.0 * c as f64 / t.max(1) as f64);
    let mut worst = (f64::MAX, String::new());
    for ((f, p), [a, b, c]) in &table {
        println!("| {f} | {} | {} | {} | {} |", p.name(), pct(*a), pct(*b), pct(*c));
        for (set, x) in [("held-out", b), ("fresh", c)] {
            let r = x.0 as f64 / x.1.max(1) as f64;
            if r < worst.0 {
                worst = (r, format!("{f} / {} ({set})", p.name()));
            }
        }
    }
    println!("\nlowest held-out cell: {} at {:.1} %\n", worst.1, 100.0 * worst.0);

    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/__test__/fixtures/redact/detect-secrets-cases.json"
    ))
    .unwrap();
    let show_misses = std::env::args().any(|a| a == "--misses");
    let mut plugins: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (plugin, line, secret) in detect_secrets_cases(&text) {
        let session = tool_output_session(&line);
        let caught = r.redact_jsonl(&session, &mut Counts::new()).is_some_and(|out| {
            let out = String::from_utf8_lossy(&out);
            secret
                .as_deref()
                .is_none_or(|s| !out.contains(s) && !out.contains(serde_json::to_string(s).unwrap().trim_matches('"')))
        });
        if !caught && show_misses {
            println!("miss {plugin}: {line}");
        }
        let e = plugins.entry(plugin).or_default();
        e.0 += usize::from(caught);
        e.1 += 1;
    }
    println!("## detect-secrets' own positive test cases, printed by a tool\n");
    println!("| plugin | caught |\n|---|---:|");
    let (mut c, mut t) = (0, 0);
    for (p, (a, b)) in &plugins {
        println!("| {p} | {} |", pct((*a, *b)));
        c += a;
        t += b;
    }
    println!("| all | {} |", pct((c, t)));
}
