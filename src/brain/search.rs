//! The store's reads: the phrase search over `memories_fts` (the contract's lookup, found with a
//! heap instead of FTS5's sorter, and split over the readers on a large table) and a person's facts.

use super::{Brain, Result};
use crate::sync::lock;
use rusqlite::{params, Connection};
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Below this many rows a lookup runs as one search. Each part of a split search pays for some
/// work again (FTS5 counts the phrase's rows over the whole index for bm25's idf, per statement):
/// bench/floor.rs measured 36 ms of CPU split vs 25 ms whole per lookup at 1M rows, and at 100k
/// rows the split was slower than one search on a busy machine. It pays where one search is long.
pub(super) const SPLIT_ROWS: i64 = 200_000;

/// A row [`Brain::lookup_range`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub rank: f64,
    pub rowid: i64,
    pub content: String,
}

/// A match in the heap of [`Brain::lookup_range`], ordered as the contract's `ORDER BY rank`
/// orders it: by rank, equal ranks by rowid (checked against FTS5's own sorter on the bench's 1M
/// rows, ties included: bench/floor.rs).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    rank: f64,
    rowid: i64,
}

impl Eq for Ranked {}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank.total_cmp(&other.rank).then(self.rowid.cmp(&other.rowid))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn none_if_no_row<T>(e: rusqlite::Error) -> rusqlite::Result<Option<T>> {
    match e {
        rusqlite::Error::QueryReturnedNoRows => Ok(None),
        e => Err(e),
    }
}

/// The rowid ranges a lookup is split into, from the table's largest rowid as last seen: one per
/// reader on a large table, else one. Together they cover every rowid (rows added since are in the
/// last range).
pub(super) fn split(max_rowid: i64, readers: usize, min_rows: i64) -> Vec<(i64, i64)> {
    if max_rowid < min_rows || readers < 2 {
        return vec![(i64::MIN, i64::MAX)];
    }
    let step = max_rowid / readers as i64;
    (0..readers as i64)
        .map(|i| {
            (
                if i == 0 { i64::MIN } else { i * step + 1 },
                if i + 1 == readers as i64 { i64::MAX } else { (i + 1) * step },
            )
        })
        .collect()
}

/// Where a lookup's rows go (called once, on a reader thread).
type LookupDone = Box<dyn FnOnce(Result<Vec<String>>) + Send>;

/// A lookup split over rowid ranges, while its parts come in: each part's hits are added, and the
/// last part in merges them and answers (or the first part that fails answers with its error).
struct SplitLookup {
    parts: Mutex<Parts>,
    done: Mutex<Option<LookupDone>>,
    limit: u32,
}

/// The hits of the parts in so far, and how many parts are still out.
struct Parts {
    hits: Vec<Hit>,
    outstanding: usize,
}

impl SplitLookup {
    fn add(&self, part: Result<Vec<Hit>>) {
        let hits = match part {
            Err(e) => return self.finish(Err(e)),
            Ok(hits) => {
                let mut parts = lock(&self.parts);
                parts.hits.extend(hits);
                parts.outstanding -= 1;
                if parts.outstanding > 0 {
                    return;
                }
                std::mem::take(&mut parts.hits)
            }
        };
        let mut hits = hits;
        hits.sort_by(|a, b| Ranked { rank: a.rank, rowid: a.rowid }.cmp(&Ranked { rank: b.rank, rowid: b.rowid }));
        self.finish(Ok(hits.into_iter().take(self.limit as usize).map(|h| h.content).collect()));
    }

    /// Answers once: the first failing part, or the last part in.
    fn finish(&self, r: Result<Vec<String>>) {
        let done = lock(&self.done).take();
        if let Some(done) = done {
            done(r);
        }
    }
}

impl Brain {
    /// Phrase search over `memories_fts`, best first, never returning unreviewed person facts:
    /// the rows of
    ///
    /// ```sql
    /// SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
    /// WHERE memories_fts MATCH ?1 AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT ?2
    /// ```
    ///
    /// (the contract's query), found with less work: see [`Brain::lookup_range`].
    pub fn lookup(&self, fts_phrase: &str, limit: u32) -> Result<Vec<String>> {
        Ok(self.lookup_range(fts_phrase, (i64::MIN, i64::MAX), limit)?.into_iter().map(|h| h.content).collect())
    }

    /// [`Brain::lookup`] on the store's reader threads; `done` gets the rows there. On a large
    /// table the rowids are split in as many ranges as there are readers, searched at once and
    /// merged (each range's best rows, then the best of those by rank and rowid: the same rows
    /// in the same order as one search, since the contract's order is rank, then rowid).
    pub fn submit_lookup(
        self: &Arc<Self>,
        fts_phrase: String,
        limit: u32,
        done: impl FnOnce(Result<Vec<String>>) + Send + 'static,
    ) {
        let ranges = split(self.rows_seen.load(Ordering::Relaxed), self.lanes.spare_readers(), self.split_rows);
        if let [range] = ranges[..] {
            return self.submit_read(
                move |b| b.lookup_range(&fts_phrase, range, limit),
                move |r| done(r.map(|hits| hits.into_iter().map(|h| h.content).collect())),
            );
        }
        let lookup = Arc::new(SplitLookup {
            parts: Mutex::new(Parts { hits: Vec::new(), outstanding: ranges.len() }),
            done: Mutex::new(Some(Box::new(done))),
            limit,
        });
        for range in ranges {
            let (phrase, lookup) = (fts_phrase.clone(), lookup.clone());
            self.submit_read(move |b| b.lookup_range(&phrase, range, limit), move |r| lookup.add(r));
        }
    }

