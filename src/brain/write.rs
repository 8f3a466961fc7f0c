//! The store's writes: the two row operations ([`WriteOp`]) and the group commit that the writer
//! threads run ([`Brain::write_all`]).

use super::{Brain, BrainError, Result};
use rusqlite::{params, Connection};
use std::sync::atomic::Ordering;

/// Writes one group commits at most (a bound on how long the first of them waits for its ack).
pub(super) const MAX_GROUP: usize = 64;

/// A row to append to `memories`.
#[derive(Debug, Clone)]
pub struct NewMemory<'a> {
    pub content: &'a str,
    pub category: &'a str,
    pub namespace: &'a str,
    pub importance: f64,
}

/// One write for a writer thread; its result is the row's id.
#[derive(Debug, Clone)]
pub enum WriteOp {
    /// Appends a row (see [`Brain::insert`]); `session_id` NULL unless a direct call gave one
    /// (production's `runRemember(fact, sessionId)`).
    Insert {
        content: String,
        category: String,
        namespace: String,
        importance: f64,
        ts: String,
        session_id: Option<String>,
    },
    /// Replaces a row's content (see [`Brain::update_content`]).
    Update { id: String, content: String, ts: String },
}

impl WriteOp {
    /// Runs the write on the write connection. The content is stripped once more, as bridge.py's
    /// store helper does (a cap that ends in whitespace loses it).
    fn apply(&self, c: &Connection) -> rusqlite::Result<String> {
        match self {
            WriteOp::Insert { content, category, namespace, importance, ts, session_id } => {
                let content = crate::text::strip(content);
                let id = uuid::Uuid::new_v4().to_string();
                let key = format!("voice_{category}_{ts}_{}", &id[..8]);
                c.prepare_cached(
                    "INSERT INTO memories (id, key, content, category, embedding, created_at, updated_at, \
                     session_id, namespace, importance, superseded_by) \
                     VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?5, ?8, ?6, ?7, NULL)",
                )?
                .execute(params![id, key, content, category, ts, namespace, importance, session_id])?;
                Ok(id)
            }
            WriteOp::Update { id, content, ts } => {
                let content = crate::text::strip(content);
                c.prepare_cached("UPDATE memories SET content = ?2, updated_at = ?3 WHERE id = ?1")?
                    .execute(params![id, content, ts])?;
                Ok(id.clone())
            }
        }
    }
}

impl Brain {
    /// Commits `ops` in one transaction and returns each one's result, in order; what the writer
    /// thread does with the writes it found queued. One write runs alone (autocommit, nothing
    /// added). A write that fails inside the group (a constraint, a trigger) is rolled back to its
    /// savepoint and gets its error while the others commit, as if each had run alone. When the
    /// group itself fails (BEGIN met another process's lock past the busy timeout, COMMIT failed),
    /// nothing of it is kept and each write runs again alone, so the group never fails a write
    /// that would have succeeded by itself. Results are returned only after COMMIT returned.
    pub(super) fn write_all(&self, ops: &[WriteOp]) -> Vec<Result<String>> {
        if let [op] = ops {
            return vec![self.with_writer(|c| op.apply(c))];
        }
        match self.with_writer(|c| commit_group(c, ops)) {
            Ok(out) => {
                self.stats.write_groups.fetch_add(1, Ordering::Relaxed);
                out.into_iter().map(|r| r.map_err(BrainError::from)).collect()
            }
            Err(e) => {
                crate::diag!("brain.db: a group of {} writes failed ({e}); writing them one by one", ops.len());
                ops.iter().map(|op| self.with_writer(|c| op.apply(c))).collect()
            }
        }
    }

    /// After a panic in the middle of a group: rolls back the transaction it left open, so that
    /// later writes don't land in it.
    pub(super) fn abandon_transaction(&self) {
        if let Some(c) = crate::sync::lock(&self.writer).as_ref() {
            if !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
        }
    }

    /// Appends a row; returns its id. `created_at` = `updated_at` = `ts`. The content is stripped
    /// once more, as bridge.py's store helper does (a cap that ends in whitespace loses it).
    pub fn insert(&self, m: &NewMemory<'_>, ts: &str) -> Result<String> {
        let op = WriteOp::Insert {
            content: m.content.into(),
            category: m.category.into(),
            namespace: m.namespace.into(),
            importance: m.importance,
            ts: ts.into(),
            session_id: None,
        };
        self.with_writer(|c| op.apply(c))
    }

    /// Replaces the content of a row this process wrote (the per-turn log's retry of the same turn),
    /// stripped as in [`Brain::insert`].
    pub fn update_content(&self, id: &str, content: &str, ts: &str) -> Result<()> {
        let op = WriteOp::Update { id: id.into(), content: content.into(), ts: ts.into() };
        self.with_writer(|c| op.apply(c)).map(drop)
    }
}

/// The group of [`Brain::write_all`] in one transaction: each write's result, or the group's
/// failure (after which nothing of it is kept).
///
/// Each write is one statement (its triggers included), and a statement that fails is undone by
/// SQLite alone while the transaction goes on: a failing write fails by itself without a savepoint
/// of its own. (Savepoints made FTS5 write its pending terms out at each one, a segment per row:
/// 17 % more CPU per grouped row, measured with better-sqlite3, issue 38.) A failure that ends the
/// transaction itself (`RAISE(ROLLBACK)`, a full disk) fails the group: nothing of it is kept.
fn commit_group(c: &Connection, ops: &[WriteOp]) -> rusqlite::Result<Vec<rusqlite::Result<String>>> {
    c.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let run = || -> rusqlite::Result<Vec<rusqlite::Result<String>>> {
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            match op.apply(c) {
                Err(e) if c.is_autocommit() => return Err(e), // the transaction is gone with it
                r => out.push(r),
            }
        }
        c.prepare_cached("COMMIT")?.execute([])?;
        Ok(out)
    };
    run().inspect_err(|_| {
        if !c.is_autocommit() {
            let _ = c.execute_batch("ROLLBACK");
        }
    })
}
