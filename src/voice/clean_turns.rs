//! `dotty-pi-ext clean-turns`: rewrites the conversation rows of an existing brain.db that older
//! loggers stored with the voice provider's prompt scaffolding inside, so the rules stop matching
//! searches at all (the FTS index follows through the schema's update trigger).
//!
//! Safe on a live robot, where pi, ZeroClaw and the perception path write the same file:
//! - reads in batches by rowid, each its own short read (no transaction held across the scan);
//! - writes each batch's changes in one short `BEGIN IMMEDIATE` transaction, waiting out another
//!   writer's lock with the same 5 s busy timeout as the store, retried a few times;
//! - an UPDATE applies only while the row's content is still what was read: a row another process
//!   changed or deleted meanwhile is left alone and counted;
//! - only rows whose content starts `user: ` and changes under [`scaffolding::repair_row`] are
//!   touched, and only their `content` (dates, key, importance and the rest stay).
//!
//! By default a backup is written first, with `VACUUM INTO` (a consistent copy while others write),
//! to a new 0600 file beside brain.db. `--dry-run` opens the file read-only and writes nothing.

use super::scaffolding;
use crate::brain::is_busy;
use crate::text::first_chars;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Rows read and written per batch: one short write transaction each.
const BATCH: usize = 256;
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);
/// A batch whose write meets a lock longer than the busy timeout is tried this many times.
const WRITE_ATTEMPTS: u32 = 4;
/// How often a write that meets another writer's lock tries again.
const LOCK_POLL: Duration = Duration::from_millis(5);
/// Before/after examples a dry run prints.
const EXAMPLES: usize = 3;
/// Codepoints of an example shown (the rest is counted, not printed).
const EXAMPLE_MAX: usize = 300;

/// Where the backup goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Backup {
    /// A new file beside brain.db, named after it and the time (the default).
    Beside,
    /// This path, which must not exist yet.
    At(PathBuf),
    /// No backup (`--backup none`).
    Skip,
}

impl Backup {
    /// The `--backup` argument: absent → beside, `none` → no backup, anything else a path.
    pub(crate) fn from_arg(arg: Option<&str>) -> Backup {
        match arg {
            None => Backup::Beside,
            Some("none") => Backup::Skip,
            Some(p) => Backup::At(PathBuf::from(p)),
        }
    }
}

/// What a run did (or, dry, would do).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    /// Rows read whose content starts `user: `.
    pub scanned: u64,
    /// Rows rewritten (dry run: that would be).
    pub cleaned: u64,
    /// Rows that needed cleaning but had changed (or gone) when their UPDATE ran.
    pub skipped_changed: u64,
    /// Rows read that needed no change.
    pub unchanged: u64,
    pub backup: Option<PathBuf>,
    /// Dry run: the first rows that would change, before and after.
    pub examples: Vec<(String, String)>,
}

/// Why it stopped. Counts of what was already written are in `so_far` (every write that finished
/// is committed: a later failure never undoes one).
#[derive(Debug)]
pub(crate) struct Failure {
    pub why: String,
    pub so_far: Outcome,
}

/// Counts of a brain.db's conversation rows that still hold scaffolding: (rows starting `user: `,
/// of those polluted). Read-only: `doctor` reports it.
pub(crate) fn count_polluted(conn: &Connection) -> rusqlite::Result<(u64, u64)> {
    let (mut scanned, mut polluted) = (0, 0);
    scan(conn, |batch| {
        scanned += batch.len() as u64;
        polluted += batch.iter().filter(|r| scaffolding::repair_row(&r.content).is_some()).count() as u64;
        Ok::<_, rusqlite::Error>(())
    })?;
    Ok((scanned, polluted))
}

struct Row {
    rowid: i64,
    content: String,
}

