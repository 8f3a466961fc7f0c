//! [`McpClient`]: the supervisor and the public API. The same rules for both transports:
//!
//! - one handshake at a time (`connecting`), shared by every concurrent caller;
//! - a request that times out is rejected, its connection killed (SIGTERM, SIGKILL after the
//!   grace) and every other request on it rejected;
//! - the next call starts a new connection after a capped, doubling backoff, and a call whose
//!   request surely never reached the server is retried once on it;
//! - `max_respawns` respawns at most; the budget resets on any successful JSON-RPC response; when
//!   it is used up the client is latched down and every call fails at once, until the next try
//!   (`MEMPALACE_MCP_RETRY_MS` after the give-up, doubled per failed try up to 300 s): the first
//!   call after that time makes one try (a remote palace's health check first), and a background
//!   task makes it at that time when no call does; a try that works resets the budget;
//! - 401/403, certificate and configuration errors are latched at once and never tried again: no
//!   respawn can fix them.

mod attempt;
mod latch;

use latch::Retry;

use super::config::McpConfig;
use super::error::McpError;
pub use super::handshake::ToolInfo;
use super::race::{cancelled, Failure};
use super::transport::Conn;
use crate::sync::lock;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// What the lines that say the palace can't be had are about: pi's interactive UI shows one of them
/// until a handshake succeeds again (their wording varies with the last error).
pub(crate) const DOWN_SUBJECT: crate::diag::Subject = "mempalace-down";

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// MCP content blocks, unchanged.
    pub content: Vec<Value>,
    /// The server's `isError` flag (the tool failed; the server is fine).
    pub is_error: bool,
}

/// Counters for tests and diagnostics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpStats {
    /// Connections started: child spawns (stdio) or session handshakes (HTTP).
    pub spawns: u64,
    /// Of those, the ones that were respawns (after a crash, stall or failed start).
    pub respawns: u64,
    /// `tools/call` requests sent.
    pub calls: u64,
    /// Requests (and handshakes) that timed out.
    pub timeouts: u64,
    /// The current child's pid (stdio), if one is running or starting.
    pub child_pid: Option<u32>,
    /// A handshake has completed on the current connection and it is alive.
    pub connected: bool,
    /// Latched down (budget used up, or a 401/403/certificate/configuration error).
    pub down: bool,
    /// Latched down with a try scheduled: how long until it (zero: due, or under way). `None`
    /// when up, or down for good (a fatal error, `MEMPALACE_MCP_RETRY_MS=0`).
    pub next_try: Option<Duration>,
    /// Handshakes that succeeded (a new one: the server may have come back with other tools).
    pub handshakes: u64,
}

/// An MCP client for MemPalace with timeouts, stall-kill and bounded self-heal. `Send + Sync`;
/// share it as `Arc<McpClient>`. Call [`McpClient::shutdown`] before dropping it: dropping also
/// stops the child, but without waiting.
pub struct McpClient {
    cfg: McpConfig,
    /// This client, for the background task that tries again after a give-up (it must not keep
    /// the client alive: dropping it stops everything).
    me: Weak<McpClient>,
    /// std `Mutex`: short sections only, never held across an `.await`.
    state: Mutex<State>,
    /// tokio `Mutex`: held across a whole handshake so concurrent callers wait for it, not race it.
    connecting: tokio::sync::Mutex<()>,
    closed: watch::Sender<bool>,
    http: std::sync::OnceLock<super::transport::HttpClient>,
    warned_plain_http: AtomicBool,
    spawns: AtomicU64,
    respawns: AtomicU64,
    calls: AtomicU64,
    timeouts: AtomicU64,
    handshakes: AtomicU64,
}

