//! brain.db, Dotty's SQLite memory store: opened once per process, read and appended to, never migrated.
//!
//! - Reads run on the store's own reader threads, each on a pooled read connection; writes run on
//!   its writer threads, one at a time on the one write connection, so this process has exactly
//!   one writer and (with WAL) readers never wait for it. One reader and one writer per core, kept
//!   on their cores where the machine allows (src/brain/lanes.rs: a call goes to the thread on the
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

pub mod clock;
mod lanes;

use crate::sync::lock;
use lanes::{Lanes, WriteJob};
use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The schema of a production brain.db (`brain-schema.sql`, described in docs/voice-tools.md), used only to create
/// a brand-new file at the default path.
pub const SCHEMA_SQL: &str = include_str!("../../brain-schema.sql");

const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);
/// Reader threads (one read connection each) at most. More concurrent lookups wait in the queue
/// instead of each opening a connection and a thread: on two cores, 64 SQLite threads only fight
/// each other (measured in bench/: throughput fell and readers were opened 138 times). The store
/// runs one per core, between 2 and this.
const MAX_READERS: usize = 4;
/// SQLite's page cache per connection, in KiB (a negative `cache_size`). The bundled SQLite
/// defaults to 2 MB, which at 100k rows evicts the FTS pages between two lookups and reads them
/// again (36 `pread`s per lookup, measured); better-sqlite3 builds with 16 MB. 8 MB on each of
/// the (two, on the Pi) readers keeps a lookup's working set while RSS stays under the peer's.
const READ_CACHE_KIB: i64 = 8 * 1024;

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
    /// Reports this failure on stderr for `what`, except a missing file, which [`Brain`] reports
    /// once by itself rather than on every call.
    pub fn report(&self, what: &str) {
        if !matches!(self, BrainError::Missing(_)) {
            crate::diag!("{what}: {self}");
        }
    }

    /// True when another connection held the lock past the busy timeout: worth another try.
    pub fn is_busy(&self) -> bool {
        matches!(self, BrainError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
            if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
    }
}

pub type Result<T> = std::result::Result<T, BrainError>;

/// A row to append to `memories`.
#[derive(Debug, Clone)]
pub struct NewMemory<'a> {
    pub content: &'a str,
    pub category: &'a str,
    pub namespace: &'a str,
    pub importance: f64,
}

/// One write for a writer thread; its result is the row's id.
#[derive(Debug, Clone)]
pub enum WriteOp {
    /// Appends a row (see [`Brain::insert`]).
    Insert { content: String, category: String, namespace: String, importance: f64, ts: String },
    /// Replaces a row's content (see [`Brain::update_content`]).
    Update { id: String, content: String, ts: String },
}

impl WriteOp {
    /// Runs the write on the write connection. The content is stripped once more, as bridge.py's
    /// store helper does (a cap that ends in whitespace loses it).
    fn apply(&self, c: &Connection) -> rusqlite::Result<String> {
        match self {
            WriteOp::Insert { content, category, namespace, importance, ts } => {
                let content = crate::text::strip(content);
                let id = uuid::Uuid::new_v4().to_string();
                let key = format!("voice_{category}_{ts}_{}", &id[..8]);
                c.prepare_cached(
                    "INSERT INTO memories (id, key, content, category, embedding, created_at, updated_at, \
                     session_id, namespace, importance, superseded_by) \
                     VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?5, NULL, ?6, ?7, NULL)",
                )?
                .execute(params![id, key, content, category, ts, namespace, importance])?;
                Ok(id)
            }
            WriteOp::Update { id, content, ts } => {
                let content = crate::text::strip(content);
                c.prepare_cached("UPDATE memories SET content = ?2, updated_at = ?3 WHERE id = ?1")?
                    .execute(params![id, content, ts])?;
                Ok(id.clone())
            }
        }
    }
}

