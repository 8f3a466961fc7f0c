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
    /// The respawn budget is used up: calls fail at once until the next try (`retry_in` from the
    /// moment this error was made; `None`: no try is scheduled, `MEMPALACE_MCP_RETRY_MS=0`), a
    /// `/mempalace reconnect` or a restart of pi. `last`: the last attempt's error (None: no
    /// attempt of this call failed, the server had stopped).
    Down { respawns: u32, last: Option<Box<McpError>>, retry_in: Option<std::time::Duration> },
    /// The server could not be started at all (command missing, not executable...).
    Spawn(String),
    /// MemPalace's server is not installed: the default command (`bin`, `mempalace-mcp`) is not on
    /// `PATH`, and nothing configured names another server. No respawn can help: latched at once.
    NotInstalled { bin: String },
    /// The server's TLS certificate failed verification (an unknown issuer, a wrong name, expired):
    /// not retried, no later try can make it trusted. The text says what and where.
    Certificate(String),
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
            McpError::Certificate(t) => McpError::Certificate(f(t)),
            McpError::Protocol(t) => McpError::Protocol(f(t)),
            e => e,
        }
    }

    /// What made the client give up (a [`McpError::Down`]'s last error), else the error itself:
    /// the cause a person can act on.
    pub(crate) fn cause(&self) -> &McpError {
        match self {
            McpError::Down { last: Some(last), .. } => last,
            e => e,
        }
    }

    /// The text for a line that already says the palace is down (pi's footer): a
    /// [`McpError::Down`] without its "MemPalace is down: ", any other error as it is.
    pub fn without_down_subject(&self) -> String {
        match self {
            McpError::Down { respawns, last, retry_in } => {
                GaveUp { respawns: *respawns, last: last.as_deref(), retry_in: *retry_in }.to_string()
            }
            e => e.to_string(),
        }
    }

    /// Who holds the palace when MemPalace refused a write because another writer has its lease
    /// (3.11: `-32001 Peer MCP writer active`, `data.reason` "… palace <p> is held by PID <n>
    /// (<cmdline>); wait for it …"): the holder as MemPalace names it, and its PID when it gives
    /// one. A refusal that names no holder (the lock could not be taken at all) is None.
    pub fn writer_holder(&self) -> Option<(String, Option<u32>)> {
        let McpError::Rpc { code: PEER_WRITER_CODE, data: Some(data), .. } = self else { return None };
        let reason = data.get("reason")?.as_str()?;
        let held = &reason[reason.find(" is held by ")? + " is held by ".len()..];
        let holder = held.split("; wait for").next().unwrap_or(held).trim().trim_end_matches(';');
        let pid = holder
            .strip_prefix("PID ")
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok()));
        (!holder.is_empty()).then(|| (crate::text::first_chars(holder, 200).to_string(), pid))
    }

    /// Errors that no respawn can fix: they are latched instead of retried, and the client never
    /// tries again on its own after one (`MEMPALACE_MCP_RETRY_MS` is for a server that was gone).
    pub(crate) fn is_fatal(&self) -> bool {
        matches!(
            self,
            McpError::Unauthorized
                | McpError::Forbidden
                | McpError::Certificate(_)
                | McpError::Config(_)
                | McpError::Closed
                | McpError::NotInstalled { .. }
        )
    }
}

/// MemPalace's JSON-RPC code for a write refused by the single-writer lease.
pub(crate) const PEER_WRITER_CODE: i64 = -32001;

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::Rpc { code, message, .. } => match self.writer_holder() {
                Some((holder, _)) => write!(
                    f,
                    "{code} {}: another MemPalace writer holds the palace ({holder}); writes fail until it stops, reads still work",
                    message.split(';').next().unwrap_or(message)
                ),
                None => write!(f, "{code} {message}"),
            },
            McpError::Timeout { ms, method } => write!(f, "MemPalace timed out after {ms} ms ({method}); the stalled server is restarted on the next call"),
            McpError::Cancelled => f.write_str("cancelled"),
            McpError::Crashed(d) => write!(f, "MemPalace crashed: {d}"),
            McpError::Down { respawns, last, retry_in } => write!(
                f,
                "MemPalace is down: {}",
                GaveUp { respawns: *respawns, last: last.as_deref(), retry_in: *retry_in }
            ),
            McpError::Spawn(d) => write!(f, "cannot start MemPalace: {d}"),
            McpError::Certificate(d) => write!(
                f,
                "MemPalace's TLS certificate is not trusted: {d}; not retried (a CA of its own is trusted through SSL_CERT_FILE, then `/mempalace reconnect`)"
            ),
            McpError::NotInstalled { bin } => write!(f, "MemPalace is not installed (`{bin}` is not on PATH)"),
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

/// A [`McpError::Down`]'s text after "MemPalace is down: ".
struct GaveUp<'a> {
    respawns: u32,
    last: Option<&'a McpError>,
    retry_in: Option<std::time::Duration>,
}

/// "in 25 s" (whole seconds, rounded up), or "now" once it is due: when the next try is.
pub(crate) fn next_try_text(d: std::time::Duration) -> String {
    let secs = d.as_millis().div_ceil(1000);
    if secs == 0 {
        "now".into()
    } else {
        format!("in {secs} s")
    }
}