    /// The best `limit` rows for `fts_phrase` among rowids in `range` (inclusive), by rank then
    /// rowid, with their rank and rowid.
    ///
    /// Why not the contract's SQL as it stands: with `ORDER BY rank` FTS5 ranks every match in its
    /// own sorter over the whole table (a rowid range doesn't narrow it), and that sorter was 40%
    /// of a broad lookup's CPU at 1M rows (bench/README.md). Here the matches stream with their
    /// `rank` (the same rank function on the same statistics), the best ones are kept in a heap,
    /// and only those are joined to `memories`, with the contract's own namespace test in SQL. A
    /// too-small heap (too many of the best rows were unreviewed person facts) is retried larger.
    pub fn lookup_range(&self, fts_phrase: &str, range: (i64, i64), limit: u32) -> Result<Vec<Hit>> {
        let limit = limit as usize;
        self.with_reader(|c| {
            // One read transaction for the lookup's statements (the largest rowid, the matches, each
            // kept row): one snapshot, and SQLite takes its file locks once instead of per statement
            // (2 `fcntl`s and an `fstat` each: 14 and 7 per lookup in autocommit, measured).
            let _snapshot = ReadTransaction::begin(c)?;
            let max: Option<i64> = c.prepare_cached("SELECT max(rowid) FROM memories")?.query_row([], |r| r.get(0))?;
            self.rows_seen.store(max.unwrap_or(0), Ordering::Relaxed);
            let mut keep = limit + 8;
            loop {
                let (best, matches) = best_matches(c, fts_phrase, range, keep)?;
                let hits = reviewed_rows(c, best, limit)?;
                if hits.len() == limit || matches <= keep {
                    return Ok(hits);
                }
                keep *= 4;
            }
        })
    }

    /// Approved facts about one person (`namespace = 'person:' || id`), most important and newest first.
    pub fn person_facts(&self, person_id: &str, limit: u32) -> Result<Vec<String>> {
        self.with_reader(|c| {
            let mut st = c.prepare_cached(
                "SELECT content FROM memories WHERE namespace = 'person:' || ?1 \
                 ORDER BY importance DESC, updated_at DESC LIMIT ?2",
            )?;
            // content is NOT NULL in the schema, but other writers are not ours: read it leniently.
            let rows = st.query_map(params![person_id, limit], |r| r.get::<_, Option<String>>(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.into_iter().flatten().collect())
        })
    }
}

/// A read transaction on a pooled connection, ended when dropped (also when a statement inside it
/// failed or panicked), so that the connection goes back to the pool outside any transaction.
struct ReadTransaction<'c>(&'c Connection);

impl<'c> ReadTransaction<'c> {
    fn begin(c: &'c Connection) -> rusqlite::Result<Self> {
        c.prepare_cached("BEGIN")?.execute([])?;
        Ok(ReadTransaction(c))
    }
}

impl Drop for ReadTransaction<'_> {
    fn drop(&mut self) {
        // A read transaction has nothing to commit: this only releases the snapshot and its locks.
        if let Err(e) = self.0.prepare_cached("COMMIT").and_then(|mut st| st.execute([])) {
            if !self.0.is_autocommit() {
                let _ = self.0.execute_batch("ROLLBACK");
            }
            crate::diag!("brain.db: ending a read transaction: {e}");
        }
    }
}

/// The `keep` best matches of `fts_phrase` among rowids in `range`, best first, and how many rows
/// matched in all: the matches stream from FTS5 with their rank, and a heap keeps the best.
fn best_matches(
    c: &Connection,
    fts_phrase: &str,
    range: (i64, i64),
    keep: usize,
) -> rusqlite::Result<(Vec<Ranked>, usize)> {
    let mut best = BinaryHeap::with_capacity(keep + 1);
    let mut matches = 0usize;
    let mut st = c.prepare_cached(
        "SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
    )?;
    let mut rows = st.query(params![fts_phrase, range.0, range.1])?;
    while let Some(r) = rows.next()? {
        matches += 1;
        best.push(Ranked { rank: r.get(1)?, rowid: r.get(0)? });
        if best.len() > keep {
            best.pop();
        }
    }
    Ok((best.into_sorted_vec(), matches))
}

/// The first `limit` of `best` (in order) that are not unreviewed person facts, with their content:
/// the contract's namespace test, in SQL, on the few rows kept.
fn reviewed_rows(c: &Connection, best: Vec<Ranked>, limit: usize) -> rusqlite::Result<Vec<Hit>> {
    let mut hits = Vec::with_capacity(limit);
    let mut content =
        c.prepare_cached("SELECT content FROM memories WHERE rowid = ?1 AND namespace NOT LIKE 'person_pending:%'")?;
    for Ranked { rank, rowid } in best {
        if hits.len() == limit {
            break;
        }
        if let Some(text) = content.query_row([rowid], |r| r.get::<_, String>(0)).map(Some).or_else(none_if_no_row)? {
            hits.push(Hit { rank, rowid, content: text });
        }
    }
    Ok(hits)
}
