//! The process-wide counters ([`Stats`]) as JS reads them ([`NativeStats`]: numbers as `u32`).

use super::NativeStats;
use crate::extension::Stats;
use napi_derive::napi;

/// The last call's stages (src/stages.rs, once `traceStages(true)`), in nanoseconds of
/// `CLOCK_MONOTONIC` (the clock of `process.hrtime`): arguments converted, queued, picked by a
/// store thread, answered, JS thread woken, settle callback entered, settled. For bench/stages.mjs.
#[napi]
pub fn call_stages() -> Vec<f64> {
    crate::stages::last().iter().map(|&ns| ns as f64).collect()
}

/// Turns the stamps of [`call_stages`] on or off (off at start). For bench/stages.mjs.
#[napi]
pub fn trace_stages(on: bool) {
    crate::stages::trace(on)
}

impl From<Stats> for NativeStats {
    fn from(s: Stats) -> NativeStats {
        let n = |x: usize| x as u32;
        let v = s.voice.as_ref();
        let mcp = s.palace.as_ref().map(|p| &p.mcp);
        NativeStats {
            state_creations: n(s.state_creations),
            voice_enabled: v.is_some(),
            brain_db: v.map(|v| v.brain_db.display().to_string()),
            brain_writer_opens: v.map_or(0, |v| n(v.brain.writer_opens)),
            brain_reader_opens: v.map_or(0, |v| n(v.brain.reader_opens)),
            brain_files_created: v.map_or(0, |v| n(v.brain.files_created)),
            brain_write_groups: v.map_or(0, |v| n(v.brain.write_groups)),
            turn_rows_written: v.map_or(0, |v| n(v.turn_log.rows_written)),
            turn_rows_rewritten: v.map_or(0, |v| n(v.turn_log.rows_rewritten)),
            turn_writes_in_flight: v.map_or(0, |v| n(v.turn_log.in_flight)),
            song_catalogue_fetches: v.map_or(0, |v| n(v.song_catalogue_fetches)),
            calls_in_flight: n(s.calls_in_flight),
            palace_enabled: s.palace.is_some(),
            palace_connected: mcp.is_some_and(|m| m.connected),
            palace_tools: s.palace.as_ref().map_or(0, |p| n(p.tools)),
            mcp_spawns: mcp.map_or(0, |m| m.spawns as u32),
            mcp_respawns: mcp.map_or(0, |m| m.respawns as u32),
            mcp_child_pid: mcp.and_then(|m| m.child_pid),
            palace_down: mcp.is_some_and(|m| m.down),
            palace_next_try_ms: mcp.and_then(|m| m.next_try).map(|d| d.as_millis().min(u32::MAX as u128) as u32),
            stderr_lines_dropped: n(s.stderr_lines_dropped),
            promise_wakeups: 0, // the binding's own counter: see `stats()`
        }
    }
}
