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
