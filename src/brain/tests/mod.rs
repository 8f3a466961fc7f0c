//! The store's tests, by part (`file`, `search`, `write`; the threads' own test is in `lanes`),
//! each on a real SQLite file in a temporary folder; the helpers they share are here.

use super::*;
use rusqlite::{params, OpenFlags};
use std::sync::atomic::Ordering;

mod file;
mod search;
mod write;

fn fresh(dir: &tempfile::TempDir) -> (Brain, PathBuf) {
    let p = dir.path().join("brain.db");
    let c = Connection::open(&p).unwrap();
    c.execute_batch(SCHEMA_SQL).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    (Brain::new(&p, false), p)
}

fn note(b: &Brain, content: &str) -> Result<String> {
    b.insert(&NewMemory { content, category: "core", namespace: "voice", importance: 0.7 }, "t")
}

fn contents(p: &Path) -> Vec<String> {
    let c = Connection::open_with_flags(p, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut st = c.prepare("SELECT content FROM memories ORDER BY rowid").unwrap();
    st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
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
