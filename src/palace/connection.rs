//! The wing's connection to the palace: the MCP client in use ([`CurrentClient`]: `/mempalace
//! reconnect` replaces it), whether the palace can be had and why not ([`Unavailable`], with when
//! the client tries again; [`PalaceState`] as status and the footer say it), and the one thing the
//! rooms need of it, [`PalaceCaller`] (the wake-up, recall and the feed call the palace through it;
//! the tests fake it).

use crate::mcp::{CallResult, McpClient, McpError};
use crate::palace::PalaceError;
use crate::sync::lock;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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
    fn down_reason(&self) -> Option<Unavailable> {
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
    fn down_reason(&self) -> Option<Unavailable> {
        self.down.lock().unwrap().clone().map(|why| Unavailable::Handshake(crate::mcp::McpError::Spawn(why)))
    }
}

/// Why the bridge has no palace to offer.
#[derive(Debug, Clone, PartialEq)]
pub enum Unavailable {
    /// The last handshake failed with this error.
    Handshake(McpError),
    /// The client is latched down with this error: it gave up (respawn budget used up; it says
    /// when it tries again), or an error no try can fix (a wrong token, a certificate).
    Down(McpError),
    /// The bridge was shut down (pi quit): `/mempalace reconnect` starts nothing.
    ShutDown,
}

impl Unavailable {
    /// How long until the client tries again on its own, when it is down and will.
    pub(crate) fn next_try(&self) -> Option<Duration> {
        match self {
            Unavailable::Handshake(McpError::Down { retry_in, .. })
            | Unavailable::Down(McpError::Down { retry_in, .. }) => *retry_in,
            _ => None,
        }
    }

    /// The reason in a line that already says the palace is down (pi's footer).
    fn without_down_subject(&self) -> String {
        match self {
            Unavailable::Handshake(e) | Unavailable::Down(e) => e.without_down_subject(),
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::Handshake(e) | Unavailable::Down(e) => write!(f, "{e}"),
            Unavailable::ShutDown => f.write_str("the bridge is shut down"),
        }
    }
}

impl std::error::Error for Unavailable {}

/// The palace's state as `/mempalace status` says it (its first line) and pi's footer shows it
/// (`extension::commands` makes that short).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PalaceState {
    /// No handshake done yet, or a respawn under way.
    Connecting,
    /// Connected: `offered` of the `known` tools are pi's (`MEMPALACE_TOOLS`).
    Ready { offered: usize, known: usize },
    /// The palace can't be had, and why.
    Down(Unavailable),
    /// `bin` (the default server command) is not on PATH and nothing else is configured.
    NotInstalled { bin: String },
    /// The bridge was shut down (pi quit).
    Stopped,
}

impl std::fmt::Display for PalaceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PalaceState::Connecting => f.write_str("MemPalace: connecting…"),
            PalaceState::Ready { offered, known } if offered == known => {
                write!(f, "MemPalace: ready · {offered} tools")
            }
            PalaceState::Ready { offered, known } => write!(f, "MemPalace: ready · {offered} of {known} tools"),
            PalaceState::Down(why) => write!(f, "MemPalace is down: {}", why.without_down_subject()),
            PalaceState::NotInstalled { bin } => write!(f, "MemPalace: not installed (`{bin}` is not on PATH)"),
            PalaceState::Stopped => f.write_str("MemPalace: stopped"),
        }
    }
}

/// The MCP client in use, and the last handshake's error: whether the palace can be had as far
/// as the bridge knows.
pub(crate) struct CurrentClient {
    client: Mutex<Arc<McpClient>>,
    /// Why the last handshake failed (None: never failed, or a later one succeeded), with the
    /// client's handshake count then: a later handshake (the client came back on its own) makes
    /// it history.
    failed: Mutex<Option<(McpError, u64)>>,
    /// The writers already said on stderr as holding the palace ([`CurrentClient::said_holder`]).
    said_holders: Mutex<Vec<String>>,
}

impl CurrentClient {
    pub(crate) fn new(client: Arc<McpClient>) -> CurrentClient {
        CurrentClient { client: Mutex::new(client), failed: Mutex::new(None), said_holders: Mutex::new(Vec::new()) }
    }

