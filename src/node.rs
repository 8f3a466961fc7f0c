//! The N-API boundary: converts JS values to core types and back, nothing else.

use crate::extension::{Extension, STATE_CREATIONS};
use crate::mcp::McpError;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

/// A tool as pi registers it (`pi.registerTool`), minus `execute`.
#[napi(object)]
pub struct ToolDescriptor {
    pub name: String,
    pub label: String,
    pub description: String,
    pub prompt_snippet: Option<String>,
    pub prompt_guidelines: Option<Vec<String>>,
    /// JSON Schema of the arguments (for MemPalace tools: the server's `inputSchema`, unchanged),
    /// passed to pi wrapped in TypeBox's `Type.Unsafe`.
    pub parameters: Value,
}

/// What a tool answered.
#[napi(object)]
pub struct ToolReply {
    /// The text blocks joined: for a voice tool, exactly the contract's reply.
    pub text: String,
    /// pi content blocks (`{type: "text", text}` or `{type: "image", data, mimeType}`).
    pub content: Vec<Value>,
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
    pub palace_enabled: bool,
    pub palace_connected: bool,
    pub palace_tools: u32,
    pub mcp_spawns: u32,
    pub mcp_respawns: u32,
    pub mcp_child_pid: Option<u32>,
    pub stderr_lines_dropped: u32,
}

/// Builds the native state if this process has none yet (one per process, reused by `/reload`),
/// opens brain.db and starts the MemPalace handshake in the background. Never blocks.
#[napi]
pub fn init() -> NativeStats {
    let ext = Extension::get();
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        if let Some(voice) = &ext.voice {
            let brain = voice.brain.clone();
            spawn_blocking(move || {
                if let Err(e) = brain.warm_up() {
                    e.report(&format!("brain.db unavailable at {}", brain.path().display()));
                }
            });
        }
        if let Some(bridge) = ext.bridge.clone() {
            spawn(async move {
                let _ = bridge.connect().await;
            });
        }
    });
    stats()
}

fn descriptor(d: crate::voice::descriptors::Descriptor) -> ToolDescriptor {
    ToolDescriptor {
        name: d.name.into(),
        label: d.label.into(),
        description: d.description.into(),
        prompt_snippet: Some(d.prompt_snippet.into()),
        prompt_guidelines: Some(d.prompt_guidelines.iter().map(|s| s.to_string()).collect()),
        parameters: d.parameters,
    }
}

/// Palace tools as pi registers them. They passed `palace::tools` (name, schema type, size), so
/// each schema converts to a JS value: napi-rs refuses a value of over a million nodes or 128
/// levels, which made a cached million-value schema throw at load, taking the voice tools along.
fn palace_descriptors(tools: Vec<crate::mcp::ToolInfo>) -> Vec<ToolDescriptor> {
    tools
        .into_iter()
        .map(|t| ToolDescriptor {
            label: t.name.clone(),
            name: t.name,
            description: t.description.unwrap_or_default(),
            prompt_snippet: None,
            prompt_guidelines: None,
            parameters: t.input_schema,
        })
        .collect()
}

/// The voice tools, registered at load.
#[napi]
pub fn tool_descriptors() -> Vec<ToolDescriptor> {
    match Extension::get().voice {
        Some(_) => crate::voice::descriptors::voice_tools().into_iter().map(descriptor).collect(),
        None => Vec::new(),
    }
}

/// The MemPalace tools pi may register now: from the cached `tools/list` at load (so pi's startup
/// never waits for the palace), the server's own once its handshake is done. `taken`: the names
/// of tools something else in this pi process registered (pi's `getAllTools()` minus this
/// extension's own), which a palace tool never shadows.
#[napi]
pub fn palace_tool_descriptors(taken: Option<Vec<String>>) -> Vec<ToolDescriptor> {
    match &Extension::get().bridge {
        Some(bridge) => palace_descriptors(bridge.tools_for_pi(&taken.unwrap_or_default())),
        None => Vec::new(),
    }
}

