//! The palace wing: the MemPalace bridge's palace logic, plain Rust (no napi; the MCP client it
//! drives is `crate::mcp`). Its rooms, each named for what it serves:
//!
//! - [`bridge`]: the front door as pi sees it: its state, the handshake, status, and the routing of
//!   each pi event and call to the room that serves it;
//! - [`connection`]: the client in use, whether the palace can be had, and [`PalaceCaller`], what
//!   the rooms call the palace through (the tests fake it);
//! - [`offer`]: what pi is offered and how: tool rules, cache, `MEMPALACE_TOOLS`, exposure;
//! - [`context`]: what the palace says into a session: wake-up, recall, the diary prompt;
//! - [`feed`]: the session transcripts fed to the palace, and the redaction of what it is given;
//! - [`checkpoint`]: `MEMPALACE_CHECKPOINT_TURNS`, a diary entry every N user turns, composed
//!   by the bridge (no model turn);
//! - [`twin`]: living beside pi's own MCP (its server shared, read through a read-only twin, or the
//!   bridge stepping aside);
//! - [`scope`]: `MEMPALACE_SCOPE`, the wing a session files into (MemPalace's own slug of the
//!   project folder, or a trusted `.pi/mempalace.json`);
//! - [`config`]: the wing's settings, gathered from each room's own; [`files`]: the bridge's private
//!   files; [`error`]: [`PalaceError`].
//!
//! The rooms' floors, lowest first (no room names one above it; `scripts/arch-metrics.mjs`):
//! error, files and scope; connection; offer, context and twin; config; feed and checkpoint; bridge.

pub(crate) mod bridge;
pub(crate) mod checkpoint;
pub(crate) mod config;
pub(crate) mod connection;
pub(crate) mod context;
pub(crate) mod error;
pub mod feed;
pub(crate) mod files;
pub mod offer;
pub mod scope;
pub(crate) mod twin;

pub use config::PalaceConfig;
pub use connection::{call_bounded, PalaceCaller};
pub use error::PalaceError;