    /// Puts `client` in use (`/mempalace reconnect`), returning the one it replaces.
    pub(crate) fn replace(&self, client: Arc<McpClient>) -> Arc<McpClient> {
        std::mem::replace(&mut *lock(&self.client), client)
    }

    /// The last handshake's error as `/mempalace status` says it, even when a later handshake
    /// made it history (`none` when there never was one).
    pub(crate) fn last_error_line(&self) -> String {
        lock(&self.failed).as_ref().map_or_else(|| "none".into(), |(e, _)| e.to_string())
    }

    /// A write refused because another writer holds the palace (`-32001`, MemPalace names the
    /// holder): one stderr line per holder (its PID), whichever call met it (a tool, the feed).
    /// The error's own text says the same for the model and the feed outcome. No respawn: a
    /// JSON-RPC error is an answer from a live server.
    pub(crate) fn said_holder(&self, e: &McpError) {
        let Some((holder, pid)) = e.writer_holder() else { return };
        let key = pid.map_or_else(|| holder.clone(), |p| p.to_string());
        let mut said = lock(&self.said_holders);
        if !said.contains(&key) {
            said.push(key);
            drop(said);
            crate::diag!("mempalace: a write was refused: another MemPalace writer holds the palace ({holder}); the bridge's writes fail until it stops");
        }
    }

    pub(crate) fn client(&self) -> Arc<McpClient> {
        lock(&self.client).clone()
    }

    pub(crate) fn set_failed(&self, error: Option<McpError>) {
        let handshakes = self.client().stats().handshakes;
        *lock(&self.failed) = error.map(|e| (e, handshakes));
    }

    /// The last handshake's error, if no handshake succeeded since.
    pub(crate) fn last_failure(&self, handshakes: u64) -> Option<McpError> {
        lock(&self.failed).as_ref().filter(|(_, at)| *at == handshakes).map(|(e, _)| e.clone())
    }

    /// Why the palace can't be had, or None. "Can't": the client is latched down (respawn budget
    /// used up, until its next try; a wrong token), or the handshake failed and no later one
    /// succeeded. Feeding does no work then (docs/trust.md); it resumes by itself when the client
    /// comes back.
    pub(crate) fn unavailable(&self) -> Option<Unavailable> {
        let client = self.client();
        let s = client.stats();
        if s.connected && !s.down {
            return None;
        }
        if let Some(e) = client.down_error() {
            return Some(Unavailable::Down(e));
        }
        self.last_failure(s.handshakes).map(Unavailable::Handshake)
    }
}

/// [`PalaceCaller`] over the MCP client: text blocks joined, `isError` and JSON-RPC errors as Err.
pub(crate) struct ClientCaller(pub(crate) Arc<CurrentClient>);

impl PalaceCaller for ClientCaller {
    fn down_reason(&self) -> Option<Unavailable> {
        self.0.unavailable()
    }

    /// Owns the call's bound: when `timeout` runs out the request is cancelled, on the server too
    /// (notifications/cancelled).
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Pin<Box<dyn Future<Output = Result<String, PalaceError>> + Send + 'a>> {
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let timer = timeout.map(|t| {
                tokio::spawn(async move {
                    tokio::time::sleep(t).await;
                    let _ = tx.send(());
                })
            });
            let r = self.0.client().call_tool(tool, args, Some(rx)).await;
            if let Some(t) = timer {
                t.abort();
            }
            if let Err(e) = &r {
                self.0.said_holder(e);
            }
            match r {
                Ok(res) if res.is_error => Err(PalaceError::Tool(text_of(&res))),
                Ok(res) => Ok(text_of(&res)),
                Err(McpError::Cancelled) => {
                    Err(PalaceError::TimedOut { tool: tool.to_string(), after: timeout.unwrap_or_default() })
                }
                Err(e) => Err(PalaceError::Mcp(e)),
            }
        })
    }
}

/// The text blocks of an MCP result, joined with newlines.
pub(crate) fn text_of(r: &CallResult) -> String {
    r.content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}
