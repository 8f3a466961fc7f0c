//! Step 1 of a feed, built in: prepare an export of pi's sessions without touching the palace.
//!
//! [`BuiltinExporter`] scans `<agentDir>/sessions/**.jsonl`, keeps the sessions that pass the
//! quality gate and changed since the last export, and copies them into the staging folder
//! `<agentDir>/mempalace-feed/staging/`, which mirrors `sessions/`. The staging folder is stable
//! on purpose: MemPalace keys a conversation's drawers by the source file's path and re-mines a
//! file whose mtime changed, so a session that grew replaces its drawers instead of being filed a
//! second time under a new path. What was exported is recorded (size + mtime) in
//! `<agentDir>/mempalace-feed/state.json`, but only once the mine succeeded
//! ([`StagedExport::commit`]), so a failed mine is retried by the next trigger. The operator's
//! tools read that state through [`recorded`], never the file.
//!
//! What is staged is redacted ([`super::redact`]): every string of every line, with the secrets
//! replaced by `[REDACTED:<kind>]`; pi's own files are only read. The staged bytes are redacted in
//! memory before they are written, so no unredacted copy of a session is written anywhere (the
//! temporary file of [`write_atomic`] holds the redacted bytes). The state records whether the
//! copies were redacted: a state written without redaction (by an older version, or with
//! `MEMPALACE_FEED_REDACT=off`) re-stages every session, so no unredacted copy stays staged.
//!
//! The external exporter and the rsync to a remote palace live in [`super::process`].

use super::files::{create_private_dir, write_atomic};
use super::redact::{Counts, Redactor};
use crate::diag;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

const STATE_FILE: &str = "state.json";
const STATE_VERSION: u32 = 1;

// ---------------------------------------------------------------------------------------------
// Quality gate

