//! dotty-pi-ext: Dotty's voice tools (and the MemPalace bridge) for the pi agent harness.
//!
//! The core (`config`, `text`, `brain`, `services`, `voice`, `mcp`, `palace`) knows nothing of Node and is tested
//! with `cargo test --no-default-features`. `node` (and its submodules) is the only module that says `#[napi]`.

pub mod brain;
pub mod config;
pub mod diag;
pub mod doctor;
pub mod env;
pub mod error;
pub mod extension;
pub(crate) mod http;
pub mod mcp;
pub mod palace;
pub(crate) mod process_group;
pub mod services;
pub mod stages;
pub(crate) mod sync;
pub mod text;
pub mod voice;

// Not in the unit-test build: napi-rs registers the exports only in the addon, so there they would
// all be dead code; the boundary is tested from JS (vitest) instead.
#[cfg(all(feature = "node", not(test)))]
#[allow(
    unreachable_pub,
    reason = "napi-rs exports the #[napi] items by registration, not by path: they are the addon's API"
)]
mod node;
