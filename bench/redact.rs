//! What redaction costs the feed: staging a session directory (default 50 MB) with the built-in
//! exporter, without and with redaction, in MB/s; and the ways of matching gitleaks' ~220 patterns
//! at once it was chosen among; and, when MemPalace is installed, the mine's own cost on a part of
//! the same sessions.
//!
//!   cargo bench --no-default-features --bench redact -- [--mb 50] [--line-mb 20] [--rounds 3] [--mine-mb 2]
//!
//! First, the worst shapes of one line: a 20 MB keyword-dense build log and 20 MB of base64, each
//! one tool output on one JSON line (issue 33).
//!
//! The sessions are generated (deterministic) like pi writes them, with realistic tool output: this
//! repository's own source files read with `cat`, `cargo build` and `npm ci` logs with lockfile
//! `integrity` lines, `git log` with hashes, `ls -la` listings, JSON tool results, and now and then a
//! made-up secret of the fixture (`.env` dumps, curl with a Bearer header). Written under
//! `$TMPDIR/dotty-redact-bench/` and reused. Each staging run starts from an empty feed folder (every
//! session is staged); the figure is the median over the rounds. Not a test: it prints a table and
//! never fails.

#![allow(clippy::expect_used, reason = "a benchmark: a failure ends the run, with its message")]
#![allow(clippy::unwrap_used, reason = "a benchmark: a failure ends the run, with its message")]

use dotty_pi_ext::palace::feed::export::BuiltinExporter;
use dotty_pi_ext::palace::feed::redact::{Counts, Redactor, Sources};
use regex::bytes::{RegexBuilder, RegexSetBuilder};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
    fn hex(&mut self, n: usize) -> String {
        (0..n).map(|_| char::from(b"0123456789abcdef"[(self.next() % 16) as usize])).collect()
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with `.<ext>`, sorted.
fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Real text of this repository: its Rust sources and package-lock.json's integrity lines.
fn material() -> (Vec<String>, Vec<String>, Vec<String>) {
    let sources: Vec<String> =
        files_under(&root().join("src"), "rs").iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    let lock = std::fs::read_to_string(root().join("package-lock.json")).unwrap();
    let integrity: Vec<String> = lock
        .lines()
        .filter(|l| l.contains("\"integrity\"") || l.contains("\"resolved\""))
        .map(|l| l.trim().to_string())
        .collect();
    let secrets: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("__test__/fixtures/redact/secrets.json")).unwrap())
            .unwrap();
    let secrets = secrets["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap().replace("{v}", s["value"].as_str().unwrap()))
        .collect();
    (sources, integrity, secrets)
}

fn tool_output(rng: &mut Rng, m: &(Vec<String>, Vec<String>, Vec<String>)) -> (String, String) {
    let (sources, integrity, secrets) = m;
    match rng.next() % 7 {
        0 | 1 => {
            let s = rng.pick(sources);
            let lines: Vec<&str> = s.lines().collect();
            let start = (rng.next() as usize) % lines.len().max(1);
            let n = 40 + (rng.next() % 200) as usize;
            ("cat src/palace/feed/export.rs".into(), lines[start..(start + n).min(lines.len())].join("\n"))
        }
        2 => {
            let mut out = String::from("   Compiling dotty-pi-ext v0.1.0 (/work/dotty-pi-ext)\n");
            for i in 0..(20 + rng.next() % 60) {
                out += &format!("warning: unused variable `x{i}`\n  --> src/lib.rs:{}:{}\n   |\n{} |     let x{i} = compute_the_thing();\n   |         ^^ help: if this is intentional, prefix it with an underscore\n", i * 7, i % 40, i * 7);
            }
            out += "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 12.34s";
            ("cargo build 2>&1 | tail -200".into(), out)
        }
        3 => {
            let n = 30 + (rng.next() % 80) as usize;
            let start = (rng.next() as usize) % integrity.len().saturating_sub(n).max(1);
            (
                "grep -n integrity package-lock.json".into(),
                integrity[start..(start + n).min(integrity.len())].join("\n"),
            )
        }
        4 => {
            let out: Vec<String> = (0..(20 + rng.next() % 30))
                .map(|_| {
                    format!(
                        "{} {} Refactor the palace bridge's tool cache ({})",
                        rng.hex(40),
                        rng.pick(&["Ada", "Bob", "Cy"]),
                        rng.hex(7)
                    )
                })
                .collect();
            ("git log --format='%H %an %s' -n 50".into(), out.join("\n"))
        }
        5 => {
            let out: Vec<String> = (0..(30 + rng.next() % 50))
                .map(|i| {
                    format!(
                        "-rw-r--r-- 1 dev dev {:>8} Dec  1 10:{:02} file_{i}_{}.rs",
                        rng.next() % 100_000,
                        i % 60,
                        rng.hex(6)
                    )
                })
                .collect();
            ("ls -la src/".into(), out.join("\n"))
        }
        _ => {
            if rng.next().is_multiple_of(4) {
                ("cat .env".into(), format!("NODE_ENV=production\n{}\nLOG_LEVEL=info", rng.pick(secrets)))
            } else {
                let v: Vec<Value> = (0..(10 + rng.next() % 30)).map(|i| json!({"id": rng.hex(32), "name": format!("drawer_{i}"), "score": (rng.next() % 1000) as f64 / 1000.0, "wing": "wing_conversations"})).collect();
                ("mempalace_search".into(), serde_json::to_string_pretty(&v).unwrap())
            }
        }
    }
}

