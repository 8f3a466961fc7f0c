//! Redaction costs what its input costs (issue 33): the work done on one long line, counted as the
//! bytes handed to a regex (a rule's or an allowlist's), grows linearly with the line. Counted, not
//! timed: `bench/redact.rs --shapes` prints the MB/s of the worst shapes.

use super::*;
use test_support::credentials::{build_log, one_output_session};

/// Bytes scanned to redact `session`.
fn work(r: &Redactor, session: &[u8]) -> u64 {
    let before = rules::bytes_scanned();
    r.redact_jsonl(session, &mut Counts::new());
    rules::bytes_scanned() - before
}

#[test]
fn a_line_twice_as_long_costs_about_twice_as_much() {
    let r = Redactor::builtin();
    let base64: String = (0..800_000u32)
        .map(|i| {
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                [(i.wrapping_mul(2_654_435_761) >> 26) as usize] as char
        })
        .collect();
    for (shape, small, big) in [
        ("keyword-dense build log", one_output_session(&build_log(400_000)), one_output_session(&build_log(800_000))),
        ("base64", one_output_session(&base64[..400_000]), one_output_session(&base64)),
    ] {
        let (a, b) = (work(&r, &small), work(&r, &big));
        assert!(a > 0, "{shape}: nothing scanned");
        assert!(b * 10 <= a * 22, "{shape}: {a} bytes scanned for the line, {b} for one twice as long");
    }
}

#[test]
#[ignore = "a measurement: which rules cost what on one long line (--release --ignored --nocapture)"]
fn cost_per_rule_on_one_long_line() {
    use test_support::credentials::Rng;
    let r = Redactor::builtin();
    let b64 = Rng::new(7).from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 4 << 20);
    let log = build_log(4 << 20);
    for (name, hay) in [("base64", b64.as_bytes()), ("build log", log.as_bytes())] {
        let mut fired = Vec::new();
        r.rules.triggered(hay, &mut fired);
        let mut costs: Vec<(f64, String)> = fired
            .iter()
            .map(|i| {
                let rule = &r.rules.rules[*i];
                let t = std::time::Instant::now();
                rule.find(hay, &mut Vec::new());
                (t.elapsed().as_secs_f64(), rule.kind.to_string())
            })
            .collect();
        costs.sort_by(|a, b| b.0.total_cmp(&a.0));
        let total: f64 = costs.iter().map(|c| c.0).sum();
        println!(
            "{name}: {} rules fired, {total:.2} s for 4 MiB; worst: {:?}",
            costs.len(),
            &costs[..costs.len().min(8)]
        );
    }
}

#[test]
#[ignore = "a measurement: where one long line's time goes (--release --ignored --nocapture)"]
fn stages_of_one_long_line() {
    use std::time::Instant;
    use test_support::credentials::Rng;
    let r = Redactor::builtin();
    let b64 = Rng::new(7).from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 20 << 20);
    let log = build_log(20 << 20);
    for (name, text) in [("base64", &b64), ("build log", &log)] {
        let session = one_output_session(text);
        let t = Instant::now();
        let _ = serde_json::from_slice::<serde::de::IgnoredAny>(&session);
        let parse = t.elapsed();
        let t = Instant::now();
        let _ = r.spans(text.as_bytes(), &mut Run::default());
        let spans = t.elapsed();
        let mut w = Vec::new();
        let t = Instant::now();
        r.rules.windows(text.as_bytes(), &mut w);
        let windows = t.elapsed();
        let covered: usize = w.iter().map(|x| x.2 - x.1).sum();
        let t = Instant::now();
        let _ = r.redact_jsonl(&session, &mut Counts::new());
        let all = t.elapsed();
        println!("{name}: parse {parse:?}, spans {spans:?} (windows {windows:?}, {} windows, {} MB covered over rules), whole {all:?}", w.len(), covered >> 20);
    }
}

#[test]
#[ignore = "a measurement: regex forms of the assignment rule (--release --ignored --nocapture)"]
fn assignment_regex_forms() {
    let log = build_log(20 << 20);
    let forms = [
        (
            "now",
            r#"(?i)\b[a-z0-9_.-]{0,40}(?:password|passwd|pwd|passphrase|secret)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([^\s"'`,;<>(){}\[\]]{6,200})"#,
        ),
        (
            "cased words",
            r#"\b[a-zA-Z0-9_.-]{0,40}(?:password|PASSWORD|Password|passwd|PASSWD|Passwd|pwd|PWD|Pwd|passphrase|PASSPHRASE|Passphrase|secret|SECRET|Secret)[a-zA-Z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([^\s"'`,;<>(){}\[\]]{6,200})"#,
        ),
        (
            "unbounded value",
            r#"(?i)\b[a-z0-9_.-]{0,40}(?:password|passwd|pwd|passphrase|secret)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([^\s"'`,;<>(){}\[\]]{6,})"#,
        ),
    ];
    for (name, f) in forms {
        let re = regex::bytes::RegexBuilder::new(f).unicode(false).build().unwrap();
        let t = std::time::Instant::now();
        let n = re.captures_iter(log.as_bytes()).count();
        println!("{name}: {n} matches, {:?}", t.elapsed());
    }
}

#[test]
#[ignore = "a measurement: the JSON side of one long line (--release --ignored --nocapture)"]
fn json_side_of_one_long_line() {
    use std::time::Instant;
    let r = Redactor::builtin();
    let session = one_output_session(&build_log(20 << 20));
    let line = session.split(|b| *b == b'\n').max_by_key(|l| l.len()).unwrap();
    let t = Instant::now();
    let ok = serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok();
    println!("validate {ok} {:?}", t.elapsed());
    let t = Instant::now();
    let clean = r.raw_line_is_clean(line, &Run::default());
    println!("clean? {clean} {:?}", t.elapsed());
    let t = Instant::now();
    let out = json::redact_tokens(line, false, &mut Counts::new(), &mut |_h: &[u8]| Vec::new());
    println!("tokens+decode (no spans) {} {:?}", out.is_some(), t.elapsed());
    let t = Instant::now();
    let out = r.line_run(line, &mut Counts::new(), &mut Run::default());
    println!("line_run {} {:?}", out.is_some(), t.elapsed());
}

#[test]
#[ignore = "a profile target: one 20 MB build-log line redacted five times (--release --ignored)"]
fn profile_the_build_log() {
    let r = Redactor::builtin();
    let session = one_output_session(&build_log(20 << 20));
    for _ in 0..5 {
        let _ = r.redact_jsonl(&session, &mut Counts::new());
    }
}

#[test]
#[ignore = "a measurement: which rules' windows cover how much of one long line (--release --ignored --nocapture)"]
fn coverage_per_rule_on_the_build_log() {
    let r = Redactor::builtin();
    let log = build_log(20 << 20);
    let mut w = Vec::new();
    r.rules.windows(log.as_bytes(), &mut w);
    let mut by: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    for (rule, s, e) in &w {
        *by.entry(*rule).or_default() += e - s;
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (rule, bytes) in v.iter().take(12) {
        println!(
            "{:>6} KB {} ({})",
            bytes >> 10,
            r.rules.rules[*rule].kind,
            r.rules.rules[*rule].regex.as_str().chars().take(60).collect::<String>()
        );
    }
}
