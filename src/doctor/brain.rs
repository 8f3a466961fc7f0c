//! brain.db, read-only: path, existence, schema against `brain-schema.sql` (FTS table included),
//! journal mode, size, rows per category and namespace, pending facts, file mode, other holders.
//!
//! Never creates or writes anything: the file is opened with [`crate::brain::open_read_only`]. Also
//! counts the conversation rows that still hold prompt scaffolding (a warning naming `clean-turns`).

use super::Check;
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const SCHEMA: &str = include_str!("../../brain-schema.sql");

pub fn check(path: &Path, voice_enabled: bool, explicit: bool) -> Vec<Check> {
    let mut out = Vec::new();
    if !voice_enabled {
        out.push(Check::ok("brain.db", "not used (DOTTY_VOICE_TOOLS=0)"));
        return out;
    }
    let shown = path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out.push(if explicit {
                Check::fail("brain.db", format!("{shown} does not exist (DOTTY_BRAIN_DB is set, so it is never created)"), "point DOTTY_BRAIN_DB at Dotty's brain.db, or unset it to use the default path")
            } else {
                Check::warn("brain.db", format!("{shown} does not exist yet"), "start pi once with the extension (it creates brain.db at the default path), or set DOTTY_BRAIN_DB to Dotty's brain.db")
            });
            return out;
        }
        Err(e) => {
            out.push(Check::fail("brain.db", format!("{shown}: {e}"), "make brain.db readable by the user pi runs as"));
            return out;
        }
    };
    let wal = wal_path(path);
    let wal_size = std::fs::metadata(&wal).map(|m| m.len()).ok();
    let size = match wal_size {
        Some(w) => format!("{} (+ {} WAL)", human(meta.len()), human(w)),
        None => human(meta.len()),
    };
    out.push(Check::ok("brain.db", format!("{shown}, {size}")));
    let mode = meta.permissions().mode() & 0o777;
    out.push(if mode & 0o004 != 0 {
        Check::warn("brain.db mode", format!("{mode:04o}: readable by every user"), format!("chmod 600 {shown}"))
    } else {
        Check::ok("brain.db mode", format!("{mode:04o}"))
    });
    match journal_mode(path) {
        Ok(m) if m == "wal" => out.push(Check::ok("brain.db journal", "wal")),
        Ok(m) => out.push(Check::warn("brain.db journal", m, "let ZeroClaw or the extension open it once (they set journal_mode=WAL), or run PRAGMA journal_mode=WAL with pi stopped")),
        Err(e) => out.push(Check::fail("brain.db journal", e.to_string(), "brain.db is not an SQLite database: restore it from a backup")),
    }
    match crate::brain::open_read_only(path) {
        Err(e) => out.push(Check::fail(
            "brain.db open",
            e.to_string(),
            "check the file's owner and mode, and that it is an SQLite database",
        )),
        Ok(conn) => {
            out.push(schema_check(&conn));
            out.extend(rows(&conn));
            out.push(turns_check(&conn));
        }
    }
    out.push(holders(path));
    out
}

fn wal_path(path: &Path) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    p.into()
}

fn human(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// From the header (bytes 18-19: 2 = WAL, 1 = rollback journal), without SQLite.
fn journal_mode(path: &Path) -> Result<String, NotSqlite> {
    use std::io::Read;
    let mut head = [0u8; 20];
    let mut f = std::fs::File::open(path).map_err(NotSqlite::Unreadable)?;
    f.read_exact(&mut head).map_err(|_| NotSqlite::Short)?;
    if &head[..16] != b"SQLite format 3\0" {
        return Err(NotSqlite::NoHeader);
    }
    Ok(match (head[18], head[19]) {
        (2, 2) => "wal".into(),
        (1, 1) => "delete (rollback journal)".into(),
        (r, w) => format!("unknown (read {r}, write {w})"),
    })
}

/// Why a file's header doesn't say which journal it uses.
#[derive(Debug)]
enum NotSqlite {
    Unreadable(std::io::Error),
    Short,
    NoHeader,
}

impl std::fmt::Display for NotSqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotSqlite::Unreadable(e) => write!(f, "{e}"),
            NotSqlite::Short => f.write_str("shorter than an SQLite header"),
            NotSqlite::NoHeader => f.write_str("no SQLite header"),
        }
    }
}