impl fmt::Display for GaveUp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gave up after {} respawns (last error: ", self.respawns)?;
        match self.last {
            Some(e) => write!(f, "{e}")?,
            None => f.write_str("the server stopped")?,
        }
        match self.retry_in {
            Some(d) => write!(f, "); next try {}, or `/mempalace reconnect` now", next_try_text(d)),
            None => f.write_str("); `/mempalace reconnect` or a restart of pi tries again"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MemPalace 3.11's refusal of a second writer (`_guards.py`, `palace_lock.py`), as it sends it.
    fn peer_writer(reason: &str) -> McpError {
        McpError::Rpc {
            code: -32001,
            message: "Peer MCP writer active; this server is read-only for mutating tools".into(),
            data: Some(
                serde_json::json!({ "tool": "mempalace_diary_write", "palace": "/p", "reason": reason, "failure_kind": "peer_contention" }),
            ),
        }
    }

    #[test]
    fn a_write_refused_by_the_writer_lease_names_the_holder_in_one_line() {
        let e = peer_writer("another mempalace writer already holds the palace lock for '/p': palace /p is held by PID 4242 (/v/bin/mempalace-mcp --palace /p); wait for it to finish or stop the holder before retrying");
        assert_eq!(e.writer_holder(), Some(("PID 4242 (/v/bin/mempalace-mcp --palace /p)".to_string(), Some(4242))));
        assert_eq!(
            e.to_string(),
            "-32001 Peer MCP writer active: another MemPalace writer holds the palace (PID 4242 (/v/bin/mempalace-mcp --palace /p)); writes fail until it stops, reads still work"
        );
        assert!(!e.to_string().contains('\n'));
        let e = peer_writer("another mempalace writer already holds the palace lock for '/p': palace /p is held by another writer (identity not recorded); wait for it");
        assert_eq!(e.writer_holder(), Some(("another writer (identity not recorded)".to_string(), None)));
        // No holder named (the lock could not be taken at all), or another error: as the server said.
        let e = peer_writer("could not acquire MCP peer-writer lock for '/p': OSError(); refusing");
        assert_eq!(e.writer_holder(), None);
        assert_eq!(e.to_string(), "-32001 Peer MCP writer active; this server is read-only for mutating tools");
        let ro = McpError::Rpc {
            code: -32003,
            message: "Server is in read-only mode; this tool is disabled".into(),
            data: None,
        };
        assert_eq!(ro.writer_holder(), None);
    }

    #[test]
    fn display_is_actionable() {
        let e = McpError::Rpc { code: -32601, message: "Unknown tool: x".into(), data: None };
        assert_eq!(e.to_string(), "-32601 Unknown tool: x");
        assert!(McpError::Timeout { ms: 1500, method: "tools/call".into() }
            .to_string()
            .contains("timed out after 1500 ms"));
        assert!(McpError::Down { respawns: 2, last: Some(Box::new(McpError::Crashed("x".into()))), retry_in: None }
            .to_string()
            .starts_with("MemPalace is down: gave up after 2 respawns"));
        assert!(McpError::Unauthorized.to_string().contains("MEMPALACE_REMOTE_TOKEN is missing or wrong"));
        assert!(McpError::Forbidden.to_string().contains("Host/Origin"));
        assert!(McpError::TooLarge { cap: 4 << 20 }.to_string().contains("reply larger than 4 MiB"));
    }

    #[test]
    fn a_give_up_keeps_its_last_error_typed_and_its_text() {
        let down = McpError::Down { respawns: 2, last: Some(Box::new(McpError::Unauthorized)), retry_in: None };
        let rest = "gave up after 2 respawns (last error: unauthorized (HTTP 401): MEMPALACE_REMOTE_TOKEN is missing or wrong); `/mempalace reconnect` or a restart of pi tries again";
        assert_eq!(down.to_string(), format!("MemPalace is down: {rest}"));
        assert_eq!(down.without_down_subject(), rest);
        assert_eq!(down.cause(), &McpError::Unauthorized);
        let stopped = McpError::Down { respawns: 1, last: None, retry_in: None };
        assert!(stopped.to_string().contains("(last error: the server stopped);"), "{stopped}");
        assert_eq!(stopped.cause(), &stopped);
        assert_eq!(McpError::Closed.without_down_subject(), McpError::Closed.to_string());
        let retrying = McpError::Down {
            respawns: 2,
            last: Some(Box::new(McpError::Crashed("x".into()))),
            retry_in: Some(std::time::Duration::from_millis(24_100)),
        };
        assert_eq!(
            retrying.without_down_subject(),
            "gave up after 2 respawns (last error: MemPalace crashed: x); next try in 25 s, or `/mempalace reconnect` now"
        );
        assert_eq!(next_try_text(std::time::Duration::ZERO), "now");
    }

    #[test]
    fn certificate_errors_are_fatal_and_the_server_being_gone_is_not() {
        assert!(McpError::Certificate("invalid peer certificate: UnknownIssuer".into()).is_fatal());
        for fatal in [McpError::Unauthorized, McpError::Forbidden, McpError::Config("x".into())] {
            assert!(fatal.is_fatal(), "{fatal}");
        }
        for passing in [
            McpError::Crashed("x".into()),
            McpError::Spawn("x".into()),
            McpError::Timeout { ms: 1, method: "m".into() },
        ] {
            assert!(!passing.is_fatal(), "{passing}");
        }
    }
}
