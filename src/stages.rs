//! Where one tool call's time goes (bench/stages.mjs, issue 38): each stage of a call, from the
//! moment the binding has its arguments to the moment its promise is settled, stamps the clock into
//! a slot of its own. Off until [`trace`] turns it on (`traceStages(true)` from JS; off, a stamp is
//! one relaxed load); meant for one call in flight at a time, which the bench makes.
//!
//! The clock is `CLOCK_MONOTONIC` in nanoseconds, the clock of Node's `process.hrtime`, so the
//! bench puts its own JS-side stamps on the same line.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
static ON: AtomicBool = AtomicBool::new(false);

/// Turns the stamps on or off for the process.
pub fn trace(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Stamps `stage` with the clock now (when tracing is on).
#[inline]
pub fn mark(stage: Stage) {
    if ON.load(Ordering::Relaxed) {
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
        trace(true);
        mark(Stage::Picked);
        assert!(last()[Stage::Picked as usize] >= before);
        trace(false);
        let kept = last()[Stage::Answered as usize];
        mark(Stage::Answered);
        assert_eq!(last()[Stage::Answered as usize], kept, "off: nothing stamped");
    }
}
