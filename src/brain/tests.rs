use super::search::{split, SPLIT_ROWS};
use super::*;
use rusqlite::{params, OpenFlags};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn fresh(dir: &tempfile::TempDir) -> (Brain, PathBuf) {
    let p = dir.path().join("brain.db");
    let c = Connection::open(&p).unwrap();
    c.execute_batch(SCHEMA_SQL).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    (Brain::new(&p, false), p)
}

fn put(p: &Path, key: &str, content: &str, ns: Option<&str>, importance: Option<f64>, updated: &str) {
    let c = Connection::open(p).unwrap();
    c.execute(
        "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) \
         VALUES (?1, ?1, ?2, 'core', ?4, ?4, ?3, ?5)",
        params![key, content, ns, updated, importance],
    )
    .unwrap();
}

fn schema_of(p: &Path) -> Vec<(String, String)> {
    let c = Connection::open(p).unwrap();
    let mut st = c.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn creates_the_production_schema_at_the_default_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nested/memory/brain.db");
    let b = Brain::new(&p, true);
    b.warm_up().unwrap();
    assert!(p.exists());
    let reference = dir.path().join("ref.db");
    Connection::open(&reference).unwrap().execute_batch(SCHEMA_SQL).unwrap();
    assert_eq!(schema_of(&p), schema_of(&reference));
    assert_eq!(b.stats.files_created.load(Ordering::Relaxed), 1);
    let mode: String = Connection::open(&p).unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().contains("creating")), "{left:?}");
}

#[test]
fn an_explicit_missing_path_is_never_created() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("brain.db");
    let b = Brain::new(&p, false);
    assert!(matches!(b.lookup("\"x\"", 5), Err(BrainError::Missing(_))));
    assert!(matches!(
        b.insert(&NewMemory { content: "x", category: "core", namespace: "voice", importance: 0.7 }, "t"),
        Err(BrainError::Missing(_))
    ));
    assert!(!p.exists());
    // When the file appears later (ZeroClaw created it), the store starts working without a restart.
    Connection::open(&p).unwrap().execute_batch(SCHEMA_SQL).unwrap();
    assert_eq!(b.lookup("\"x\"", 5).unwrap(), Vec::<String>::new());
}

#[test]
fn an_existing_file_is_not_altered() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let before = schema_of(&p);
    b.insert(
        &NewMemory { content: "hello", category: "core", namespace: "voice", importance: 0.7 },
        "2026-01-01T00:00:00.000Z",
    )
    .unwrap();
    assert_eq!(schema_of(&p), before);
    assert_eq!(b.stats.files_created.load(Ordering::Relaxed), 0);
}

#[test]
#[allow(clippy::type_complexity, reason = "one tuple per column, read back exactly")]
fn insert_writes_the_contract_row() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let ts = "2026-05-18T00:43:00.123Z";
    let id = b
        .insert(&NewMemory { content: "likes tea", category: "core", namespace: "voice", importance: 0.7 }, ts)
        .unwrap();
    let c = Connection::open(&p).unwrap();
    let row: (String, String, String, String, Option<Vec<u8>>, String, String, Option<String>, String, f64, Option<String>) = c
        .query_row(
            "SELECT id, key, content, category, embedding, created_at, updated_at, session_id, namespace, importance, superseded_by FROM memories",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?)),
        )
        .unwrap();
    assert_eq!(row.0, id);
    assert!(uuid::Uuid::parse_str(&id).unwrap().get_version_num() == 4);
    assert_eq!(row.1, format!("voice_core_{ts}_{}", &id[..8]));
    assert_eq!((row.2.as_str(), row.3.as_str()), ("likes tea", "core"));
    assert_eq!(row.4, None);
    assert_eq!((row.5.as_str(), row.6.as_str()), (ts, ts));
    assert_eq!(row.7, None);
    assert_eq!(row.8, "voice");
    assert_eq!(row.9, 0.7);
    assert_eq!(row.10, None);
    // The FTS index follows (triggers), so the row is searchable at once.
    assert_eq!(b.lookup("\"likes tea\"", 5).unwrap(), vec!["likes tea"]);
}

