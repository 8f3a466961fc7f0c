//! The redactor on real files nobody in this project wrote (issue 28): every text file under this
//! machine's npm `node_modules` of the repository, the Cargo registry's sources, Python's standard
//! library and `/usr/share/doc` (those that exist)
//! is put in a pi session four ways, as a user would meet it (pasted by the user, quoted by the
//! assistant, printed by a `bash` tool, written as a tool call's argument), and the session is
//! redacted as the feed stages it. Every redaction on these files is a false positive unless the
//! file really holds a credential (a test fixture of a library): each one is listed with its
//! file and context, for a person to judge. Prints the figures; never fails (it is a measurement).
//!
//!   cargo test --lib redact::corpus -- --ignored --nocapture

use super::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

const MAX_FILE: u64 = 512 * 1024;
const TEXT: &[&str] = &[
    "js",
    "mjs",
    "cjs",
    "ts",
    "json",
    "md",
    "py",
    "rs",
    "toml",
    "txt",
    "lock",
    "yaml",
    "yml",
    "cfg",
    "ini",
    "sh",
    "html",
    "rst",
    "changelog",
    "copyright",
    "c",
    "h",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            files(&p, out);
        } else if ft.is_file() {
            let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
            let ext = name.rsplit('.').next().unwrap_or("");
            let small = e.metadata().is_ok_and(|m| m.len() <= MAX_FILE && m.len() > 0);
            if small && (TEXT.contains(&ext) || name == "changelog" || name == "copyright") {
                out.push(p);
            }
        }
    }
}

