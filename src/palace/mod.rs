//! The MemPalace bridge's palace logic: configuration, the tool-list cache, the wake-up injection,
//! the `/mempalace-diary` prompt and automatic transcript feeding.
//!
//! Plain Rust, no napi and no MCP transport: everything that talks to the palace goes through
//! [`PalaceCaller`], which the MCP client implements (and the tests fake).

pub mod cache;
pub mod config;
pub mod diary;
pub mod export;
pub mod feed;
pub mod files;
pub mod process;
pub mod tools;
pub mod wakeup;

#[cfg(test)]
mod testutil;

pub use config::PalaceConfig;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The one thing the palace logic needs from an MCP client.
pub trait PalaceCaller: Send + Sync {
    /// Calls an MCP tool; Ok(text of the result's text blocks joined with "\n"), Err(message) on an MCP/JSON-RPC error or timeout.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

    /// Why the palace can't be had right now (never connected, or given up on), or None while
    /// it can or may still be. Feeding does no work while this is Some.
    fn down_reason(&self) -> Option<String> {
        None
    }
}

/// Calls `tool` through `caller`, bounded by `timeout` here too (a caller that ignores the
/// timeout it is given still can't hold us past it).
pub async fn call_bounded(
    caller: &dyn PalaceCaller,
    tool: &str,
    args: serde_json::Value,
    timeout: Duration,
) -> Result<String, String> {
    match tokio::time::timeout(timeout, caller.call(tool, args, Some(timeout))).await {
        Ok(r) => r,
        Err(_) => Err(format!("{tool} timed out after {} ms", timeout.as_millis())),
    }
}