/// A row [`Brain::lookup_range`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub rank: f64,
    pub rowid: i64,
    pub content: String,
}

/// A match in the heap of [`Brain::lookup_range`], ordered as the contract's `ORDER BY rank`
/// orders it: by rank, equal ranks by rowid (checked against FTS5's own sorter on the bench's 1M
/// rows, ties included: bench/floor.rs).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    rank: f64,
    rowid: i64,
}

impl Eq for Ranked {}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank.total_cmp(&other.rank).then(self.rowid.cmp(&other.rowid))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn none_if_no_row<T>(e: rusqlite::Error) -> rusqlite::Result<Option<T>> {
    match e {
        rusqlite::Error::QueryReturnedNoRows => Ok(None),
        e => Err(e),
    }
}

/// Below this many rows a lookup runs as one search. Each part of a split search pays for some
/// work again (FTS5 counts the phrase's rows over the whole index for bm25's idf, per statement):
/// bench/floor.rs measured 36 ms of CPU split vs 25 ms whole per lookup at 1M rows, and at 100k
/// rows the split was slower than one search on a busy machine. It pays where one search is long.
const SPLIT_ROWS: i64 = 200_000;

/// The rowid ranges a lookup is split into, from the table's largest rowid as last seen: one per
/// reader on a large table, else one. Together they cover every rowid (rows added since are in the
/// last range).
fn split(max_rowid: i64, readers: usize, min_rows: i64) -> Vec<(i64, i64)> {
    if max_rowid < min_rows || readers < 2 {
        return vec![(i64::MIN, i64::MAX)];
    }
    let step = max_rowid / readers as i64;
    (0..readers as i64)
        .map(|i| {
            (
                if i == 0 { i64::MIN } else { i * step + 1 },
                if i + 1 == readers as i64 { i64::MAX } else { (i + 1) * step },
            )
        })
        .collect()
}

/// Where a split lookup's rows go.
type Rows = Box<dyn FnOnce(Result<Vec<String>>) + Send>;

/// The parts of a split lookup as they come in; the last one merges them and answers.
struct Gather {
    parts: Mutex<(Vec<Hit>, usize)>, // hits so far, parts still out
    done: Mutex<Option<Rows>>,
    limit: u32,
}

impl Gather {
    fn add(&self, part: Result<Vec<Hit>>) {
        let hits = match part {
            Err(e) => return self.finish(Err(e)),
            Ok(hits) => {
                let mut parts = lock(&self.parts);
                parts.0.extend(hits);
                parts.1 -= 1;
                if parts.1 > 0 {
                    return;
                }
                std::mem::take(&mut parts.0)
            }
        };
        let mut hits = hits;
        hits.sort_by(|a, b| Ranked { rank: a.rank, rowid: a.rowid }.cmp(&Ranked { rank: b.rank, rowid: b.rowid }));
        self.finish(Ok(hits.into_iter().take(self.limit as usize).map(|h| h.content).collect()));
    }

    /// Answers once: the first failing part, or the last part in.
    fn finish(&self, r: Result<Vec<String>>) {
        let done = lock(&self.done).take();
        if let Some(done) = done {
            done(r);
        }
    }
}

/// Writes one group commits at most (a bound on how long the first of them waits for its ack).
const MAX_GROUP: usize = 64;

