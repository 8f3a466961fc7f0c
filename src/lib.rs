//! dotty-pi-ext: Dotty's voice tools (and the MemPalace bridge) for the pi agent harness.
//!
//! The core (`config`, `text`, `brain`, `services`, `voice`, `mcp`, `palace`) knows nothing of Node and is tested
//! with `cargo test --no-default-features`. `node` is the only module that says `#[napi]`.

pub mod brain;
pub mod bridge;
pub mod config;
pub mod diag;
pub mod doctor;
pub mod extension;
pub mod mcp;
pub mod palace;
pub(crate) mod process_group;
pub mod services;
pub mod text;
pub mod voice;

#[cfg(feature = "node")]
mod node;
