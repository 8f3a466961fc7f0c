//! The one interface both transports implement, as an enum (no boxed futures, no async traits).
//! Above the transports, below the supervisor: `client` → `transport` → {`stdio`, `http`} →
//! {`race`, `jsonrpc`, ...}.

use super::config::McpConfig;
use super::error::McpError;
use super::http::{self, HttpConn};

/// The MCP transport's HTTP client, or why it could not be built.
pub(crate) type HttpClient = Result<reqwest::Client, crate::http::BuildError>;
use super::race::Failure;
use super::stdio::{self, StdioConn};
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::oneshot;

/// One live connection: a stdio child or an HTTP session.
pub(crate) enum Conn {
    Stdio(StdioConn),
    Http(HttpConn),
}

impl Conn {
    /// A new connection for `cfg`: a child of its own (no `remote_url`), or an HTTP session that
    /// uses the client in `http` (built once, on the first remote open; a client that could not
    /// be built fails the open, with no fallback).
    pub(super) fn open(cfg: &McpConfig, http: &OnceLock<HttpClient>) -> Result<Conn, McpError> {
        match cfg.remote_url {
            None => stdio::spawn(cfg).map(Conn::Stdio),
            Some(_) => {
                let client = http.get_or_init(|| crate::http::client(None)).clone();
                // Without our settings a client would follow redirects: no client at all, then.
                let client =
                    client.map_err(|e| McpError::Config(format!("{e}; the remote palace stays unreachable")))?;
                http::open(cfg, client).map(Conn::Http)
            }
        }
    }

    /// Before a try of a palace that went down: whether a connection is worth starting. A child
    /// (stdio) always is; a remote palace must pass its health check ([`http::probe`]).
    pub(super) async fn probe(cfg: &McpConfig, http: &OnceLock<HttpClient>) -> Result<(), McpError> {
        if cfg.remote_url.is_none() {
            return Ok(());
        }
        let client = http.get_or_init(|| crate::http::client(None)).clone();
        let client = client.map_err(|e| McpError::Config(format!("{e}; the remote palace stays unreachable")))?;
        http::probe(cfg, client).await
    }

    /// Sends a request and waits for its reply, at most `timeout`, until `cancel` fires, or until
    /// the connection dies. On timeout or cancel, `notifications/cancelled` is sent for it.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
        cancel: &mut Option<oneshot::Receiver<()>>,
    ) -> Result<Value, Failure> {
        match self {
            Conn::Stdio(c) => c.request(method, params, timeout, cancel).await,
            Conn::Http(c) => c.request(method, params, timeout, cancel).await,
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        match self {
            Conn::Stdio(c) => c.notify(method, params).await,
            Conn::Http(c) => c.notify(method, params).await,
        }
    }

    /// True once the connection can't carry requests any more.
    pub(crate) fn is_dead(&self) -> bool {
        match self {
            Conn::Stdio(c) => c.is_dead(),
            Conn::Http(c) => c.is_dead(),
        }
    }

    /// Marks the connection dead (rejecting every pending request with `reason`) and stops it in
    /// the background: SIGTERM, SIGKILL after the grace for a child; the session DELETEd for HTTP.
    pub(super) fn kill(&self, reason: &str, grace: Duration) {
        match self {
            Conn::Stdio(c) => c.kill(reason, grace),
            Conn::Http(c) => c.kill(reason),
        }
    }

    /// Stops the connection and waits until it is gone (the child reaped): closes stdin, SIGTERM,
    /// SIGKILL after `grace`.
    pub(crate) async fn terminate(&self, grace: Duration) {
        match self {
            Conn::Stdio(c) => c.terminate(grace).await,
            Conn::Http(c) => c.terminate(grace).await,
        }
    }

    /// Records the negotiated protocol version (HTTP sends it as `MCP-Protocol-Version`).
    pub(crate) fn set_protocol(&self, v: &str) {
        if let Conn::Http(c) = self {
            c.set_protocol(v)
        }
    }

    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            Conn::Stdio(c) => Some(c.pid()),
            Conn::Http(_) => None,
        }
    }
}
