//! The reads: the lookup gives the contract's rows in the contract's order, split or not, and
//! never an unreviewed person fact; a person's facts in the contract's order.

use super::*;
use crate::brain::search::{split, SPLIT_ROWS};

fn put(p: &Path, key: &str, content: &str, ns: Option<&str>, importance: Option<f64>, updated: &str) {
    let c = Connection::open(p).unwrap();
    c.execute(
        "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) \
         VALUES (?1, ?1, ?2, 'core', ?4, ?4, ?3, ?5)",
        params![key, content, ns, updated, importance],
    )
    .unwrap();
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

/// A lookup reads in one transaction and ends it: its pooled connection keeps no snapshot (a later
/// lookup sees a row written since, a TRUNCATE checkpoint isn't blocked), also after a failing one.
#[test]
fn a_lookup_ends_its_read_transaction_even_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (b, p) = fresh(&dir);
    put(&p, "a", "the cat is called Miso", Some("voice"), Some(0.7), "t");
    assert_eq!(b.lookup("\"cat\"", 5).unwrap(), vec!["the cat is called Miso"]);
    assert!(b.lookup("\"cat", 5).is_err(), "an unterminated phrase is an FTS5 syntax error");
    put(&p, "b", "the cat sleeps all day", Some("voice"), Some(0.7), "t");
    assert_eq!(b.lookup("\"cat\"", 5).unwrap().len(), 2, "the second row is seen: no snapshot held");
    let c = Connection::open(&p).unwrap();
    let busy: i64 = c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).unwrap();
    assert_eq!(busy, 0, "no reader holds the WAL");
    assert_eq!(b.stats().reader_opens, 1, "one pooled connection, reused after the error");
}
