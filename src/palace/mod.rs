//! The MemPalace bridge's palace logic: configuration, the tool-list cache, the wake-up injection,
//! the `/mempalace-diary` prompt and automatic transcript feeding.
//!
//! Plain Rust, no napi and no MCP transport: everything that talks to the palace goes through
//! [`PalaceCaller`], which the MCP client implements (and the tests fake).

pub(crate) mod bridge;
pub(crate) mod config;
pub(crate) mod diary;
pub(crate) mod error;
pub mod feed;
pub(crate) mod files;
pub mod offer;
pub(crate) mod pi_mcp;
pub(crate) mod recall;
pub(crate) mod wakeup;

pub use config::PalaceConfig;
pub use error::PalaceError;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The one thing the palace logic needs from an MCP client.
///
/// Timeouts have one owner each: the caller bounds every call by the `timeout` it is given (the
/// MCP client's caller cancels the request on the server when it runs out); the wake-up's total
/// budget (handshake included) belongs to the bridge, a feed's to its prepare and mine timeouts.
pub trait PalaceCaller: Send + Sync {
    /// Calls an MCP tool: Ok(the text of the result's text blocks joined with "\n"); Err on an
    /// MCP/JSON-RPC error ([`PalaceError::Mcp`]) or an `isError` result ([`PalaceError::Tool`]),
    /// or, once `timeout` has passed without an answer, [`PalaceError::TimedOut`].
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Pin<Box<dyn Future<Output = Result<String, PalaceError>> + Send + 'a>>;

    /// Why the palace can't be had right now (never connected, or given up on), or None while
    /// it can or may still be. Feeding does no work while this is Some.
    fn down_reason(&self) -> Option<bridge::Unavailable> {
        None
    }
}

/// Calls `tool` through `caller`, which bounds it by `timeout` (see [`PalaceCaller`]).
pub async fn call_bounded(
    caller: &dyn PalaceCaller,
    tool: &str,
    args: serde_json::Value,
    timeout: Duration,
) -> Result<String, PalaceError> {
    caller.call(tool, args, Some(timeout)).await
}

/// The tests' fake caller (`test-support/`) as a [`PalaceCaller`]: the trait is this crate's, so
/// its impl is here; the fake records the call and answers as told, within the bound it is given.
#[cfg(test)]
impl PalaceCaller for test_support::FakeCaller {
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Pin<Box<dyn Future<Output = Result<String, PalaceError>> + Send + 'a>> {
        let answer = self.answer(tool, args, timeout);
        Box::pin(async move {
            answer.await.map_err(|fault| match fault {
                test_support::Fault::Tool(message) => PalaceError::Tool(message),
                test_support::Fault::TimedOut(after) => PalaceError::TimedOut { tool: tool.to_string(), after },
            })
        })
    }

    /// The fake's reason, as a server that could not be started for it.
    fn down_reason(&self) -> Option<bridge::Unavailable> {
        self.down.lock().unwrap().clone().map(|why| bridge::Unavailable::Handshake(crate::mcp::McpError::Spawn(why)))
    }
}
