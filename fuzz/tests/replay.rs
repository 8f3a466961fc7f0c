//! Replays every committed corpus and regression input through its target's check (on stable, no
//! cargo-fuzz): what the fuzzer once explored stays checked in CI, in a few seconds.

use std::path::Path;

/// Runs every input of `name`; returns how many ran and the failures (file: panic message).
fn replay(name: &str, check: fn(&[u8])) -> (usize, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    let mut failed = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = root.join(kind).join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
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
    (n, failed)
}

fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[test]
fn every_target_has_a_corpus_and_it_passes() {
    let mut failed = Vec::new();
    for (name, check) in dotty_pi_ext_fuzz::TARGETS {
        let t0 = std::time::Instant::now();
        let (n, f) = replay(name, *check);
        assert!(n > 0, "no corpus for {name}");
        eprintln!("{name}: {n} inputs replayed in {:.1?}, {} failed", t0.elapsed(), f.len());
        failed.extend(f);
    }
    assert!(failed.is_empty(), "{} inputs failed:\n{}", failed.len(), failed.join("\n"));
}

#[test]
fn is_py_space_is_python_isspace_on_every_codepoint() {
    dotty_pi_ext_fuzz::text::all_codepoints();
}
