use super::*;
use crate::brain::SCHEMA_SQL;

const RULES: &str = "\n\n---\nHARD CONSTRAINTS for THIS reply (overrides everything else):\n1. Reply in ENGLISH ONLY.\nBegin your reply now.";

fn brain(dir: &Path, rows: &[(&str, &str, &str)]) -> PathBuf {
    let path = dir.join("brain.db");
    let c = Connection::open(&path).unwrap();
    c.execute_batch(SCHEMA_SQL).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    for (i, (content, category, namespace)) in rows.iter().enumerate() {
        c.execute(
            "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) \
             VALUES (?1, ?1, ?2, ?3, '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z', ?4, 0.3)",
            params![format!("k{i}"), content, category, namespace],
        )
        .unwrap();
    }
    path
}

fn contents(path: &Path) -> Vec<String> {
    let c = Connection::open(path).unwrap();
    let mut st = c.prepare("SELECT content FROM memories ORDER BY rowid").unwrap();
    let v = st.query_map([], |r| r.get(0)).unwrap().collect::<rusqlite::Result<_>>().unwrap();
    v
}

fn matches(path: &Path, phrase: &str) -> i64 {
    let c = Connection::open(path).unwrap();
    c.query_row("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1", [phrase], |r| r.get(0)).unwrap()
}

fn seeded(dir: &Path) -> PathBuf {
    let polluted = format!("user: hi{RULES} | assistant: 😊 Hello!");
    let polluted_empty = format!("user: bye{RULES} | assistant:");
    let cut = format!(
        "user: {} | assistant: ok",
        ("w".repeat(480) + "\n\n---\nHARD CONSTRAINTS for THIS reply").chars().take(500).collect::<String>()
    );
    let fact = format!("Brett said: {RULES}");
    brain(
        dir,
        &[
            (&polluted, "conversation", "voice"),
            ("user: clean | assistant: row", "conversation", "voice"),
            (&polluted_empty, "conversation", "voice"),
            (&fact, "core", "voice"),
            (&cut, "conversation", "voice"),
            ("Leo is 6", "core", "person_pending:leo"),
        ],
    )
}

#[test]
fn cleans_polluted_rows_in_place_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let before = contents(&path);
    // Two whole rule blocks and the fact (the cut row holds only `HARD CONSTRAI`).
    assert_eq!(matches(&path, "\"HARD CONSTRAINTS\""), 3);
    assert_eq!(matches(&path, "HARD"), 4);
    let out = run(&path, false, &Backup::Skip, &mut || {}).unwrap();
    assert_eq!((out.scanned, out.cleaned, out.skipped_changed, out.unchanged), (4, 3, 0, 1));
    let after = contents(&path);
    assert_eq!(after[0], "user: hi | assistant: 😊 Hello!");
    assert_eq!(after[1], before[1]);
    assert_eq!(after[2], "user: bye | assistant:");
    // A fact that quotes the rules is not a turn row: untouched.
    assert_eq!(after[3], before[3]);
    assert_eq!(after[4], format!("user: {} | assistant: ok", "w".repeat(480)));
    assert_eq!(after[5], before[5]);
    // The FTS index followed (only the fact still matches) and is consistent.
    assert_eq!(matches(&path, "\"HARD CONSTRAINTS\""), 1);
    assert_eq!(matches(&path, "HARD"), 1);
    let c = Connection::open(&path).unwrap();
    c.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)", []).unwrap();
    // Idempotent.
    let again = run(&path, false, &Backup::Skip, &mut || {}).unwrap();
    assert_eq!((again.cleaned, again.unchanged), (0, 4));
}

#[test]
fn a_dry_run_writes_nothing_and_shows_examples() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    // Checkpointed and closed: the file is the whole database.
    Connection::open(&path).unwrap().pragma_update(None, "journal_mode", "delete").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let out = run(&path, true, &Backup::Beside, &mut || {}).unwrap();
    assert_eq!((out.scanned, out.cleaned, out.unchanged), (4, 3, 1));
    assert_eq!(out.examples.len(), 3);
    assert_eq!(out.examples[0].1, "user: hi | assistant: 😊 Hello!");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // No backup, no -wal, no -shm.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("brain.db")]);
    let text = render(&path, true, &out);
    assert!(text.contains("3 would be cleaned, 1 unchanged"), "{text}");
    assert!(text.contains("before: \"user: hi\\n\\n---\\nHARD CONSTRAINTS"), "{text}");
}

