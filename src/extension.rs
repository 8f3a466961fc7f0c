//! The one process-wide state, and everything pi asks of it: the extension's core API.
//!
//! pi's `/reload` runs `index.js` again, but Node's require cache hands back the same native module,
//! so it finds this state and only re-registers: one store, one HTTP pool, one runtime.
//!
//! Every decision lives here, in plain Rust: which half (voice or palace) answers a call, its
//! cancellation, a panic becoming an [`Error`], which palace tools pi may register, when the
//! palace is fed, the wake-up, the order of shutdown. `node.rs` only converts.

use crate::bridge::{text_of, to_pi_content, Bridge};
use crate::config::Config;
use crate::error::{Error, Kind};
use crate::palace::wakeup::{RunStart, WakeupMessage};
use crate::sync::lock;
use crate::voice::Voice;
use once_cell::sync::Lazy;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Counts how many times the state was built in this process (always 1: tests assert it).
pub static STATE_CREATIONS: AtomicUsize = AtomicUsize::new(0);

/// Work the extension starts and doesn't wait for (a row write, a transcript feed).
pub type Background = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Where background work runs: the binding's runtime once it installed itself, else the tokio
/// runtime of the caller (tests).
static SPAWNER: OnceLock<fn(Background)> = OnceLock::new();

/// Makes `spawner` run the extension's background work (the first one installed stays).
pub fn install_spawner(spawner: fn(Background)) {
    let _ = SPAWNER.set(spawner);
}

fn spawn(work: impl Future<Output = ()> + Send + 'static) {
    match SPAWNER.get() {
        Some(spawner) => spawner(Box::pin(work)),
        None => drop(tokio::spawn(work)),
    }
}

pub struct Extension {
    /// `None` when `DOTTY_VOICE_TOOLS=0`.
    pub voice: Option<Arc<Voice>>,
    /// `None` when the bridge is off: `bridge_off` says why.
    pub bridge: Option<Arc<Bridge>>,
    bridge_off: Option<crate::palace::config::BridgeOff>,
    // A std Mutex: held only to insert or remove an entry, never across an await.
    cancels: Mutex<HashMap<u32, Cancel>>,
    started: std::sync::Once,
}

/// A tool as pi registers it (`pi.registerTool`), minus `execute`.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub label: String,
    pub description: String,
    pub prompt_snippet: Option<String>,
    pub prompt_guidelines: Option<Vec<String>>,
    /// JSON Schema of the arguments (for MemPalace tools: the server's `inputSchema`, unchanged).
    pub parameters: Value,
}

/// What a tool answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The text blocks joined: for a voice tool, exactly the contract's reply.
    pub text: String,
    /// pi content blocks (`{type: "text", text}` or `{type: "image", data, mimeType}`).
    pub content: Vec<Value>,
}

impl Reply {
    fn text(text: String) -> Reply {
        Reply { content: vec![json!({"type": "text", "text": text})], text }
    }
}

/// The tools one load of the extension (one run of `index.js`: startup or `/reload`) handed to
/// pi, so that pi never gets `registerTool` twice for a name.
#[derive(Debug, Default)]
pub struct Registration {
    given: HashSet<String>,
}

impl Registration {
    /// The voice tools not handed to pi yet.
    pub fn voice_tools(&mut self, ext: &Extension) -> Vec<ToolSpec> {
        let tools = match ext.voice {
            Some(_) => crate::voice::descriptors::voice_tools().into_iter().map(voice_spec).collect(),
            None => Vec::new(),
        };
        self.keep_new(tools)
    }

    /// The MemPalace tools pi may register now and doesn't have from this load: from the cached
    /// `tools/list` at load (pi's startup never waits for the palace), the server's own once its
    /// handshake is done. `pi_tools`: every tool name pi knows (`None` while pi loads extensions);
    /// those that are not this load's own belong to something else, which a palace tool never
    /// shadows.
    pub fn palace_tools(&mut self, ext: &Extension, pi_tools: Option<Vec<String>>) -> Vec<ToolSpec> {
        let Some(bridge) = &ext.bridge else { return Vec::new() };
        let taken: Vec<String> = pi_tools.unwrap_or_default().into_iter().filter(|n| !self.given.contains(n)).collect();
        let tools = bridge.tools_for_pi(&taken).into_iter().map(palace_spec).collect();
        self.keep_new(tools)
    }

    fn keep_new(&mut self, tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
        tools.into_iter().filter(|t| self.given.insert(t.name.clone())).collect()
    }
}