/// A session with `text` in it four ways.
fn session(text: &str) -> String {
    let lines = [
        serde_json::json!({"type":"session","version":3,"id":"c","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}),
        serde_json::json!({"type":"message","message":{"role":"user","content":[{"type":"text","text":text}]}}),
        serde_json::json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":format!("You pasted:\n{text}")},{"type":"toolCall","id":"t","name":"write","arguments":{"path":"/tmp/x","content":text}}]}}),
        serde_json::json!({"type":"message","message":{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{"type":"text","text":text}]}}),
    ];
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

#[test]
#[ignore = "a measurement on this machine's files: --ignored --nocapture"]
fn real_file_corpus() {
    let home = crate::env::process_all().into_iter().find(|(k, _)| k == "HOME").map(|(_, v)| v).unwrap_or_default();
    let dirs = format!(
        "{}/node_modules:{home}/.cargo/registry/src:/usr/lib/python3.11:/usr/share/doc",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut all = Vec::new();
    for d in dirs.split(':').filter(|d| !d.is_empty()) {
        files(Path::new(d), &mut all);
    }
    all.sort();
    let r = Redactor::builtin();
    let (mut bytes, mut hit_files, mut texts) = (0usize, 0usize, 0usize);
    let mut kinds = Counts::new();
    let mut elapsed = std::time::Duration::ZERO;
    for p in &all {
        let Ok(raw) = std::fs::read(p) else { continue };
        let text = String::from_utf8_lossy(&raw);
        texts += 1;
        let s = session(&text);
        bytes += s.len();
        let mut c = Counts::new();
        let t = Instant::now();
        let out = r.redact_jsonl(s.as_bytes(), &mut c);
        elapsed += t.elapsed();
        if out.is_none() {
            continue;
        }
        hit_files += 1;
        merge_counts(&mut kinds, c.clone());
        // Where, in the file's own text (the first of the four copies).
        for h in r.spans(text.as_bytes(), &mut Run::default()) {
            let from = text[..h.start].char_indices().rev().nth(50).map_or(0, |x| x.0);
            let to = text[h.end..].char_indices().nth(20).map_or(text.len(), |x| h.end + x.0);
            let ctx = text[from..to].replace('\n', "⏎");
            println!("HIT {} {} :: {}", h.kind, p.display(), ctx);
        }
        println!("FILE {} {c:?}", p.display());
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "SUMMARY files {texts}, session bytes {mb:.1} MB, files with a redaction {hit_files}, redactions {} ({}), {:.1} s, {:.1} MB/s",
        kinds.values().sum::<u64>(),
        describe(&kinds),
        elapsed.as_secs_f64(),
        mb / elapsed.as_secs_f64().max(1e-9)
    );
}

/// Where `scripts/redact/rule-samples.py` writes its samples (never committed: made-up credentials).
const RULE_SAMPLES: &str = "/tmp/dotty-rule-samples.json";

#[test]
#[ignore = "a measurement: python3 scripts/redact/rule-samples.py > /tmp/dotty-rule-samples.json first"]
fn rule_samples() {
    let Ok(text) = std::fs::read_to_string(RULE_SAMPLES) else {
        panic!("no {RULE_SAMPLES}: run scripts/redact/rule-samples.py")
    };
    let all: std::collections::BTreeMap<String, Vec<serde_json::Value>> = serde_json::from_str(&text).unwrap();
    let r = Redactor::builtin();
    let (mut rules_full, mut total, mut ok_total) = (0, 0, 0);
    for (id, samples) in &all {
        let mut ok = 0;
        let mut other = Counts::new();
        for s in samples {
            let (text, secret) = (s["text"].as_str().unwrap(), s["secret"].as_str().unwrap());
            let mut c = Counts::new();
            let out = r.redact_str(text, &mut c).unwrap_or_else(|| text.to_string());
            if c.contains_key(id) && !out.contains(secret) {
                ok += 1;
            } else {
                merge_counts(&mut other, if c.is_empty() { Counts::from([("none".to_string(), 1)]) } else { c });
                if other.values().sum::<u64>() == 1 {
                    println!("MISS {id}: {text:?} -> {out:?}");
                }
            }
        }
        total += samples.len();
        ok_total += ok;
        if ok == samples.len() {
            rules_full += 1;
        } else {
            println!("RULE {id}: {ok}/{} (else: {})", samples.len(), describe(&other));
        }
    }
    println!(
        "SUMMARY rules {}, all samples redacted with the rule's kind: {rules_full} ({:.1} %); samples {ok_total}/{total} ({:.1} %)",
        all.len(),
        100.0 * rules_full as f64 / all.len() as f64,
        100.0 * ok_total as f64 / total as f64
    );
}

/// The same samples repeated bare later in a session (issue 33): pasted with their key in a tool
/// output (where the rule finds them), then said alone by the assistant. The share of samples whose
/// value is gone from the whole session, per rule where it is not all of them.
#[test]
#[ignore = "a measurement: python3 scripts/redact/rule-samples.py 29 > /tmp/dotty-rule-samples.json first"]
fn rule_samples_repeated_bare() {
    let Ok(text) = std::fs::read_to_string(RULE_SAMPLES) else {
        panic!("no {RULE_SAMPLES}: run scripts/redact/rule-samples.py")
    };
    let all: std::collections::BTreeMap<String, Vec<serde_json::Value>> = serde_json::from_str(&text).unwrap();
    let r = Redactor::builtin();
    let (mut gone, mut total) = (0, 0);
    for (id, samples) in &all {
        let mut ok = 0;
        for s in samples {
            let (text, secret) = (s["text"].as_str().unwrap(), s["secret"].as_str().unwrap());
            let bare = format!("The value `{secret}` is the one the service rejects; rotate it.");
            let lines = [
                serde_json::json!({"type":"message","message":{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{"type":"text","text":text}]}}),
                serde_json::json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":bare}]}}),
            ];
            let session: String = lines.iter().map(|l| l.to_string() + "\n").collect();
            let out =
                r.redact_jsonl(session.as_bytes(), &mut Counts::new()).unwrap_or_else(|| session.clone().into_bytes());
            let escaped = serde_json::to_string(secret).unwrap();
            let out = String::from_utf8_lossy(&out);
            if !out.contains(secret) && !out.contains(escaped.trim_matches('"')) {
                ok += 1;
            }
        }
        total += samples.len();
        gone += ok;
        if ok < samples.len() {
            println!("RULE {id}: {ok}/{} gone", samples.len());
        }
    }
    println!("SUMMARY bare repeats gone: {gone}/{total} ({:.1} %)", 100.0 * gone as f64 / total as f64);
}