/// Resolves with the MemPalace server's own tool list (what `palace::tools` let through) once
/// the background handshake is done; empty when the palace can't be had. The entry then
/// registers those it doesn't have yet through `palaceToolDescriptors`.
#[napi]
pub async fn palace_tools() -> Vec<ToolDescriptor> {
    match Extension::get().bridge.clone() {
        Some(b) => b.connect().await.map(palace_descriptors).unwrap_or_default(),
        None => Vec::new(),
    }
}

fn text_reply(text: String) -> ToolReply {
    ToolReply { content: vec![json!({"type": "text", "text": text})], text }
}

/// Runs one tool with the model's arguments. A voice tool resolves with the contract's reply even
/// for bad input or a service that is down; a MemPalace tool rejects with the server's message
/// when the server reports an error. `callId`, when given, lets `cancelCall` abort the call.
#[napi]
pub async fn call_tool(name: String, params: Option<Value>, call_id: Option<u32>) -> Result<ToolReply> {
    let ext = Extension::get();
    let args = params.unwrap_or(Value::Null);
    let cancelled = call_id.map(|id| ext.track(id));
    let result = match (&ext.voice, &ext.bridge) {
        (Some(voice), _) if crate::voice::descriptors::is_voice_tool(&name) => call_voice(voice.clone(), &name, args, cancelled).await,
        (_, Some(bridge)) => call_palace(bridge.clone(), &name, args, cancelled).await,
        _ => Err(Error::new(Status::InvalidArg, format!("unknown tool: {name}"))),
    };
    if let Some(id) = call_id {
        ext.untrack(id);
    }
    result
}

async fn call_voice(voice: std::sync::Arc<crate::voice::Voice>, name: &str, args: Value, cancelled: Option<tokio::sync::oneshot::Receiver<()>>) -> Result<ToolReply> {
    use futures_util::FutureExt;
    // A panic inside a tool becomes an error here instead of taking pi down. Cancelling drops the
    // call: an HTTP request is aborted; a store write already on the blocking pool still lands.
    let call = std::panic::AssertUnwindSafe(voice.call(name, &args)).catch_unwind();
    let outcome = match cancelled {
        None => call.await,
        Some(cancelled) => tokio::select! {
            r = call => r,
            _ = cancelled => return Err(Error::new(Status::Cancelled, format!("{name}: aborted"))),
        },
    };
    match outcome {
        Ok(Some(text)) => Ok(text_reply(text)),
        Ok(None) => Err(Error::new(Status::InvalidArg, format!("unknown tool: {name}"))),
        Err(panic) => {
            let why = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            Err(Error::new(Status::GenericFailure, format!("internal error in {name}: {why}")))
        }
    }
}

async fn call_palace(bridge: std::sync::Arc<crate::bridge::Bridge>, name: &str, args: Value, cancelled: Option<tokio::sync::oneshot::Receiver<()>>) -> Result<ToolReply> {
    match bridge.call(name, args, cancelled).await {
        Ok(r) if r.is_error => Err(Error::new(Status::GenericFailure, crate::bridge::text_of(&r))),
        Ok(r) => Ok(ToolReply { text: crate::bridge::text_of(&r), content: crate::bridge::to_pi_content(&r) }),
        Err(McpError::Cancelled) => Err(Error::new(Status::Cancelled, format!("{name}: aborted"))),
        Err(e) => Err(Error::new(Status::GenericFailure, e.to_string())),
    }
}

/// Aborts a call started with `callId` (pi's AbortSignal fired). Returns false when that call
/// already finished.
#[napi]
pub fn cancel_call(call_id: u32) -> bool {
    Extension::get().cancel(call_id)
}