/// Counters that tests and benchmarks read to prove there is one store per process.
#[derive(Debug, Default)]
pub struct BrainStats {
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
    opened: Mutex<Opened>,
    missing_reported: AtomicBool,
    /// The largest rowid in `memories` at the last lookup: how a lookup is split.
    rows_seen: std::sync::atomic::AtomicI64,
    /// [`SPLIT_ROWS`], smaller in tests.
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
            opened: Mutex::new(Opened::default()),
            missing_reported: AtomicBool::new(false),
            rows_seen: std::sync::atomic::AtomicI64::new(0),
            split_rows: SPLIT_ROWS,
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
    pub fn submit_read<T: Send + 'static>(
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
    pub fn submit_write(self: &Arc<Self>, op: WriteOp, done: impl FnOnce(Result<String>) + Send + 'static) {
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

    /// Commits `ops` in one transaction and returns each one's result, in order; what the writer
    /// thread does with the writes it found queued. One write runs alone (autocommit, nothing
    /// added). A write that fails inside the group (a constraint, a trigger) is rolled back to its
    /// savepoint and gets its error while the others commit, as if each had run alone. When the
    /// group itself fails (BEGIN met another process's lock past the busy timeout, COMMIT failed),
    /// nothing of it is kept and each write runs again alone, so the group never fails a write
    /// that would have succeeded by itself. Results are returned only after COMMIT returned.
    pub fn write_all(&self, ops: &[WriteOp]) -> Vec<Result<String>> {
        if let [op] = ops {
            return vec![self.with_writer(|c| op.apply(c))];
        }
        let grouped = self.with_writer(|c| {
            c.execute_batch("BEGIN IMMEDIATE")?;
            let run = || -> rusqlite::Result<Vec<rusqlite::Result<String>>> {
                let mut out = Vec::with_capacity(ops.len());
                for op in ops {
                    c.execute_batch("SAVEPOINT one_write")?;
                    let r = op.apply(c);
                    c.execute_batch(if r.is_ok() {
                        "RELEASE one_write"
                    } else {
                        "ROLLBACK TO one_write; RELEASE one_write"
                    })?;
                    out.push(r);
                }
                c.execute_batch("COMMIT")?;
                Ok(out)
            };
            run().inspect_err(|_| {
                if !c.is_autocommit() {
                    let _ = c.execute_batch("ROLLBACK");
                }
            })
        });
        match grouped {
            Ok(out) => {
                self.stats.write_groups.fetch_add(1, Ordering::Relaxed);
                out.into_iter().map(|r| r.map_err(BrainError::from)).collect()
            }
            Err(e) => {
                crate::diag!("brain.db: a group of {} writes failed ({e}); writing them one by one", ops.len());
                ops.iter().map(|op| self.with_writer(|c| op.apply(c))).collect()
            }
        }
    }

    /// Opens (and if allowed creates) the file now, so the first voice turn doesn't pay for it.
    pub fn warm_up(&self) -> Result<()> {
        self.with_writer(|_| Ok(()))?;
        self.with_reader(|_| Ok(()))
    }

    /// Phrase search over `memories_fts`, best first, never returning unreviewed person facts:
    /// the rows of
    ///
    /// ```sql
    /// SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
    /// WHERE memories_fts MATCH ?1 AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT ?2
    /// ```
    ///
    /// (the contract's query), found with less work: see [`Brain::lookup_range`].
    pub fn lookup(&self, fts_phrase: &str, limit: u32) -> Result<Vec<String>> {
        Ok(self.lookup_range(fts_phrase, (i64::MIN, i64::MAX), limit)?.into_iter().map(|h| h.content).collect())
    }

    /// [`Brain::lookup`] on the store's reader threads; `done` gets the rows there. On a large
    /// table the rowids are split in as many ranges as there are readers, searched at once and
    /// merged (each range's best rows, then the best of those by rank and rowid: the same rows
    /// in the same order as one search, since the contract's order is rank, then rowid).
    pub fn submit_lookup(
        self: &Arc<Self>,
        fts_phrase: String,
        limit: u32,
        done: impl FnOnce(Result<Vec<String>>) + Send + 'static,
    ) {
        let ranges = split(self.rows_seen.load(Ordering::Relaxed), self.lanes.spare_readers(), self.split_rows);
        if let [range] = ranges[..] {
            return self.submit_read(
                move |b| b.lookup_range(&fts_phrase, range, limit),
                move |r| done(r.map(|hits| hits.into_iter().map(|h| h.content).collect())),
            );
        }
        let gather = Arc::new(Gather {
            parts: Mutex::new((Vec::new(), ranges.len())),
            done: Mutex::new(Some(Box::new(done))),
            limit,
        });
        for range in ranges {
            let (phrase, gather) = (fts_phrase.clone(), gather.clone());
            self.submit_read(move |b| b.lookup_range(&phrase, range, limit), move |r| gather.add(r));
        }
    }

    /// The best `limit` rows for `fts_phrase` among rowids in `range` (inclusive), by rank then
    /// rowid, with their rank and rowid.
    ///
    /// Why not the contract's SQL as it stands: with `ORDER BY rank` FTS5 ranks every match in its
    /// own sorter over the whole table (a rowid range doesn't narrow it), and that sorter was 40%
    /// of a broad lookup's CPU at 1M rows (bench/README.md). Here the matches stream with their
    /// `rank` (the same rank function on the same statistics), the best ones are kept in a heap,
    /// and only those are joined to `memories`, with the contract's own namespace test in SQL. A
    /// too-small heap (too many of the best rows were unreviewed person facts) is retried larger.
    pub fn lookup_range(&self, fts_phrase: &str, range: (i64, i64), limit: u32) -> Result<Vec<Hit>> {
        let limit = limit as usize;
        self.with_reader(|c| {
            let max: Option<i64> = c.prepare_cached("SELECT max(rowid) FROM memories")?.query_row([], |r| r.get(0))?;
            self.rows_seen.store(max.unwrap_or(0), Ordering::Relaxed);
            let mut keep = limit + 8;
            loop {
                let mut best = std::collections::BinaryHeap::with_capacity(keep + 1);
                let mut matches = 0usize;
                let mut st = c.prepare_cached(
                    "SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
                )?;
                let mut rows = st.query(params![fts_phrase, range.0, range.1])?;
                while let Some(r) = rows.next()? {
                    matches += 1;
                    best.push(Ranked { rank: r.get(1)?, rowid: r.get(0)? });
                    if best.len() > keep {
                        best.pop();
                    }
                }
                let mut hits = Vec::with_capacity(limit);
                let mut content = c.prepare_cached(
                    "SELECT content FROM memories WHERE rowid = ?1 AND namespace NOT LIKE 'person_pending:%'",
                )?;
                for Ranked { rank, rowid } in best.into_sorted_vec() {
                    if hits.len() == limit {
                        break;
                    }
                    if let Some(text) =
                        content.query_row([rowid], |r| r.get::<_, String>(0)).map(Some).or_else(none_if_no_row)?
                    {
                        hits.push(Hit { rank, rowid, content: text });
                    }
                }
                if hits.len() == limit || matches <= keep {
                    return Ok(hits);
                }
                keep *= 4;
            }
        })
    }

    /// Approved facts about one person (`namespace = 'person:' || id`), most important and newest first.
    pub fn person_facts(&self, person_id: &str, limit: u32) -> Result<Vec<String>> {
        self.with_reader(|c| {
            let mut st = c.prepare_cached(
                "SELECT content FROM memories WHERE namespace = 'person:' || ?1 \
                 ORDER BY importance DESC, updated_at DESC LIMIT ?2",
            )?;
            // content is NOT NULL in the schema, but other writers are not ours: read it leniently.
            let rows = st.query_map(params![person_id, limit], |r| r.get::<_, Option<String>>(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.into_iter().flatten().collect())
        })
    }

    /// After a panic in the middle of a group: rolls back the transaction it left open, so that
    /// later writes don't land in it.
    fn abandon_transaction(&self) {
        if let Some(c) = lock(&self.writer).as_ref() {
            if !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
        }
    }

    /// Appends a row; returns its id. `created_at` = `updated_at` = `ts`. The content is stripped
    /// once more, as bridge.py's store helper does (a cap that ends in whitespace loses it).
    pub fn insert(&self, m: &NewMemory<'_>, ts: &str) -> Result<String> {
        let op = WriteOp::Insert {
            content: m.content.into(),
            category: m.category.into(),
            namespace: m.namespace.into(),
            importance: m.importance,
            ts: ts.into(),
        };
        self.with_writer(|c| op.apply(c))
    }

    /// Replaces the content of a row this process wrote (the per-turn log's retry of the same turn),
    /// stripped as in [`Brain::insert`].
    pub fn update_content(&self, id: &str, content: &str, ts: &str) -> Result<()> {
        let op = WriteOp::Update { id: id.into(), content: content.into(), ts: ts.into() };
        self.with_writer(|c| op.apply(c)).map(drop)
    }

    fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let generation = self.check_file(None)?;
        let pooled = {
            let mut idle = lock(&self.readers);
            // Connections of an older generation are on a file no longer at the path: closed here.
            std::iter::from_fn(|| idle.pop()).find(|(_, g)| *g == generation).map(|(c, _)| c)
        };
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = self.open()?;
                c.pragma_update(None, "query_only", true)?;
                c.pragma_update(None, "cache_size", -READ_CACHE_KIB)?;
                self.stats.reader_opens.fetch_add(1, Ordering::Relaxed);
                c
            }
        };
        let out = f(&conn);
        let current = lock(&self.opened).generation;
        let mut idle = lock(&self.readers);
        if generation == current && idle.len() < MAX_READERS {
            idle.push((conn, generation));
        }
        Ok(out?)
    }

    fn with_writer<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        // Held for the whole write: this is what makes us a single writer.
        let mut slot = lock(&self.writer);
        self.check_file(Some(&mut slot))?;
        if slot.is_none() {
            let c = self.open()?;
            // WAL is persistent and production files already use it; if another process holds a
            // lock right now the switch can wait for a later open, the write itself still works.
            if let Err(e) = c.pragma_update(None, "journal_mode", "wal") {
                crate::diag!("brain.db: could not switch to WAL ({e}); continuing");
            }
            c.pragma_update(None, "synchronous", "normal")?;
            self.stats.writer_opens.fetch_add(1, Ordering::Relaxed);
            *slot = Some(c);
        }
        let conn = slot.as_ref().expect("writer opened above");
        Ok(f(conn)?)
    }

    /// Makes sure our connections are on the file that is at the path now, and returns their
    /// generation. One `stat` when nothing changed (every operation pays it, about a microsecond).
    ///
    /// When the file was replaced (a restore renamed another file over it) or removed, every
    /// connection on the old file is retired before any connection opens the new one, so a write
    /// never lands in an unlinked file. A missing file is created again at the default path; at an
    /// explicit path the operation fails with [`BrainError::Missing`] until a file is back.
    /// `writer` is the writer slot when the caller already holds its lock.
    fn check_file(&self, writer: Option<&mut Option<Connection>>) -> Result<u64> {
        let now = FileId::of(&self.path)?;
        if now.is_some() {
            if self.missing_reported.load(Ordering::Relaxed) {
                self.missing_reported.store(false, Ordering::Relaxed);
            }
            let opened = lock(&self.opened);
            if opened.id == now {
                return Ok(opened.generation);
            }
        }
        let mut own;
        let slot = match writer {
            Some(slot) => slot,
            None => {
                own = lock(&self.writer);
                &mut *own
            }
        };
        let mut opened = lock(&self.opened);
        if opened.id != now {
            if let Some(old) = opened.id {
                let what = if now.is_some() { "was replaced by another file" } else { "was removed" };
                crate::diag!(
                    "brain.db at {} {what} while open (inode {}); closing the old file",
                    self.path.display(),
                    old.ino
                );
            }
            self.switch(slot, &mut opened, now);
        }
        if now.is_some() {
            return Ok(opened.generation);
        }
        if !self.create_if_missing {
            if !self.missing_reported.swap(true, Ordering::Relaxed) {
                crate::diag!("{}", BrainError::Missing(self.path.clone()));
            }
            return Err(BrainError::Missing(self.path.clone()));
        }
        // The embedded default: created again as on first start, once the old file is let go.
        self.create()?;
        let created = FileId::of(&self.path)?;
        self.switch(slot, &mut opened, created);
        created.map(|_| opened.generation).ok_or_else(|| BrainError::Missing(self.path.clone()))
    }

    /// Retires the writer and the pooled readers (readers in use are dropped when they come back)
    /// and records `now` as the file of the next connections.
    fn switch(&self, writer: &mut Option<Connection>, opened: &mut Opened, now: Option<FileId>) {
        if let Some(c) = writer.take() {
            retire(c);
        }
        lock(&self.readers).clear();
        opened.id = now;
        opened.generation += 1;
    }

    /// Opens a connection on the file at the path (checked by [`Brain::check_file`] just before).
    fn open(&self) -> Result<Connection> {
        let c = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(c)
    }

    /// Creates a brand-new brain.db with the production schema, atomically: it is built under a
    /// temporary name and hard-linked into place, so no other process ever sees a half-made file
    /// and two processes racing to create it can't clobber each other.
    fn create(&self) -> Result<()> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        // Facts about children live here: folders we create are 0700, the file 0600 (SQLite gives
        // its -wal and -shm the database file's mode). Existing folders keep theirs.
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let tmp = dir.join(format!(".brain.db.creating-{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()));
        let made = (|| -> Result<()> {
            // An empty file is an empty database: made here with its mode, then filled by SQLite.
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            let c = Connection::open(&tmp)?;
            c.execute_batch(&format!("BEGIN;\n{SCHEMA_SQL}\nCOMMIT;"))?;
            c.pragma_update(None, "journal_mode", "wal")?;
            c.close().map_err(|(_, e)| e)?;
            match std::fs::hard_link(&tmp, &self.path) {
                Ok(()) => {
                    self.stats.files_created.fetch_add(1, Ordering::Relaxed);
                    crate::diag!("created a new brain.db at {} (none existed)", self.path.display());
                    Ok(())
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e.into()),
            }
        })();
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = tmp.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
        made
    }
}