/// Reads every row whose content starts `user: `, [`BATCH`] at a time in rowid order, each batch
/// in its own statement (no read transaction spans the scan).
fn scan<E: From<rusqlite::Error>>(conn: &Connection, mut each: impl FnMut(Vec<Row>) -> Result<(), E>) -> Result<(), E> {
    let mut after = i64::MIN;
    loop {
        let batch: Vec<Row> = {
            let mut st = conn.prepare_cached(
                "SELECT rowid, content FROM memories WHERE rowid > ?1 AND substr(content, 1, 6) = 'user: ' \
                 ORDER BY rowid LIMIT ?2",
            )?;
            let rows = st.query_map(params![after, BATCH as i64], |r| {
                // A BLOB or NULL content is not a conversation row: read as nothing to clean.
                let content = r.get_ref(1)?.as_str().map(str::to_owned).unwrap_or_default();
                Ok(Row { rowid: r.get(0)?, content })
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let Some(last) = batch.last() else { return Ok(()) };
        after = last.rowid;
        let full = batch.len() == BATCH;
        each(batch)?;
        if !full {
            return Ok(());
        }
    }
}

/// Runs `clean-turns` on the brain.db at `path` (which must exist: it is never created).
/// `on_wait` is called when a write meets another writer's lock and waits for it.
pub(crate) fn run(path: &Path, dry_run: bool, backup: &Backup, on_wait: &mut dyn FnMut()) -> Result<Outcome, Failure> {
    let fail = |why: String, so_far: Outcome| Failure { why, so_far };
    if !path.exists() {
        return Err(fail(format!("no brain.db at {}: nothing to clean", path.display()), Outcome::default()));
    }
    if dry_run {
        return dry(path).map_err(|e| fail(format!("{}: {e}", path.display()), Outcome::default()));
    }
    let conn = open_rw(path).map_err(|e| fail(format!("cannot open {}: {e}", path.display()), Outcome::default()))?;
    let mut out = Outcome::default();
    if let Some(to) = backup_path(path, backup) {
        write_backup(&conn, &to).map_err(|e| {
            fail(format!("backup to {} failed, nothing cleaned: {e}", to.display()), Outcome::default())
        })?;
        out.backup = Some(to);
    }
    let scanned = scan(&conn, |batch| {
        out.scanned += batch.len() as u64;
        let mut changes = Vec::new();
        for r in batch {
            match scaffolding::repair_row(&r.content) {
                Some(new) => changes.push((r, new)),
                None => out.unchanged += 1,
            }
        }
        if !changes.is_empty() {
            let applied = write_batch(&conn, &changes, on_wait).map_err(Stop::Write)?;
            out.cleaned += applied;
            out.skipped_changed += changes.len() as u64 - applied;
        }
        Ok(())
    });
    match scanned {
        Ok(()) => Ok(out),
        Err(Stop::Write(e)) => Err(fail(format!("writing cleaned rows failed: {e}"), out)),
        Err(Stop::Read(e)) => Err(fail(format!("reading {} failed: {e}", path.display()), out)),
    }
}

/// Why a scan stopped: a read or a write failed.
enum Stop {
    Read(rusqlite::Error),
    Write(rusqlite::Error),
}

impl From<rusqlite::Error> for Stop {
    fn from(e: rusqlite::Error) -> Self {
        Stop::Read(e)
    }
}

/// A dry run: the same scan on a read-only connection; counts and the first examples.
fn dry(path: &Path) -> rusqlite::Result<Outcome> {
    let conn = crate::brain::open_read_only(path)?;
    let mut out = Outcome::default();
    scan(&conn, |batch| {
        out.scanned += batch.len() as u64;
        for r in batch {
            match scaffolding::repair_row(&r.content) {
                Some(new) => {
                    out.cleaned += 1;
                    if out.examples.len() < EXAMPLES {
                        out.examples.push((r.content, new));
                    }
                }
                None => out.unchanged += 1,
            }
        }
        Ok::<_, rusqlite::Error>(())
    })?;
    Ok(out)
}

/// Applies one batch in a short write transaction; returns how many rows were still as read.
/// `on_wait` is called once per batch when another writer holds the lock (the command says so).
fn write_batch(conn: &Connection, changes: &[(Row, String)], on_wait: &mut dyn FnMut()) -> rusqlite::Result<u64> {
    let mut attempt = 1;
    loop {
        match try_write_batch(conn, changes, on_wait) {
            Err(e) if is_busy(&e) && attempt < WRITE_ATTEMPTS => attempt += 1,
            r => return r,
        }
    }
}

fn try_write_batch(conn: &Connection, changes: &[(Row, String)], on_wait: &mut dyn FnMut()) -> rusqlite::Result<u64> {
    begin_immediate(conn, on_wait)?;
    let applied = (|| {
        let mut st = conn.prepare_cached("UPDATE memories SET content = ?1 WHERE rowid = ?2 AND content = ?3")?;
        let mut applied = 0;
        for (row, new) in changes {
            applied += st.execute(params![new, row.rowid, row.content])? as u64;
        }
        Ok(applied)
    })();
    match applied {
        Ok(n) => conn.execute_batch("COMMIT").map(|()| n),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// `BEGIN IMMEDIATE`, waiting up to the busy timeout for another writer's lock like SQLite's own
/// busy handler would, but calling `on_wait` when it starts waiting.
fn begin_immediate(conn: &Connection, on_wait: &mut dyn FnMut()) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::ZERO)?;
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut waited = false;
    let r = loop {
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                if !waited {
                    waited = true;
                    on_wait();
                }
                std::thread::sleep(LOCK_POLL);
            }
            r => break r,
        }
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    r
}

fn open_rw(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    // Is it a brain.db at all? A clear error before anything is written.
    c.query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'", [], |_| Ok(()))
        .optional()?
        .ok_or_else(|| rusqlite::Error::InvalidParameterName("no memories table: not a brain.db".into()))?;
    Ok(c)
}

fn backup_path(path: &Path, backup: &Backup) -> Option<PathBuf> {
    match backup {
        Backup::Skip => None,
        Backup::At(p) => Some(p.clone()),
        Backup::Beside => {
            let stamp = crate::brain::clock::now_rfc3339().replace([':', '-'], "").replace('.', "-");
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(format!(".before-clean-turns-{stamp}"));
            Some(path.with_file_name(name))
        }
    }
}

/// A consistent copy of the database (`VACUUM INTO`), in a new file made 0600 first (facts about
/// children are in it). An existing file is never overwritten.
fn write_backup(conn: &Connection, to: &Path) -> Result<(), BackupError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(to).map_err(BackupError::Create)?;
    conn.execute("VACUUM INTO ?1", params![to.to_string_lossy()]).map_err(|e| {
        let _ = std::fs::remove_file(to);
        BackupError::Copy(e)
    })?;
    Ok(())
}

/// Why the backup could not be written.
#[derive(Debug)]
enum BackupError {
    /// The new file could not be made (it exists, or the folder is not writable).
    Create(std::io::Error),
    /// `VACUUM INTO` failed (the file made for it is removed again).
    Copy(rusqlite::Error),
}

impl std::fmt::Display for BackupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackupError::Create(e) => write!(f, "{e}"),
            BackupError::Copy(e) => write!(f, "VACUUM INTO: {e}"),
        }
    }
}