/// True when `content` is a pi session MemPalace's convos miner will file: the first line is a
/// session header (`{"type":"session","version":...}`) and there is at least one user and one
/// assistant message with non-blank text (tool results, tool calls and thinking don't count).
pub fn passes_quality_gate(content: &[u8]) -> bool {
    let mut lines = content.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let Some(first) = lines.next() else { return false };
    let header: serde_json::Value = match serde_json::from_slice(first) {
        Ok(v) => v,
        Err(_) => return false,
    };
    if header.get("type").and_then(|t| t.as_str()) != Some("session") || header.get("version").is_none() {
        return false;
    }
    let (mut user, mut assistant) = (false, false);
    for line in lines {
        // Cheap pre-filter: only message entries matter (a line with `\u` escapes may spell
        // "message" in them: it is parsed).
        if !contains(line, b"\"message\"") && !contains(line, b"\\u") {
            continue;
        }
        let Ok(entry) = serde_json::from_slice::<serde_json::Value>(line) else { continue };
        if entry.get("type").and_then(|t| t.as_str()) != Some("message") {
            continue;
        }
        let Some(msg) = entry.get("message") else { continue };
        let role = msg.get("role").and_then(|r| r.as_str());
        let has_text = msg.get("content").is_some_and(has_text);
        match role {
            Some("user") if has_text => user = true,
            Some("assistant") if has_text => assistant = true,
            _ => {}
        }
        if user && assistant {
            return true;
        }
    }
    false
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn has_text(content: &serde_json::Value) -> bool {
    match content {
        serde_json::Value::String(s) => !s.trim().is_empty(),
        serde_json::Value::Array(blocks) => blocks.iter().any(|b| {
            b.get("type").and_then(|t| t.as_str()) == Some("text")
                && b.get("text").and_then(|t| t.as_str()).is_some_and(|t| !t.trim().is_empty())
        }),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Built-in exporter

/// What a session file looked like when it was last exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Fingerprint {
    pub size: u64,
    #[serde(rename = "mtimeNs")]
    pub mtime_ns: i128,
    /// False when the session failed the quality gate (it is re-examined once it changes).
    pub staged: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    version: u32,
    sessions: BTreeMap<String, Fingerprint>,
    /// How the staged copies were made: [`REDACTED`] or absent (unredacted). A state whose mark
    /// differs from this run's re-stages everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redaction: Option<String>,
}

/// The state's mark of copies staged redacted.
const REDACTED: &str = "redacted-v1";

/// The built-in exporter of pi's session JSONL.
#[derive(Debug, Clone)]
pub struct BuiltinExporter {
    sessions_dir: PathBuf,
    feed_dir: PathBuf,
    /// None: staged as they are (`MEMPALACE_FEED_REDACT=off`).
    redactor: Option<std::sync::Arc<Redactor>>,
    /// Project scope: each session staged under its wing's folder (None: global scope, one wing).
    wings: Option<WingOf>,
}

/// Project scope: the wing a session is staged under, from the cwd its header records: this pi's
/// own cwd gets this session's wing (which a trusted project file may have named), another cwd
/// the wing MemPalace's hooks give it ([`crate::palace::scope::project_wing`]).
#[derive(Debug, Clone)]
pub struct WingOf {
    pub own_cwd: PathBuf,
    pub own_wing: String,
    pub home: Option<PathBuf>,
}

impl WingOf {
    /// The wing of a session whose content is `bytes`.
    fn of(&self, bytes: &[u8]) -> String {
        let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        let cwd = serde_json::from_slice::<serde_json::Value>(first)
            .ok()
            .and_then(|h| h.get("cwd").and_then(|c| c.as_str()).map(PathBuf::from));
        match cwd {
            Some(c) if c != self.own_cwd => crate::palace::scope::project_wing(&c, self.home.as_deref()),
            _ => self.own_wing.clone(),
        }
    }
}

/// Sessions staged by [`BuiltinExporter::prepare`], waiting for a successful mine.
#[derive(Debug)]
pub struct StagedExport {
    /// The staging folder to mine (holds every session staged so far; unchanged ones are skipped
    /// by the miner).
    pub dir: PathBuf,
    /// The staging copies written by this run.
    pub staged: Vec<PathBuf>,
    /// What the redaction replaced in the copies written by this run, per kind.
    pub redacted: Counts,
    /// Project scope: the wings whose folders (`dir/<wing>`) this run staged into, to mine each
    /// into its wing; empty under global scope.
    pub wings: std::collections::BTreeSet<String>,
    state_path: PathBuf,
    pending: BTreeMap<String, Fingerprint>,
    redaction: Option<String>,
}

impl BuiltinExporter {
    /// Exports `sessions_dir` into `feed_dir/staging`, keeping its state in `feed_dir/state.json`.
    pub fn new(sessions_dir: impl Into<PathBuf>, feed_dir: impl Into<PathBuf>) -> Self {
        BuiltinExporter { sessions_dir: sessions_dir.into(), feed_dir: feed_dir.into(), redactor: None, wings: None }
    }

    /// The same exporter, redacting what it stages with `redactor` (None: not at all).
    pub fn redacting(mut self, redactor: Option<std::sync::Arc<Redactor>>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The same exporter, staging each session under its wing's folder (project scope).
    pub fn by_wing(mut self, wings: Option<WingOf>) -> Self {
        self.wings = wings;
        self
    }

    /// `<agentDir>/sessions` → `<agentDir>/mempalace-feed`, redacting with `redactor`.
    pub fn from_config(cfg: &super::PalaceConfig, redactor: Option<std::sync::Arc<Redactor>>) -> Self {
        Self::new(cfg.sessions_dir(), cfg.feed_dir()).redacting(redactor)
    }

    pub(crate) fn staging_dir(&self) -> PathBuf {
        self.feed_dir.join("staging")
    }

    fn state_path(&self) -> PathBuf {
        self.feed_dir.join(STATE_FILE)
    }

    /// Stages the sessions that pass the quality gate and changed since the last committed
    /// export. `Ok(None)` when there is nothing new to mine. Blocking (file I/O).
    pub fn prepare(&self) -> io::Result<Option<StagedExport>> {
        let mut state = load_state(&self.state_path());
        let redaction = self.redactor.is_some().then(|| REDACTED.to_string());
        if state.redaction != redaction {
            // Copies made another way (unredacted, by an older version or with redaction off):
            // every session is staged again, replacing them.
            state.sessions.clear();
        }
        let mut redacted = Counts::new();
        let mut files = Vec::new();
        if self.sessions_dir.is_dir() {
            walk_jsonl(&self.sessions_dir, &mut files)?;
        }
        files.sort();
        let staging = self.staging_dir();
        let mut pending = BTreeMap::new();
        let mut rejected = BTreeMap::new();
        let mut staged = Vec::new();
        let mut wings = std::collections::BTreeSet::new();
        for path in files {
            let Ok(rel) = path.strip_prefix(&self.sessions_dir) else { continue };
            let key = rel.to_string_lossy().into_owned();
            let Some((bytes, mut print)) = changed_session(&path, state.sessions.get(&key)) else { continue };
            // The user's opt-out ([no-memory]): the session, or the turns marked, stay out.
            let wing = self.wings.as_ref().map(|w| w.of(&bytes));
            let dest = match &wing {
                Some(w) => staging.join(w).join(rel),
                None => staging.join(rel),
            };
            let bytes = match crate::palace::feed::no_memory::apply(&bytes) {
                crate::palace::feed::no_memory::Opt::Unchanged => bytes,
                crate::palace::feed::no_memory::Opt::Without(b, _) => b,
                crate::palace::feed::no_memory::Opt::Session => {
                    let _ = std::fs::remove_file(&dest);
                    rejected.insert(key, print);
                    continue;
                }
            };
            if !passes_quality_gate(&bytes) {
                rejected.insert(key, print);
                continue;
            }
            if let Some(parent) = dest.parent() {
                create_private_dir(parent)?;
            }
            let clean = self.redactor.as_ref().and_then(|r| r.redact_jsonl(&bytes, &mut redacted));
            write_atomic(&dest, clean.as_deref().unwrap_or(&bytes))?;
            staged.push(dest);
            wings.extend(wing);
            print.staged = true;
            pending.insert(key, print);
        }
        if staged.is_empty() {
            // Nothing to mine; remember the rejects so they aren't re-read until they change.
            if !rejected.is_empty() {
                commit_state(&self.state_path(), rejected, redaction)?;
            }
            return Ok(None);
        }
        pending.extend(rejected);
        Ok(Some(StagedExport {
            dir: staging,
            staged,
            redacted,
            wings,
            state_path: self.state_path(),
            pending,
            redaction,
        }))
    }
}

impl StagedExport {
    /// Records this export as done (call it after the mine succeeded).
    pub fn commit(self) -> io::Result<()> {
        commit_state(&self.state_path, self.pending, self.redaction)
    }
}

/// The content and fingerprint (`staged: false`) of the session at `path`, unless it is unchanged
/// since `last` or can't be read (said on stderr; a file that vanished meanwhile is skipped
/// quietly).
fn changed_session(path: &Path, last: Option<&Fingerprint>) -> Option<(Vec<u8>, Fingerprint)> {
    let meta = std::fs::metadata(path).ok()?;
    let print = Fingerprint { size: meta.len(), mtime_ns: mtime_ns(&meta), staged: false };
    if last.is_some_and(|old| old.size == print.size && old.mtime_ns == print.mtime_ns) {
        return None;
    }
    match std::fs::read(path) {
        Ok(bytes) => Some((bytes, print)),
        Err(e) => {
            diag!("mempalace feed: can't read {}: {e}", path.display());
            None
        }
    }
}

/// The state file's content, if it is one of this version.
fn parse_state(bytes: &[u8]) -> Option<State> {
    serde_json::from_slice::<State>(bytes).ok().filter(|s| s.version == STATE_VERSION)
}

fn load_state(path: &Path) -> State {
    match std::fs::read(path) {
        Ok(bytes) => parse_state(&bytes).unwrap_or_else(|| {
            diag!("mempalace feed: ignoring unreadable {}; re-exporting everything", path.display());
            State::default()
        }),
        Err(_) => State::default(),
    }
}

/// What the export state of `<feed_dir>` says, for the operator (`doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// When the state was last written (the last feed that staged or rejected something and
    /// succeeded), in ms since the Unix epoch.
    pub at_ms: u64,
    /// How many sessions it records; None when it can't be read (the next feed re-exports
    /// everything).
    pub sessions: Option<usize>,
}

/// The export state of `<feed_dir>`, or None when no export was ever recorded. Reads only, and
/// says nothing on stderr.
pub fn recorded(feed_dir: &Path) -> Option<Recorded> {
    let path = feed_dir.join(STATE_FILE);
    let at_ms = crate::palace::files::millis_since_epoch(std::fs::metadata(&path).and_then(|m| m.modified()).ok()?);
    let sessions = std::fs::read(&path).ok().and_then(|b| parse_state(&b)).map(|s| s.sessions.len());
    Some(Recorded { at_ms, sessions })
}

fn commit_state(path: &Path, entries: BTreeMap<String, Fingerprint>, redaction: Option<String>) -> io::Result<()> {
    let mut state = load_state(path);
    if state.redaction != redaction {
        // Recorded under another way of staging: this run re-staged what it records.
        state.sessions.clear();
        state.redaction = redaction;
    }
    state.version = STATE_VERSION;
    state.sessions.extend(entries);
    if let Some(parent) = path.parent() {
        create_private_dir(parent)?;
    }
    let json = serde_json::to_vec_pretty(&state).map_err(io::Error::other)?;
    write_atomic(path, &json)
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128
}

/// Regular `*.jsonl` files under `dir`, recursively; symlinks are not followed.
fn walk_jsonl(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(ft) = entry.file_type() else { continue };
        let path = entry.path();
        if ft.is_dir() {
            if let Err(e) = walk_jsonl(&path, out) {
                diag!("mempalace feed: can't scan {}: {e}", path.display());
            }
        } else if ft.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::{session_jsonl, write_session};

    fn good() -> String {
        session_jsonl(&[("user", "hello there"), ("assistant", "hi, how can I help?")])
    }

    #[test]
    fn quality_gate() {
        assert!(passes_quality_gate(good().as_bytes()));
        // Tool traffic around the text is fine.
        let s = session_jsonl(&[
            ("user", "run ls"),
            ("assistantToolCall", "ls"),
            ("toolResult", "a b"),
            ("assistant", "two files"),
        ]);
        assert!(passes_quality_gate(s.as_bytes()));
        // Only a user message.
        assert!(!passes_quality_gate(session_jsonl(&[("user", "hello")]).as_bytes()));
        // The assistant only called tools: no assistant text.
        let s = session_jsonl(&[("user", "run ls"), ("assistantToolCall", "ls"), ("toolResult", "a b")]);
        assert!(!passes_quality_gate(s.as_bytes()));
        // Blank texts don't count.
        assert!(!passes_quality_gate(session_jsonl(&[("user", "  "), ("assistant", "hi")]).as_bytes()));
        // No header / header not first / header without version.
        let body: String = good().lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert!(!passes_quality_gate(body.as_bytes()));
        let g = good();
        let mut lines: Vec<&str> = g.lines().collect();
        lines.swap(0, 1);
        assert!(!passes_quality_gate(lines.join("\n").as_bytes()));
        let no_version = good().replacen("\"version\":3,", "", 1);
        assert!(!passes_quality_gate(no_version.as_bytes()));
        // A user message with plain string content (older pi) counts; a garbage line is skipped.
        let s = format!(
            "{}\n{{not json\n{}\n{}\n",
            r#"{"type":"session","version":1,"id":"x","timestamp":"t","cwd":"/"}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"plain","timestamp":1}}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":2}}"#
        );
        assert!(passes_quality_gate(s.as_bytes()));
        assert!(!passes_quality_gate(b""));
        // Found by the fuzz/ model (session_jsonl): a message entry spelled with escapes is one.
        let escaped = format!(
            "{}\n{}\n{}\n",
            r#"{"type":"session","version":3}"#,
            r#"{"type":"m\u0065ssage","m\u0065ssage":{"role":"user","content":"hi"}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":"hello"}}"#
        );
        assert!(passes_quality_gate(escaped.as_bytes()));
        assert!(!passes_quality_gate(&[0xff, 0x00, b'\n']));
    }

    #[test]
    fn stages_only_good_changed_sessions_and_commits_after_success() {
        let agent = tempfile::tempdir().unwrap();
        let a = write_session(agent.path(), "2026-01-01T00-00-00-000Z_a", &good());
        write_session(agent.path(), "2026-01-01T00-00-00-000Z_b", &session_jsonl(&[("user", "only me")]));
        std::fs::write(agent.path().join("sessions/notes.txt"), good()).unwrap();
        let ex = BuiltinExporter::new(agent.path().join("sessions"), agent.path().join("mempalace-feed"));

        let first = ex.prepare().unwrap().expect("a good session to stage");
        assert_eq!(first.dir, agent.path().join("mempalace-feed/staging"));
        let staged_a = first.dir.join("--work-project--/2026-01-01T00-00-00-000Z_a.jsonl");
        assert_eq!(first.staged, vec![staged_a.clone()]);
        assert_eq!(std::fs::read_to_string(&staged_a).unwrap(), good());
        assert!(!first.dir.join("--work-project--/2026-01-01T00-00-00-000Z_b.jsonl").exists());

        // Not committed (the mine failed): the next run stages it again.
        drop(first);
        let again = ex.prepare().unwrap().expect("uncommitted export is retried");
        let feed_dir = agent.path().join("mempalace-feed");
        assert_eq!(recorded(&feed_dir), None, "nothing recorded before the commit");
        again.commit().unwrap();
        assert_eq!(recorded(&feed_dir).map(|r| r.sessions), Some(Some(2)), "the good one and the rejected one");
        assert!(ex.prepare().unwrap().is_none(), "nothing changed since the committed export");

        // The session grows: staged again, same path, new content.
        let grown =
            session_jsonl(&[("user", "hello there"), ("assistant", "hi"), ("user", "more"), ("assistant", "sure")]);
        std::fs::write(&a, &grown).unwrap();
        let third = ex.prepare().unwrap().expect("changed session");
        assert_eq!(third.staged, vec![staged_a.clone()]);
        assert_eq!(std::fs::read_to_string(&staged_a).unwrap(), grown);
        third.commit().unwrap();

        // The rejected session becomes good once it has an answer.
        write_session(agent.path(), "2026-01-01T00-00-00-000Z_b", &good());
        let fourth = ex.prepare().unwrap().unwrap();
        assert_eq!(fourth.staged.len(), 1);
        assert!(fourth.staged[0].ends_with("2026-01-01T00-00-00-000Z_b.jsonl"));

        // No temp files anywhere in staging.
        let names: Vec<String> = std::fs::read_dir(fourth.dir.join("--work-project--"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.ends_with(".jsonl")), "{names:?}");
    }

    #[test]
    fn staged_copies_are_redacted_and_pi_s_files_are_untouched() {
        let agent = tempfile::tempdir().unwrap();
        let key = "AKIAZ7QX3MPL4VNRT2WB";
        let secret = |n: &str| {
            session_jsonl(&[("user", &format!("my key is {key} {n}")), ("toolResult", key), ("assistant", "ok")])
        };
        let src = write_session(agent.path(), "s", &secret("a"));
        let feed_dir = agent.path().join("mempalace-feed");
        let redactor = std::sync::Arc::new(crate::palace::feed::redact::Redactor::builtin());

        // An earlier, unredacting feed left a plain copy and its state behind.
        let plain = BuiltinExporter::new(agent.path().join("sessions"), &feed_dir);
        let first = plain.prepare().unwrap().unwrap();
        assert!(std::fs::read_to_string(&first.staged[0]).unwrap().contains(key));
        first.commit().unwrap();

        // The redacting exporter re-stages it although it did not change, and counts.
        let ex = plain.clone().redacting(Some(redactor.clone()));
        let before = std::fs::read(&src).unwrap();
        let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
        let second = ex.prepare().unwrap().expect("an unredacted copy is replaced");
        let staged = std::fs::read_to_string(&second.staged[0]).unwrap();
        assert!(!staged.contains(key) && staged.contains("[REDACTED:aws-access-token]"), "{staged}");
        assert_eq!(second.redacted.get("aws-access-token"), Some(&2));
        assert!(passes_quality_gate(staged.as_bytes()));
        assert!(staged.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
        let second_paths = second.staged.clone();
        second.commit().unwrap();
        assert_eq!(std::fs::read(&src).unwrap(), before, "pi's session file is byte-identical");
        assert_eq!(std::fs::metadata(&src).unwrap().modified().unwrap(), mtime);
        assert!(ex.prepare().unwrap().is_none(), "unchanged since the redacted export");

        // The session grows: re-staged at the same path with the same redactions.
        std::fs::write(&src, secret("b")).unwrap();
        let third = ex.prepare().unwrap().unwrap();
        assert_eq!(third.staged, second_paths);
        let restaged = std::fs::read_to_string(&third.staged[0]).unwrap();
        assert_eq!(restaged, staged.replace(" a\"", " b\""));
        third.commit().unwrap();

        // Nothing the feed wrote holds the key (state, staging, temporary files).
        let mut stack = vec![feed_dir.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    assert!(!std::fs::read_to_string(e.path()).unwrap().contains(key), "{}", e.path().display());
                }
            }
        }
    }

    #[test]
    fn no_sessions_or_corrupt_state() {
        let agent = tempfile::tempdir().unwrap();
        let ex = BuiltinExporter::new(agent.path().join("sessions"), agent.path().join("mempalace-feed"));
        assert!(ex.prepare().unwrap().is_none());
        write_session(agent.path(), "s", &good());
        ex.prepare().unwrap().unwrap().commit().unwrap();
        std::fs::write(agent.path().join("mempalace-feed/state.json"), b"{oops").unwrap();
        assert_eq!(recorded(&agent.path().join("mempalace-feed")).map(|r| r.sessions), Some(None));
        assert!(ex.prepare().unwrap().is_some(), "a corrupt state re-exports");
    }
}
