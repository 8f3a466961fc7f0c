//! The last feed's outcome, kept for the operator in `<agentDir>/mempalace-feed/last-outcome.json`:
//! one small private file, replaced after every feed that ran (fed, nothing to feed, failed), so a
//! failed feed can be seen after its stderr line has scrolled away. Skips are not kept: nothing
//! ran. This module writes the file and is the one that reads it (`/mempalace status`, `doctor`).
//! A feed's redactions are kept as counts per kind (`"redacted": {"jwt": 2}`), never the values.

use super::FeedOutcome;
use crate::palace::feed::redact::{self, Counts};
use crate::palace::files::{age, create_private_dir, now_ms, write_atomic};
use serde_json::{json, Value};
use std::fmt;
use std::path::{Path, PathBuf};

const FILE: &str = "last-outcome.json";
/// A small file of ours: anything bigger is treated as absent.
const MAX_BYTES: u64 = 64 * 1024;
/// Longest reason or detail read back.
const MAX_TEXT: usize = 300;
/// Most kinds of redaction read back, and the longest kind name.
const MAX_KINDS: usize = 100;
const MAX_KIND: usize = 120;

/// What the last feed that ran did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    Fed,
    NothingToFeed,
    Failed,
}

impl Ran {
    /// The word the file holds (and the status says).
    fn as_str(self) -> &'static str {
        match self {
            Ran::Fed => "fed",
            Ran::NothingToFeed => "nothing",
            Ran::Failed => "failed",
        }
    }

    fn parse(word: &str) -> Option<Ran> {
        [Ran::Fed, Ran::NothingToFeed, Ran::Failed].into_iter().find(|r| r.as_str() == word)
    }
}

impl fmt::Display for Ran {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The last feed that ran, as the file keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct LastFeed {
    /// When it ended, in ms since the Unix epoch.
    pub at_ms: u64,
    /// The trigger (`quit`, `settled`, `cli`...).
    pub reason: String,
    pub ran: Ran,
    /// What was fed (the mined source), why it failed, or empty.
    pub detail: String,
    /// What redaction replaced in what was fed, per kind.
    pub redacted: Counts,
}

impl LastFeed {
    /// The record of a feed that ran and ended now; None for a skip.
    fn of(reason: &str, outcome: &FeedOutcome) -> Option<LastFeed> {
        let (ran, detail, redacted) = match outcome {
            FeedOutcome::Fed { source, redacted, .. } => (Ran::Fed, source.clone(), redacted.clone()),
            FeedOutcome::NothingToFeed => (Ran::NothingToFeed, String::new(), Counts::new()),
            FeedOutcome::Failed(e) => (Ran::Failed, e.to_string(), Counts::new()),
            FeedOutcome::Skipped(_) => return None,
        };
        Some(LastFeed { at_ms: now_ms(), reason: reason.to_string(), ran, detail, redacted })
    }

