//! [`Error`]: what a call into the extension can fail with, as the JS caller sees it.
//!
//! Each [`Kind`] has a stable [`Kind::code`] (the JS error's `code`); the message is the cause
//! chain, outermost first, joined with ": " (for an [`McpError`], its own actionable text).
//! `node.rs` turns it into a JS `Error` in one place.

use crate::mcp::McpError;
use std::fmt;

/// What kind of failure, for a caller that branches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No answer in time (`MEMPALACE_MCP_TIMEOUT_MS`).
    Timeout,
    /// The palace can't be reached: not started, crashed, gave up, refused, shut down.
    PalaceDown,
    /// The palace answered, with an error (`isError`, a JSON-RPC error, a reply it may not send).
    ServerError,
    /// The call itself is wrong (an unknown tool).
    BadArguments,
    /// The caller aborted the call (pi's AbortSignal).
    Cancelled,
    /// A bug: a panic inside a tool.
    Internal,
}

impl Kind {
    /// The stable code a JS caller sees as `err.code`.
    pub fn code(self) -> &'static str {
        match self {
            Kind::Timeout => "TIMEOUT",
            Kind::PalaceDown => "PALACE_DOWN",
            Kind::ServerError => "SERVER_ERROR",
            Kind::BadArguments => "BAD_ARGUMENTS",
            Kind::Cancelled => "CANCELLED",
            Kind::Internal => "INTERNAL",
        }
    }
}

/// A failed call: its kind and the message a person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    /// `err` and its sources, outermost first, joined with ": " ([`crate::diag::chain`]).
    pub(crate) fn from_chain(kind: Kind, err: &(dyn std::error::Error + 'static)) -> Error {
        Error { kind, message: crate::diag::chain(err) }
    }

    pub fn unknown_tool(name: &str) -> Error {
        Error::new(Kind::BadArguments, format!("unknown tool: {name}"))
    }

    pub fn cancelled(name: &str) -> Error {
        Error::new(Kind::Cancelled, format!("{name}: aborted"))
    }

    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<McpError> for Error {
    fn from(e: McpError) -> Error {
        let kind = match &e {
            McpError::Timeout { .. } => Kind::Timeout,
            McpError::Cancelled => Kind::Cancelled,
            McpError::Rpc { .. } | McpError::TooLarge { .. } | McpError::Protocol(_) | McpError::Http { .. } => {
                Kind::ServerError
            }
            McpError::Crashed(_)
            | McpError::Down { .. }
            | McpError::Spawn(_)
            | McpError::NotInstalled { .. }
            | McpError::Unauthorized
            | McpError::Forbidden
            | McpError::Certificate(_)
            | McpError::Redirect { .. }
            | McpError::Config(_)
            | McpError::Closed => Kind::PalaceDown,
        };
        Error::from_chain(kind, &e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_errors_keep_their_text_and_get_a_kind() {
        let e = Error::from(McpError::Rpc { code: -32601, message: "Unknown tool: x".into(), data: None });
        assert_eq!((e.code(), e.message.as_str()), ("SERVER_ERROR", "-32601 Unknown tool: x"));
        assert_eq!(Error::from(McpError::Timeout { ms: 5, method: "tools/call".into() }).code(), "TIMEOUT");
        assert_eq!(Error::from(McpError::Down { respawns: 1, last: None, retry_in: None }).code(), "PALACE_DOWN");
        assert_eq!(Error::from(McpError::Closed).code(), "PALACE_DOWN");
        assert_eq!(Error::from(McpError::Cancelled).code(), "CANCELLED");
    }

    #[test]
    fn the_message_is_the_cause_chain() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("reading the cache")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Error::from_chain(Kind::Internal, &Outer(std::io::Error::other("disk full")));
        assert_eq!(e.to_string(), "reading the cache: disk full");
    }
}