#[test]
fn lookup_never_returns_pending_or_null_namespace_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    put(&p, "a", "the child likes dinosaurs", Some("person_pending:ada"), Some(0.7), "t");
    put(&p, "b", "the dog likes dinosaurs", None, Some(0.7), "t");
    put(&p, "c", "Dotty likes dinosaurs", Some("voice"), Some(0.7), "t");
    put(&p, "d", "grandad likes dinosaurs", Some("person:grandad"), Some(0.7), "t");
    let mut got = b.lookup("\"likes dinosaurs\"", 5).unwrap();
    got.sort();
    assert_eq!(got, vec!["Dotty likes dinosaurs", "grandad likes dinosaurs"]);
}

#[test]
fn person_facts_order_like_sqlite_with_foreign_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    put(&p, "1", "low", Some("person:ada"), Some(0.1), "2026-01-01T00:00:00.000Z");
    put(&p, "2", "null importance", Some("person:ada"), None, "2026-01-02");
    put(&p, "3", "high old", Some("person:ada"), Some(0.9), "2025-01-01 10:00:00");
    put(&p, "4", "high new", Some("person:ada"), Some(0.9), "2026-03-01T00:00:00Z");
    put(&p, "5", "pending", Some("person_pending:ada"), Some(1.0), "2026-03-01");
    put(&p, "6", "other", Some("person:bob"), Some(1.0), "2026-03-01");
    assert_eq!(b.person_facts("ada", 10).unwrap(), vec!["high new", "high old", "low", "null importance"]);
    assert_eq!(b.person_facts("ada", 2).unwrap(), vec!["high new", "high old"]);
}

#[test]
fn a_write_waits_for_another_writers_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let holder = Connection::open(&p).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE; INSERT INTO memories (id, key, content, created_at, updated_at) VALUES ('x','x','held','t','t');").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let b = Arc::new(b);
    let b2 = b.clone();
    let writer = std::thread::spawn(move || {
        tx.send(()).unwrap();
        let t0 = std::time::Instant::now();
        let r = b2.insert(&NewMemory { content: "waited", category: "core", namespace: "voice", importance: 0.7 }, "t");
        (r.map(|_| ()), t0.elapsed())
    });
    rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(1500)); // hold the lock: this is the fault under test
    holder.execute_batch("COMMIT").unwrap();
    let (r, waited) = writer.join().unwrap();
    r.unwrap();
    assert!(waited >= Duration::from_millis(1000), "the write did not wait: {waited:?}");
    let n: i64 = holder.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 2);
}

#[test]
fn update_content_rewrites_one_row_and_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _p) = fresh(&dir);
    let id = b
        .insert(
            &NewMemory { content: "first try", category: "conversation", namespace: "voice", importance: 0.3 },
            "t1",
        )
        .unwrap();
    b.update_content(&id, "second try", "t2").unwrap();
    assert_eq!(b.lookup("\"second try\"", 5).unwrap(), vec!["second try"]);
    assert!(b.lookup("\"first try\"", 5).unwrap().is_empty());
}

fn note(b: &Brain, content: &str) -> Result<String> {
    b.insert(&NewMemory { content, category: "core", namespace: "voice", importance: 0.7 }, "t")
}

