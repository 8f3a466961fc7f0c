//! Production's direct calls: the voice client runs one tool without pi, as a one-shot
//! `node --experimental-strip-types --input-type=module -e <script>` that imports
//! `src/tools/<tool>.ts` (docs/voice-tools.md, "Direct calls"). Those modules only hand the call
//! here.
//!
//! A direct call builds a [`Voice`] of its own from the environment the extension reads (the same
//! variables, the same defaults and warnings) with the call's overrides on top, and never the
//! process-wide extension: no palace bridge, no turn log, no background work. It ends with nothing
//! left behind: the store's threads end and its connections close when that [`Voice`] is dropped,
//! a write has committed before the reply is returned, and the diagnostics queued for stderr have
//! been written.

use super::{Tool, Voice};
use crate::config::VoiceConfig;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// How long the end of a call waits for its diagnostics to reach stderr, at most.
const FLUSH: Duration = Duration::from_secs(1);

/// The configuration of one direct call of `tool`: the environment (its warnings said on stderr),
/// then `options`, production's per-call overrides (`dbPath`, `sessionId`, `baseUrl`,
/// `timeoutMs`, `url`, `timeoutSec`, `model`, `host`, `port`, `assetBaseOverride`). An option of the
/// wrong type (or a non-positive timeout, a port out of range) is ignored.
fn voice_for(tool: Tool, options: &Value) -> Voice {
    let (mut cfg, warnings) = VoiceConfig::from_lookup(&crate::env::process);
    for w in warnings {
        crate::diag!("{w}");
    }
    let text = |k: &str| options.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let positive = |k: &str| options.get(k).and_then(Value::as_f64).filter(|n| n.is_finite() && *n > 0.0);
    if let Some(db) = text("dbPath") {
        // As an explicit DOTTY_BRAIN_DB: a missing file there is not created.
        (cfg.brain_db, cfg.brain_db_explicit) = (PathBuf::from(db), true);
    }
    if let Some(url) = text("baseUrl") {
        cfg.behaviour_url = url.trim_end_matches('/').to_string();
    }
    if let Some(ms) = positive("timeoutMs") {
        let t = Duration::from_secs_f64(ms / 1000.0);
        match tool {
            Tool::PlaySong => cfg.xiaozhi_timeout = t,
            _ => cfg.behaviour_timeout = t,
        }
    }
    if let Some(url) = text("url") {
        cfg.thinker_url = url;
    }
    if let Some(s) = positive("timeoutSec") {
        cfg.thinker_timeout = Duration::from_secs_f64(s);
    }
    if let Some(model) = text("model") {
        cfg.thinker_model = model;
    }
    if let Some(host) = text("host") {
        // A host given for this call is where it goes (not the admin socket of the environment).
        (cfg.xiaozhi_host, cfg.admin_socket) = (Some(host), None);
    }
    if let Some(port) = options.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()) {
        if port > 0 {
            cfg.xiaozhi_port = port;
        }
    }
    if let Some(base) = text("assetBaseOverride") {
        cfg.song_asset_base = base.trim_end_matches('/').to_string();
    }
    let mut voice = Voice::new(cfg);
    voice.session_id = text("sessionId");
    voice
}

/// Why a direct call could not answer with a reply (a reply is never an error: bad input and failed
/// services are replies). The binding turns it into a JS error.
#[derive(Debug, PartialEq, Eq)]
pub enum DirectError {
    /// No voice tool has this name.
    UnknownTool(String),
    /// The synchronous call asked for a tool that needs the async one.
    Asynchronous(String),
    /// The tool panicked.
    Internal(String),
}

impl std::fmt::Display for DirectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DirectError::UnknownTool(name) => write!(f, "unknown tool: {name}"),
            DirectError::Asynchronous(name) => write!(f, "{name} is asynchronous: use the async call"),
            DirectError::Internal(name) => write!(f, "internal error in {name}"),
        }
    }
}

impl std::error::Error for DirectError {}

fn tool_named(name: &str) -> Result<Tool, DirectError> {
    Tool::named(name).ok_or_else(|| DirectError::UnknownTool(name.to_string()))
}

/// Runs the voice tool `name` once with the model-style `args` (`{"fact": …}`: each argument read
/// as the tools read it through pi) and `options`, and answers with the tool's reply. Every tool
/// may be called so; the brain.db tools are faster through [`call_blocking`]. Errs only for a name
/// that is no voice tool, or a panic inside the tool (INTERNAL).
pub async fn call(name: &str, args: &Value, options: &Value) -> Result<String, DirectError> {
    use futures_util::FutureExt;
    let tool = tool_named(name)?;
    let voice = voice_for(tool, options);
    let reply = std::panic::AssertUnwindSafe(voice.call(tool, args)).catch_unwind().await;
    drop(voice);
    let _ = tokio::task::spawn_blocking(|| crate::diag::flush(FLUSH)).await;
    reply.map_err(|_| DirectError::Internal(name.to_string()))
}