type Objects = BTreeSet<(String, String)>;

fn objects(conn: &Connection) -> rusqlite::Result<(Objects, BTreeSet<String>)> {
    let mut st = conn.prepare(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'memories_fts_%'",
    )?;
    let objs = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Objects>>()?;
    let mut st = conn.prepare("SELECT name FROM pragma_table_info('memories')")?;
    let cols = st.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<BTreeSet<String>>>()?;
    Ok((objs, cols))
}

/// The tables, indexes, triggers and `memories` columns of the production schema that are missing.
pub(crate) fn missing_schema(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let reference = Connection::open_in_memory()?;
    reference.execute_batch(SCHEMA)?;
    let (want_objs, want_cols) = objects(&reference)?;
    let (have_objs, have_cols) = objects(conn)?;
    let mut missing: Vec<String> = want_objs.difference(&have_objs).map(|(t, n)| format!("{t} {n}")).collect();
    missing.extend(want_cols.difference(&have_cols).map(|c| format!("column memories.{c}")));
    Ok(missing)
}

fn schema_check(conn: &Connection) -> Check {
    match missing_schema(conn) {
        Ok(m) if m.is_empty() => {
            Check::ok("brain.db schema", "matches brain-schema.sql (memories, memories_fts, triggers, indexes)")
        }
        Ok(m) => Check::fail(
            "brain.db schema",
            format!("missing {}", m.join(", ")),
            if m.iter().any(|x| x.contains("memories_fts")) {
                "the FTS index is missing, so memory_lookup finds nothing: recreate it with brain-schema.sql's memories_fts table and triggers, then INSERT INTO memories_fts(memories_fts) VALUES('rebuild')"
            } else {
                "this is not the production schema: let ZeroClaw migrate brain.db, or point DOTTY_BRAIN_DB at the real one"
            },
        ),
        Err(e) => Check::fail(
            "brain.db schema",
            e.to_string(),
            "check that brain.db is an SQLite database and not locked exclusively",
        ),
    }
}

fn rows(conn: &Connection) -> Vec<Check> {
    let group = |col: &str| -> rusqlite::Result<Vec<(String, i64)>> {
        let mut st = conn.prepare(&format!(
            "SELECT coalesce({col}, '<null>'), count(*) FROM memories GROUP BY 1 ORDER BY 2 DESC, 1"
        ))?;
        let v = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?.collect();
        v
    };
    let fmt = |v: &[(String, i64)]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
        }
    };
    let mut out = Vec::new();
    match (group("category"), group("namespace")) {
        (Ok(cats), Ok(nss)) => {
            let total: i64 = cats.iter().map(|(_, n)| n).sum();
            out.push(Check::ok("brain.db rows", format!("{total}; by category: {}", fmt(&cats))));
            let named: Vec<_> = nss.iter().filter(|(k, _)| !k.starts_with("person_pending:")).cloned().collect();
            out.push(Check::ok("brain.db namespaces", fmt(&named)));
            let pending: Vec<_> = nss.iter().filter(|(k, _)| k.starts_with("person_pending:")).cloned().collect();
            let n: i64 = pending.iter().map(|(_, n)| n).sum();
            out.push(Check::ok(
                "brain.db pending",
                if n == 0 {
                    "no facts waiting for review".into()
                } else {
                    format!("{n} facts waiting for review ({})", fmt(&pending))
                },
            ));
        }
        (Err(e), _) | (_, Err(e)) => out.push(Check::fail(
            "brain.db rows",
            e.to_string(),
            "the memories table can't be read: check the schema line above",
        )),
    }
    out
}