fn contents(p: &Path) -> Vec<String> {
    let c = Connection::open_with_flags(p, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut st = c.prepare("SELECT content FROM memories ORDER BY rowid").unwrap();
    st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_store_strips_the_content_once_more() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let id = note(&b, &format!("{} ", "a".repeat(299))).unwrap();
    assert_eq!(contents(&p), vec!["a".repeat(299)]);
    b.update_content(&id, "user: hi | assistant: ", "t2").unwrap();
    assert_eq!(contents(&p), vec!["user: hi | assistant:"]);
}

#[test]
fn a_file_renamed_over_the_path_is_reopened_and_the_old_one_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    note(&b, "before the restore").unwrap();
    assert_eq!(b.lookup("\"before the restore\"", 5).unwrap().len(), 1);
    // A second name for the original inode, then a restore renamed over the path.
    let old = dir.path().join("old-inode.db");
    std::fs::hard_link(&p, &old).unwrap();
    let restored = dir.path().join("restore.tmp");
    let c = Connection::open(&restored).unwrap();
    c.execute_batch(SCHEMA_SQL).unwrap();
    c.execute(
        "INSERT INTO memories (id, key, content, created_at, updated_at) VALUES ('r','r','from the backup','t','t')",
        [],
    )
    .unwrap();
    drop(c);
    std::fs::rename(&restored, &p).unwrap();

    note(&b, "after the restore").unwrap();
    assert_eq!(b.lookup("\"after the restore\"", 5).unwrap(), vec!["after the restore"]);
    assert_eq!(b.lookup("\"from the backup\"", 5).unwrap(), vec!["from the backup"]);
    assert!(b.lookup("\"before the restore\"", 5).unwrap().is_empty());
    assert_eq!(b.stats.writer_opens.load(Ordering::Relaxed), 2);
    drop(b);
    assert_eq!(contents(&p), vec!["from the backup", "after the restore"]);
    // The old inode holds what was written before (checkpointed into it) and nothing after.
    assert_eq!(contents(&old), vec!["before the restore"]);
    let ok: String = Connection::open(&p).unwrap().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn a_deleted_default_file_is_created_again() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("memory/brain.db");
    let b = Brain::new(&p, true);
    note(&b, "first life").unwrap();
    std::fs::remove_file(&p).unwrap();
    note(&b, "second life").unwrap();
    assert_eq!(b.lookup("\"second life\"", 5).unwrap(), vec!["second life"]);
    assert!(b.lookup("\"first life\"", 5).unwrap().is_empty());
    assert_eq!(b.stats.files_created.load(Ordering::Relaxed), 2);
    drop(b);
    assert_eq!(contents(&p), vec!["second life"]);
}

#[test]
fn an_explicit_file_gone_fails_until_a_file_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    note(&b, "while here").unwrap();
    let aside = dir.path().join("aside.db");
    std::fs::rename(&p, &aside).unwrap();
    assert!(matches!(note(&b, "while gone"), Err(BrainError::Missing(_))));
    assert!(matches!(b.lookup("\"while here\"", 5), Err(BrainError::Missing(_))));
    assert!(!p.exists());
    assert_eq!(contents(&aside), vec!["while here"]);
    // The same file back at the path (another inode would do as well).
    std::fs::rename(&aside, &p).unwrap();
    note(&b, "back again").unwrap();
    assert_eq!(b.lookup("\"while here\"", 5).unwrap(), vec!["while here"]);
    drop(b);
    assert_eq!(contents(&p), vec!["while here", "back again"]);
}

#[test]
fn a_created_brain_db_is_private_and_so_are_the_folders_made_for_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("home");
    std::fs::create_dir(&existing).unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = existing.join(".pi/memory/brain.db");
    let b = Brain::new(&p, true);
    note(&b, "a fact about a child").unwrap();
    assert_eq!(mode(&existing), 0o755, "an existing folder keeps its mode");
    assert_eq!((mode(&existing.join(".pi")), mode(&existing.join(".pi/memory"))), (0o700, 0o700));
    for suffix in ["", "-wal", "-shm"] {
        let f = PathBuf::from(format!("{}{suffix}", p.display()));
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
}

#[test]
fn an_existing_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    note(&b, "x").unwrap();
    assert_eq!(mode(&p), 0o644);
}

