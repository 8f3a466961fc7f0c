//! Replays every committed corpus and regression input through its target's check (on stable, no
//! cargo-fuzz): what the fuzzer once explored stays checked in CI, in a few seconds. One test per
//! target, each listing every input that fails.

use dotty_pi_ext_fuzz::TARGETS;
use std::path::Path;

/// Runs every input of `name` (`corpus/<name>/`, `regressions/<name>/`) through its check.
fn replay(name: &str) {
    let (_, check) = TARGETS.iter().find(|(t, _)| *t == name).expect("a target of that name");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let t0 = std::time::Instant::now();
    let mut n = 0;
    let mut failed = Vec::new();
    for kind in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(kind).join(name)) else { continue };
        let mut files: Vec<_> = entries.map(|e| e.expect("a directory entry").path()).filter(|p| p.is_file()).collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).expect("a corpus file");
            if let Err(e) = std::panic::catch_unwind(|| check(&data)) {
                failed.push(format!("{}: {}", f.display(), panic_text(&e)));
            }
            n += 1;
        }
    }
    eprintln!("{name}: {n} inputs replayed in {:.1?}", t0.elapsed());
    assert!(n > 0, "no corpus for {name}");
    assert!(failed.is_empty(), "{} inputs failed:\n{}", failed.len(), failed.join("\n"));
}

fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

macro_rules! replay_each {
    ($($target:ident),*) => {
        $(
            #[test]
            fn $target() {
                replay(stringify!($target));
            }
        )*

        #[test]
        fn every_target_is_replayed() {
            let replayed = [$(stringify!($target)),*];
            for (t, _) in TARGETS {
                assert!(replayed.contains(t), "no replay test for {t}");
            }
        }
    };
}

replay_each!(fts_phrase, text, jsonrpc, sse, session_jsonl, tools, turn_text, songs, redact);

#[test]
fn is_py_space_is_python_isspace_on_every_codepoint() {
    dotty_pi_ext_fuzz::text::all_codepoints();
}