/// Other processes with brain.db (or its -wal) open, from /proc (only those this user may see).
fn holders(path: &Path) -> Check {
    let Ok(target) = std::fs::canonicalize(path) else { return Check::ok("brain.db holders", "unknown") };
    let wal = wal_path(&target);
    let me = std::process::id();
    let mut found = BTreeSet::new();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            if pid == me {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
            if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == target || l == wal)) {
                let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
                found.insert(format!("{pid} ({})", comm.trim()));
            }
        }
    }
    Check::ok(
        "brain.db holders",
        if found.is_empty() {
            "no other process has it open (that this user can see)".into()
        } else {
            found.into_iter().collect::<Vec<_>>().join(", ")
        },
    )
}

/// Conversation rows that still hold the voice provider's prompt scaffolding (written by older
/// loggers): read back clean by memory_lookup, but still matched by searches until `clean-turns`.
fn turns_check(conn: &Connection) -> Check {
    match crate::voice::clean_turns::count_polluted(conn) {
        Ok((_, 0)) => Check::ok("brain.db turns", "no conversation row holds prompt scaffolding"),
        Ok((scanned, n)) => Check::warn(
            "brain.db turns",
            format!("{n} of {scanned} conversation rows hold the voice provider's prompt scaffolding (HARD CONSTRAINTS …)"),
            "run `dotty-pi-ext clean-turns --dry-run` to see them, then `dotty-pi-ext clean-turns` (it writes a backup first; safe while pi runs)",
        ),
        Err(e) => Check::warn("brain.db turns", format!("conversation rows not read: {e}"), "check the schema line above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn make(dir: &Path, schema: &str) -> std::path::PathBuf {
        let p = dir.join("brain.db");
        let c = Connection::open(&p).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch(schema).unwrap();
        c.execute_batch("INSERT INTO memories(id,key,content,category,created_at,updated_at,namespace) VALUES ('1','k1','x','core','t','t','voice'),('2','k2','y','core','t','t','person_pending:ada')").unwrap();
        drop(c);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn healthy_brain_is_ok_and_nothing_is_written() {
        let d = tempfile::tempdir().unwrap();
        let p = make(d.path(), SCHEMA);
        let before = entries(d.path());
        let checks = check(&p, true, true);
        assert!(checks.iter().all(|c| c.status == Status::Ok), "{checks:#?}");
        let get = |n: &str| checks.iter().find(|c| c.name == n).unwrap().detail.clone();
        assert_eq!(get("brain.db journal"), "wal");
        assert!(get("brain.db rows").starts_with("2; by category: core 2"));
        assert!(get("brain.db pending").contains("1 facts waiting"));
        assert_eq!(entries(d.path()), before, "doctor created a file");
    }

    #[test]
    fn missing_fts_fails_and_missing_file_is_not_created() {
        let d = tempfile::tempdir().unwrap();
        let no_fts: String = SCHEMA.replace("CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(\n    key, content, content=memories, content_rowid=rowid\n);", "");
        let no_fts = no_fts.split("CREATE TRIGGER").next().unwrap().to_string()
            + &no_fts[no_fts.find("CREATE TABLE IF NOT EXISTS embedding_cache").unwrap()..];
        let p = make(d.path(), &no_fts);
        let checks = check(&p, true, true);
        let s = checks.iter().find(|c| c.name == "brain.db schema").unwrap();
        assert_eq!(s.status, Status::Fail);
        assert!(s.detail.contains("table memories_fts"), "{}", s.detail);

        let gone = d.path().join("nope/brain.db");
        let c = check(&gone, true, true);
        assert_eq!(c[0].status, Status::Fail);
        assert!(!gone.exists() && !d.path().join("nope").exists());
        assert_eq!(check(&gone, true, false)[0].status, Status::Warn);
    }

    #[test]
    fn world_readable_warns() {
        let d = tempfile::tempdir().unwrap();
        let p = make(d.path(), SCHEMA);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let c = check(&p, true, true);
        assert_eq!(c.iter().find(|c| c.name == "brain.db mode").unwrap().status, Status::Warn);
    }
}
