//! Why the store could not answer: [`BrainError`], and what the callers ask of it (report it, retry it).

use std::path::PathBuf;

/// Why the store could not answer.
#[derive(Debug)]
pub enum BrainError {
    /// The configured file does not exist (and is not ours to create).
    Missing(PathBuf),
    Sqlite(rusqlite::Error),
    Io(std::io::Error),
}

impl std::fmt::Display for BrainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BrainError::Missing(p) => {
                write!(f, "brain.db not found at {} (DOTTY_BRAIN_DB is set, so it is not created)", p.display())
            }
            BrainError::Sqlite(e) => write!(f, "sqlite: {e}"),
            BrainError::Io(e) => write!(f, "io: {e}"),
        }
    }
}

impl std::error::Error for BrainError {}

impl From<rusqlite::Error> for BrainError {
    fn from(e: rusqlite::Error) -> Self {
        BrainError::Sqlite(e)
    }
}

impl From<std::io::Error> for BrainError {
    fn from(e: std::io::Error) -> Self {
        BrainError::Io(e)
    }
}

impl BrainError {
    /// Reports this failure on stderr for `what`, except a missing file, which [`Brain`](super::Brain)
    /// reports once by itself rather than on every call.
    pub fn report(&self, what: &str) {
        if !matches!(self, BrainError::Missing(_)) {
            crate::diag!("{what}: {self}");
        }
    }

    /// True when another connection held the lock past the busy timeout: worth another try.
    pub fn is_busy(&self) -> bool {
        matches!(self, BrainError::Sqlite(e) if is_busy(e))
    }
}

/// True when SQLite gave up waiting for another connection's lock (busy or locked).
pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// What the store's operations return.
pub type Result<T> = std::result::Result<T, BrainError>;
