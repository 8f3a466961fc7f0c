//! [`McpError`]: one error type for both transports, with a Display a person can act on. No
//! variant ever holds the bearer token.

use std::fmt;

/// Why an MCP operation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum McpError {
    /// The server answered with a JSON-RPC error (the server is alive).
    Rpc { code: i64, message: String, data: Option<serde_json::Value> },
    /// No answer within the configured time. A stalled server is killed (stdio) or its session
    /// dropped (HTTP); the next call starts a new one.
    Timeout { ms: u64, method: String },
    /// The caller cancelled the call (`notifications/cancelled` was sent).
    Cancelled,
    /// The server exited, closed its pipe, or (HTTP) refused the connection or answered 5xx.
    Crashed(String),
    /// The respawn budget is used up: calls fail at once until the process restarts.
    Down { respawns: u32, last: String },
    /// The server could not be started at all (command missing, not executable...).
    Spawn(String),
    /// HTTP 401: not retried.
    Unauthorized,
    /// HTTP 403: not retried.
    Forbidden,
    /// Another HTTP status the client can't use (4xx other than 401/403/404-with-session).
    Http { status: u16, body: String },
    /// One message from the server was larger than `MEMPALACE_MCP_MAX_MESSAGE_BYTES`: the request
    /// it answered fails; the server lives on (it was not held in memory).
    TooLarge { cap: usize },
    /// An HTTP 3xx: redirects are never followed (the token only goes to the configured origin).
    /// `location` is already stripped of credentials.
    Redirect { status: u16, location: String },
    /// A reply that breaks the protocol (not JSON-RPC, missing fields, unexpected 202...).
    Protocol(String),
    /// The configuration can't work (e.g. `MEMPALACE_REMOTE_URL` is not an http(s) URL).
    Config(String),
    /// [`crate::mcp::McpClient::shutdown`] was called.
    Closed,
}

impl McpError {
    /// The same error with its free text passed through `f` (to scrub secrets).
    pub(crate) fn map_text(self, f: impl Fn(String) -> String) -> McpError {
        match self {
            McpError::Crashed(t) => McpError::Crashed(f(t)),
            McpError::Protocol(t) => McpError::Protocol(f(t)),
            e => e,
        }
    }

    /// Errors that no respawn can fix: they are latched instead of retried.
    pub(crate) fn is_fatal(&self) -> bool {
        matches!(self, McpError::Unauthorized | McpError::Forbidden | McpError::Config(_) | McpError::Closed)
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::Rpc { code, message, .. } => write!(f, "{code} {message}"),
            McpError::Timeout { ms, method } => write!(f, "MemPalace timed out after {ms} ms ({method}); the stalled server is restarted on the next call"),
            McpError::Cancelled => f.write_str("cancelled"),
            McpError::Crashed(d) => write!(f, "MemPalace crashed: {d}"),
            McpError::Down { respawns, last } => {
                write!(f, "MemPalace is down: gave up after {respawns} respawns (last error: {last}); `/mempalace reconnect` or a restart of pi tries again")
            }
            McpError::Spawn(d) => write!(f, "cannot start MemPalace: {d}"),
            McpError::Unauthorized => f.write_str("unauthorized (HTTP 401): MEMPALACE_REMOTE_TOKEN is missing or wrong"),
            McpError::Forbidden => f.write_str(
                "forbidden (HTTP 403): the server rejected this Host/Origin; check the host in MEMPALACE_REMOTE_URL against the server's allowed hosts",
            ),
            McpError::Http { status, body } => write!(f, "MemPalace answered HTTP {status}: {}", crate::text::first_chars(body, 200)),
            McpError::TooLarge { cap } => write!(
                f,
                "MemPalace's reply larger than {} (MEMPALACE_MCP_MAX_MESSAGE_BYTES) was dropped; the call failed",
                super::config::human_bytes(*cap)
            ),
            McpError::Redirect { status, location } => write!(
                f,
                "MemPalace answered HTTP {status}, a redirect to {location}; redirects are not followed: set MEMPALACE_REMOTE_URL to the server's own address"
            ),
            McpError::Protocol(d) => write!(f, "MemPalace protocol error: {d}"),
            McpError::Config(d) => write!(f, "MemPalace configuration error: {d}"),
            McpError::Closed => f.write_str("the MemPalace client is shut down"),
        }
    }
}

impl std::error::Error for McpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_actionable() {
        let e = McpError::Rpc { code: -32601, message: "Unknown tool: x".into(), data: None };
        assert_eq!(e.to_string(), "-32601 Unknown tool: x");
        assert!(McpError::Timeout { ms: 1500, method: "tools/call".into() }
            .to_string()
            .contains("timed out after 1500 ms"));
        assert!(McpError::Down { respawns: 2, last: "x".into() }
            .to_string()
            .starts_with("MemPalace is down: gave up after 2 respawns"));
        assert!(McpError::Unauthorized.to_string().contains("MEMPALACE_REMOTE_TOKEN is missing or wrong"));
        assert!(McpError::Forbidden.to_string().contains("Host/Origin"));
        assert!(McpError::TooLarge { cap: 4 << 20 }.to_string().contains("reply larger than 4 MiB"));
    }
}
