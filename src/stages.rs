//! Where one tool call's time goes (bench/stages.mjs, issue 38): each stage of a call, from the
//! moment the binding has its arguments to the moment its promise is settled, stamps the clock into
//! a slot of its own. Off unless `DOTTY_STAGE_TRACE=1` is set when the process first asks (then a
//! stamp is one relaxed load); meant for one call in flight at a time, which the bench makes.
//!
//! The clock is `CLOCK_MONOTONIC` in nanoseconds, the clock of Node's `process.hrtime`, so the
//! bench puts its own JS-side stamps on the same line.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// A stage of a call, in the order a brain.db call passes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The binding has the call's arguments as Rust values (JS thread).
    Converted = 0,
    /// The call is queued for a store thread and the binding returns its promise (JS thread).
    Queued = 1,
    /// A store thread took the job.
    Picked = 2,
    /// The store thread has the reply (the query ran, the reply text is made).
    Answered = 3,
    /// The answer is queued for the JS thread, which is about to be woken (the store thread).
    Woken = 4,
    /// The JS thread runs the settle callback.
    Settling = 5,
    /// The promise is settled with its reply object (JS thread).
    Settled = 6,
}

/// How many stages there are.
pub const STAGES: usize = 7;

static SLOTS: [AtomicU64; STAGES] = [const { AtomicU64::new(0) }; STAGES];
static ON: OnceLock<AtomicBool> = OnceLock::new();

fn on() -> bool {
    ON.get_or_init(|| AtomicBool::new(std::env::var_os("DOTTY_STAGE_TRACE").is_some_and(|v| v == "1")))
        .load(Ordering::Relaxed)
}

/// Stamps `stage` with the clock now (when tracing is on).
#[inline]
pub fn mark(stage: Stage) {
    if on() {
        SLOTS[stage as usize].store(now_ns(), Ordering::Relaxed);
    }
}

/// The last stamp of every stage, in nanoseconds of `CLOCK_MONOTONIC` (0: never stamped).
pub fn last() -> [u64; STAGES] {
    std::array::from_fn(|i| SLOTS[i].load(Ordering::Relaxed))
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_kept_only_when_tracing_is_on() {
        let before = now_ns();
        ON.get_or_init(|| AtomicBool::new(false)).store(true, Ordering::Relaxed);
        mark(Stage::Picked);
        assert!(last()[Stage::Picked as usize] >= before);
        ON.get_or_init(|| AtomicBool::new(false)).store(false, Ordering::Relaxed);
        let kept = last()[Stage::Answered as usize];
        mark(Stage::Answered);
        assert_eq!(last()[Stage::Answered as usize], kept, "off: nothing stamped");
    }
}
