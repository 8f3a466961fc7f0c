//! The per-turn conversation log, written on pi's `agent_end`.
//!
//! The handler must return at once (pi awaits it before it reports the end of the turn), so
//! [`TurnLog::submit`] only extracts the text and hands back the write as a future for the caller to
//! spawn. A repeated `agent_end` for the same prompt (pi's auto-retry) never makes a second row: it
//! rewrites the first one when the answer changed and does nothing when it didn't.

use crate::brain::{clock, Brain, BrainError, WriteOp};
use crate::sync::lock;
use crate::text::{first_chars, strip};
use crate::voice::scaffolding;
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const USER_MAX: usize = 500;
const ASSISTANT_MAX: usize = 1000;
/// Turns remembered for deduplication; retries come right after the turn they repeat.
const RECENT_TURNS: usize = 32;
/// A write that meets another writer's lock waits `busy_timeout` (5 s) per attempt; the log tries
/// this many times before it gives up (and says so on stderr).
const WRITE_ATTEMPTS: u32 = 6;

/// One finished prompt, as Dotty heard and said it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Identifies the prompt across repeated `agent_end`s: the user message's timestamp and text.
    pub key: Option<String>,
    pub user: String,
    pub assistant: String,
}

impl Turn {
    /// The row's `content` as composed; the store strips it once more (so an empty assistant half
    /// is stored as `... | assistant:`).
    pub fn content(&self) -> String {
        format!(
            "user: {} | assistant: {}",
            first_chars(&self.user, USER_MAX),
            first_chars(&self.assistant, ASSISTANT_MAX)
        )
    }
}

/// One message of pi's `agent_end`, as much of it as the log reads. The binding fills it from the JS
/// value on the JS thread: a message's content only when [`reads_content`] holds for its role, a
/// block's text only when [`counts_block`] holds for its type, so images and tool results (often
/// hundreds of KB) are never copied off the JS heap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    /// `""` when the message has no string role.
    pub role: String,
    /// The message's timestamp as JSON text (`None` without one): with the prompt's text, what
    /// identifies a prompt across repeated `agent_end`s.
    pub timestamp: Option<String>,
    pub content: Content,
}

/// What a message's `content` holds, as far as the log reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Content {
    /// None, one of another shape, or one the log doesn't read ([`reads_content`]).
    #[default]
    Absent,
    /// A plain string.
    Text(String),
    /// The texts of the blocks that count ([`counts_block`]), in order.
    Blocks(Vec<String>),
}

/// Whether the log reads the content of a message with this role: the user's and the assistant's,
/// never a tool result's.
pub(crate) fn reads_content(role: &str) -> bool {
    role == "user" || role == "assistant"
}

/// Whether a content block of this `type` counts: text only (thinking, tool calls and images don't).
pub(crate) fn counts_block(kind: &str) -> bool {
    kind == "text"
}

impl Message {
    /// The messages of a JSON `agent_end` value, read as the binding reads the JS one (tests and
    /// the fuzz target); anything but an array holds none.
    pub fn list_from_json(messages: &Value) -> Vec<Message> {
        let Some(list) = messages.as_array() else { return Vec::new() };
        list.iter().map(Message::from_json).collect()
    }

    fn from_json(m: &Value) -> Message {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default().to_string();
        let timestamp = m.get("timestamp").filter(|t| !t.is_null()).map(Value::to_string);
        let content = match m.get("content") {
            _ if !reads_content(&role) => Content::Absent,
            Some(Value::String(s)) => Content::Text(s.clone()),
            Some(Value::Array(blocks)) => Content::Blocks(
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str).is_some_and(counts_block))
                    .filter_map(|b| b.get("text").and_then(Value::as_str).map(String::from))
                    .collect(),
            ),
            _ => Content::Absent,
        };
        Message { role, timestamp, content }
    }
}

/// The text of a user message's `content`: the string itself, or its counted blocks joined.
fn user_text(content: &Content) -> String {
    match content {
        Content::Text(s) => s.clone(),
        _ => spoken_text(content),
    }
}

/// What an assistant message said: only its counted blocks, joined. A plain-string `content` (pi
/// never sends one) counts for nothing, as in the contract.
fn spoken_text(content: &Content) -> String {
    match content {
        Content::Blocks(texts) => texts.concat(),
        _ => String::new(),
    }
}

