//! What the process-wide state counted, as one plain struct (the binding converts it whole).

use super::{Extension, STATE_CREATIONS};
use crate::mcp::McpStats;
use crate::voice::VoiceStats;
use std::sync::atomic::Ordering;

/// Facts about the process-wide state, for tests and benchmarks.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Times the state was built in this process (1 after any number of `/reload`s).
    pub state_creations: usize,
    /// `None` when the voice tools are off.
    pub voice: Option<VoiceStats>,
    /// Calls [`Extension::cancel`] could still stop.
    pub calls_in_flight: usize,
    /// `None` when the bridge is off.
    pub palace: Option<PalaceStats>,
    /// Diagnostic lines dropped because stderr didn't keep up.
    pub stderr_lines_dropped: usize,
}

/// The bridge's part of [`Stats`].
#[derive(Debug, Clone, PartialEq)]
pub struct PalaceStats {
    /// The tools known right now (the cache until the server has answered).
    pub tools: usize,
    /// The MCP client in use.
    pub mcp: McpStats,
}

impl Extension {
    pub fn stats(&self) -> Stats {
        Stats {
            state_creations: STATE_CREATIONS.load(Ordering::Relaxed),
            voice: self.voice.as_ref().map(|v| v.stats()),
            calls_in_flight: self.calls_in_flight(),
            palace: self.bridge.as_ref().map(|b| PalaceStats { tools: b.tool_counts().known, mcp: b.client().stats() }),
            stderr_lines_dropped: crate::diag::DROPPED.load(Ordering::Relaxed),
        }
    }
}