/// Opens the brain.db at `path` read-only, for the operator's tools (`doctor`, `clean-turns
/// --dry-run`): nothing is created or written. When no `-wal` file exists (no connection has it open
/// in WAL mode), it is opened `immutable=1`, so SQLite doesn't create a `-shm` either; otherwise the
/// connection uses the running writer's `-wal`/`-shm`.
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let immutable = !Path::new(&wal).exists();
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let uri = format!(
        "file:{}{}",
        percent_encoding::utf8_percent_encode(&path.to_string_lossy(), URI_PATH),
        if immutable { "?immutable=1" } else { "?mode=ro" }
    );
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    Ok(conn)
}

/// What a path must escape to be read as a `file:` URI.
const URI_PATH: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'?').add(b'#').add(b'%').add(b' ');

/// Closes a connection on a file that is no longer at the path. Its WAL is checkpointed into the
/// old file and truncated first: the `-wal` file is found by the path's name, and left as it is,
/// its frames would be replayed into whatever file sits at the path next. (SQLite itself skips the
/// checkpoint on close once the file has moved.)
fn retire(c: Connection) {
    let _ = c.busy_timeout(Duration::from_millis(1000));
    let _ = c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    drop(c);
}

/// A file's identity: device and inode. A path whose identity changed holds another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of the file at `path`, `None` when there is none (one `stat`).
    fn of(path: &Path) -> std::io::Result<Option<FileId>> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(FileId { dev: m.dev(), ino: m.ino() })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The file our open connections are on, and their generation (bumped each time they are retired).
#[derive(Default)]
struct Opened {
    id: Option<FileId>,
    generation: u64,
}

#[cfg(test)]
mod tests;
