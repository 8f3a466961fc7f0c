//! The one interface both transports implement, as an enum (no boxed futures, no async traits).

use super::error::McpError;
use super::http::HttpConn;
use super::stdio::StdioConn;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::oneshot;

/// A failed request, and whether it may have reached the server. A request that surely did not
/// (the child was already gone, the TCP connection was refused) can be retried on a new server
/// without risking a double write; one that may have (the server died while working on it) is not.
#[derive(Debug)]
pub(crate) struct Failure {
    pub err: McpError,
    pub sent: bool,
}

impl Failure {
    pub fn sent(err: McpError) -> Self {
        Failure { err, sent: true }
    }
    pub fn not_sent(err: McpError) -> Self {
        Failure { err, sent: false }
    }
}

/// One live connection: a stdio child or an HTTP session.
pub(crate) enum Conn {
    Stdio(StdioConn),
    Http(HttpConn),
}

impl Conn {
    /// Sends a request and waits for its reply, at most `timeout`, until `cancel` fires, or until
    /// the connection dies. On timeout or cancel, `notifications/cancelled` is sent for it.
    pub async fn request(
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
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        match self {
            Conn::Stdio(c) => c.notify(method, params).await,
            Conn::Http(c) => c.notify(method, params).await,
        }
    }

    /// True once the connection can't carry requests any more.
    pub fn is_dead(&self) -> bool {
        match self {
            Conn::Stdio(c) => c.is_dead(),
            Conn::Http(c) => c.is_dead(),
        }
    }

    /// Marks the connection dead (rejecting every pending request with `reason`) and stops it in
    /// the background: SIGTERM, SIGKILL after the grace for a child; the session DELETEd for HTTP.
    pub fn kill(&self, reason: &str, grace: Duration) {
        match self {
            Conn::Stdio(c) => c.kill(reason, grace),
            Conn::Http(c) => c.kill(reason),
        }
    }

    /// Stops the connection and waits until it is gone (the child reaped): closes stdin, SIGTERM,
    /// SIGKILL after `grace`.
    pub async fn terminate(&self, grace: Duration) {
        match self {
            Conn::Stdio(c) => c.terminate(grace).await,
            Conn::Http(c) => c.terminate(grace).await,
        }
    }

    /// Records the negotiated protocol version (HTTP sends it as `MCP-Protocol-Version`).
    pub fn set_protocol(&self, v: &str) {
        if let Conn::Http(c) = self {
            c.set_protocol(v)
        }
    }

    pub fn pid(&self) -> Option<u32> {
        match self {
            Conn::Stdio(c) => Some(c.pid()),
            Conn::Http(_) => None,
        }
    }
}

/// Resolves when the caller cancels (the sender sent `()`); never when there is no receiver or
/// the sender was dropped without sending (that means "no cancellation will come").
pub(crate) async fn cancelled(rx: &mut Option<oneshot::Receiver<()>>) {
    if let Some(r) = rx.as_mut() {
        if r.await.is_ok() {
            *rx = None;
            return;
        }
        *rx = None;
    }
    std::future::pending::<()>().await
}

/// Sleeps for `d`, or forever when there is no timeout.
pub(crate) async fn sleep_opt(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

/// Waits until a dead-reason watch holds a reason, and returns it.
pub(crate) async fn died(rx: &mut tokio::sync::watch::Receiver<Option<String>>) -> String {
    match rx.wait_for(|d| d.is_some()).await {
        Ok(r) => r.clone().unwrap_or_default(),
        Err(_) => "the connection was dropped".into(),
    }
}