fn voice_spec(d: crate::voice::descriptors::Descriptor) -> ToolSpec {
    ToolSpec {
        name: d.name.into(),
        label: d.label.into(),
        description: d.description.into(),
        prompt_snippet: Some(d.prompt_snippet.into()),
        prompt_guidelines: Some(d.prompt_guidelines.iter().map(|s| s.to_string()).collect()),
        parameters: d.parameters,
    }
}

/// A palace tool as pi registers it. It passed `palace::tools` (name, schema type, size), so its
/// schema converts to a JS value: napi-rs refuses a value of over a million nodes or 128 levels,
/// which made a cached million-value schema throw at load, taking the voice tools along.
fn palace_spec(t: crate::mcp::ToolInfo) -> ToolSpec {
    ToolSpec {
        label: t.name.clone(),
        name: t.name,
        description: t.description.unwrap_or_default(),
        prompt_snippet: None,
        prompt_guidelines: None,
        parameters: t.input_schema,
    }
}

static EXTENSION: Lazy<Extension> = Lazy::new(|| {
    STATE_CREATIONS.fetch_add(1, Ordering::SeqCst);
    let cfg = Config::from_env();
    for w in cfg.warnings.iter().chain(&cfg.pi_mcp) {
        crate::diag!("{w}");
    }
    let voice = cfg.voice.enabled.then(|| Arc::new(Voice::new(cfg.voice)));
    let bridge_off = cfg.palace.off.clone();
    let bridge = Bridge::from_config(cfg.palace, cfg.mcp);
    Extension { voice, bridge, bridge_off, cancels: Mutex::new(HashMap::new()), started: std::sync::Once::new() }
});

/// Where a call's reply goes when it is answered without a future ([`Extension::call_direct`]):
/// called once, on whichever thread finished the call.
pub type Done = Box<dyn FnOnce(Result<Reply, Error>) + Send>;

/// How [`Extension::cancel`] stops a tracked call.
enum Cancel {
    /// A call running as a future: this drops it.
    Future(tokio::sync::oneshot::Sender<()>),
    /// A direct call: cancelling answers it (CANCELLED) ahead of the store thread.
    Direct(Arc<Answer>),
}

/// A direct call's answer: the first of the store thread (the reply) and `cancel` (CANCELLED)
/// to finish it wins; the other finds it taken.
struct Answer {
    name: String,
    done: Mutex<Option<Done>>,
}

impl Answer {
    fn finish(&self, r: Result<Reply, Error>) -> bool {
        let done = lock(&self.done).take();
        done.map(|d| d(r)).is_some()
    }
}

/// A direct call in progress, moved into the job on the store's thread. However the job ends
/// (answered, or dropped uncalled by a panic there) the call is answered once and untracked.
struct Pending {
    ext: &'static Extension,
    answer: Arc<Answer>,
    call_id: Option<u32>,
}

impl Pending {
    fn reply(self, text: String) {
        self.answer.finish(Ok(Reply::text(text)));
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let name = &self.answer.name;
        self.answer.finish(Err(Error::new(
            Kind::Internal,
            format!("internal error in {name}: the store's thread gave no answer"),
        )));
        if let Some(id) = self.call_id {
            self.ext.untrack(id);
        }
    }
}

/// Removes a call's cancel entry however the call ends (finished, failed or dropped).
struct Tracked<'a>(&'a Extension, Option<u32>);

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.1 {
            self.0.untrack(id);
        }
    }
}