#[test]
fn the_backup_is_a_private_copy_of_the_old_rows() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let before = contents(&path);
    let out = run(&path, false, &Backup::Beside, &mut || {}).unwrap();
    let backup = out.backup.clone().unwrap();
    assert_eq!(backup.parent(), path.parent());
    assert!(backup.file_name().unwrap().to_string_lossy().starts_with("brain.db.before-clean-turns-"));
    assert_eq!(std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(contents(&backup), before);
    // An existing file is never overwritten: nothing is cleaned then.
    let taken = dir.path().join("taken.bak");
    std::fs::write(&taken, "mine").unwrap();
    let path2 = {
        let d = dir.path().join("two");
        std::fs::create_dir(&d).unwrap();
        seeded(&d)
    };
    let e = run(&path2, false, &Backup::At(taken.clone()), &mut || {}).unwrap_err();
    assert!(e.why.contains("backup to") && e.why.contains("nothing cleaned"), "{}", e.why);
    assert_eq!(std::fs::read(&taken).unwrap(), b"mine");
    assert_eq!(contents(&path2)[0], before[0]);
}

#[test]
fn a_row_changed_after_it_was_read_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let conn = open_rw(&path).unwrap();
    let mut read = Vec::new();
    scan(&conn, |batch| {
        read.extend(batch);
        Ok::<_, rusqlite::Error>(())
    })
    .unwrap();
    let changes: Vec<(Row, String)> =
        read.into_iter().filter_map(|r| scaffolding::repair_row(&r.content).map(|n| (r, n))).collect();
    assert_eq!(changes.len(), 3);
    // Another writer rewrites the first polluted row and deletes the second in between.
    let other = Connection::open(&path).unwrap();
    other
        .execute("UPDATE memories SET content = content || ' (edited)' WHERE rowid = ?1", [changes[0].0.rowid])
        .unwrap();
    other.execute("DELETE FROM memories WHERE rowid = ?1", [changes[1].0.rowid]).unwrap();
    assert_eq!(write_batch(&conn, &changes, &mut || {}).unwrap(), 1);
    let after = contents(&path);
    assert!(after[0].ends_with(" (edited)") && after[0].contains("HARD CONSTRAINTS"));
}

#[test]
fn a_missing_file_or_another_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("brain.db");
    let e = run(&missing, false, &Backup::Beside, &mut || {}).unwrap_err();
    assert!(e.why.contains("no brain.db at"), "{}", e.why);
    assert!(!missing.exists());
    let other = dir.path().join("other.db");
    Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    let e = run(&other, false, &Backup::Skip, &mut || {}).unwrap_err();
    assert!(e.why.contains("not a brain.db"), "{}", e.why);
}

#[test]
fn doctor_counts_polluted_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let c = crate::brain::open_read_only(&path).unwrap();
    assert_eq!(count_polluted(&c).unwrap(), (4, 3));
}

#[test]
fn batches_cover_every_row() {
    // More rows than one batch, polluted and clean interleaved.
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(String, &str, &str)> = (0..(BATCH * 2 + 7))
        .map(|i| {
            (
                if i % 3 == 0 {
                    format!("user: t{i}{RULES} | assistant: a")
                } else {
                    format!("user: t{i} | assistant: a")
                },
                "conversation",
                "voice",
            )
        })
        .collect();
    let refs: Vec<(&str, &str, &str)> = rows.iter().map(|(a, b, c)| (a.as_str(), *b, *c)).collect();
    let path = brain(dir.path(), &refs);
    let out = run(&path, false, &Backup::Skip, &mut || {}).unwrap();
    let polluted = rows.iter().filter(|r| r.0.contains("HARD")).count() as u64;
    assert_eq!((out.scanned, out.cleaned), (rows.len() as u64, polluted));
    assert_eq!(matches(&path, "\"HARD CONSTRAINTS\""), 0);
}

#[test]
fn a_write_that_meets_another_writers_lock_waits_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = seeded(dir.path());
    let rival = Connection::open(&path).unwrap();
    rival.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.clone();
    let cleaner = std::thread::spawn(move || {
        let mut on_wait = || tx.send(()).unwrap();
        run(&p, false, &Backup::Skip, &mut on_wait).unwrap()
    });
    // The cleaner read the rows and now waits for the lock: rewrite one of them meanwhile.
    rx.recv().unwrap();
    rival.execute("UPDATE memories SET content = content || ' (edited)' WHERE rowid = 1", []).unwrap();
    rival.execute_batch("COMMIT").unwrap();
    let out = cleaner.join().unwrap();
    assert_eq!((out.cleaned, out.skipped_changed, out.unchanged), (2, 1, 1));
}
