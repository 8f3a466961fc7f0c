//! brain.db, Dotty's SQLite memory store: opened once per process, read and appended to, never migrated.
//!
//! - Reads run on pooled read connections; the one write connection sits behind its own lock, so
//!   this process has exactly one writer and (with WAL) readers never wait for it.
//! - Every method here blocks: callers run them on tokio's blocking pool (`spawn_blocking`), never
//!   on the JS thread and never on a tokio worker.
//! - Other processes write the same file; `busy_timeout` (5 s) makes a write that meets their lock
//!   wait instead of failing.
//! - The file at the path can change under us (a restore renames a backup over it, a reset deletes
//!   it): every operation compares the path's device and inode with those of the file our
//!   connections are on (one `stat`), and on a difference retires them all and reopens at the path.

pub mod clock;

use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use crate::sync::lock;

/// The schema of a production brain.db (`brain-schema.sql`, described in docs/voice-tools.md), used only to create
/// a brand-new file at the default path.
pub const SCHEMA_SQL: &str = include_str!("../../brain-schema.sql");

const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);
/// Reads running at once, and read connections kept open. More concurrent lookups wait for a
/// turn instead of each opening a connection and a thread: on two cores, 64 SQLite threads only
/// fight each other (measured in bench/: throughput fell and readers were opened 138 times).
const MAX_READERS: usize = 4;

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
            BrainError::Missing(p) => write!(f, "brain.db not found at {} (DOTTY_BRAIN_DB is set, so it is not created)", p.display()),
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

/// Counters that tests and benchmarks read to prove there is one store per process.
#[derive(Debug, Default)]
pub struct BrainStats {
    pub writer_opens: AtomicUsize,
    pub reader_opens: AtomicUsize,
    pub files_created: AtomicUsize,
}

/// The process-wide handle on brain.db.
pub struct Brain {
    path: PathBuf,
    create_if_missing: bool,
    // std Mutexes: they are only ever taken on blocking-pool threads, and the reader lock is held
    // just long enough to pop or push a connection.
    readers: Mutex<Vec<(Connection, u64)>>, // each tagged with its file's generation (see `opened`)
    writer: Mutex<Option<Connection>>,
    // Async gates in front of the blocking pool: at most MAX_READERS reads and one write occupy a
    // blocking thread; the rest wait as cheap futures. Writes have their own gate so that writes
    // queued behind another process's lock never hold up reads.
    read_gate: tokio::sync::Semaphore,
    write_gate: tokio::sync::Semaphore,
    // Which file the open connections are on. Lock order: writer, then opened, then readers.
    opened: Mutex<Opened>,
    missing_reported: AtomicBool,
    pub stats: BrainStats,
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
            read_gate: tokio::sync::Semaphore::new(MAX_READERS),
            write_gate: tokio::sync::Semaphore::new(1),
            opened: Mutex::new(Opened::default()),
            missing_reported: AtomicBool::new(false),
            stats: BrainStats::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs a read (`lookup`, `person_facts`) on tokio's blocking pool, at most [`MAX_READERS`] at once.
    pub async fn read<T: Send + 'static>(self: &Arc<Self>, f: impl FnOnce(&Brain) -> Result<T> + Send + 'static) -> Result<T> {
        let _turn = self.read_gate.acquire().await.map_err(|e| BrainError::Io(std::io::Error::other(e)))?;
        self.blocking(f).await
    }

    /// Runs a write (`insert`, `update_content`) on tokio's blocking pool, one at a time.
    pub async fn write<T: Send + 'static>(self: &Arc<Self>, f: impl FnOnce(&Brain) -> Result<T> + Send + 'static) -> Result<T> {
        let _turn = self.write_gate.acquire().await.map_err(|e| BrainError::Io(std::io::Error::other(e)))?;
        self.blocking(f).await
    }

    async fn blocking<T: Send + 'static>(self: &Arc<Self>, f: impl FnOnce(&Brain) -> Result<T> + Send + 'static) -> Result<T> {
        let brain = self.clone();
        match tokio::task::spawn_blocking(move || f(&brain)).await {
            Ok(r) => r,
            Err(e) => Err(BrainError::Io(std::io::Error::other(format!("store task failed: {e}")))),
        }
    }

    /// Opens (and if allowed creates) the file now, so the first voice turn doesn't pay for it.
    pub fn warm_up(&self) -> Result<()> {
        self.with_writer(|_| Ok(()))?;
        self.with_reader(|_| Ok(()))
    }

    /// Phrase search over `memories_fts`, best first, never returning unreviewed person facts.
    pub fn lookup(&self, fts_phrase: &str, limit: u32) -> Result<Vec<String>> {
        self.with_reader(|c| {
            let mut st = c.prepare_cached(
                "SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid \
                 WHERE memories_fts MATCH ?1 AND m.namespace NOT LIKE 'person_pending:%' \
                 ORDER BY rank LIMIT ?2",
            )?;
            let rows = st.query_map(params![fts_phrase, limit], |r| r.get::<_, String>(0))?;
            rows.collect()
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

    /// Appends a row; returns its id. `created_at` = `updated_at` = `ts`. The content is stripped
    /// once more, as bridge.py's store helper does (a cap that ends in whitespace loses it).
    pub fn insert(&self, m: &NewMemory<'_>, ts: &str) -> Result<String> {
        let content = crate::text::strip(m.content);
        let id = uuid::Uuid::new_v4().to_string();
        let key = format!("voice_{}_{}_{}", m.category, ts, &id[..8]);
        self.with_writer(|c| {
            c.prepare_cached(
                "INSERT INTO memories (id, key, content, category, embedding, created_at, updated_at, \
                 session_id, namespace, importance, superseded_by) \
                 VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?5, NULL, ?6, ?7, NULL)",
            )?
            .execute(params![id, key, content, m.category, ts, m.namespace, m.importance])?;
            Ok(())
        })?;
        Ok(id)
    }

    /// Replaces the content of a row this process wrote (the per-turn log's retry of the same turn),
    /// stripped as in [`Brain::insert`].
    pub fn update_content(&self, id: &str, content: &str, ts: &str) -> Result<()> {
        let content = crate::text::strip(content);
        self.with_writer(|c| {
            c.prepare_cached("UPDATE memories SET content = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, content, ts])?;
            Ok(())
        })
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
                crate::diag!("brain.db at {} {what} while open (inode {}); closing the old file", self.path.display(), old.ino);
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
