//! The checks of every fuzz target, in one place: the libFuzzer binaries (`fuzz_targets/`, built by
//! `cargo fuzz`) and the corpus replay (`tests/replay.rs`, plain `cargo test` on stable) call the
//! same functions, so a corpus file replayed in CI is checked exactly as it was while fuzzing.
//!
//! Each check takes raw bytes, runs one parser or rule of `dotty_pi_ext` on them and asserts its
//! invariants (a reference model written independently where one exists, chunking invariance,
//! bounds, idempotence), not only that nothing panics. A failed assertion is a crash to libFuzzer.

pub mod fts;
pub mod jsonrpc;
pub mod redact;
pub mod session;
pub mod songs;
pub mod sse;
pub mod text;
pub mod tools;
pub mod turn;
mod util;

/// A target's check: runs the code under test on one input, panics when an invariant fails.
pub type Check = fn(&[u8]);

/// Every target: its name (the `fuzz_targets/<name>.rs` binary, the `corpus/<name>/` folder) and
/// its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("fts_phrase", fts::check),
    ("text", text::check),
    ("jsonrpc", jsonrpc::check),
    ("sse", sse::check),
    ("session_jsonl", session::check),
    ("tools", tools::check),
    ("turn_text", turn::check),
    ("songs", songs::check),
    ("redact", redact::check),
];

/// The `main` of a target binary built without libFuzzer (stable `cargo run --bin <t> -- FILE...`):
/// runs the check on each file given, to reproduce a crash without the nightly toolchain.
pub fn replay_args(check: Check) {
    for path in std::env::args_os().skip(1) {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.to_string_lossy()));
        check(&data);
        println!("ok {}", path.to_string_lossy());
    }
}