/// pi's `agent_end`: queues the turn's conversation row and a debounced transcript feed, and
/// returns at once. Returns true when a row write was queued (false: nothing to log, a repeat of a
/// logged turn, or voice tools off). Never throws: odd input is reported on stderr.
#[napi]
pub fn log_turn(env: Env, messages: Unknown) -> bool {
    let ext = Extension::get();
    if let Some(bridge) = ext.bridge.clone().filter(|b| !b.has_settled_event()) {
        spawn(async move {
            bridge.settled().await;
        });
    }
    let Some(voice) = ext.voice.clone() else { return false };
    let messages = match slim_messages(&env, messages) {
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

/// The part of `agent_end`'s messages the turn log reads: each message's `role` and `timestamp`,
/// and for user and assistant messages their string content or `{type, text}` of their text
/// blocks. Images and tool results (often hundreds of KB) are never copied off the JS heap: this
/// runs on the JS thread, before the handler returns.
fn slim_messages(env: &Env, messages: Unknown) -> Result<Value> {
    if !messages.is_array()? {
        return Ok(Value::Null);
    }
    let list: Array = unsafe { messages.cast()? };
    let mut out = Vec::with_capacity(list.len() as usize);
    for i in 0..list.len() {
        let Some(m) = list.get::<Unknown>(i)? else { continue };
        if m.get_type()? != ValueType::Object {
            out.push(Value::Null);
            continue;
        }
        let m: Object = unsafe { m.cast()? };
        let role: Option<Unknown> = m.get("role")?;
        let role = match role {
            Some(r) if r.get_type()? == ValueType::String => env.from_js_value::<String, _>(r)?,
            _ => String::new(),
        };
        let mut slim = serde_json::Map::new();
        if let Some(ts) = m.get::<Unknown>("timestamp")? {
            if matches!(ts.get_type()?, ValueType::Number | ValueType::String) {
                slim.insert("timestamp".into(), env.from_js_value(ts)?);
            }
        }
        if role == "user" || role == "assistant" {
            slim.insert("content".into(), slim_content(env, m.get("content")?)?);
        }
        slim.insert("role".into(), Value::String(role));
        out.push(Value::Object(slim));
    }
    Ok(Value::Array(out))
}

fn slim_content(env: &Env, content: Option<Unknown>) -> Result<Value> {
    let Some(content) = content else { return Ok(Value::Null) };
    if content.get_type()? == ValueType::String {
        return env.from_js_value(content);
    }
    if !content.is_array()? {
        return Ok(Value::Null);
    }
    let blocks: Array = unsafe { content.cast()? };
    let mut out = Vec::new();
    for i in 0..blocks.len() {
        let Some(b) = blocks.get::<Unknown>(i)? else { continue };
        if b.get_type()? != ValueType::Object {
            continue;
        }
        let b: Object = unsafe { b.cast()? };
        let is_text = matches!(b.get::<Unknown>("type")?, Some(t) if t.get_type()? == ValueType::String && env.from_js_value::<String, _>(t)? == "text");
        if !is_text {
            continue;
        }
        if let Some(t) = b.get::<Unknown>("text")? {
            if t.get_type()? == ValueType::String {
                out.push(json!({"type": "text", "text": env.from_js_value::<String, _>(t)?}));
            }
        }
    }
    Ok(Value::Array(out))
}

/// Resolves when every queued conversation row has been written and queued diagnostics have
/// reached stderr.
#[napi]
pub async fn flush_turn_log() {
    if let Some(voice) = Extension::get().voice.clone() {
        voice.log.flush().await;
    }
    let _ = tokio::task::spawn_blocking(|| crate::diag::flush(std::time::Duration::from_secs(1))).await;
}

/// pi's `agent_settled` (newer pi): a debounced transcript feed in the background. Once seen,
/// `agent_end` stops triggering feeds.
#[napi]
pub fn palace_settled() {
    if let Some(bridge) = Extension::get().bridge.clone() {
        bridge.mark_settled_event();
        spawn(async move {
            bridge.settled().await;
        });
    }
}

/// pi's `session_start`: arms the wake-up for a fresh session (`startup`, `new`) that holds no
/// messages yet (a thread continued at startup is a resume).
#[napi]
pub fn palace_session_start(reason: String, has_messages: Option<bool>) {
    if let Some(b) = &Extension::get().bridge {
        b.session_start(&reason, has_messages.unwrap_or(false));
    }
}

/// pi's `before_agent_start`: the wake-up text on the first prompt of a fresh session, else null.
/// Bounded by the request timeout: never holds the prompt hostage.
#[napi]
pub async fn palace_wakeup() -> Option<String> {
    let bridge = Extension::get().bridge.clone()?;
    bridge.wakeup().await
}

/// `/mempalace <args>`: `reconnect` starts the palace again (a new server and respawn budget) and
/// says how that went; anything else answers the usage. The entry then registers new tools.
#[napi]
pub async fn palace_command(args: String) -> String {
    let Some(bridge) = Extension::get().bridge.clone() else { return "the MemPalace bridge is off (MEMPALACE_BRIDGE=0)".into() };
    match args.trim() {
        "reconnect" => match bridge.reconnect().await {
            Ok(tools) => format!("MemPalace connected: {} tools", tools.len()),
            Err(e) => format!("MemPalace is still unavailable: {e}"),
        },
        _ => "usage: /mempalace reconnect (start the palace again after it went down)".into(),
    }
}

/// The user message `/mempalace-diary [topic]` sends (null when the bridge is off).
#[napi]
pub fn palace_diary_prompt(topic: String) -> Option<String> {
    Extension::get().bridge.as_ref().map(|b| b.diary_prompt(&topic))
}

/// pi's `session_shutdown`: writes queued conversation rows, feeds the session's transcripts to
/// the palace (bounded by the feed timeouts) and, on `quit`, stops the MemPalace server.
#[napi]
pub async fn session_shutdown(reason: String) {
    let ext = Extension::get();
    if let Some(bridge) = ext.bridge.clone() {
        bridge.session_shutdown(&reason).await;
    }
    flush_turn_log().await;
}

/// Counters of the process-wide state.
#[napi]
pub fn stats() -> NativeStats {
    let ext = Extension::get();
    let n = |a: &std::sync::atomic::AtomicUsize| a.load(Ordering::Relaxed) as u32;
    let v = ext.voice.as_deref();
    let b = ext.bridge.as_deref();
    let mcp = b.map(|b| b.client().stats());
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
        palace_enabled: b.is_some(),
        palace_connected: mcp.as_ref().is_some_and(|s| s.connected),
        palace_tools: b.map_or(0, |b| b.known_tools().len() as u32),
        mcp_spawns: mcp.as_ref().map_or(0, |s| s.spawns as u32),
        mcp_respawns: mcp.as_ref().map_or(0, |s| s.respawns as u32),
        mcp_child_pid: mcp.as_ref().and_then(|s| s.child_pid),
        stderr_lines_dropped: n(&crate::diag::DROPPED),
    }
}

// ---- The operator's command line (bin/dotty-pi-ext.js): thin conversions to `crate::doctor`. ----

/// `doctor`: the rendered report (`json`: the JSON shape) and its exit status (0/1/2).
#[napi(object)]
pub struct DoctorOutput {
    pub text: String,
    pub exit_code: i32,
}

/// Runs every read-only check against this process's environment. `color`: ANSI colours.
#[napi]
pub async fn doctor(json: bool, color: bool, node_version: Option<String>, node_exec_path: Option<String>) -> DoctorOutput {
    let host = crate::doctor::Host { node_version, node_exec_path, cwd: std::env::current_dir().ok() };
    let r = crate::doctor::run(&|n: &str| std::env::var(n).ok(), &host).await;
    DoctorOutput { text: if json { r.to_json() } else { r.to_text(color) }, exit_code: r.exit_code() }
}

/// `feed --dry-run`: what a feed would stage and send; reads only.
#[napi]
pub fn feed_plan() -> String {
    crate::doctor::feed::plan(&crate::palace::PalaceConfig::from_env().0)
}

/// `feed`: connects to the palace and runs the transcript feed once. `ok` false: it failed or
/// could not run.
#[napi(object)]
pub struct FeedResult {
    pub text: String,
    pub ok: bool,
}

#[napi]
pub async fn feed_once() -> FeedResult {
    let Some(bridge) = Extension::get().bridge.clone() else { return FeedResult { text: "the MemPalace bridge is off (MEMPALACE_BRIDGE=0)".into(), ok: true } };
    let _ = bridge.connect().await;
    let (text, ok) = crate::doctor::feed::describe(&bridge.session_shutdown("cli").await);
    FeedResult { text, ok }
}