/// The last user message and what every assistant message after it said in text (thinking, tool
/// calls, images and tool results excluded). `None` when both halves are empty after stripping.
pub fn extract(msgs: &[Message]) -> Option<Turn> {
    let last_user = msgs.iter().rposition(|m| m.role == "user");
    let (user, key, after) = match last_user {
        Some(i) => {
            let m = &msgs[i];
            let text = user_text(&m.content);
            let key = m.timestamp.as_ref().map(|t| format!("{t}\u{0}{text}"));
            (text, key, &msgs[i + 1..])
        }
        None => (String::new(), None, msgs),
    };
    let assistant: String = after.iter().filter(|m| m.role == "assistant").map(|m| spoken_text(&m.content)).collect();
    // The prompt is the person's words plus the voice provider's per-turn scaffolding: only the
    // words are conversation (docs/voice-tools.md, "Prompt scaffolding").
    let (user, assistant) = (scaffolding::spoken(&user), strip(&assistant).to_string());
    if user.is_empty() && assistant.is_empty() {
        return None;
    }
    Some(Turn { key, user, assistant })
}

struct Logged {
    key: Option<String>,
    content: String,
    /// Versions of this turn's content submitted so far (1 for the first).
    version: u64,
    /// The row. Locked by the first write until it finishes, so a rewrite of the same turn waits
    /// for it instead of racing it.
    row: Arc<tokio::sync::Mutex<Row>>,
}

/// A turn's row: its id once written, and which version of the content it holds.
#[derive(Default)]
struct Row {
    id: Option<String>,
    written: u64,
}

/// Rows waiting for a missing brain.db at most; more are reported and dropped (memory stays bounded).
const MAX_WAITING: usize = 256;
/// How often a waiting row looks for its file again (one `stat`).
const WAIT_POLL: Duration = Duration::from_millis(250);

/// The log's memory of recent turns and of writes still in flight.
#[derive(Default)]
pub struct TurnLog {
    // A std Mutex: held only for a few comparisons on the JS thread, never across an await.
    recent: Mutex<VecDeque<Logged>>,
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// Rows waiting for brain.db to be back at an explicit path (not counted in `in_flight`).
    waiting: AtomicUsize,
    /// Where the waiting rows want to be written (for the report at flush).
    waiting_for: Mutex<Option<std::path::PathBuf>>,
    rows_written: AtomicUsize,
    rows_rewritten: AtomicUsize,
}

/// What the log counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnLogCounts {
    /// Rows inserted.
    pub rows_written: usize,
    /// Rows rewritten in place (a retried prompt whose answer changed).
    pub rows_rewritten: usize,
    /// Writes submitted and not finished (rows waiting for a missing brain.db not included).
    pub in_flight: usize,
}

impl TurnLog {
    /// Takes an `agent_end` event's messages. Returns the write to run in the background, or
    /// `None` when there is nothing to write (empty turn, or a repeat with the same content).
    pub fn submit(
        self: &Arc<Self>,
        brain: Arc<Brain>,
        messages: &[Message],
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        let turn = extract(messages)?;
        let content = turn.content();
        let ts = clock::now_rfc3339();
        let mut recent = lock(&self.recent);
        let repeat = match &turn.key {
            Some(k) => recent.iter_mut().find(|l| l.key.as_ref() == Some(k)),
            // Without a timestamp only an identical repeat of the latest turn is recognised.
            None => recent.back_mut().filter(|l| l.key.is_none() && l.content == content),
        };
        let (job, version) = match repeat {
            Some(l) if l.content == content => return None,
            Some(l) => {
                l.content = content.clone();
                l.version += 1;
                (Job::Rewrite(l.row.clone()), l.version)
            }
            None => {
                let row = Arc::new(tokio::sync::Mutex::new(Row::default()));
                #[allow(clippy::expect_used, reason = "the mutex made on the line above has no other holder yet")]
                let guard = row.clone().try_lock_owned().expect("a new row slot is unlocked");
                recent.push_back(Logged { key: turn.key, content: content.clone(), version: 1, row });
                if recent.len() > RECENT_TURNS {
                    recent.pop_front();
                }
                (Job::Insert(guard), 1)
            }
        };
        drop(recent);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let log = self.clone();
        Some(async move {
            log.write(brain, job, version, content, ts).await;
            log.done_one();
        })
    }

