//! The writes: the contract's row, waiting out another writer's lock, and the group commit (each
//! write acknowledged after its COMMIT, a failing one failing alone, every thread's order kept).

use super::*;
use std::time::Duration;

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

#[test]
fn the_store_strips_the_content_once_more() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    let id = note(&b, &format!("{} ", "a".repeat(299))).unwrap();
    assert_eq!(contents(&p), vec!["a".repeat(299)]);
    b.update_content(&id, "user: hi | assistant: ", "t2").unwrap();
    assert_eq!(contents(&p), vec!["user: hi | assistant:"]);
}

fn op(content: &str) -> WriteOp {
    WriteOp::Insert {
        content: content.into(),
        category: "core".into(),
        namespace: "voice".into(),
        importance: 0.7,
        ts: "t".into(),
        session_id: None,
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

/// Without a savepoint per write (issue 38): a write refused after its row and its index entries
/// were made (an AFTER trigger) leaves nothing of either, and a write whose failure ends the
/// transaction (`RAISE(ROLLBACK)`) fails the group, whose writes then run alone: it fails by
/// itself and the others land once.
#[test]
fn a_group_write_refused_after_its_triggers_leaves_nothing_and_one_ending_the_transaction_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    Connection::open(&p)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse_after AFTER INSERT ON memories WHEN new.content = 'late bad' \
             BEGIN SELECT RAISE(ABORT, 'refused late'); END;
             CREATE TRIGGER end_all BEFORE INSERT ON memories WHEN new.content = 'fatal' \
             BEGIN SELECT RAISE(ROLLBACK, 'rolled back'); END;",
        )
        .unwrap();
    let out = b.write_all(&[op("good one"), op("late bad"), op("good two")]);
    assert!(out[0].is_ok() && out[2].is_ok(), "{out:?}");
    assert!(matches!(&out[1], Err(BrainError::Sqlite(e)) if e.to_string().contains("refused late")), "{out:?}");
    assert_eq!(contents(&p), vec!["good one", "good two"]);
    assert_eq!(contract_lookup(&p, "\"late bad\"", 5), Vec::<String>::new(), "no index entry of the refused row");
    assert_eq!(contract_lookup(&p, "\"good\"", 5).len(), 2);
    let out = b.write_all(&[op("third"), op("fatal"), op("fourth")]);
    assert!(out[0].is_ok() && out[2].is_ok(), "{out:?}");
    assert!(matches!(&out[1], Err(BrainError::Sqlite(e)) if e.to_string().contains("rolled back")), "{out:?}");
    assert_eq!(contents(&p), vec!["good one", "good two", "third", "fourth"]);
    assert_eq!(b.stats.write_groups.load(Ordering::Relaxed), 1, "the second group failed and ran alone");
    b.write_all(&[op("later")]).pop().unwrap().unwrap();
    assert_eq!(contents(&p).len(), 5);
}