/// The contract's lookup, as SQLite answers it in one statement: what `lookup` must equal.
fn contract_lookup(p: &Path, phrase: &str, limit: u32) -> Vec<String> {
    let c = Connection::open(p).unwrap();
    let mut st = c
        .prepare(
            "SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid \
             WHERE memories_fts MATCH ?1 AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT ?2",
        )
        .unwrap();
    st.query_map(params![phrase, limit], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

/// `n` rows of few distinct texts (so ranks tie), every 7th an unreviewed person fact, and the
/// 40 best matches for "alpha" all unreviewed (more than the search keeps at first).
fn many_rows(p: &Path, n: i64) {
    let c = Connection::open(p).unwrap();
    c.execute_batch(&format!(
        "BEGIN;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < {n})
         INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance)
         SELECT 'id' || x, 'k' || x,
                CASE x % 5 WHEN 0 THEN 'alpha beta' WHEN 1 THEN 'alpha beta gamma delta' WHEN 2 THEN 'beta gamma'
                           WHEN 3 THEN 'alpha alpha beta gamma delta epsilon zeta' ELSE 'delta' END,
                'core', 't', 't', CASE WHEN x % 7 = 0 THEN 'person_pending:x' WHEN x % 11 = 0 THEN NULL ELSE 'voice' END, 0.5
         FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
         INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance)
         SELECT 'p' || x, 'pk' || x, 'alpha', 'core', 't', 't', 'person_pending:y', 0.5 FROM i;
         COMMIT;"
    ))
    .unwrap();
}

#[test]
fn lookup_gives_the_contract_rows_in_its_order_ties_and_pending_rows_included() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    many_rows(&p, 3000);
    for phrase in
        ["\"alpha\"", "\"beta\"", "\"gamma delta\"", "\"delta\"", "\"zeta\"", "\"nothing here\"", "\"alpha beta\""]
    {
        for limit in [1, 5, 20] {
            assert_eq!(b.lookup(phrase, limit).unwrap(), contract_lookup(&p, phrase, limit), "{phrase} limit {limit}");
        }
    }
}

#[test]
fn a_split_lookup_merges_to_the_contract_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (mut b, p) = fresh(&dir);
    b.split_rows = 20_000;
    many_rows(&p, 25_000);
    let b = Arc::new(b);
    b.lookup("\"delta\"", 5).unwrap(); // learns the table's size: the next lookups are split
    assert_eq!(split(b.rows_seen.load(Ordering::Relaxed), 2, b.split_rows).len(), 2);
    for phrase in ["\"alpha\"", "\"beta\"", "\"gamma delta\"", "\"zeta\"", "\"nothing here\""] {
        let (tx, rx) = std::sync::mpsc::channel();
        b.submit_lookup(phrase.to_string(), 5, move |r| tx.send(r.unwrap()).unwrap());
        assert_eq!(rx.recv().unwrap(), contract_lookup(&p, phrase, 5), "{phrase}");
    }
}

#[test]
fn split_ranges_cover_every_rowid() {
    assert_eq!(split(10, 2, SPLIT_ROWS), vec![(i64::MIN, i64::MAX)]);
    assert_eq!(split(1_000_000, 1, SPLIT_ROWS), vec![(i64::MIN, i64::MAX)]);
    assert_eq!(split(1_000_000, 2, SPLIT_ROWS), vec![(i64::MIN, 500_000), (500_001, i64::MAX)]);
    assert_eq!(split(90_000, 3, 1000), vec![(i64::MIN, 30_000), (30_001, 60_000), (60_001, i64::MAX)]);
}

fn op(content: &str) -> WriteOp {
    WriteOp::Insert {
        content: content.into(),
        category: "core".into(),
        namespace: "voice".into(),
        importance: 0.7,
        ts: "t".into(),
    }
}

#[test]
fn a_write_failing_in_a_group_fails_alone_and_the_others_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    Connection::open(&p)
        .unwrap()
        .execute_batch("CREATE TRIGGER refuse BEFORE INSERT ON memories WHEN new.content = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END;")
        .unwrap();
    let out = b.write_all(&[op("good one"), op("bad"), op("good two")]);
    assert!(out[0].is_ok() && out[2].is_ok(), "{out:?}");
    assert!(matches!(&out[1], Err(BrainError::Sqlite(e)) if e.to_string().contains("refused")), "{out:?}");
    assert_eq!(contents(&p), vec!["good one", "good two"]);
    // The index took the two rows and nothing of the refused one.
    assert_eq!(contract_lookup(&p, "\"good\"", 5).len(), 2);
    assert_eq!(b.stats.write_groups.load(Ordering::Relaxed), 1);
    // The connection is out of the transaction: a lone write after it commits by itself.
    b.write_all(&[op("later")]).pop().unwrap().unwrap();
    assert_eq!(contents(&p).len(), 3);
}

