//! The N-API boundary: converts JS values to core types and back, nothing else.

use crate::extension::{Extension, STATE_CREATIONS};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use std::sync::atomic::Ordering;

/// A tool as pi registers it (`pi.registerTool`), minus `execute`.
#[napi(object)]
pub struct ToolDescriptor {
    pub name: String,
    pub label: String,
    pub description: String,
    pub prompt_snippet: String,
    pub prompt_guidelines: Vec<String>,
    /// JSON Schema of the arguments, passed to pi wrapped in TypeBox's `Type.Unsafe`.
    pub parameters: Value,
}

/// What a tool answered: the text the model reads.
#[napi(object)]
pub struct ToolReply {
    pub text: String,
}

/// Facts about the process-wide native state, for tests and benchmarks.
#[napi(object)]
pub struct NativeStats {
    /// Times the native state was built in this process (1 after any number of `/reload`s).
    pub state_creations: u32,
    pub voice_enabled: bool,
    pub brain_db: Option<String>,
    pub brain_writer_opens: u32,
    pub brain_reader_opens: u32,
    pub brain_files_created: u32,
    pub turn_rows_written: u32,
    pub turn_rows_rewritten: u32,
    pub turn_writes_in_flight: u32,
    pub song_catalogue_fetches: u32,
    pub calls_in_flight: u32,
}

/// Builds the native state if this process has none yet (one per process, reused by `/reload`)
/// and opens brain.db in the background so the first voice turn doesn't pay for it. Never blocks.
#[napi]
pub fn init() -> NativeStats {
    let ext = Extension::get();
    static WARMED: std::sync::Once = std::sync::Once::new();
    if let Some(voice) = &ext.voice {
        WARMED.call_once(|| {
            let brain = voice.brain.clone();
            spawn_blocking(move || {
                if let Err(e) = brain.warm_up() {
                    e.report(&format!("brain.db unavailable at {}", brain.path().display()));
                }
            });
        });
    }
    stats()
}

/// The tools this process offers, in registration order.
#[napi]
pub fn tool_descriptors() -> Vec<ToolDescriptor> {
    let ext = Extension::get();
    if ext.voice.is_none() {
        return Vec::new();
    }
    crate::voice::descriptors::voice_tools()
        .into_iter()
        .map(|d| ToolDescriptor {
            name: d.name.into(),
            label: d.label.into(),
            description: d.description.into(),
            prompt_snippet: d.prompt_snippet.into(),
            prompt_guidelines: d.prompt_guidelines.iter().map(|s| s.to_string()).collect(),
            parameters: d.parameters,
        })
        .collect()
}

/// Runs one tool with the model's arguments. Expected failures (bad input, a service down, an
/// empty database) resolve with the contract's reply; only an unknown tool, a cancelled call or
/// an internal fault rejects. `callId`, when given, lets `cancelCall` abort the wait.
#[napi]
pub async fn call_tool(name: String, params: Option<Value>, call_id: Option<u32>) -> Result<ToolReply> {
    let ext = Extension::get();
    let args = params.unwrap_or(Value::Null);
    let voice = ext.voice.clone();
    let tool = name.clone();
    // Spawned, so that a panic inside a tool becomes an error here instead of taking pi down.
    let mut task = tokio::spawn(async move {
        match voice {
            Some(v) => v.call(&tool, &args).await,
            None => None,
        }
    });
    let outcome = match call_id.map(|id| ext.track(id)) {
        None => (&mut task).await,
        Some(cancelled) => {
            let r = tokio::select! {
                r = &mut task => Some(r),
                _ = cancelled => None,
            };
            ext.untrack(call_id.unwrap_or_default());
            match r {
                Some(r) => r,
                None => {
                    task.abort();
                    return Err(Error::new(Status::Cancelled, format!("{name}: aborted")));
                }
            }
        }
    };
    match outcome {
        Ok(Some(text)) => Ok(ToolReply { text }),
        Ok(None) => Err(Error::new(Status::InvalidArg, format!("unknown tool: {name}"))),
        Err(e) => Err(Error::new(Status::GenericFailure, format!("internal error in {name}: {e}"))),
    }
}

/// Aborts the wait of a call started with `callId` (pi's AbortSignal fired). Returns false when
/// that call already finished.
#[napi]
pub fn cancel_call(call_id: u32) -> bool {
    Extension::get().cancel(call_id)
}

/// pi's `agent_end`: queues the turn's conversation row and returns at once. Returns true when a
/// write was queued (false: nothing to log, a repeat of a logged turn, or voice tools off).
/// Never throws: odd input is reported on stderr.
#[napi]
pub fn log_turn(env: Env, messages: Unknown) -> bool {
    let Some(voice) = Extension::get().voice.clone() else { return false };
    let messages: Value = match env.from_js_value(messages) {
        Ok(v) => v,
        Err(e) => {
            crate::diag!("turn log: unreadable agent_end messages: {e}");
            return false;
        }
    };
    match voice.log.submit(voice.brain.clone(), &messages) {
        Some(write) => {
            spawn(write);
            true
        }
        None => false,
    }
}

/// Resolves when every queued conversation row has been written and queued diagnostics have
/// reached stderr (awaited on `session_shutdown`, so pi's exit loses neither).
#[napi]
pub async fn flush_turn_log() {
    if let Some(voice) = Extension::get().voice.clone() {
        voice.log.flush().await;
    }
    let _ = tokio::task::spawn_blocking(|| crate::diag::flush(std::time::Duration::from_secs(1))).await;
}

/// Counters of the process-wide state.
#[napi]
pub fn stats() -> NativeStats {
    let ext = Extension::get();
    let n = |a: &std::sync::atomic::AtomicUsize| a.load(Ordering::Relaxed) as u32;
    let v = ext.voice.as_deref();
    NativeStats {
        state_creations: n(&STATE_CREATIONS),
        voice_enabled: v.is_some(),
        brain_db: v.map(|v| v.brain.path().display().to_string()),
        brain_writer_opens: v.map_or(0, |v| n(&v.brain.stats.writer_opens)),
        brain_reader_opens: v.map_or(0, |v| n(&v.brain.stats.reader_opens)),
        brain_files_created: v.map_or(0, |v| n(&v.brain.stats.files_created)),
        turn_rows_written: v.map_or(0, |v| n(&v.log.rows_written)),
        turn_rows_rewritten: v.map_or(0, |v| n(&v.log.rows_rewritten)),
        turn_writes_in_flight: v.map_or(0, |v| v.log.in_flight() as u32),
        song_catalogue_fetches: v.and_then(|v| v.admin.as_ref()).map_or(0, |a| n(&a.catalogue_fetches)),
        calls_in_flight: ext.calls_in_flight() as u32,
    }
}
