//! The MemPalace bridge's palace logic: configuration, the tool-list cache, the wake-up injection,
//! the `/mempalace-diary` prompt and automatic transcript feeding.
//!
//! Plain Rust, no napi and no MCP transport: everything that talks to the palace goes through
//! [`PalaceCaller`], which the MCP client implements (and the tests fake).

pub(crate) mod bridge;
pub(crate) mod config;
pub(crate) mod connection;
pub(crate) mod context;
pub(crate) mod error;
pub mod feed;
pub(crate) mod files;
pub mod offer;
pub(crate) mod twin;

pub use config::PalaceConfig;
pub use connection::{call_bounded, PalaceCaller};
pub use error::PalaceError;
