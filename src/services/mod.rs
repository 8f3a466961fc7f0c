//! Dotty's home services over HTTP: one shared client (one keep-alive pool) for the whole process.

pub mod dotty_behaviour;
pub mod thinker;
pub mod xiaozhi;

use std::time::Duration;

/// How an HTTP exchange failed, in the terms the replies need.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpError {
    /// No answer within the configured timeout (connect, headers or body).
    Timeout,
    /// Refused, unreachable, reset...: the innermost cause, short.
    Transport(String),
    /// The server answered with a non-success status.
    Status { status: u16, body: String },
    /// The server answered 2xx with a body that isn't the JSON we need.
    Body(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Timeout => f.write_str("timed out"),
            HttpError::Transport(e) => f.write_str(e),
            HttpError::Status { status, body } => write!(f, "HTTP {status}: {}", crate::text::take(body, 120)),
            HttpError::Body(e) => write!(f, "bad response body: {e}"),
        }
    }
}

impl From<reqwest::Error> for HttpError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            HttpError::Timeout
        } else {
            HttpError::Transport(crate::diag::root_cause(&e))
        }
    }
}

/// Builds the process's HTTP client: keep-alive pool, no proxy from the environment (these are
/// services on the same host; the TypeScript original used Node's `fetch`, which ignores proxies).
pub fn client(unix_socket: Option<&std::path::Path>) -> reqwest::Client {
    // reqwest is built without a TLS provider of its own; ring is installed once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .user_agent(concat!("dotty-pi-ext/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = unix_socket {
        b = b.unix_socket(path);
    }
    b.build().unwrap_or_else(|e| {
        crate::diag!("HTTP client setup failed ({}); using defaults", crate::diag::chain(&e));
        reqwest::Client::new()
    })
}

/// Sends a request and reads its whole body, mapping failures to [`HttpError`]. A non-2xx status
/// is an error carrying the body (the callers quote it).
pub async fn send(req: reqwest::RequestBuilder) -> Result<(u16, String), HttpError> {
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let body = resp.text().await?;
    if (200..300).contains(&status) {
        Ok((status, body))
    } else {
        Err(HttpError::Status { status, body })
    }
}

/// [`send`], then parse the 2xx body as JSON.
pub async fn send_json(req: reqwest::RequestBuilder) -> Result<serde_json::Value, HttpError> {
    let (_, body) = send(req).await?;
    serde_json::from_str(&body).map_err(|e| HttpError::Body(e.to_string()))
}
