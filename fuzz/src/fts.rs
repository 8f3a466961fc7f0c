//! `fts_phrase`: the quoted query must be accepted by SQLite's FTS5 and match exactly its phrase.
//!
//! Except a query holding a NUL: FTS5 reads a query only up to a NUL, so that phrase is refused
//! ("unterminated string"), and the contract answers any database error with `(no memories
//! found)`: byte for byte what the production extension (better-sqlite3) answers. The check is
//! then that FTS5 refuses it (never that it matches something else).
//!
//! "Exactly the phrase" with FTS5's tokenizer (unicode61, as `memories_fts` uses): a row matches
//! when its token sequence contains the query's token sequence contiguously, and no other row
//! matches (no `OR`, `NEAR`, `*` prefix, `^`, column filter or parenthesis in the text acts as an
//! operator). Tokens are read back from the index itself (an `fts5vocab` instance table), so the
//! expectation uses SQLite's own tokenization. The row holding exactly the query text always
//! matches when the query has a token.

use dotty_pi_ext::text::fts_phrase;
use rusqlite::Connection;
use std::cell::RefCell;

thread_local! {
    static DB: RefCell<Connection> = RefCell::new(open());
}

fn open() -> Connection {
    let c = Connection::open_in_memory().expect("an in-memory database");
    // The same tokenizer as brain-schema.sql's memories_fts (the default: unicode61).
    c.execute_batch("CREATE VIRTUAL TABLE t USING fts5(content); CREATE VIRTUAL TABLE v USING fts5vocab(t, instance);")
        .expect("fts5 tables");
    c
}

/// Input: the query text, then optional other rows, separated by 0xFF bytes (never part of UTF-8).
/// Row 1 is the query text itself.
pub fn check(data: &[u8]) {
    let texts: Vec<String> =
        data.split(|&b| b == 0xff).take(8).map(|p| String::from_utf8_lossy(p).into_owned()).collect();
    let query = &texts[0];
    let phrase = fts_phrase(query);

    // The shape: one string literal, inner quotes doubled, nothing outside it.
    let inner = phrase.strip_prefix('"').and_then(|p| p.strip_suffix('"')).expect("wrapped in quotes");
    assert_eq!(inner.replace("\"\"", "\""), *query);
    assert_eq!(inner.matches('"').count(), 2 * query.matches('"').count());

    DB.with(|db| {
        let db = db.borrow();
        db.execute("DELETE FROM t", []).expect("clear");
        for (i, t) in texts.iter().enumerate() {
            db.execute("INSERT INTO t(rowid, content) VALUES (?1, ?2)", rusqlite::params![i as i64 + 1, t])
                .expect("insert");
        }
        let mut tokens: Vec<Vec<String>> = vec![Vec::new(); texts.len()];
        let mut st = db.prepare_cached("SELECT doc, term FROM v ORDER BY doc, offset").expect("vocab");
        let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))).expect("vocab rows");
        for row in rows {
            let (doc, term) = row.expect("vocab row");
            tokens[doc as usize - 1].push(term);
        }
        let q = &tokens[0];
        let expected: Vec<i64> = (0..texts.len())
            .filter(|&i| !q.is_empty() && tokens[i].windows(q.len()).any(|w| w == q.as_slice()))
            .map(|i| i as i64 + 1)
            .collect();
        let mut st = db.prepare_cached("SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rowid").expect("match");
        let got: Result<Vec<i64>, _> = st.query_map([&phrase], |r| r.get(0)).and_then(|rows| rows.collect());
        if query.contains('\0') {
            assert!(
                got.is_err(),
                "FTS5 took the phrase {phrase:?} with a NUL (the contract expects its error): {got:?}"
            );
            return;
        }
        let got = got.unwrap_or_else(|e| panic!("FTS5 refused the phrase {phrase:?}: {e}"));
        assert_eq!(got, expected, "phrase {phrase:?} (tokens {q:?}) over {texts:?} (tokens {tokens:?})");
        if !q.is_empty() {
            assert!(got.contains(&1), "the row holding the query text matches");
        }
    });
}