#[derive(Default)]
struct State {
    conn: Option<Arc<Conn>>,
    /// The handshake on `conn` has completed.
    ready: bool,
    tools: Vec<ToolInfo>,
    /// Respawns since the last successful response.
    respawns_used: u32,
    /// A connection was attempted before: the next attempt is a respawn.
    attempted: bool,
    latched: Option<McpError>,
    /// With `latched` a give-up ([`McpError::Down`]) and retrying on: the next try.
    retry: Option<Retry>,
    /// Give-ups so far: a background task of tries belongs to one.
    give_ups: u64,
    /// A remote palace's early health check (a call made while down) is under way.
    probing: bool,
    /// When the last early health check started (at most one per [`latch::EARLY_PROBE_EVERY`]).
    last_probe: Option<Instant>,
    /// `serverInfo` of the last `initialize` answer (for `doctor` and the palace's namespace).
    server_info: Option<Value>,
    /// `instructions` of the last `initialize` answer.
    instructions: Option<String>,
}

impl McpClient {
    /// A client for `cfg`. No I/O: nothing starts until [`connect`](Self::connect) or a call.
    pub fn new(cfg: McpConfig) -> Arc<McpClient> {
        Arc::new_cyclic(|me| McpClient {
            cfg,
            me: me.clone(),
            state: Mutex::new(State::default()),
            connecting: tokio::sync::Mutex::new(()),
            closed: watch::channel(false).0,
            http: std::sync::OnceLock::new(),
            warned_plain_http: AtomicBool::new(false),
            spawns: AtomicU64::new(0),
            respawns: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            handshakes: AtomicU64::new(0),
        })
    }

    /// `serverInfo` (`{name, version}`) from the last `initialize` answer, if any.
    pub(crate) fn server_info(&self) -> Option<Value> {
        self.st().server_info.clone()
    }

    /// `instructions` from the last `initialize` answer, if any.
    pub(crate) fn instructions(&self) -> Option<String> {
        self.st().instructions.clone()
    }

    /// The tools of the last handshake (empty before one).
    pub(crate) fn tools(&self) -> Vec<ToolInfo> {
        self.st().tools.clone()
    }

    /// The configuration this client runs with.
    pub fn config(&self) -> &McpConfig {
        &self.cfg
    }

    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Connects (handshake bounded by the init timeout, then `tools/list` with every page) and
    /// returns the tools. Idempotent: when connected, returns the tools of that handshake.
    pub async fn connect(&self) -> Result<Vec<ToolInfo>, McpError> {
        self.ready().await?;
        Ok(self.st().tools.clone())
    }

