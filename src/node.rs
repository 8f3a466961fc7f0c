//! The N-API boundary: converts JS values to core types and back, nothing else. Every decision
//! is made by [`Extension`] (src/extension/); errors become JS errors in [`js_error`] alone.

use crate::extension::{
    Background, CommandReply, CommandSpec, Extension, FooterStatus, PalaceTools, Registration, Stats, ToolOutput,
    ToolSpec,
};
use crate::palace::exposure::PiView;
use crate::palace::wakeup::{RunStart, WakeupMessage};
use crate::voice::turn_log::{self, Content, Message};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::Value;

/// The extension, with its background work running on napi's tokio runtime.
fn ext() -> &'static Extension {
    fn on_napi_runtime(work: Background) {
        spawn(work);
    }
    crate::extension::install_spawner(on_napi_runtime);
    Extension::get()
}

/// The one place a core [`crate::error::Error`] becomes a JS `Error`: its message, and `code`
/// the kind's stable code (`TIMEOUT`, `PALACE_DOWN`, `SERVER_ERROR`, `BAD_ARGUMENTS`,
/// `CANCELLED`, `INTERNAL`). Runs on the JS thread; the returned error rejects with that object.
fn js_error(env: &Env, e: crate::error::Error) -> Error {
    let built = env.create_error(Error::new(Status::GenericFailure, e.message.clone())).and_then(|mut obj| {
        obj.set_named_property("code", e.code())?;
        Ok(obj)
    });
    match built {
        Ok(obj) => Error::from(obj.to_unknown()),
        Err(_) => Error::new(Status::GenericFailure, e.message),
    }
}

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
    /// pi 1.x's `exposure` (`deferred`); none: direct.
    pub exposure: Option<String>,
    /// pi 1.x's `namespace` (`{name, aliases?, description, instructions?}`), with `exposure`.
    pub namespace: Option<Value>,
    /// MCP `annotations` as the server declared them.
    pub annotations: Option<Value>,
}

impl From<ToolSpec> for ToolDescriptor {
    fn from(t: ToolSpec) -> ToolDescriptor {
        ToolDescriptor {
            name: t.name,
            label: t.label,
            description: t.description,
            prompt_snippet: t.prompt_snippet,
            prompt_guidelines: t.prompt_guidelines,
            parameters: t.parameters,
            exposure: t.exposure.map(String::from),
            namespace: t.namespace,
            annotations: t.annotations,
        }
    }
}

/// What pi offers, as the entry reads it off `pi.getAllTools()` and `pi.getActiveTools()`.
#[napi(object)]
pub struct PiToolsView {
    /// Every tool name pi knows.
    pub names: Vec<String>,
    /// pi reports an `exposure` for its tools.
    pub exposure: bool,
    /// The tools that declare `reachesTools`.
    pub reaching: Vec<String>,
    /// The active tools.
    pub active: Vec<String>,
}

/// The palace tools to register now, and the tools to add to pi's active set.
#[napi(object)]
pub struct PalaceRegistration {
    pub tools: Vec<ToolDescriptor>,
    pub activate: Vec<String>,
}

impl From<PalaceTools> for PalaceRegistration {
    fn from(p: PalaceTools) -> PalaceRegistration {
        PalaceRegistration { tools: descriptors(p.tools), activate: p.activate }
    }
}

fn descriptors(tools: Vec<ToolSpec>) -> Vec<ToolDescriptor> {
    tools.into_iter().map(ToolDescriptor::from).collect()
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
    /// Transactions that committed two or more queued writes at once (group commit).
    pub brain_write_groups: u32,
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
    ext().start();
    stats()
}

/// The tools one load of the extension (startup, or each `/reload`) hands to pi: each name once.
#[napi]
#[derive(Default)]
pub struct ToolRegistry(Registration);

#[napi]
impl ToolRegistry {
    #[napi(constructor)]
    pub fn new() -> ToolRegistry {
        ToolRegistry::default()
    }

    /// The voice tools pi doesn't have from this load yet.
    #[napi]
    pub fn new_voice_tools(&mut self) -> Vec<ToolDescriptor> {
        descriptors(self.0.voice_tools(ext()))
    }

    /// The MemPalace tools pi may register now and doesn't have from this load (or has with
    /// another exposure): the cached `tools/list` at load, the server's own after its handshake;
    /// and the tools to add to pi's active set. `pi`: what `pi.getAllTools()` reports (null while
    /// pi loads extensions, when it throws); a palace tool never shadows one that is not this
    /// load's own.
    #[napi]
    pub fn new_palace_tools(&mut self, pi: Option<PiToolsView>) -> PalaceRegistration {
        let view = pi.map(|v| PiView { names: v.names, exposure: v.exposure, reaching: v.reaching, active: v.active });
        self.0.palace_tools(ext(), view).into()
    }
}