    fn done_one(&self) {
        if self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    async fn write(&self, brain: Arc<Brain>, job: Job, version: u64, content: String, ts: String) {
        let (row, mut slot) = match job {
            Job::Insert(guard) => (tokio::sync::OwnedMutexGuard::mutex(&guard).clone(), guard),
            Job::Rewrite(row) => (row.clone(), row.lock_owned().await),
        };
        loop {
            // A later answer to the same prompt got in while this one waited: it stays.
            if slot.written >= version {
                return;
            }
            match self.attempt(&brain, slot.id.clone(), &content, &ts).await {
                Ok(id) => {
                    let counter = if slot.id.is_some() { &self.rows_rewritten } else { &self.rows_written };
                    counter.fetch_add(1, Ordering::Relaxed);
                    slot.id = Some(id);
                    slot.written = version;
                    return;
                }
                // brain.db is gone from its explicit path: the row waits for a file to be back.
                Err(BrainError::Missing(_)) => {
                    drop(slot);
                    if !self.wait_for_file(&brain).await {
                        return;
                    }
                    slot = row.clone().lock_owned().await;
                }
                Err(e) => {
                    e.report("turn log: not written");
                    return;
                }
            }
        }
    }

    /// One write, retried while another process holds the lock past the busy timeout.
    async fn attempt(
        &self,
        brain: &Arc<Brain>,
        id: Option<String>,
        content: &str,
        ts: &str,
    ) -> crate::brain::Result<String> {
        let mut attempt = 1;
        loop {
            let (content, ts) = (content.to_string(), ts.to_string());
            let op = match id.clone() {
                Some(id) => WriteOp::Update { id, content, ts },
                None => WriteOp::Insert {
                    content,
                    category: "conversation".into(),
                    namespace: "voice".into(),
                    importance: 0.3,
                    ts,
                    session_id: None,
                },
            };
            let r = brain.write(op).await;
            match r {
                Err(e) if e.is_busy() && attempt < WRITE_ATTEMPTS => {
                    crate::diag!("turn log: brain.db busy (attempt {attempt}/{WRITE_ATTEMPTS}), retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    /// Parks a row until a file is at brain.db's path again (looked for every [`WAIT_POLL`]). A
    /// parked row is not in flight: [`TurnLog::flush`] doesn't wait for it but reports it. Returns
    /// false when it was dropped because too many rows wait already.
    async fn wait_for_file(&self, brain: &Brain) -> bool {
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            crate::diag!(
                "turn log: not written: brain.db is missing at {} and {MAX_WAITING} rows wait already",
                brain.path().display()
            );
            return false;
        }
        *lock(&self.waiting_for) = Some(brain.path().to_path_buf());
        self.done_one();
        while !brain.path().exists() {
            tokio::time::sleep(WAIT_POLL).await;
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        true
    }

    /// Resolves when every write submitted so far has finished (pi's shutdown waits on this).
    /// Rows waiting for a missing brain.db are not waited for: one stderr line says how many.
    pub async fn flush(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                break;
            }
            notified.await;
        }
        // A row is counted as waiting before it stops counting as in flight, so every row that
        // met the missing file before this flush finished is counted here.
        let n = self.waiting();
        if n > 0 {
            let path = lock(&self.waiting_for).clone().unwrap_or_default();
            crate::diag!("turn log: {n} conversation row(s) wait: brain.db is missing at {}; they are written when the file is back", path.display());
        }
    }

    /// Rows waiting for brain.db to be back.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    pub fn counts(&self) -> TurnLogCounts {
        TurnLogCounts {
            rows_written: self.rows_written.load(Ordering::Relaxed),
            rows_rewritten: self.rows_rewritten.load(Ordering::Relaxed),
            in_flight: self.in_flight(),
        }
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }
}

enum Job {
    Insert(tokio::sync::OwnedMutexGuard<Row>),
    Rewrite(Arc<tokio::sync::Mutex<Row>>),
}

#[cfg(test)]
mod tests;
