//! The N-API boundary: converts JS values to core types and back, nothing else. Every decision
//! is made by [`Extension`] (src/extension/); errors become JS errors in [`js_error`] alone.
//! Beside it: `agent_end`'s messages read off the JS heap (`turns`), where the core's notices go
//! (`notices`), the operator's command line (`cli`), the process-wide counters as JS reads them
//! (`stats`), pi's own MCP writes handed to the core (`pi_writes`), how a tool call's promise is
//! settled from the thread that answered it (`settle`).

mod cli;
mod direct;
mod notices;
mod pi_writes;
mod settle;
mod stats;
mod turns;

use crate::extension::{
    Background, CommandReply, CommandSpec, EarlierMessage, EventSpec, Extension, FooterStatus, HiddenMessage,
    PalaceTools, PiView, Registration, RunStart, ToolOutput, ToolSpec,
};
use napi::bindgen_prelude::*;
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
    /// The MCP client is latched down (respawns used up, or an error no try can fix).
    pub palace_down: bool,
    /// Down with a try scheduled: milliseconds until it (0: due or under way); null when up or
    /// down for good.
    pub palace_next_try_ms: Option<u32>,
    pub stderr_lines_dropped: u32,
    /// Times the JS thread was woken to settle tool calls' promises: answers that arrive together
    /// are settled in one wake-up, so with calls in flight together this is less than the calls.
    pub promise_wakeups: u32,
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

/// A pi event the core handles: index.js hands it to the adapter `handler` names.
#[napi(object)]
pub struct EventDescriptor {
    pub event: String,
    pub handler: String,
}

/// The pi events the core handles (the palace's only while the bridge is on), as data.
#[napi]
pub fn pi_events() -> Vec<EventDescriptor> {
    let describe = |e: EventSpec| EventDescriptor { event: e.event.into(), handler: e.handler.into() };
    ext().pi_events().into_iter().map(describe).collect()
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
    crate::stages::mark(crate::stages::Stage::Converted);
    // Settled from whichever thread answers, through the process's one threadsafe function.
    let promise = settle::call(env, |done| ext().call(&name, params.unwrap_or(Value::Null), call_id, done));
    crate::stages::mark(crate::stages::Stage::Queued);
    promise
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

/// pi's `session_before_compact`: the session fed at once in the background; returns at once (the
/// compaction never waits).
#[napi]
pub fn before_compact() {
    ext().on_before_compact()
}

/// A hidden message already on the session's branch (pi's `custom_message` entry): its
/// `customType` and the text of its content.
#[napi(object)]
pub struct SessionMessage {
    pub custom_type: String,
    pub text: String,
}

/// pi's `session_start`: arms the wake-up for a fresh session (`startup`, `new`) that holds no
/// messages yet (a thread continued at startup is a resume); `earlier`: the hidden messages on
/// its branch (what the palace showed them is not injected again); `cwd`: pi's `ctx.cwd`;
/// `trusted`: pi's `ctx.isProjectTrusted()`, null on a pi without project trust.
#[napi]
pub fn session_start(
    reason: String,
    has_messages: Option<bool>,
    earlier: Option<Vec<SessionMessage>>,
    cwd: Option<String>,
    trusted: Option<bool>,
) {
    let earlier: Vec<EarlierMessage> = earlier
        .unwrap_or_default()
        .into_iter()
        .map(|m| EarlierMessage { custom_type: m.custom_type, text: m.text })
        .collect();
    let cwd = cwd.map(std::path::PathBuf::from);
    ext().on_session_start(&reason, has_messages.unwrap_or(false), &earlier, cwd.as_deref(), trusted)
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

impl From<HiddenMessage> for BeforeAgentStart {
    fn from(m: HiddenMessage) -> BeforeAgentStart {
        BeforeAgentStart {
            message: InjectedMessage { custom_type: m.custom_type.into(), content: m.content, display: m.display },
        }
    }
}

/// pi's `before_agent_start`: the hidden wake-up message on the first prompt of a fresh session,
/// else null; only for a run a user started (`messageType`: pi 1.2+'s `"user"`/`"custom"`, absent
/// before; `prompt`: the prompt text). Bounded by the request timeout: never holds the prompt hostage.
/// The prompt waits from this call on the JS thread: the recall budget counts from it, not from
/// when a worker thread first runs the core's handler.
#[napi(ts_return_type = "Promise<BeforeAgentStart | null>")]
pub fn before_agent_start(
    env: &Env,
    message_type: Option<String>,
    prompt: Option<String>,
) -> Result<PromiseRaw<'_, Option<BeforeAgentStart>>> {
    let at = std::time::Instant::now();
    env.spawn_future(async move {
        let start = RunStart { message_type: message_type.as_deref(), prompt: prompt.as_deref(), at: Some(at) };
        Ok(ext().on_before_agent_start(start).await.map(BeforeAgentStart::from))
    })
}

/// pi's second `before_agent_start` handler (`MEMPALACE_RECALL=on`): the hidden
/// `mempalace-recall` message of the run being started, else null. Resolves within the recall
/// budget (`MEMPALACE_RECALL_BUDGET_MS`): the prompt never waits longer.
#[napi]
pub async fn recall() -> Option<BeforeAgentStart> {
    ext().on_recall().await.map(BeforeAgentStart::from)
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
    NativeStats { promise_wakeups: settle::wakeups() as u32, ..ext().stats().into() }
}