/// pi 1.x's system prompt section on the palace tools not declared to the model (how to reach
/// them), for `before_agent_start`'s `systemPromptOptions.sections.mempalace`; null when every
/// palace tool is declared.
#[napi]
pub fn palace_prompt_section() -> Option<String> {
    ext().palace_prompt_section()
}

/// Resolves with the MemPalace server's own tool list once the background handshake is done;
/// empty when the palace can't be had. The entry then registers those it doesn't have yet.
#[napi]
pub async fn palace_tools() -> Vec<ToolDescriptor> {
    descriptors(ext().palace_tools().await)
}

impl From<ToolOutput> for ToolReply {
    fn from(r: ToolOutput) -> ToolReply {
        ToolReply { text: r.text, content: r.content }
    }
}

/// Runs one tool with the model's arguments. A voice tool resolves with the contract's reply even
/// for bad input or a service that is down; a MemPalace tool rejects with the server's message
/// when the server reports an error. `callId`, when given, lets `cancelCall` abort the call.
/// Rejects with an `Error` whose `code` is `TIMEOUT`, `PALACE_DOWN`, `SERVER_ERROR`,
/// `BAD_ARGUMENTS`, `CANCELLED` or `INTERNAL`.
#[napi(ts_return_type = "Promise<ToolReply>")]
pub fn call_tool(
    env: &Env,
    name: String,
    params: Option<Value>,
    call_id: Option<u32>,
) -> Result<PromiseRaw<'_, ToolReply>> {
    // Settled from whichever thread answers, through the deferred's threadsafe function.
    let (deferred, promise) = env.create_deferred()?;
    let done = move |r: std::result::Result<ToolOutput, crate::error::Error>| {
        deferred.resolve(move |env| r.map(ToolReply::from).map_err(|e| js_error(&env, e)))
    };
    ext().call(&name, params.unwrap_or(Value::Null), call_id, Box::new(done));
    Ok(PromiseRaw::new(env.raw(), promise.raw()))
}

/// Does nothing, asynchronously (napi-rs's tokio runtime, as every async export). Not a tool: the
/// floor of bench/ (what any promise-returning native call costs from JS).
#[napi]
pub async fn noop() {}

/// Aborts a call started with `callId` (pi's AbortSignal fired). Returns false when that call
/// already finished.
#[napi]
pub fn cancel_call(call_id: u32) -> bool {
    ext().cancel(call_id)
}

/// pi's `agent_end`: queues the turn's conversation row and a debounced transcript feed, and
/// returns at once. Returns true when a row write was queued (false: nothing to log, a repeat of a
/// logged turn, or voice tools off). Never throws: odd input is reported on stderr.
#[napi]
pub fn log_turn(env: Env, messages: Unknown) -> bool {
    match turn_messages(&env, messages) {
        Ok(messages) => ext().on_agent_end(&messages),
        Err(e) => {
            crate::diag!("turn log: unreadable agent_end messages: {e}");
            ext().on_agent_end(&[])
        }
    }
}

/// `agent_end`'s messages as [`turn_log::Message`]s, read on the JS thread before the handler
/// returns: a content only where [`turn_log::reads_content`] says, a block's text only where
/// [`turn_log::counts_block`] does, so nothing else (images, tool results) leaves the JS heap.
fn turn_messages(env: &Env, messages: Unknown) -> Result<Vec<Message>> {
    if !messages.is_array()? {
        return Ok(Vec::new());
    }
    // SAFETY: `cast` doesn't check the type; `is_array` just did.
    let list: Array = unsafe { messages.cast()? };
    let mut out = Vec::with_capacity(list.len() as usize);
    for i in 0..list.len() {
        let Some(m) = list.get::<Unknown>(i)? else { continue };
        let Some(m) = object(m)? else {
            out.push(Message::default());
            continue;
        };
        let role = string(env, m.get("role")?)?.unwrap_or_default();
        let timestamp = match m.get::<Unknown>("timestamp")? {
            Some(t) if matches!(t.get_type()?, ValueType::Number | ValueType::String) => {
                Some(env.from_js_value::<Value, _>(t)?.to_string())
            }
            _ => None,
        };
        let content = if turn_log::reads_content(&role) { content(env, m.get("content")?)? } else { Content::Absent };
        out.push(Message { role, timestamp, content });
    }
    Ok(out)
}