    /// What `<feed_dir>/last-outcome.json` says, or None (no file, or not one of ours).
    pub fn read(feed_dir: &Path) -> Option<LastFeed> {
        let path = path(feed_dir);
        if std::fs::metadata(&path).ok()?.len() > MAX_BYTES {
            return None;
        }
        let v: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        let text =
            |k: &str| v.get(k).and_then(Value::as_str).map(|x| crate::text::first_chars(x, MAX_TEXT).to_string());
        Some(LastFeed {
            at_ms: v.get("atMs")?.as_u64()?,
            reason: text("reason")?,
            ran: Ran::parse(v.get("outcome")?.as_str()?)?,
            detail: text("detail").unwrap_or_default(),
            redacted: v
                .get("redacted")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter(|(k, _)| k.len() <= MAX_KIND)
                        .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                        .take(MAX_KINDS)
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Replaces `<feed_dir>/last-outcome.json` with this record (the folder is created private).
    pub fn write(&self, feed_dir: &Path) -> std::io::Result<()> {
        let body = json!({ "atMs": self.at_ms, "reason": self.reason, "outcome": self.ran.as_str(), "detail": self.detail, "redacted": self.redacted });
        create_private_dir(feed_dir)?;
        write_atomic(&path(feed_dir), body.to_string().as_bytes())
    }

    /// In a few words: `failed (quit, 3 min ago): <why>`.
    pub fn summary(&self) -> String {
        let head = format!("{} ({}, {} ago)", self.ran, self.reason, age(self.at_ms));
        if self.detail.is_empty() {
            head
        } else {
            format!("{head}: {}", self.detail)
        }
    }
}

/// `/mempalace status`'s last feed: [`LastFeed::summary`], or "none recorded".
pub fn last_feed_line(feed_dir: &Path) -> String {
    LastFeed::read(feed_dir).map_or_else(|| "none recorded".into(), |l| l.summary())
}

/// `/mempalace status`'s redaction line: whether it is on, and what the last feed replaced.
pub fn redaction_line(cfg: &crate::palace::PalaceConfig) -> String {
    let last = LastFeed::read(&cfg.feed_dir())
        .filter(|l| l.ran == Ran::Fed)
        .map_or_else(|| "no feed recorded".into(), |l| format!("last feed redacted {}", redact::describe(&l.redacted)));
    // Palace-tool writes redacted (redact::calls), when there were any.
    match redact::calls::Tally::line(&cfg.feed_dir()) {
        Some(writes) => format!("{}; {last}; {writes}", cfg.redact),
        None => format!("{}; {last}", cfg.redact),
    }
}

/// Keeps the outcome of a feed that ran in the file. Best effort: a feed never fails for this.
pub(super) async fn record(feed_dir: PathBuf, reason: &str, outcome: &FeedOutcome) {
    let Some(last) = LastFeed::of(reason, outcome) else { return };
    let _ = tokio::task::spawn_blocking(move || last.write(&feed_dir)).await;
}

/// The file (tests plant other content there).
pub(crate) fn path(feed_dir: &Path) -> PathBuf {
    feed_dir.join(FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_anything_else_is_absent() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("mempalace-feed");
        assert_eq!(LastFeed::read(&dir), None);
        assert_eq!(last_feed_line(&dir), "none recorded");
        let last = LastFeed {
            at_ms: now_ms() - 5 * 60_000,
            reason: "quit".into(),
            ran: Ran::Failed,
            detail: "mempalace_mine: x".into(),
            redacted: Counts::new(),
        };
        last.write(&dir).unwrap();
        assert_eq!(LastFeed::read(&dir).as_ref(), Some(&last));
        assert_eq!(last_feed_line(&dir), "failed (quit, 5 min ago): mempalace_mine: x");
        let nothing = LastFeed { ran: Ran::NothingToFeed, detail: String::new(), ..last.clone() };
        assert_eq!(nothing.summary(), "nothing (quit, 5 min ago)");
        // Counts per kind come back as written.
        let fed = LastFeed {
            ran: Ran::Fed,
            redacted: [("jwt".to_string(), 2), ("env:MY_SERVICE_TOKEN".to_string(), 1)].into_iter().collect(),
            ..last
        };
        fed.write(&dir).unwrap();
        assert_eq!(LastFeed::read(&dir).as_ref(), Some(&fed));
        assert_eq!(redact::describe(&fed.redacted), "3 (env:MY_SERVICE_TOKEN 1, jwt 2)");
        for junk in [&b"\"not an outcome\""[..], br#"{"atMs": 1, "reason": "quit", "outcome": "exploded"}"#, b"{oops"] {
            std::fs::write(path(&dir), junk).unwrap();
            assert_eq!(LastFeed::read(&dir), None, "{}", String::from_utf8_lossy(junk));
        }
        std::fs::write(path(&dir), vec![b' '; MAX_BYTES as usize + 1]).unwrap();
        assert_eq!(LastFeed::read(&dir), None);
    }
}
