//! The file under the store: created (privately, atomically) only at the default path, never altered
//! when it exists, and followed when it is replaced or removed under the open store.

use super::*;

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

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
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