fn content(env: &Env, content: Option<Unknown>) -> Result<Content> {
    let Some(content) = content else { return Ok(Content::Absent) };
    if content.get_type()? == ValueType::String {
        return Ok(Content::Text(env.from_js_value(content)?));
    }
    if !content.is_array()? {
        return Ok(Content::Absent);
    }
    // SAFETY: `cast` doesn't check the type; `is_array` just did.
    let blocks: Array = unsafe { content.cast()? };
    let mut texts = Vec::new();
    for i in 0..blocks.len() {
        let Some(b) = blocks.get::<Unknown>(i)?.map(object).transpose()?.flatten() else { continue };
        if !string(env, b.get("type")?)?.is_some_and(|t| turn_log::counts_block(&t)) {
            continue;
        }
        if let Some(text) = string(env, b.get("text")?)? {
            texts.push(text);
        }
    }
    Ok(Content::Blocks(texts))
}

/// `v` as an object, when it is one.
fn object(v: Unknown) -> Result<Option<Object>> {
    if v.get_type()? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `cast` doesn't check the type; `get_type` just said Object.
    Ok(Some(unsafe { v.cast()? }))
}

/// `v` as a string, when it is one.
fn string(env: &Env, v: Option<Unknown>) -> Result<Option<String>> {
    match v {
        Some(v) if v.get_type()? == ValueType::String => Ok(Some(env.from_js_value(v)?)),
        _ => Ok(None),
    }
}

/// Resolves when every queued conversation row has been written and queued diagnostics have
/// reached stderr.
#[napi]
pub async fn flush_turn_log() {
    ext().flush().await
}

/// pi's `agent_settled` (newer pi): a debounced transcript feed in the background. Once seen,
/// `agent_end` stops triggering feeds.
#[napi]
pub fn agent_settled() {
    ext().on_agent_settled()
}

/// pi's `session_start`: arms the wake-up for a fresh session (`startup`, `new`) that holds no
/// messages yet (a thread continued at startup is a resume).
#[napi]
pub fn session_start(reason: String, has_messages: Option<bool>) {
    ext().on_session_start(&reason, has_messages.unwrap_or(false))
}

/// The message `before_agent_start` injects (pi's `{message}`).
#[napi(object)]
pub struct InjectedMessage {
    pub custom_type: String,
    pub content: String,
    pub display: bool,
}

/// What pi's `before_agent_start` handler returns.
#[napi(object)]
pub struct BeforeAgentStart {
    pub message: InjectedMessage,
}

impl From<WakeupMessage> for BeforeAgentStart {
    fn from(m: WakeupMessage) -> BeforeAgentStart {
        BeforeAgentStart {
            message: InjectedMessage { custom_type: m.custom_type.into(), content: m.content, display: m.display },
        }
    }
}

/// pi's `before_agent_start`: the hidden wake-up message on the first prompt of a fresh session,
/// else null; only for a run a user started (`messageType`: pi 1.2+'s `"user"`/`"custom"`, absent
/// before; `prompt`: the prompt text). Bounded by the request timeout: never holds the prompt hostage.
#[napi]
pub async fn before_agent_start(message_type: Option<String>, prompt: Option<String>) -> Option<BeforeAgentStart> {
    let start = RunStart { message_type: message_type.as_deref(), prompt: prompt.as_deref() };
    ext().on_before_agent_start(start).await.map(BeforeAgentStart::from)
}

/// `/mempalace <args>`: `status` (or nothing) says the palace's state; `reconnect` starts the
/// palace again (a new server and respawn budget) and says how that went; anything else answers
/// the usage. The entry then registers new tools.
#[napi]
pub async fn palace_command(args: String) -> String {
    ext().palace_command(&args).await
}

/// A command as pi registers it (`pi.registerCommand`), minus its handler, which calls
/// `runCommand`.
#[napi(object)]
pub struct CommandDescriptor {
    pub name: String,
    pub description: String,
}

impl From<CommandSpec> for CommandDescriptor {
    fn from(c: CommandSpec) -> CommandDescriptor {
        CommandDescriptor { name: c.name.into(), description: c.description.into() }
    }
}

/// The commands pi registers, in order (none when the bridge is off).
#[napi]
pub fn commands() -> Vec<CommandDescriptor> {
    ext().commands().into_iter().map(CommandDescriptor::from).collect()
}

/// What pi does with a command's outcome: `userMessage` goes to `pi.sendUserMessage`; `notice` is
/// shown with `ctx.ui.notify(notice, 'info')` once the palace tools and the footer are brought up
/// to date. Neither: nothing.
#[napi(object)]
pub struct CommandOutcome {
    pub user_message: Option<String>,
    pub notice: Option<String>,
}