/// [`call`] for the tools that only touch brain.db (memory_lookup, remember, recall_person), on
/// the caller's thread, without an async runtime: blocks until the store answered (a write: until
/// its COMMIT returned). Errs for any other tool, or a panic in the store's job (INTERNAL).
pub fn call_blocking(name: &str, args: &Value, options: &Value) -> Result<String, DirectError> {
    let tool = tool_named(name)?;
    if !tool.is_direct() {
        return Err(DirectError::Asynchronous(name.to_string()));
    }
    let voice = voice_for(tool, options);
    let (tx, rx) = std::sync::mpsc::channel();
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        voice.start(tool, args, move |text| drop(tx.send(text)));
    }));
    // The sender is dropped unanswered only by a panic (here, or in the store's job).
    let reply = started.ok().and_then(|()| rx.recv().ok());
    drop(voice);
    crate::diag::flush(FLUSH);
    reply.ok_or_else(|| DirectError::Internal(name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_override_the_environment_and_wrong_types_are_ignored() {
        let o = json!({"dbPath": "/x/brain.db", "baseUrl": "http://b:1//", "timeoutMs": 250, "sessionId": "s1"});
        let v = voice_for(Tool::RememberPerson, &o);
        assert_eq!((v.cfg.brain_db.to_str(), v.cfg.brain_db_explicit), (Some("/x/brain.db"), true));
        assert_eq!(v.cfg.behaviour_url, "http://b:1");
        assert_eq!(v.cfg.behaviour_timeout, Duration::from_millis(250));
        assert_eq!(v.session_id.as_deref(), Some("s1"));
        let o = json!({"url": "http://t/v1", "timeoutSec": 0.5, "model": "m"});
        let v = voice_for(Tool::ThinkHard, &o);
        assert_eq!((v.cfg.thinker_url.as_str(), v.cfg.thinker_model.as_str()), ("http://t/v1", "m"));
        assert_eq!(v.cfg.thinker_timeout, Duration::from_millis(500));
        let o = json!({"host": "h", "port": 8123, "timeoutMs": 40, "assetBaseOverride": "/a/"});
        let v = voice_for(Tool::PlaySong, &o);
        assert_eq!((v.cfg.xiaozhi_host.as_deref(), v.cfg.xiaozhi_port), (Some("h"), 8123));
        assert_eq!((v.cfg.xiaozhi_timeout, v.cfg.song_asset_base.as_str()), (Duration::from_millis(40), "/a"));
        let defaults = voice_for(Tool::PlaySong, &Value::Null).cfg;
        let bad =
            json!({"dbPath": 5, "timeoutMs": -1, "timeoutSec": "9", "port": 70000, "sessionId": ["x"], "url": ""});
        let v = voice_for(Tool::PlaySong, &bad);
        assert_eq!(v.cfg.brain_db, defaults.brain_db);
        assert_eq!((v.cfg.xiaozhi_timeout, v.cfg.xiaozhi_port), (defaults.xiaozhi_timeout, defaults.xiaozhi_port));
        assert_eq!((v.cfg.thinker_timeout, &v.cfg.thinker_url), (defaults.thinker_timeout, &defaults.thinker_url));
        assert_eq!(v.session_id, None);
    }

    #[test]
    fn a_blocking_call_answers_and_commits_before_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("brain.db");
        rusqlite::Connection::open(&db).unwrap().execute_batch(crate::brain::SCHEMA_SQL).unwrap();
        let o = json!({"dbPath": db.to_str().unwrap(), "sessionId": "voice-1"});
        assert_eq!(call_blocking("remember", &json!({"fact": "  tea at four "}), &o).unwrap(), "(remembered)");
        let row: (String, Option<String>) = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT content, session_id FROM memories", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!(row, ("tea at four".to_string(), Some("voice-1".to_string())));
        assert_eq!(call_blocking("memory_lookup", &json!({"query": "tea"}), &o).unwrap(), "tea at four");
        assert_eq!(call_blocking("remember", &json!({}), &o).unwrap(), "(empty fact)");
        assert_eq!(call_blocking("recall_person", &json!({"name": 5}), &o).unwrap(), "(nothing remembered about 5)");
        assert_eq!(call_blocking("memory_lookup", &json!({"query": null}), &o).unwrap(), "(empty query)");
        assert_eq!(
            call_blocking("think_hard", &json!({}), &o).unwrap_err(),
            DirectError::Asynchronous("think_hard".into())
        );
        assert_eq!(call_blocking("bash", &json!({}), &o).unwrap_err().to_string(), "unknown tool: bash");
    }

    #[tokio::test]
    async fn an_async_call_runs_any_voice_tool_and_refuses_other_names() {
        assert_eq!(call("think_hard", &json!({"question": "  "}), &Value::Null).await.unwrap(), "(empty question)");
        assert_eq!(call("play_song", &json!({"name": ""}), &Value::Null).await.unwrap(), "(no song name given)");
        let dir = tempfile::tempdir().unwrap();
        let o = json!({"dbPath": dir.path().join("missing.db").to_str().unwrap()});
        assert_eq!(call("memory_lookup", &json!({"query": "x"}), &o).await.unwrap(), "(no memories found)");
        assert!(!dir.path().join("missing.db").exists(), "an explicit path is never created");
        assert_eq!(
            call("bash", &Value::Null, &Value::Null).await.unwrap_err(),
            DirectError::UnknownTool("bash".into())
        );
    }
}
