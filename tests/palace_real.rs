//! The built-in exporter against the REAL MemPalace 3.11.0 CLI. It must be installed
//! (`scripts/mempalace/install.sh`; root `$MEMPALACE_ROOT`, else `~/.cache/mempalace-test`):
//! this test fails, not skips, without it.

#![allow(clippy::unwrap_used, reason = "a test: a panic is its failure report")]

use dotty_pi_ext::palace::feed::export::BuiltinExporter;
use std::path::PathBuf;
use std::process::Stdio;
use test_support::{session_jsonl, write_session};

/// The real MemPalace 3.11.0 (installed by scripts/mempalace/install.sh) files the
/// built-in exporter's staging folder and finds it again with `mempalace search`.
#[test]
fn real_mempalace_mines_the_staged_export() {
    let root = std::env::var_os("MEMPALACE_ROOT").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache")
        });
        cache.join("mempalace-test")
    });
    let cli = root.join("venv/bin/mempalace");
    assert!(
        cli.is_file(),
        "the real MemPalace is not installed under {}: run scripts/mempalace/install.sh (or set MEMPALACE_ROOT)",
        root.display()
    );
    let agent = tempfile::tempdir().unwrap();
    let session = session_jsonl(&[
        ("user", "Please remember the zebrafish quokka protocol for the aquarium migration."),
        ("assistantToolCall", "ls /tanks"),
        ("toolResult", "tank-1 tank-2"),
        ("assistant", "Noted: the zebrafish quokka protocol moves tank-1 and tank-2 on Tuesday at dawn."),
        ("user", "And who signs off on it?"),
        ("assistant", "Marguerite from the aquarium board signs off on the zebrafish quokka protocol."),
    ]);
    write_session(agent.path(), "2026-01-01T00-00-00-000Z_real", &session);
    write_session(
        agent.path(),
        "2026-01-01T00-00-00-000Z_rejected",
        &session_jsonl(&[("user", "platypus lighthouse")]),
    );
    let ex = BuiltinExporter::new(agent.path().join("sessions"), agent.path().join("mempalace-feed"));
    let staged = ex.prepare().unwrap().expect("one session staged");
    assert_eq!(staged.staged.len(), 1);

    let work = tempfile::tempdir().unwrap();
    let palace = work.path().join("p/palace");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&cli)
            .arg("--palace")
            .arg(&palace)
            .args(args)
            .env("HOME", root.join("home"))
            .env("MEMPALACE_CONFIG_DIR", work.path().join("cfg"))
            .env("HF_HUB_OFFLINE", "1")
            .env("TRANSFORMERS_OFFLINE", "1")
            .env("MEMPALACE_HUB_FORWARD", "0")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "mempalace {args:?} failed: {text}");
        text
    };
    let dir = staged.dir.to_str().unwrap().to_string();
    let mined = run(&["mine", &dir, "--mode", "convos", "--wing", "wing_conversations"]);
    assert!(mined.contains("Files processed: 1") && mined.contains("Drawers filed:"), "{mined}");
    assert!(!mined.contains("Drawers filed: 0"), "{mined}");
    let found = run(&["search", "who signs off on the zebrafish quokka protocol"]);
    assert!(found.contains("wing_conversations"), "{found}");
    assert!(found.contains("Marguerite"), "{found}");
    assert!(found.contains("2026-01-01T00-00-00-000Z_real.jsonl"), "{found}");
    assert!(!found.contains("platypus"), "{found}");
    staged.commit().unwrap();
}
