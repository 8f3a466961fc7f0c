//! The file under the store and the connections on it: the reader pool and the one write
//! connection, checked against the file at the path before every operation (a restore or a reset
//! may have put another file there, or none), the atomic creation of a brand-new brain.db, and the
//! read-only opening the operator's tools use.

use super::{Brain, BrainError, Result, MAX_READERS, SCHEMA_SQL};
use crate::sync::lock;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);
/// SQLite's page cache per read connection, in KiB (a negative `cache_size`). The bundled SQLite
/// defaults to 2 MB, which at 100k rows evicts the FTS pages between two lookups and reads them
/// again (33 `pread`s per lookup on bench/'s query mix, measured); better-sqlite3 builds with 16 MB
/// on its one connection. Each reader caches the pages it read itself (the JS thread's core picks
/// the reader, so both readers end up holding the same pages): at 4 MB a reader the same query mix
/// reads no page twice (the 100k file: 928 `pread`s for 1,200 lookups at 4 and at 8 MB), and
/// pi's RSS after 1,000 calls is 2.5 MB lower than at 8 MB (issue 38).
const READ_CACHE_KIB: i64 = 4 * 1024;

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
pub(super) struct Opened {
    id: Option<FileId>,
    generation: u64,
}

impl Brain {
    /// Runs `f` on a pooled read connection on the file at the path (one is opened when none is
    /// idle); the connection goes back to the pool unless the file changed meanwhile.
    pub(super) fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
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

    /// Runs `f` on the write connection (opened on first use), holding it for the whole write.
    pub(super) fn with_writer<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        // Held for the whole write: this is what makes us a single writer.
        let mut slot = lock(&self.writer);
        self.check_file(Some(&mut slot))?;
        let conn = match slot.take() {
            Some(c) => c,
            None => {
                let c = self.open()?;
                // WAL is persistent and production files already use it; if another process holds a
                // lock right now the switch can wait for a later open, the write itself still works.
                if let Err(e) = c.pragma_update(None, "journal_mode", "wal") {
                    crate::diag!("brain.db: could not switch to WAL ({e}); continuing");
                }
                c.pragma_update(None, "synchronous", "normal")?;
                self.stats.writer_opens.fetch_add(1, Ordering::Relaxed);
                c
            }
        };
        Ok(f(slot.insert(conn))?)
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
        self.create_again_or_fail(slot, &mut opened)
    }

    /// [`Brain::check_file`] when no file is at the path: fails at an explicit path (reported once
    /// until a file is back); at the default path creates the file again, as on first start, and
    /// returns the generation of the connections on it.
    fn create_again_or_fail(&self, writer: &mut Option<Connection>, opened: &mut Opened) -> Result<u64> {
        if !self.create_if_missing {
            if !self.missing_reported.swap(true, Ordering::Relaxed) {
                crate::diag!("{}", BrainError::Missing(self.path.clone()));
            }
            return Err(BrainError::Missing(self.path.clone()));
        }
        self.create()?;
        let created = FileId::of(&self.path)?;
        self.switch(writer, opened, created);
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
                    crate::diag_info!("created a new brain.db at {} (none existed)", self.path.display());
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