impl From<Option<CommandReply>> for CommandOutcome {
    fn from(r: Option<CommandReply>) -> CommandOutcome {
        match r {
            Some(CommandReply::UserMessage(m)) => CommandOutcome { user_message: Some(m), notice: None },
            Some(CommandReply::Notice(m)) => CommandOutcome { user_message: None, notice: Some(m) },
            None => CommandOutcome { user_message: None, notice: None },
        }
    }
}

/// Runs the command `name` (one of `commands()`) with the text typed after it.
#[napi]
pub async fn run_command(name: String, args: String) -> CommandOutcome {
    ext().run_command(&name, &args).await.into()
}

/// Called by the entry first, while pi loads it: when pi's stdout is a terminal
/// (`process.stdout.isTTY`), pi may draw its interactive UI there, so what the core says waits for
/// `speakThrough` (held, bounded) instead of going to stderr.
#[napi]
pub fn hold_notices(stdout_is_terminal: bool) {
    crate::diag::hold(stdout_is_terminal)
}

/// What pi's `session_start` context says of its UI: `mode` (pi >= 1.x), `hasUI`, and how many
/// themes `ctx.ui.getAllThemes()` lists.
#[napi(object)]
pub struct UiFacts {
    pub mode: Option<String>,
    pub has_ui: bool,
    pub themes: u32,
}

/// `notify(level, text)`: pi's `ctx.ui.notify`, called on the JS thread; never keeps Node alive.
type NotifyFn = ThreadsafeFunction<FnArgs<(String, String)>, (), FnArgs<(String, String)>, Status, false, true>;

/// pi's `session_start`: where what the core says goes from now on. In pi's interactive terminal
/// UI each line goes once to `notify(level, text)` (`level`: `info` or `warning`); elsewhere to
/// stderr, as before. The lines held since `holdNotices` go there first. Returns whether it is the
/// terminal UI.
#[napi(ts_args_type = "facts: UiFacts, notify: (level: 'info' | 'warning', text: string) => void")]
pub fn speak_through(facts: UiFacts, notify: NotifyFn) -> bool {
    let surface = crate::diag::Surface::of(facts.mode.as_deref(), facts.has_ui, facts.themes as usize);
    let notify: crate::diag::Notify = std::sync::Arc::new(move |level, text| {
        // A full queue or a Node that is exiting: the line is lost, never waited for.
        let args = (level.as_str().to_string(), text.to_string()).into();
        let _ = notify.call(args, ThreadsafeFunctionCallMode::NonBlocking);
    });
    crate::diag::attach(surface, notify);
    surface == crate::diag::Surface::Terminal
}

/// What the core says goes to stderr again (pi's terminal UI stopped: `session_shutdown` on quit).
#[napi]
pub fn notices_to_stderr() {
    crate::diag::detach()
}

/// The process is exiting (`process.on('exit')`): lines still held are written to stderr now.
#[napi]
pub fn release_notices() {
    crate::diag::release()
}

/// The palace's entry in pi's footer: `ctx.ui.setStatus(key, text)` (no text clears it).
#[napi(object)]
pub struct StatusDescriptor {
    pub key: String,
    pub text: Option<String>,
}

impl From<FooterStatus> for StatusDescriptor {
    fn from(s: FooterStatus) -> StatusDescriptor {
        StatusDescriptor { key: s.key.into(), text: s.text }
    }
}

/// The footer entry as it is now.
#[napi]
pub fn footer_status() -> StatusDescriptor {
    ext().footer_status().into()
}

/// The palace's state in a few words, for pi's footer (`ctx.ui.setStatus`); null when the bridge
/// is off.
#[napi]
pub fn palace_status() -> Option<String> {
    ext().palace_status()
}

/// The user message `/mempalace-diary [topic]` sends (null when the bridge is off).
#[napi]
pub fn palace_diary_prompt(topic: String) -> Option<String> {
    ext().diary_prompt(&topic)
}

/// pi's `session_shutdown`: feeds the session's transcripts to the palace (bounded by the feed
/// timeouts), on `quit` stops the MemPalace server, and writes queued conversation rows.
#[napi]
pub async fn session_shutdown(reason: String) {
    ext().shutdown(&reason).await
}

/// Counters of the process-wide state.
#[napi]
pub fn stats() -> NativeStats {
    ext().stats().into()
}