impl Extension {
    pub fn get() -> &'static Extension {
        &EXTENSION
    }

    /// Opens brain.db and starts the MemPalace handshake in the background, once per process.
    /// Never blocks.
    pub fn start(&self) {
        self.started.call_once(|| {
            if let Some(voice) = &self.voice {
                let brain = voice.brain.clone();
                spawn(async move {
                    let warm = brain.clone();
                    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || warm.warm_up()).await {
                        e.report(&format!("brain.db unavailable at {}", brain.path().display()));
                    }
                });
            }
            if let Some(bridge) = self.bridge.clone() {
                spawn(async move {
                    let _ = bridge.connect().await;
                });
            }
        });
    }

    /// Resolves with the MemPalace server's own tool list (what `palace::tools` and
    /// `MEMPALACE_TOOLS` let through) once
    /// the background handshake is done; empty when the palace can't be had.
    pub async fn palace_tools(&self) -> Vec<ToolSpec> {
        match self.bridge.clone() {
            Some(b) => b
                .connect()
                .await
                .map(|tools| b.cfg.tools.apply(tools).into_iter().map(palace_spec).collect())
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Runs one tool with the model's arguments. A voice tool answers with the contract's reply
    /// even for bad input or a service that is down; a MemPalace tool fails with the server's
    /// message when the server reports an error. `call_id`, when given, lets [`Extension::cancel`]
    /// abort the call.
    pub async fn call(&self, name: &str, args: Value, call_id: Option<u32>) -> Result<Reply, Error> {
        let cancelled = call_id.map(|id| self.track(id));
        let _tracked = Tracked(self, call_id);
        match (&self.voice, &self.bridge) {
            (Some(voice), _) if crate::voice::descriptors::is_voice_tool(name) => {
                call_voice(voice, name, args, cancelled).await
            }
            (_, Some(bridge)) => call_palace(bridge, name, args, cancelled).await,
            _ => Err(Error::unknown_tool(name)),
        }
    }

    /// True when `name` is answered by [`Extension::call_direct`]: the voice tools that only
    /// touch brain.db (memory_lookup, remember, recall_person).
    pub fn is_direct(&self, name: &str) -> bool {
        self.voice.is_some() && crate::voice::is_direct(name)
    }

    /// Runs a tool for which [`Extension::is_direct`] holds without any future: its work goes
    /// from the caller's thread (the JS thread) straight to a store thread, and `done` is called
    /// there with the contract's reply (or, when `cancel(call_id)` came first, on the canceller's
    /// thread with CANCELLED; a store write already queued still lands). Replies are the same as
    /// through [`Extension::call`]; this path only skips the hops through tokio (bench/README.md).
    pub fn call_direct(&'static self, name: &str, args: &Value, call_id: Option<u32>, done: Done) {
        let answer = Arc::new(Answer { name: name.to_string(), done: Mutex::new(Some(done)) });
        if let Some(id) = call_id {
            lock(&self.cancels).insert(id, Cancel::Direct(answer.clone()));
        }
        let pending = Pending { ext: self, answer, call_id };
        let Some(voice) = &self.voice else {
            pending.answer.finish(Err(Error::unknown_tool(name)));
            return;
        };
        // Only argument checks run here, on the caller's thread; a panic in them answers INTERNAL
        // (through `Pending`'s drop) as a panic inside a future does.
        let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            voice.start(name, args, move |text| pending.reply(text))
        }));
        if let Err(panic) = started {
            crate::diag!("{name}: {}", panic_text(&panic));
        }
    }

    /// Registers a cancellable call; the receiver fires when [`Extension::cancel`] is called.
    fn track(&self, call_id: u32) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        lock(&self.cancels).insert(call_id, Cancel::Future(tx));
        rx
    }

    fn untrack(&self, call_id: u32) {
        lock(&self.cancels).remove(&call_id);
    }

    /// Cancels a tracked call (pi's AbortSignal fired). False when that call already finished.
    pub fn cancel(&self, call_id: u32) -> bool {
        let entry = lock(&self.cancels).remove(&call_id);
        match entry {
            Some(Cancel::Future(tx)) => tx.send(()).is_ok(),
            Some(Cancel::Direct(answer)) => {
                let name = answer.name.clone();
                answer.finish(Err(Error::cancelled(&name)))
            }
            None => false,
        }
    }

    pub fn calls_in_flight(&self) -> usize {
        lock(&self.cancels).len()
    }

    /// pi's `agent_end` (`messages`: the slim form `node.rs` reads off the JS heap): queues the
    /// turn's conversation row and, in a pi without `agent_settled`, a debounced transcript feed;
    /// returns at once. True when a row write was queued (false: nothing to log, a repeat of a
    /// logged turn, or voice tools off).
    pub fn on_agent_end(&self, messages: &Value) -> bool {
        if let Some(bridge) = self.bridge.clone().filter(|b| b.feeds_on_agent_end()) {
            spawn(async move {
                bridge.settled().await;
            });
        }
        let Some(voice) = &self.voice else { return false };
        match voice.log.submit(voice.brain.clone(), messages) {
            Some(write) => {
                spawn(write);
                true
            }
            None => false,
        }
    }

    /// pi's `agent_settled` (newer pi): a debounced transcript feed in the background. Once seen,
    /// `agent_end` stops triggering feeds.
    pub fn on_agent_settled(&self) {
        if let Some(bridge) = self.bridge.clone() {
            bridge.agent_settled_seen();
            spawn(async move {
                bridge.settled().await;
            });
        }
    }

    /// pi's `session_start`: arms the wake-up for a fresh session (`startup`, `new`) that holds no
    /// messages yet (a thread continued at startup is a resume).
    pub fn on_session_start(&self, reason: &str, has_messages: bool) {
        if let Some(b) = &self.bridge {
            b.session_start(reason, has_messages);
        }
    }

    /// pi's `before_agent_start`: the wake-up message on the first prompt of a fresh session,
    /// else None; only a run a user started counts (`start`: pi's `messageType` and `prompt`).
    /// Bounded by the request timeout: never holds the prompt hostage.
    pub async fn on_before_agent_start(&self, start: RunStart<'_>) -> Option<WakeupMessage> {
        self.bridge.clone()?.wakeup(start).await
    }

    /// `/mempalace <args>`: `reconnect` starts the palace again (a new server and respawn budget)
    /// and says how that went; anything else answers the usage.
    pub async fn palace_command(&self, args: &str) -> String {
        let Some(bridge) = self.bridge.clone() else { return self.bridge_off() };
        match args.trim() {
            "reconnect" => match bridge.reconnect().await {
                Ok(tools) => format!("MemPalace connected: {} tools", tools.len()),
                Err(e) => format!("MemPalace is still unavailable: {e}"),
            },
            "status" | "" => bridge.status_report(),
            _ => "usage: /mempalace status (the palace's state) | /mempalace reconnect (start the palace again after it went down)".into(),
        }
    }

    /// What `/mempalace` and `feed` say when the bridge is off, with the reason (the switch, or
    /// pi's own MCP entry it stepped aside for).
    pub fn bridge_off(&self) -> String {
        let why = self.bridge_off.as_ref().map_or_else(|| "MEMPALACE_BRIDGE=0".to_string(), ToString::to_string);
        format!("the MemPalace bridge is off ({why})")
    }

    /// The palace's state in a few words for pi's footer (None when the bridge is off).
    pub fn palace_status(&self) -> Option<String> {
        self.bridge.as_ref().map(|b| b.status_line())
    }

    /// The operator's `feed` (command line): connects to the palace and feeds the transcripts
    /// once, as a session end would; None when the bridge is off.
    pub async fn feed_once(&self) -> Option<crate::palace::feed::FeedOutcome> {
        let bridge = self.bridge.clone()?;
        let _ = bridge.connect().await; // a palace that can't be had is the outcome's to say
        Some(bridge.session_shutdown("cli").await)
    }

    /// The user message `/mempalace-diary [topic]` sends (None when the bridge is off); the run it
    /// starts gets no wake-up.
    pub fn diary_prompt(&self, topic: &str) -> Option<String> {
        self.bridge.as_ref().map(|b| b.diary_prompt(topic))
    }

    /// Resolves when every queued conversation row has been written and queued diagnostics have
    /// reached stderr.
    pub async fn flush(&self) {
        if let Some(voice) = self.voice.clone() {
            voice.log.flush().await;
        }
        let _ = tokio::task::spawn_blocking(|| crate::diag::flush(std::time::Duration::from_secs(1))).await;
    }

    /// pi's `session_shutdown`: feeds the session's transcripts to the palace (bounded by the feed
    /// timeouts) and, on `quit`, stops the MemPalace server; then writes queued conversation rows.
    pub async fn shutdown(&self, reason: &str) {
        if let Some(bridge) = self.bridge.clone() {
            bridge.session_shutdown(reason).await;
        }
        self.flush().await;
    }
}