/// Runs the command and renders what it did: (text, exit status 0 done / 1 failed).
/// A wait for another writer's lock is said once per run on stderr (the command's progress line).
pub(crate) fn command(path: &Path, dry_run: bool, backup: &Backup) -> (String, i32) {
    let mut said = false;
    let mut on_wait = || {
        if !std::mem::replace(&mut said, true) {
            eprintln!("dotty-pi-ext: clean-turns: another writer holds brain.db's write lock; waiting for it");
        }
    };
    match run(path, dry_run, backup, &mut on_wait) {
        Ok(out) => (render(path, dry_run, &out), 0),
        Err(f) if f.so_far == Outcome::default() => (format!("clean-turns: {}\n", f.why), 1),
        Err(f) => (
            format!(
                "{}clean-turns stopped: {} (the rows counted above are written)\n",
                render(path, dry_run, &f.so_far),
                f.why
            ),
            1,
        ),
    }
}

/// The report printed by the command.
pub(crate) fn render(path: &Path, dry_run: bool, out: &Outcome) -> String {
    let mut s = String::new();
    if dry_run {
        s += &format!("clean-turns --dry-run: {} (nothing written)\n", path.display());
        s += &format!(
            "scanned {} conversation rows: {} would be cleaned, {} unchanged\n",
            out.scanned, out.cleaned, out.unchanged
        );
        for (i, (before, after)) in out.examples.iter().enumerate() {
            s += &format!(
                "example {} of {}:\n  before: {}\n  after:  {}\n",
                i + 1,
                out.examples.len(),
                shown(before),
                shown(after)
            );
        }
    } else {
        s += &format!("clean-turns: {}\n", path.display());
        match &out.backup {
            Some(b) => {
                s +=
                    &format!("backup: {} (0600; open it with sqlite3 to check, or copy it back to undo)\n", b.display())
            }
            None => s += "backup: none (--backup none)\n",
        }
        s += &format!(
            "scanned {} conversation rows: cleaned {}, skipped {} (changed by another writer meanwhile), unchanged {}\n",
            out.scanned, out.cleaned, out.skipped_changed, out.unchanged
        );
    }
    s
}

/// A row as JSON string text (newlines visible), cut at [`EXAMPLE_MAX`] codepoints.
fn shown(row: &str) -> String {
    let n = crate::text::char_count(row);
    let cut = serde_json::Value::String(first_chars(row, EXAMPLE_MAX).to_string()).to_string();
    if n > EXAMPLE_MAX {
        format!("{cut} … (+{} codepoints)", n - EXAMPLE_MAX)
    } else {
        cut
    }
}

#[cfg(test)]
mod tests;