/// A session directory of about `mb` MB (kept between runs).
fn sessions(mb: usize) -> PathBuf {
    let dir = std::env::temp_dir().join("dotty-redact-bench").join(format!("sessions-{mb}mb-v1"));
    if dir.join("done").exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let m = material();
    let mut rng = Rng(0x5eed_2121);
    let target = mb * 1_000_000;
    let (mut total, mut file) = (0usize, 0usize);
    while total < target {
        let project = dir.join(format!("--work-project-{}--", file % 5));
        std::fs::create_dir_all(&project).unwrap();
        let mut lines = vec![json!({"type":"session","version":3,"id":format!("{}-0000-4000-8000-{}", rng.hex(8), rng.hex(12)),"timestamp":"2026-12-01T10:00:00.000Z","cwd":"/work/project"}).to_string()];
        let size = 200_000 + (rng.next() % 800_000) as usize;
        let mut len = 0;
        let mut i = 0u64;
        while len < size {
            let ts = 1_764_583_200_000u64 + i * 1000;
            let (cmd, out) = tool_output(&mut rng, &m);
            let turn = [
                json!({"type":"message","id":rng.hex(8),"timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"Look at this and tell me what is wrong with the build."}],"timestamp":ts}}),
                json!({"type":"message","id":rng.hex(8),"timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Let me run a command."},{"type":"toolCall","id":format!("call_{i}"),"name":"bash","arguments":{"command":cmd}}],"api":"openai-completions","provider":"p","model":"m","stopReason":"toolUse","timestamp":ts}}),
                json!({"type":"message","id":rng.hex(8),"timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"toolResult","toolCallId":format!("call_{i}"),"toolName":"bash","content":[{"type":"text","text":out}],"isError":false,"timestamp":ts}}),
                json!({"type":"message","id":rng.hex(8),"timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"The output shows the build is fine; the warning is about an unused variable."}],"api":"openai-completions","provider":"p","model":"m","stopReason":"stop","timestamp":ts}}),
            ];
            for t in turn {
                let l = t.to_string();
                len += l.len() + 1;
                lines.push(l);
            }
            i += 1;
        }
        std::fs::write(project.join(format!("2026-12-01T10-00-00-000Z_{file:04}.jsonl")), lines.join("\n") + "\n")
            .unwrap();
        total += len;
        file += 1;
    }
    std::fs::write(dir.join("done"), format!("{file} files, {total} bytes")).unwrap();
    dir
}

fn dir_bytes(d: &Path) -> u64 {
    files_under(d, "jsonl").iter().map(|p| std::fs::metadata(p).unwrap().len()).sum()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Staging `sessions` into a fresh feed folder: seconds, and what was redacted.
fn stage(sessions: &Path, redactor: Option<Arc<Redactor>>) -> (f64, Counts) {
    let feed = std::env::temp_dir().join("dotty-redact-bench").join("feed");
    let _ = std::fs::remove_dir_all(&feed);
    let ex = BuiltinExporter::new(sessions, &feed).redacting(redactor);
    let t = Instant::now();
    let staged = ex.prepare().unwrap().unwrap();
    let secs = t.elapsed().as_secs_f64();
    (secs, staged.redacted)
}

/// Every JSON string of every line (what the redactor scans).
fn strings(sessions: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    for p in files_under(sessions, "jsonl") {
        for l in std::fs::read_to_string(&p).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<Value>(l) {
                walk(&v, &mut out);
            }
        }
    }
    out
}

/// The worst shapes of one line (issue 33): a 20 MB keyword-dense build log and 20 MB of base64,
/// each one tool output on one JSON line, redacted as the feed stages a session; MB/s, median.
fn shapes(rounds: usize) {
    use test_support::credentials::{build_log, one_output_session, Rng};
    let mb = arg("--line-mb", 20.0) as usize;
    let mut rng = Rng::new(7);
    let b64 = rng.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", mb << 20);
    let r = Redactor::builtin();
    println!("## One {mb} MB line ({rounds} rounds, median)\n");
    println!("| shape | seconds | MB/s | markers |\n|---|---:|---:|---:|");
    for (name, session) in
        [("keyword-dense build log", one_output_session(&build_log(mb << 20))), ("base64", one_output_session(&b64))]
    {
        let mut times = Vec::new();
        let mut markers = 0;
        for _ in 0..rounds {
            let mut c = Counts::new();
            let t = Instant::now();
            let _ = r.redact_jsonl(&session, &mut c);
            times.push(t.elapsed().as_secs_f64());
            markers = c.values().sum::<u64>();
        }
        let s = median(times);
        println!("| {name} | {s:.2} | {:.0} | {markers} |", session.len() as f64 / 1e6 / s);
    }
    println!();
}

fn main() {
    let mb = arg("--mb", 50.0) as usize;
    shapes(arg("--rounds", 3.0) as usize);
    let rounds = arg("--rounds", 3.0) as usize;
    let mine_mb = arg("--mine-mb", 2.0) as usize;
    let dir = sessions(mb);
    let bytes = dir_bytes(&dir) as f64;
    eprintln!("sessions: {} ({:.1} MB)", dir.display(), bytes / 1e6);

    let t = Instant::now();
    let redactor = Arc::new(Redactor::build(&Sources { env: dotty_pi_ext::env::process_all(), patterns_file: None }).0);
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let _ = stage(&dir, None); // warm the page cache
    let (mut plain, mut redacted) = (Vec::new(), Vec::new());
    let mut counts = Counts::new();
    for _ in 0..rounds {
        plain.push(stage(&dir, None).0);
        let (s, c) = stage(&dir, Some(redactor.clone()));
        redacted.push(s);
        counts = c;
    }
    let (p, r) = (median(plain), median(redacted));
    println!("## Staging {:.1} MB of sessions (built-in exporter, {rounds} rounds, median)\n", bytes / 1e6);
    println!("| staging | seconds | MB/s |\n|---|---:|---:|");
    println!("| without redaction | {p:.2} | {:.0} |", bytes / 1e6 / p);
    println!("| with redaction | {r:.2} | {:.0} |", bytes / 1e6 / r);
    println!(
        "\nredaction's own cost: {:.2} s ({:.0} MB/s); rule set built in {build_ms:.0} ms; redacted: {}\n",
        r - p,
        bytes / 1e6 / (r - p).max(1e-9),
        dotty_pi_ext::palace::feed::redact::describe(&counts)
    );

    // Ways of matching the ~220 gitleaks patterns on every string.
    let strs = strings(&dir);
    let sbytes: usize = strs.iter().map(String::len).sum();
    let file: Value = serde_json::from_str(include_str!("../src/palace/feed/redact/gitleaks-rules.json")).unwrap();
    let patterns: Vec<String> =
        file["rules"].as_array().unwrap().iter().map(|r| r["regex"].as_str().unwrap().to_string()).collect();
    println!("## Matching {} gitleaks patterns on {:.1} MB of strings\n", patterns.len(), sbytes as f64 / 1e6);
    println!("| strategy | build ms | MB/s |\n|---|---:|---:|");
    let t = Instant::now();
    let set =
        RegexSetBuilder::new(&patterns).unicode(false).size_limit(1 << 30).dfa_size_limit(1 << 30).build().unwrap();
    let set_build = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let mut n = 0usize;
    for s in &strs {
        n += set.matches(s.as_bytes()).iter().count();
    }
    let set_secs = t.elapsed().as_secs_f64();
    println!("| RegexSet of every pattern (which match; each match still needs its own regex for the span) | {set_build:.0} | {:.1} |", sbytes as f64 / 1e6 / set_secs);
    let t = Instant::now();
    let each: Vec<regex::bytes::Regex> =
        patterns.iter().map(|p| RegexBuilder::new(p).unicode(false).size_limit(1 << 26).build().unwrap()).collect();
    let each_build = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let sample = &strs[..strs.len().min(20_000)];
    let sample_bytes: usize = sample.iter().map(String::len).sum();
    for s in sample {
        for r in &each {
            n += r.find_iter(s.as_bytes()).count();
        }
    }
    let each_secs = t.elapsed().as_secs_f64();
    println!(
        "| every regex on every string (no prefilter; on the first {} strings) | {each_build:.0} | {:.1} |",
        sample.len(),
        sample_bytes as f64 / 1e6 / each_secs
    );
    let t = Instant::now();
    let mut c = Counts::new();
    for s in &strs {
        let _ = redactor.redact_str(s, &mut c);
    }
    let ours = t.elapsed().as_secs_f64();
    println!("| keyword prefilter (Aho-Corasick), then the rules it gates (what the redactor does, all layers) | {build_ms:.0} | {:.1} |", sbytes as f64 / 1e6 / ours);
    eprintln!("({n} raw matches)");

    // The mine's own cost, on a part of the sessions.
    let mp = std::env::var("MEMPALACE_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/mempalace-test"));
    let cli = mp.join("venv/bin/mempalace");
    if mine_mb == 0 || !cli.exists() {
        println!("\n(mine not measured: --mine-mb 0, or MemPalace is not installed under {})", mp.display());
        return;
    }
    let part = std::env::temp_dir().join("dotty-redact-bench").join("mine-part");
    let _ = std::fs::remove_dir_all(&part);
    let files = files_under(&dir, "jsonl");
    let mut taken = 0u64;
    let staged_part = part.join("staging");
    std::fs::create_dir_all(&staged_part).unwrap();
    for f in files {
        if taken >= (mine_mb * 1_000_000) as u64 {
            break;
        }
        let bytes = std::fs::read(&f).unwrap();
        let clean = redactor.redact_jsonl(&bytes, &mut Counts::new()).unwrap_or(bytes);
        taken += clean.len() as u64;
        std::fs::write(staged_part.join(f.file_name().unwrap()), clean).unwrap();
    }
    let t = Instant::now();
    let out = std::process::Command::new(&cli)
        .args([
            "--palace",
            part.join("palace").to_str().unwrap(),
            "mine",
            staged_part.to_str().unwrap(),
            "--mode",
            "convos",
            "--wing",
            "wing_bench",
        ])
        .env("HOME", mp.join("home"))
        .env("MEMPALACE_CONFIG_DIR", part.join("cfg"))
        .env("HF_HUB_OFFLINE", "1")
        .env("MEMPALACE_HUB_FORWARD", "0")
        .output()
        .unwrap();
    let mine = t.elapsed().as_secs_f64();
    let tail: String = String::from_utf8_lossy(&out.stdout).lines().rev().take(3).collect::<Vec<_>>().join(" / ");
    println!("\n## The mine's own cost\n\n| step | MB | seconds | MB/s |\n|---|---:|---:|---:|");
    println!(
        "| mempalace mine --mode convos (real MemPalace 3.11.0, fresh palace) | {:.1} | {mine:.1} | {:.2} |",
        taken as f64 / 1e6,
        taken as f64 / 1e6 / mine
    );
    println!(
        "| redaction of the same bytes (from the staging figures above) | {:.1} | {:.2} | {:.0} |",
        taken as f64 / 1e6,
        taken as f64 / (bytes / (r - p).max(1e-9)),
        bytes / 1e6 / (r - p).max(1e-9)
    );
    eprintln!("mine exit {:?}: {tail}", out.status.code());
}