#[test]
fn queued_writes_commit_together_and_each_is_acknowledged_after_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let b = Arc::new(b);
    // Another process holds the write lock: the first write waits in the writer thread, the rest
    // queue behind it and go in together once the lock is free.
    let holder = Connection::open(&p).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..21 {
        let (tx, p) = (tx.clone(), p.clone());
        b.submit_write(op(&format!("queued {i}")), move |r| {
            let id = r.unwrap();
            // Acknowledged: another connection sees the row.
            let seen: i64 = Connection::open(&p)
                .unwrap()
                .query_row("SELECT count(*) FROM memories WHERE id = ?1", [&id], |r| r.get(0))
                .unwrap();
            tx.send(seen).unwrap();
        });
    }
    drop(tx);
    std::thread::sleep(Duration::from_millis(300)); // the lock held: the fault under test
    holder.execute_batch("COMMIT").unwrap();
    let seen: Vec<i64> = rx.iter().collect();
    assert_eq!(seen, vec![1; 21]);
    assert_eq!(contents(&p).len(), 21);
    let groups = b.stats.write_groups.load(Ordering::Relaxed);
    assert!((1..=2).contains(&groups), "{groups} groups for 21 writes");
    // In submission order.
    assert_eq!(contents(&p).last().unwrap(), "queued 20");
}

#[test]
fn a_job_goes_to_the_worker_on_the_callers_core_when_idle_or_finishing_else_the_first_idle_one() {
    use lanes::{choose, Choice::*};
    const ANY: usize = usize::MAX;
    let cores = || [0, 1, 2, 3].into_iter();
    assert_eq!(choose(0b1111, 0, cores(), 2), Wake(2));
    assert_eq!(choose(0b1011, 0, cores(), 2), Wake(0), "the worker on core 2 is busy");
    assert_eq!(choose(0b1011, 0b0100, cores(), 2), Claim(2), "answering its last job: it takes this one next, unwoken");
    assert_eq!(choose(0b0001, 0b0100, cores(), 1), Wake(0), "finishing elsewhere doesn't count");
    assert_eq!(choose(0b1000, 0, cores(), 0), Wake(3));
    assert_eq!(choose(0, 0b0010, cores(), 3), Nobody, "all busy: the first to finish takes it");
    assert_eq!(choose(0b11, 0, [ANY, ANY].into_iter(), ANY), Wake(0), "workers that float");
    assert_eq!(choose(0b10, 0b01, [ANY, ANY].into_iter(), 5), Wake(1));
}

#[test]
fn writes_from_many_threads_all_land_each_thread_in_its_own_order() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let b = Arc::new(b);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (b, tx) = (b.clone(), tx.clone());
            s.spawn(move || {
                for i in 0..50 {
                    let tx = tx.clone();
                    b.submit_write(op(&format!("t{t} {i:02}")), move |r| {
                        tx.send(r.map(|_| ()).map_err(|e| e.to_string())).unwrap()
                    });
                }
            });
        }
    });
    drop(tx);
    let acks: Vec<_> = rx.iter().collect();
    assert_eq!(acks.len(), 200);
    assert!(acks.iter().all(|a| a.is_ok()), "{acks:?}");
    let rows = contents(&p);
    assert_eq!(rows.len(), 200);
    for t in 0..4 {
        let mine: Vec<&String> = rows.iter().filter(|c| c.starts_with(&format!("t{t} "))).collect();
        let mut sorted = mine.clone();
        sorted.sort();
        assert_eq!(mine, sorted, "thread {t}'s writes committed out of the order it queued them");
    }
}