async fn call_voice(
    voice: &Voice,
    name: &str,
    args: Value,
    cancelled: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<Reply, Error> {
    use futures_util::FutureExt;
    // A panic inside a tool becomes an error here instead of taking pi down. Cancelling drops the
    // call: an HTTP request is aborted; a store write already queued for the writer threads still lands.
    let call = std::panic::AssertUnwindSafe(voice.call(name, &args)).catch_unwind();
    let outcome = match cancelled {
        None => call.await,
        Some(cancelled) => tokio::select! {
            r = call => r,
            _ = cancelled => return Err(Error::cancelled(name)),
        },
    };
    match outcome {
        Ok(Some(text)) => Ok(Reply::text(text)),
        Ok(None) => Err(Error::unknown_tool(name)),
        Err(panic) => Err(Error::new(Kind::Internal, format!("internal error in {name}: {}", panic_text(&panic)))),
    }
}

/// What a caught panic said.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

async fn call_palace(
    bridge: &Bridge,
    name: &str,
    args: Value,
    cancelled: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<Reply, Error> {
    match bridge.call(name, args, cancelled).await {
        Ok(r) if r.is_error => Err(Error::new(Kind::ServerError, text_of(&r))),
        Ok(r) => Ok(Reply { text: text_of(&r), content: to_pi_content(&r) }),
        Err(crate::mcp::McpError::Cancelled) => Err(Error::cancelled(name)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            label: name.into(),
            description: String::new(),
            prompt_snippet: None,
            prompt_guidelines: None,
            parameters: Value::Null,
        }
    }

    fn bare() -> Extension {
        Extension {
            voice: None,
            bridge: None,
            bridge_off: Some(crate::palace::config::BridgeOff::Switch),
            cancels: Mutex::new(HashMap::new()),
            started: std::sync::Once::new(),
        }
    }

    /// A direct call registered as `call_direct` registers it; its answers arrive on the receiver.
    fn direct(ext: &'static Extension, id: u32) -> (Pending, std::sync::mpsc::Receiver<Result<Reply, Error>>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let answer = Arc::new(Answer {
            name: "memory_lookup".into(),
            done: Mutex::new(Some(Box::new(move |r| tx.send(r).unwrap()))),
        });
        lock(&ext.cancels).insert(id, Cancel::Direct(answer.clone()));
        (Pending { ext, answer, call_id: Some(id) }, rx)
    }

    #[test]
    fn a_cancelled_direct_call_answers_cancelled_once_and_its_late_reply_is_dropped() {
        let ext: &'static Extension = Box::leak(Box::new(bare()));
        let (pending, rx) = direct(ext, 7);
        assert_eq!(ext.calls_in_flight(), 1);
        assert!(ext.cancel(7));
        assert!(!ext.cancel(7), "cancelled twice");
        pending.reply("(no memories found)".into()); // the store thread finishing afterwards
        let answers: Vec<_> = rx.iter().collect();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].as_ref().unwrap_err().kind, Kind::Cancelled);
        assert_eq!(ext.calls_in_flight(), 0);
    }

    #[test]
    fn a_direct_call_answers_once_untracks_and_a_job_dropped_unanswered_is_internal() {
        let ext: &'static Extension = Box::leak(Box::new(bare()));
        let (pending, rx) = direct(ext, 1);
        pending.reply("(remembered)".into());
        assert_eq!(rx.iter().map(|r| r.unwrap().text).collect::<Vec<_>>(), vec!["(remembered)"]);
        assert!(!ext.cancel(1), "a finished call is not in flight");
        let (pending, rx) = direct(ext, 2);
        drop(pending); // a panic on the store's thread drops the job uncalled
        let answers: Vec<_> = rx.iter().collect();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].as_ref().unwrap_err().kind, Kind::Internal);
        assert_eq!(ext.calls_in_flight(), 0);
    }

    #[tokio::test]
    async fn a_tool_nobody_has_is_bad_arguments_and_leaves_no_call_tracked() {
        let ext = bare();
        let e = ext.call("nope", Value::Null, Some(7)).await.unwrap_err();
        assert_eq!((e.code(), e.message.as_str()), ("BAD_ARGUMENTS", "unknown tool: nope"));
        assert_eq!(ext.calls_in_flight(), 0);
        assert!(!ext.cancel(7), "a finished call can't be cancelled");
    }

    #[tokio::test]
    async fn without_a_bridge_the_palace_events_do_nothing() {
        let ext = bare();
        assert!(!ext.on_agent_end(&json!([{"role": "user", "content": "hi"}])));
        ext.on_agent_settled();
        ext.on_session_start("startup", false);
        assert_eq!(ext.on_before_agent_start(RunStart::default()).await, None);
        assert_eq!(ext.diary_prompt("x"), None);
        assert_eq!(ext.palace_status(), None);
        assert_eq!(ext.palace_command("reconnect").await, "the MemPalace bridge is off (MEMPALACE_BRIDGE=0)");
        let mut r = Registration::default();
        assert!(r.voice_tools(&ext).is_empty() && r.palace_tools(&ext, None).is_empty());
    }

    #[tokio::test]
    async fn the_bridge_off_message_names_pi_s_mcp_entry_when_the_bridge_stepped_aside() {
        let ext = Extension {
            bridge_off: Some(crate::palace::config::BridgeOff::PiMcp {
                name: "memory".into(),
                source: "/h/.pi/agent/mcp.json".into(),
            }),
            ..bare()
        };
        assert_eq!(
            ext.palace_command("status").await,
            "the MemPalace bridge is off (pi's MCP runs the MemPalace server 'memory' of /h/.pi/agent/mcp.json)"
        );
    }

    #[test]
    fn a_registration_hands_each_name_to_pi_once() {
        let mut r = Registration::default();
        assert_eq!(r.keep_new(vec![spec("a"), spec("b")]).len(), 2);
        let again: Vec<String> =
            r.keep_new(vec![spec("b"), spec("c"), spec("c")]).into_iter().map(|t| t.name).collect();
        assert_eq!(again, ["c"]);
        assert_eq!(Registration::default().keep_new(vec![spec("a")]).len(), 1, "a new load (/reload) registers again");
    }
}