impl From<Stats> for NativeStats {
    fn from(s: Stats) -> NativeStats {
        let n = |x: usize| x as u32;
        let v = s.voice.as_ref();
        let mcp = s.palace.as_ref().map(|p| &p.mcp);
        NativeStats {
            state_creations: n(s.state_creations),
            voice_enabled: v.is_some(),
            brain_db: v.map(|v| v.brain_db.display().to_string()),
            brain_writer_opens: v.map_or(0, |v| n(v.brain.writer_opens)),
            brain_reader_opens: v.map_or(0, |v| n(v.brain.reader_opens)),
            brain_files_created: v.map_or(0, |v| n(v.brain.files_created)),
            brain_write_groups: v.map_or(0, |v| n(v.brain.write_groups)),
            turn_rows_written: v.map_or(0, |v| n(v.turn_log.rows_written)),
            turn_rows_rewritten: v.map_or(0, |v| n(v.turn_log.rows_rewritten)),
            turn_writes_in_flight: v.map_or(0, |v| n(v.turn_log.in_flight)),
            song_catalogue_fetches: v.map_or(0, |v| n(v.song_catalogue_fetches)),
            calls_in_flight: n(s.calls_in_flight),
            palace_enabled: s.palace.is_some(),
            palace_connected: mcp.is_some_and(|m| m.connected),
            palace_tools: s.palace.as_ref().map_or(0, |p| n(p.tools)),
            mcp_spawns: mcp.map_or(0, |m| m.spawns as u32),
            mcp_respawns: mcp.map_or(0, |m| m.respawns as u32),
            mcp_child_pid: mcp.and_then(|m| m.child_pid),
            stderr_lines_dropped: n(s.stderr_lines_dropped),
        }
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
pub async fn doctor(
    json: bool,
    color: bool,
    node_version: Option<String>,
    node_exec_path: Option<String>,
) -> DoctorOutput {
    let host = crate::doctor::Host { node_version, node_exec_path, cwd: std::env::current_dir().ok() };
    let r = crate::doctor::run(&crate::env::process, &host).await;
    DoctorOutput { text: if json { r.to_json() } else { r.to_text(color) }, exit_code: r.exit_code() }
}

/// `clean-turns [--dry-run] [--backup PATH|none]`: rewrites brain.db's polluted conversation rows
/// (src/voice/clean_turns.rs), on a blocking thread.
#[napi]
pub async fn clean_turns(dry_run: bool, backup: Option<String>) -> DoctorOutput {
    let path = crate::config::Config::from_lookup(&crate::env::process).voice.brain_db;
    let backup = crate::voice::clean_turns::Backup::from_arg(backup.as_deref());
    let run = tokio::task::spawn_blocking(move || crate::voice::clean_turns::command(&path, dry_run, &backup)).await;
    let (text, exit_code) = run.unwrap_or_else(|e| (format!("clean-turns: internal error: {e}\n"), 1));
    DoctorOutput { text, exit_code }
}

/// `feed --dry-run`: what a feed would stage and send; reads only.
#[napi]
pub fn feed_plan() -> String {
    crate::doctor::feed::plan(&crate::config::Config::from_env().palace)
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
    let (text, ok) = match ext().feed_once().await {
        Some(outcome) => crate::doctor::feed::describe(&outcome),
        None => (ext().bridge_off(), true),
    };
    FeedResult { text, ok }
}

// ---- Production's direct calls (src/tools/<tool>.ts): thin conversions to `crate::voice::direct`. ----

/// Runs the voice tool `name` once, outside pi, and resolves with its reply: `args` as the model
/// would pass them (`{"question": …}`), `options` production's per-call overrides (`dbPath`,
/// `sessionId`, `baseUrl`, `timeoutMs`, `url`, `timeoutSec`, `model`, `host`, `port`). Reads the
/// extension's environment; never starts the palace bridge or anything that outlives the call.
#[napi]
pub async fn direct_call(name: String, args: Option<Value>, options: Option<Value>) -> Result<String> {
    let (args, options) = (args.unwrap_or(Value::Null), options.unwrap_or(Value::Null));
    crate::voice::direct::call(&name, &args, &options).await.map_err(|e| Error::new(Status::InvalidArg, e.message))
}

/// [`direct_call`] for memory_lookup, remember and recall_person, returning the reply
/// synchronously (production's signatures): blocks until brain.db answered, a write until it
/// committed.
#[napi]
pub fn direct_call_sync(name: String, args: Option<Value>, options: Option<Value>) -> Result<String> {
    let (args, options) = (args.unwrap_or(Value::Null), options.unwrap_or(Value::Null));
    crate::voice::direct::call_blocking(&name, &args, &options).map_err(|e| Error::new(Status::InvalidArg, e.message))
}