    /// Calls a tool. Waits for a connection in progress (up to the init timeout); starts or
    /// restarts the server when needed. `cancel` firing stops the wait and sends
    /// `notifications/cancelled`; a dropped sender means "never cancelled".
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        cancel: Option<oneshot::Receiver<()>>,
    ) -> Result<CallResult, McpError> {
        let mut cancel = cancel;
        let args = if args.is_null() { json!({}) } else { args };
        let mut retried = false;
        loop {
            let conn = tokio::select! {
                r = self.ready() => r?,
                _ = cancelled(&mut cancel) => return Err(McpError::Cancelled),
            };
            self.calls.fetch_add(1, Ordering::Relaxed);
            let params = json!({"name": name, "arguments": args.clone()});
            let failure = match conn.request("tools/call", params, self.cfg.timeout, &mut cancel).await {
                Ok(v) => {
                    self.on_success();
                    return parse_call_result(v);
                }
                Err(f) => f,
            };
            if self.is_closed() {
                return Err(McpError::Closed);
            }
            match failure {
                Failure { err: e @ McpError::Rpc { .. }, .. } => {
                    self.on_success();
                    return Err(e);
                }
                Failure { err: e @ McpError::Timeout { .. }, .. } => {
                    self.timeouts.fetch_add(1, Ordering::Relaxed);
                    crate::diag!("tool {name}: {e}");
                    conn.kill(&format!("killed after a request timed out ({name})"), self.cfg.kill_grace);
                    return Err(e);
                }
                Failure { err: e @ McpError::Crashed(_), sent } => {
                    conn.kill(&e.to_string(), self.cfg.kill_grace);
                    if !sent && !retried {
                        retried = true;
                        continue;
                    }
                    return Err(e);
                }
                Failure { err, .. } => {
                    if err.is_fatal() {
                        self.latch(err.clone());
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Stops the server and waits until it is gone: closes stdin, SIGTERM, SIGKILL after the grace
    /// (HTTP: DELETEs the session). Every later call fails with [`McpError::Closed`].
    pub async fn shutdown(&self) {
        self.closed.send_replace(true);
        // A handshake in progress sees `closed` and gives up; its connection is in `state`.
        let _g = self.connecting.lock().await;
        let conn = {
            let mut st = self.st();
            st.ready = false;
            st.conn.take()
        };
        if let Some(c) = conn {
            c.terminate(self.cfg.kill_grace).await;
        }
    }

    /// Counters and the current child's pid.
    pub fn stats(&self) -> McpStats {
        let st = self.st();
        McpStats {
            spawns: self.spawns.load(Ordering::Relaxed),
            respawns: self.respawns.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            child_pid: st.conn.as_ref().filter(|c| !c.is_dead()).and_then(|c| c.pid()),
            connected: st.ready && st.conn.as_ref().is_some_and(|c| !c.is_dead()),
            down: st.latched.is_some(),
            next_try: st.latched.as_ref().and(st.retry).map(|r| r.at.saturating_duration_since(Instant::now())),
            handshakes: self.handshakes.load(Ordering::Relaxed),
        }
    }

    /// Why the client is latched down, if it is (a give-up says when it tries again, as of now).
    pub(crate) fn down_error(&self) -> Option<McpError> {
        let st = self.st();
        st.latched.as_ref().map(|e| latch::latched_now(e, st.retry))
    }

    fn on_success(&self) {
        self.st().respawns_used = 0;
    }

    /// Once per client: a token about to go over plain http:// to a host that is not loopback.
    fn warn_plain_http(&self) {
        let Some(url) = self.cfg.remote_url.as_ref().filter(|_| self.cfg.remote_token.is_some()) else { return };
        let Some(url) = url.parse() else { return };
        let host = url.host_str().unwrap_or_default();
        if url.scheme() == "http"
            && !crate::http::is_loopback_host(host)
            && !self.warned_plain_http.swap(true, Ordering::Relaxed)
        {
            crate::diag!(
                "warning: MEMPALACE_REMOTE_TOKEN is sent over plain http:// to {}; anyone on that network path can read it (use https or a loopback/docker0 address you trust)",
                url.host_str().unwrap_or("?")
            );
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        // Without shutdown(): the connection's own drop stops the child (its reaper task sends
        // SIGTERM, and `kill_on_drop` covers a runtime that is gone).
        self.closed.send_replace(true);
    }
}

fn parse_call_result(mut v: Value) -> Result<CallResult, McpError> {
    if !v.is_object() {
        return Err(McpError::Protocol("tools/call result is not an object".into()));
    }
    let content = match v.get_mut("content").map(Value::take) {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(McpError::Protocol("tools/call result content is not an array".into())),
    };
    let is_error = v.get("isError").and_then(Value::as_bool).unwrap_or(false);
    Ok(CallResult { content, is_error })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_results_parse() {
        let r = parse_call_result(json!({"content": [{"type": "text", "text": "hi"}], "isError": true})).unwrap();
        assert_eq!(r, CallResult { content: vec![json!({"type": "text", "text": "hi"})], is_error: true });
        assert_eq!(parse_call_result(json!({})).unwrap(), CallResult { content: vec![], is_error: false });
        assert!(parse_call_result(json!({"content": "x"})).is_err());
    }

    /// A remote palace whose HTTP client could not be built: the call fails with that, and nothing
    /// is sent (no default client, which would follow redirects, stands in).
    #[tokio::test]
    async fn an_http_client_that_could_not_be_built_fails_the_call_and_sends_nothing() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let url = format!("http://{}/mcp", l.local_addr().unwrap());
        let client =
            McpClient::new(McpConfig { remote_url: Some(url.into()), max_respawns: 0, ..McpConfig::default() });
        assert!(client.http.set(crate::http::failed_build()).is_ok());
        let e = client.call_tool("mempalace_status", Value::Null, None).await.unwrap_err();
        assert!(e.to_string().contains("HTTP client setup failed ("), "{e}");
        assert!(l.accept().is_err(), "a connection was made");
        client.shutdown().await;
    }

    #[test]
    fn client_is_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<McpClient>();
        check::<Arc<McpClient>>();
    }
}
