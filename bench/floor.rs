//! The floor under figure 1: memory_lookup's SQL in a Rust loop, no Node, no threads, no hops.
//!
//!   cargo bench --no-default-features --bench floor -- [--json] [--n N] brain.db...
//!
//! For each file, on the bench's query mix (`QUERIES` in bench/gen-brain.mjs, read from there):
//! - `contract`: the contract's SQL as one statement (`... ORDER BY rank LIMIT 5`) on one
//!   connection with SQLite's default 2 MB page cache, what the addon ran before;
//! - `contract16`: the same with a 16 MB cache (what better-sqlite3 builds with);
//! - `plan`: the addon's plan on one thread (`Brain::lookup`: ranks streamed, best kept in a heap,
//!   only those joined), the store's own read connection;
//! - `split`: the addon's plan as a tool call runs it (`Brain::submit_lookup`: split over the
//!   reader threads on a large table), timed from submit to callback: the store's thread hops
//!   without Node's.
//!
//! Before timing anything it proves the plan's rows equal the contract's on every query: the
//! same five rowids in the same order with the same rank, ties included, one thread and split.
//! A difference is a failure (exit 1), not a figure. Lookups run one after another, each query
//! in turn; p50/p99 over all of them, plus CPU time per lookup (this process, all threads).

#![allow(clippy::expect_used, reason = "a benchmark: a failure ends the run, with its message")]

use dotty_pi_ext::brain::Brain;
use dotty_pi_ext::text::{fts_phrase, strip};
use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONTRACT: &str =
    "SELECT m.rowid, rank, m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid \
                        WHERE memories_fts MATCH ?1 AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT ?2";

fn queries() -> Vec<String> {
    let src =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/gen-brain.mjs")).unwrap_or_default();
    let Some(start) = src.find("export const QUERIES = [") else { return Vec::new() };
    let list = &src[start..];
    let list = &list[..list.find("];").unwrap_or(list.len())];
    list.split('\'').skip(1).step_by(2).map(str::to_string).collect()
}

fn cpu_ms() -> f64 {
    // SAFETY: rusage is plain integers: all zeroes is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the live struct it is given, and nothing else.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 * 1e3 + v.tv_usec as f64 / 1e3;
    t(u.ru_utime) + t(u.ru_stime)
}

struct Figure {
    name: &'static str,
    p50_us: f64,
    p99_us: f64,
    cpu_us: f64,
}

fn time(name: &'static str, n: usize, phrases: &[String], mut f: impl FnMut(&str)) -> Figure {
    for p in phrases {
        f(p); // warm-up pass: the page caches as a running process has them
    }
    let mut lat = Vec::with_capacity(n);
    let cpu0 = cpu_ms();
    for i in 0..n {
        let t = Instant::now();
        f(&phrases[i % phrases.len()]);
        lat.push(t.elapsed());
    }
    let cpu = cpu_ms() - cpu0;
    lat.sort();
    let pct = |p: f64| lat[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Figure { name, p50_us: us(pct(50.0)), p99_us: us(pct(99.0)), cpu_us: cpu * 1e3 / n as f64 }
}

type Row = (i64, f64, String);

fn contract_rows(c: &Connection, phrase: &str) -> Vec<Row> {
    let mut st = c.prepare_cached(CONTRACT).expect("prepare");
    st.query_map(params![phrase, 5], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

fn split_lookup(b: &Arc<Brain>, phrase: &str) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    b.submit_lookup(phrase.to_string(), 5, move |r| drop(tx.send(r)));
    rx.recv().expect("an answer").expect("lookup")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let json = args.iter().any(|a| a == "--json");
    let n: usize =
        args.iter().position(|a| a == "--n").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(1000);
    let files: Vec<PathBuf> = args.iter().filter(|a| a.ends_with(".db")).map(PathBuf::from).collect();
    let phrases: Vec<String> = queries().iter().map(|q| fts_phrase(strip(q))).collect();
    if files.is_empty() || phrases.is_empty() {
        eprintln!("usage: cargo bench --no-default-features --bench floor -- [--json] [--n N] brain.db...  (run from the repository)");
        std::process::exit(2);
    }
    let mut out = Vec::new();
    let mut failed = false;
    for file in &files {
        let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let c = Connection::open_with_flags(file, ro).expect("open");
        let c16 = Connection::open_with_flags(file, ro).expect("open");
        c16.pragma_update(None, "cache_size", -16000).expect("cache_size");
        let brain = Arc::new(Brain::new(file, false));

        // Equality first, on every query: rowid, rank and content, in order.
        let mut differ = Vec::new();
        for p in &phrases {
            let want = contract_rows(&c, p);
            let got: Vec<Row> = brain
                .lookup_range(p, (i64::MIN, i64::MAX), 5)
                .expect("lookup")
                .into_iter()
                .map(|h| (h.rowid, h.rank, h.content))
                .collect();
            let split = split_lookup(&brain, p);
            let want_text: Vec<String> = want.iter().map(|r| r.2.clone()).collect();
            if got != want || split != want_text {
                differ.push(p.clone());
            }
        }
        let ties: usize =
            phrases.iter().map(|p| contract_rows(&c, p).windows(2).filter(|w| w[0].1 == w[1].1).count()).sum();
        failed |= !differ.is_empty();

        let figures = [
            time("contract", n, &phrases, |p| drop(contract_rows(&c, p))),
            time("contract16", n, &phrases, |p| drop(contract_rows(&c16, p))),
            time("plan", n, &phrases, |p| drop(brain.lookup(p, 5).expect("lookup"))),
            time("split", n, &phrases, |p| drop(split_lookup(&brain, p))),
        ];
        let name = file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        if json {
            let figs: Vec<String> = figures
                .iter()
                .map(|f| {
                    format!(
                        "\"{}\":{{\"p50Us\":{:.1},\"p99Us\":{:.1},\"cpuUs\":{:.1}}}",
                        f.name, f.p50_us, f.p99_us, f.cpu_us
                    )
                })
                .collect();
            out.push(format!(
                "{{\"file\":\"{name}\",\"queries\":{},\"ties\":{ties},\"differ\":{},{}}}",
                phrases.len(),
                differ.len(),
                figs.join(",")
            ));
        } else {
            println!(
                "{name}: {} queries, plan == contract on {} of them ({ties} tied pairs among the top fives){}",
                phrases.len(),
                phrases.len() - differ.len(),
                if differ.is_empty() { String::new() } else { format!("; DIFFER: {differ:?}") }
            );
            for f in &figures {
                println!(
                    "  {:<11} p50 {:>9.1} µs  p99 {:>9.1} µs  CPU {:>9.1} µs per lookup",
                    f.name, f.p50_us, f.p99_us, f.cpu_us
                );
            }
        }
    }
    if json {
        println!("@@FLOOR@@[{}]", out.join(","));
    }
    if failed {
        std::process::exit(1);
    }
}
