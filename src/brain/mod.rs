//! brain.db, Dotty's SQLite memory store: opened once per process, read and appended to, never migrated.
//!
//! - Reads run on the store's own reader threads, each on a pooled read connection; writes run on
//!   its writer threads, one at a time on the one write connection, so this process has exactly
//!   one writer and (with WAL) readers never wait for it. One reader and one writer per core, kept
//!   on their cores where the machine allows (`lanes`: a call goes to the thread on the
//!   caller's core). Work reaches them through a queue and answers through a callback: a tool call
//!   goes JS thread → store thread → JS thread, with no tokio worker or blocking pool in between
//!   (measured in bench/: those hops cost ~60 µs a call).
//! - A writer commits whatever is queued when it takes the write connection in one transaction
//!   (group commit); a lone write is committed at once, and no write is acknowledged before its
//!   COMMIT returned.
//! - The plain methods here (`lookup`, `insert`, ...) block: they run on those threads (or in tests),
//!   never on the JS thread and never on a tokio worker.
//! - Other processes write the same file; `busy_timeout` (5 s) makes a write that meets their lock
//!   wait instead of failing.
//! - The file at the path can change under us (a restore renames a backup over it, a reset deletes
//!   it): every operation compares the path's device and inode with those of the file our
//!   connections are on (one `stat`), and on a difference retires them all and reopens at the path.
//!
//! The parts, one idea each: `error` (why the store could not answer), `file` (the file at the
//! path and the connections on it), `search` (the reads), `write` (the writes and the group
//! commit), `lanes` (the store's threads) on `affinity` (the scheduler calls that keep them on
//! their cores), [`clock`] (row timestamps). This file is the facade: [`Brain`] and how work
//! reaches its threads.

mod affinity;
pub mod clock;
mod error;
mod file;
mod lanes;
mod search;
mod write;

pub use error::{is_busy, BrainError, Result};
pub use file::open_read_only;
pub use search::Hit;
pub use write::{NewMemory, WriteOp};

use lanes::{Lanes, WriteJob};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The schema of a production brain.db (`brain-schema.sql`, described in docs/voice-tools.md), used only to create
/// a brand-new file at the default path.
pub(crate) const SCHEMA_SQL: &str = include_str!("../../brain-schema.sql");

/// Reader threads (one read connection each) at most. More concurrent lookups wait in the queue
/// instead of each opening a connection and a thread: on two cores, 64 SQLite threads only fight
/// each other (measured in bench/: throughput fell and readers were opened 138 times). The store
/// runs one per core, between 2 and this.
const MAX_READERS: usize = 4;

/// Counters that tests and benchmarks read to prove there is one store per process.
#[derive(Debug, Default)]
pub(crate) struct BrainStats {
    pub writer_opens: AtomicUsize,
    pub reader_opens: AtomicUsize,
    pub files_created: AtomicUsize,
    /// Transactions the writer threads committed for two or more writes at once.
    pub write_groups: AtomicUsize,
}

/// What [`BrainStats`] counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrainCounts {
    pub writer_opens: usize,
    pub reader_opens: usize,
    pub files_created: usize,
    pub write_groups: usize,
}

/// The process-wide handle on brain.db.
pub struct Brain {
    path: PathBuf,
    create_if_missing: bool,
    // std Mutexes: they are only ever taken on the store's threads, and the reader lock is held
    // just long enough to pop or push a connection.
    readers: Mutex<Vec<(Connection, u64)>>, // each tagged with its file's generation (see `opened`)
    writer: Mutex<Option<Connection>>,
    // The reader and writer threads, started on first use. Writes have threads of their own so
    // that writes queued behind another process's lock never hold up reads.
    lanes: Lanes,
    // Which file the open connections are on. Lock order: writer, then opened, then readers.
    opened: Mutex<file::Opened>,
    missing_reported: AtomicBool,
    /// The largest rowid in `memories` at the last lookup: how a lookup is split.
    rows_seen: AtomicI64,
    /// `search::SPLIT_ROWS`, smaller in tests.
    split_rows: i64,
    stats: BrainStats,
}

impl Brain {
    /// A store on `path`. Nothing is opened yet. When `create_if_missing`, a missing file is
    /// created with [`SCHEMA_SQL`] on first use (the embedded default); otherwise it stays missing.
    pub fn new(path: impl Into<PathBuf>, create_if_missing: bool) -> Self {
        Brain {
            path: path.into(),
            create_if_missing,
            readers: Mutex::new(Vec::new()),
            writer: Mutex::new(None),
            lanes: Lanes::default(),
            opened: Mutex::new(file::Opened::default()),
            missing_reported: AtomicBool::new(false),
            rows_seen: AtomicI64::new(0),
            split_rows: search::SPLIT_ROWS,
            stats: BrainStats::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's counters (one store per process: tests and benchmarks check them).
    pub fn stats(&self) -> BrainCounts {
        let n = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        let s = &self.stats;
        BrainCounts {
            writer_opens: n(&s.writer_opens),
            reader_opens: n(&s.reader_opens),
            files_created: n(&s.files_created),
            write_groups: n(&s.write_groups),
        }
    }

    /// Runs a read (`lookup`, `person_facts`) on a reader thread and hands its result to `done`
    /// there. Returns at once: this is how a tool call reaches SQLite from the JS thread.
    pub(crate) fn submit_read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Brain) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) {
        self.lanes.read(
            self,
            Box::new(move |brain: Option<&Brain>| {
                let r = brain.ok_or_else(lanes::closed).and_then(f);
                Box::new(move || done(r)) as lanes::Deliver
            }),
        );
    }

    /// Queues a write for the writer threads; `done` gets the row's id there once the transaction
    /// holding it has committed (or the write's error). Returns at once.
    pub(crate) fn submit_write(self: &Arc<Self>, op: WriteOp, done: impl FnOnce(Result<String>) + Send + 'static) {
        self.lanes.write(self, WriteJob { op, done: Box::new(done) });
    }

    /// [`Brain::submit_read`] for async callers.
    pub async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Brain) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit_read(f, move |r| drop(tx.send(r)));
        rx.await.unwrap_or_else(|_| Err(lanes::closed()))
    }

    /// [`Brain::submit_write`] for async callers.
    pub async fn write(self: &Arc<Self>, op: WriteOp) -> Result<String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit_write(op, move |r| drop(tx.send(r)));
        rx.await.unwrap_or_else(|_| Err(lanes::closed()))
    }

    /// Opens (and if allowed creates) the file now, so the first voice turn doesn't pay for it.
    pub fn warm_up(&self) -> Result<()> {
        self.with_writer(|_| Ok(()))?;
        self.with_reader(|_| Ok(()))
    }
}

#[cfg(test)]
mod tests;
