//! [`PalaceError`]: why a palace call, an exporter, rsync or a feed failed. Its `Display` is the
//! stderr line's text (after `mempalace feed (<reason>) failed: ` or
//! `mempalace wake-up: <tool> failed: `): tests and users read these words.

use crate::mcp::McpError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An I/O error kept whole (its kind and its own source), shared: a feed's error is cloned to
/// everyone who waits for that feed. Equal when kind and text are.
#[derive(Debug, Clone)]
pub struct IoError(Arc<std::io::Error>);

impl IoError {
    /// What kind of I/O error it is.
    pub fn kind(&self) -> std::io::ErrorKind {
        self.0.kind()
    }
}

impl From<std::io::Error> for IoError {
    fn from(e: std::io::Error) -> Self {
        IoError(Arc::new(e))
    }
}

impl PartialEq for IoError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for IoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum PalaceError {
    /// The palace answered with an error: an `isError` result's text.
    Tool(String),
    /// The MCP client failed the call: a JSON-RPC or transport error.
    Mcp(McpError),
    /// A palace call got no answer within its bound (and was cancelled on the server).
    TimedOut { tool: String, after: Duration },
    /// `mempalace_mine` failed (a call error, or `{"success": false}` in its result).
    Mine(Box<PalaceError>),
    /// A child process (exporter, rsync) could not be started.
    Spawn { what: String, error: IoError },
    /// Waiting for a child process failed.
    Wait { what: String, error: IoError },
    /// A child process ran past its timeout and was killed with its process group.
    Killed { what: String, after: Duration },
    /// A child process exited unsuccessfully; `detail` is the tail of its stderr (`None`: said
    /// without a colon when there was none).
    Exited { what: String, status: String, detail: Option<String> },
    /// The rsync/ssh target is refused (an option, or empty): the reason, as said at load.
    Target(String),
    /// `rsync` is not on `PATH`.
    NoRsync,
    /// The built-in exporter failed (file I/O).
    Export(IoError),
    /// The built-in exporter ran past the prepare timeout.
    ExportTimedOut(Duration),
    /// The built-in exporter's blocking task failed.
    ExportTask(String),
    /// The cross-process feed lock could not be taken.
    Lock { path: String, error: IoError },
    /// The feed panicked.
    Panicked,
    /// The feed task ended without a result.
    NoResult,
}

impl fmt::Display for PalaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PalaceError::Tool(text) => f.write_str(text),
            PalaceError::Mcp(e) => write!(f, "{e}"),
            PalaceError::TimedOut { tool, after } => write!(f, "{tool} timed out after {} ms", after.as_millis()),
            PalaceError::Mine(e) => write!(f, "mempalace_mine: {e}"),
            PalaceError::Spawn { what, error } => write!(f, "can't start {what}: {error}"),
            PalaceError::Wait { what, error } => write!(f, "{what}: {error}"),
            PalaceError::Killed { what, after } => {
                write!(f, "{what} timed out after {} ms and was killed", after.as_millis())
            }
            PalaceError::Exited { what, status, detail: None } => write!(f, "{what} failed ({status})"),
            PalaceError::Exited { what, status, detail: Some(d) } => write!(f, "{what} failed ({status}): {d}"),
            PalaceError::Target(why) => f.write_str(why),
            PalaceError::NoRsync => f.write_str("rsync is not on PATH"),
            PalaceError::Export(e) => write!(f, "exporting sessions: {e}"),
            PalaceError::ExportTimedOut(after) => write!(f, "exporting sessions took over {} ms", after.as_millis()),
            PalaceError::ExportTask(e) => write!(f, "the export task failed: {e}"),
            PalaceError::Lock { path, error } => write!(f, "can't lock {path}: {error}"),
            PalaceError::Panicked => f.write_str("the feed panicked"),
            PalaceError::NoResult => f.write_str("the feed task ended without a result"),
        }
    }
}

impl std::error::Error for PalaceError {
    /// The I/O error under a child's, the exporter's or the lock's failure; the palace's own
    /// error under an MCP one (the chain a boundary error keeps).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PalaceError::Spawn { error, .. }
            | PalaceError::Wait { error, .. }
            | PalaceError::Lock { error, .. }
            | PalaceError::Export(error) => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_the_stderr_lines() {
        let ms = Duration::from_millis;
        let cases = [
            (PalaceError::Tool("Peer MCP writer active".into()), "Peer MCP writer active"),
            (
                PalaceError::TimedOut { tool: "mempalace_status".into(), after: ms(200) },
                "mempalace_status timed out after 200 ms",
            ),
            (
                PalaceError::Mine(Box::new(PalaceError::Tool("mine already running".into()))),
                "mempalace_mine: mine already running",
            ),
            (
                PalaceError::Killed { what: "/x --prepare".into(), after: ms(300) },
                "/x --prepare timed out after 300 ms and was killed",
            ),
            (
                PalaceError::Exited { what: "/x --prepare".into(), status: "exit status: 3".into(), detail: None },
                "/x --prepare failed (exit status: 3)",
            ),
            (
                PalaceError::Exited {
                    what: "rsync to h".into(),
                    status: "exit status: 255".into(),
                    detail: Some(String::new()),
                },
                "rsync to h failed (exit status: 255): ",
            ),
            (PalaceError::Mcp(McpError::Rpc { code: -32000, message: "busy".into(), data: None }), "-32000 busy"),
            (PalaceError::NoRsync, "rsync is not on PATH"),
            (PalaceError::ExportTimedOut(ms(5)), "exporting sessions took over 5 ms"),
            (
                PalaceError::Lock { path: "/a/l".into(), error: std::io::Error::other("denied").into() },
                "can't lock /a/l: denied",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }
}
