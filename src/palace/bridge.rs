//! The palace wing's front door, as pi sees it: the state the door must own (the configuration,
//! the client in use, the outcome of the handshake), the handshake itself (shared by everyone who
//! waits; a client that came back on its own adopted; `/mempalace reconnect`), the palace's state
//! and `/mempalace status`, and the routing of each pi event and call to the room that serves it:
//! `offer` (what pi may register, the tools a call may reach), `context` (wake-up, recall, the
//! diary prompt), `feed` (transcripts, and the redaction of a palace call's writes).
//!
//! pi's startup never waits for the palace: tools are described from the cached `tools/list` at
//! once, the handshake runs in the background, and the first call waits for it (up to the init
//! timeout). When the palace can't be had at all, one line goes to stderr and pi works without it.

use crate::mcp::{CallResult, McpClient, McpConfig, McpError, ToolInfo};
use crate::palace::checkpoint::Checkpoints;
use crate::palace::connection::{ClientCaller, CurrentClient, PalaceState, Unavailable};
use crate::palace::context::recall::Recall;
use crate::palace::context::{diary, Context, EarlierMessage, HiddenMessage, RunStart};
use crate::palace::feed::{FeedOutcome, Feeder};
use crate::palace::offer::exposure::PiView;
use crate::palace::offer::{cache, tools, Offer, Shelf, ToolCounts};
use crate::palace::scope::{session_wing, Chosen, Scope, SessionWing, Wing};
use crate::palace::{PalaceCaller, PalaceConfig};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wake-up is bounded by the request timeout; with `MEMPALACE_MCP_TIMEOUT_MS=0` (none) by this.
const WAKEUP_FALLBACK_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) struct Bridge {
    pub cfg: PalaceConfig,
    mcp_cfg: McpConfig,
    /// The MCP client in use and why the palace can't be had, if so (`/mempalace reconnect`
    /// replaces the client).
    current: Arc<CurrentClient>,
    /// The palace tools on offer (the `offer` room).
    shelf: Shelf,
    /// The outcome of the last handshake. A tokio Mutex held across the handshake: everyone who
    /// waits for it shares it; `/mempalace reconnect` runs a new one.
    connected: tokio::sync::Mutex<Option<Result<Vec<ToolInfo>, McpError>>>,
    /// What the palace says into the session (the `context` room): wake-up, recall, diary.
    context: Context,
    /// The transcript feed (the `feed` room).
    feeder: Feeder,
    /// `MEMPALACE_CHECKPOINT_TURNS`: the diary checkpoints.
    checkpoints: Arc<Checkpoints>,
    /// The wing this session files into (`MEMPALACE_SCOPE`), set at each `session_start`.
    wing: Arc<SessionWing>,
    shut_down: AtomicBool,
    /// Set once pi has emitted `agent_settled`: from then on `agent_end` doesn't trigger feeds.
    settled_event: AtomicBool,
    /// The client's handshake count whose tools `tools` holds: a client that came back on its own
    /// (a try after a give-up) has a later one, adopted by [`Bridge::catch_up`].
    adopted: AtomicU64,
}

impl Bridge {
    /// The bridge of this configuration; `None` when `MEMPALACE_BRIDGE=0`. Reads the tool cache
    /// (a small file) but starts nothing.
    /// `reserved`: the names no palace tool may take (the voice tools').
    pub(crate) fn from_config(cfg: PalaceConfig, mcp: McpConfig, reserved: Vec<&'static str>) -> Option<Arc<Bridge>> {
        cfg.enabled().then(|| Arc::new(Bridge::new(cfg, mcp, reserved)))
    }

    pub(crate) fn new(cfg: PalaceConfig, mcp: McpConfig, reserved: Vec<&'static str>) -> Bridge {
        let shelf =
            Shelf::new(cfg.tools.clone(), cfg.exposure.clone(), reserved, cfg.tools_cache_path(), cache::key(&mcp));
        let current = Arc::new(CurrentClient::new(McpClient::new(mcp.clone())));
        let wing = Arc::new(SessionWing::default());
        let feeder = Feeder::for_wing(cfg.clone(), Arc::new(ClientCaller(current.clone())), wing.clone());
        let checkpoints = Arc::new(Checkpoints::new(cfg.checkpoint_turns));
        Bridge {
            cfg,
            mcp_cfg: mcp,
            current,
            shelf,
            connected: tokio::sync::Mutex::new(None),
            context: Context::default(),
            feeder,
            checkpoints,
            wing,
            shut_down: AtomicBool::new(false),
            settled_event: AtomicBool::new(false),
            adopted: AtomicU64::new(0),
        }
    }

    /// How many tools are known and how many of them pi is offered.
    pub(crate) fn tool_counts(&self) -> ToolCounts {
        self.shelf.tool_counts()
    }

    /// What one load of the extension may register now ([`Shelf::registration`]), once a client
    /// that came back on its own was caught up with.
    pub(crate) fn registration(&self, view: Option<&PiView>, taken: &[String]) -> Offer {
        self.catch_up();
        self.shelf.registration(view, taken, &|| self.may_come())
    }

    /// The server's own tools, once the handshake is done, as [`Bridge::registration`] offers them
    /// (every tool `MEMPALACE_TOOLS` lets through; pi sorts out the names taken when it registers).
    pub(crate) async fn registration_when_connected(&self) -> Result<Offer, McpError> {
        let tools = self.connect().await?;
        Ok(self.shelf.registration_of(tools, &|| self.may_come()))
    }

    /// Whether the palace may still bring tools: installed, and not known down.
    fn may_come(&self) -> bool {
        !self.mcp_cfg.not_installed() && self.state() == PalaceState::Connecting
    }

    /// The system prompt section on the palace tools not declared, once pi's view was seen.
    pub(crate) fn prompt_section(&self) -> Option<String> {
        self.shelf.prompt_section()
    }

    /// `/mempalace status`'s exposure line.
    pub(crate) fn exposure_report(&self) -> String {
        self.shelf.exposure_report()
    }

    /// The one stderr line of what the last handshake refused (if not said yet) and of `taken`.
    pub(crate) fn say_refused(&self, taken: Vec<tools::Refused>) {
        self.shelf.say_refused(taken);
    }

    /// The MCP client in use.
    pub(crate) fn client(&self) -> Arc<McpClient> {
        self.current.client()
    }

    /// Connects (once; concurrent callers share it) and returns the server's tools as
    /// `palace::offer::tools` lets them through, refreshing the cache file when they changed. A failure
    /// is said once on stderr and remembered: pi goes on without palace tools, and calls still try
    /// (the client self-heals within its budget).
    pub(crate) async fn connect(&self) -> Result<Vec<ToolInfo>, McpError> {
        let mut done = self.connected.lock().await;
        if let Some(r) = &*done {
            if !self.came_back() {
                return r.clone();
            }
            // The client came back on its own since: its handshake is the outcome now.
            let r = Ok(self.adopt(&self.client(), self.client().tools(), None, false));
            *done = Some(r.clone());
            return r;
        }
        let r = self.handshake().await;
        *done = Some(r.clone());
        r
    }

    /// The client is connected on a handshake the bridge has not adopted: it came back on its own
    /// (a try after a give-up), or a call connected it after the bridge's own handshake failed.
    fn came_back(&self) -> bool {
        let s = self.client().stats();
        s.connected && s.handshakes != self.adopted.load(Ordering::SeqCst)
    }

    /// Adopts the handshake of a client that came back on its own, as [`Bridge::connect`] would
    /// have: its tools (the cache file refreshed when they changed), the last error history, the
    /// outcome others wait for. Skipped while a handshake of the bridge's own is under way (that
    /// one adopts it).
    fn catch_up(&self) {
        if !self.came_back() {
            return;
        }
        let Ok(mut done) = self.connected.try_lock() else { return };
        if self.came_back() {
            let client = self.client();
            *done = Some(Ok(self.adopt(&client, client.tools(), None, false)));
        }
    }

    /// `/mempalace reconnect`: a fresh client (a new server, a new respawn budget) and a new
    /// handshake. Feeding resumes when it succeeds.
    pub(crate) async fn reconnect(&self) -> Result<Vec<ToolInfo>, Unavailable> {
        let mut done = self.connected.lock().await;
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(Unavailable::ShutDown);
        }
        let old = self.current.replace(McpClient::new(self.mcp_cfg.clone()));
        old.shutdown().await;
        self.adopted.store(0, Ordering::SeqCst);
        let r = self.handshake().await;
        *done = Some(r.clone());
        r.map_err(Unavailable::Handshake)
    }

    async fn handshake(&self) -> Result<Vec<ToolInfo>, McpError> {
        let t0 = Instant::now();
        let client = self.client();
        match client.connect().await {
            Ok(list) => Ok(self.adopt(&client, list, Some(t0), true)),
            Err(e) => {
                self.current.set_failed(Some(e.clone()));
                // One line for pi's stderr: the client already said it if it latched down,
                // and a shutdown on purpose (pi exiting) is no news.
                if !matches!(e, McpError::Closed) && !client.stats().down {
                    crate::diag::say_about(crate::mcp::client::DOWN_SUBJECT, format!("mempalace: palace unavailable ({e}); pi continues without palace tools, and transcripts are not fed until it connects"));
                }
                Err(e)
            }
        }
    }

    /// A handshake of `client` that listed `list`: the last error cleared, the tools as
    /// `palace::offer::tools` lets them through (the cache file refreshed when they or the server's texts
    /// changed), the search warmed for recall. `t0`: when the bridge's own handshake began (said
    /// in debug mode). `say_refused`: what the tool list refused is said with the names taken in
    /// pi, when the tools are next handed to pi (not again for a client that came back on its own,
    /// unless the bridge never had a tool list of the server's).
    fn adopt(&self, client: &McpClient, list: Vec<ToolInfo>, t0: Option<Instant>, say_refused: bool) -> Vec<ToolInfo> {
        let first = self.adopted.swap(client.stats().handshakes, Ordering::SeqCst) == 0;
        self.current.set_failed(None);
        let server = tools::server_meta(client.server_info().as_ref(), client.instructions().as_deref());
        let tools = self.shelf.stock(list, server, say_refused || first);
        Recall::warm(&self.cfg.recall, self.caller(), self.mcp_cfg.timeout.unwrap_or(WAKEUP_FALLBACK_TIMEOUT));
        if client.config().debug {
            let how =
                t0.map_or_else(|| "again, on its own,".to_string(), |t| format!("in {} ms", t.elapsed().as_millis()));
            crate::diag!("mempalace: connected to {} {how}, {} tools", client.config().target(), tools.len());
        }
        tools
    }

    /// The palace's state now: connecting, ready with the tools pi is offered, down and why, not
    /// installed, or stopped.
    pub(crate) fn state(&self) -> PalaceState {
        self.catch_up();
        match (self.current.unavailable(), self.client().stats().connected) {
            (
                Some(
                    Unavailable::Handshake(McpError::NotInstalled { bin })
                    | Unavailable::Down(McpError::NotInstalled { bin }),
                ),
                _,
            ) => PalaceState::NotInstalled { bin },
            (Some(why), _) => PalaceState::Down(why),
            (None, true) => {
                let ToolCounts { offered, known } = self.tool_counts();
                PalaceState::Ready { offered, known }
            }
            (None, false) if self.shut_down.load(Ordering::SeqCst) => PalaceState::Stopped,
            (None, false) => PalaceState::Connecting,
        }
    }

    /// `/mempalace status`: the state, transport, tools, counters, last error and last feed.
    pub(crate) fn status_report(&self) -> String {
        let state = self.state();
        let counts = self.tool_counts();
        let s = self.client().stats();
        let last_error = self.current.last_error_line();
        [
            state.to_string(),
            format!(
                "transport: {} {}",
                if self.mcp_cfg.remote_url.is_some() { "HTTP" } else { "stdio" },
                self.mcp_cfg.target()
            ),
            format!(
                "tools: {} offered to pi of {} known (MEMPALACE_TOOLS={})",
                counts.offered, counts.known, self.cfg.tools
            ),
            format!("spawns: {}, respawns: {}, calls: {}, timeouts: {}", s.spawns, s.respawns, s.calls, s.timeouts),
            format!("last error: {last_error}"),
            self.wing_line(),
            format!("last feed: {}", crate::palace::feed::last_feed_line(&self.cfg.feed_dir())),
            format!("redaction: {}", crate::palace::feed::redaction_line(&self.cfg)),
            self.context.recall_report(&self.cfg.recall),
            self.checkpoints.report(),
        ]
        .into_iter()
        .chain(self.cfg.pi_mcp.as_ref().map(|r| format!("pi's MCP: {}", r.line())))
        .collect::<Vec<_>>()
        .join("\n")
    }

    /// One palace tool call for pi: its arguments (an object; anything else as `{}`) through the
    /// redactor of palace-tool writes when the tool stores (`feed::redact::calls`), then the client
    /// in use, which waits for the background handshake first.
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Value,
        cancel: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Result<CallResult, McpError> {
        let mut args = if args.is_object() { args } else { json!({}) };
        // Palace-tool writes pass the feed's redactor; the model is told what was replaced. Whether
        // the tool stores is read under the lock (nothing cloned); the redaction runs outside it.
        let stores = self.shelf.with_tools(|tools| crate::palace::feed::redact::calls::stores(name, tools));
        let redacted = crate::palace::feed::redact::calls::guard_call(&self.cfg, stores, &mut args);
        let mut result = self.client().call_tool(name, args, cancel).await;
        match &mut result {
            Ok(r) => crate::palace::feed::redact::calls::tell_model(r, &redacted),
            Err(e) => self.current.said_holder(e),
        }
        result
    }

    /// pi's `session_start`. `has_messages`: the session already holds messages. pi 0.74 starts a
    /// `--continue`d or `--session`-picked thread with reason `startup`; its context is already in
    /// the thread, so it is a resume, not a fresh session.
    /// `earlier`: the hidden messages already on the session's branch; the drawers and diary
    /// entries they showed are not injected again.
    /// `cwd`: the session's (pi's `ctx.cwd`; None: the process's); `trusted`: pi's
    /// `ctx.isProjectTrusted()` (None on a pi without project trust): they decide the session's
    /// wing under project scope ([`crate::palace::scope::session_wing`]).
    pub(crate) fn session_start(
        &self,
        reason: &str,
        has_messages: bool,
        earlier: &[EarlierMessage],
        cwd: Option<&std::path::Path>,
        trusted: Option<bool>,
    ) {
        let cwd = cwd.map(std::path::Path::to_path_buf).or_else(|| std::env::current_dir().ok()).unwrap_or_default();
        let wing = session_wing(self.cfg.scope, &self.cfg.feed_wing, &cwd, self.cfg.home.as_deref(), trusted);
        if let Some(note) = &wing.note {
            if self.wing.get().and_then(|w| w.note) != wing.note {
                crate::diag!("mempalace: {note}; this session files into the wing {}", wing.name);
            }
        }
        self.wing.set(wing);
        self.context.session_start(reason, has_messages, earlier);
    }

    /// The session's wing (set at `session_start`; before it, the process cwd's).
    pub(crate) fn wing(&self) -> Wing {
        self.wing.or_default(self.cfg.scope, &self.cfg.feed_wing, self.cfg.home.as_deref())
    }

    /// The session's wing under project scope, for recall and the wake-up; None under global scope.
    fn project_wing(&self) -> Option<String> {
        (self.cfg.scope == Scope::Project).then(|| self.wing().name)
    }

    /// `/mempalace status`'s scope line.
    pub(crate) fn wing_line(&self) -> String {
        let w = self.wing();
        let how = match w.chosen {
            Chosen::Global => "MEMPALACE_FEED_WING".to_string(),
            Chosen::Cwd => "the project folder's name, as MemPalace's hooks name it".to_string(),
            Chosen::ProjectFile => format!("{} (pi trusts the project)", crate::palace::scope::PROJECT_FILE),
        };
        let note = w.note.map(|n| format!("; {n}")).unwrap_or_default();
        format!("scope: {} · wing: {} (from {how}{note})", self.cfg.scope, w.name)
    }

    /// pi's `before_agent_start` (its first handler of the event): for a run a user started,
    /// starts the recall search for `words` (the prompt's own words, the voice provider's
    /// scaffolding cut off) when recall is on, then returns the wake-up message on the first
    /// prompt of a fresh session, or None ([`Context::wakeup`]). A run an extension started (a
    /// custom message, the diary prompt) gets neither and leaves the wake-up armed for the user's
    /// first prompt.
    pub(crate) async fn before_agent_start(&self, start: RunStart<'_>, words: Option<&str>) -> Option<HiddenMessage> {
        let wing = self.project_wing();
        if !self.context.run_starts(start, words, &self.cfg.recall, self.caller(), wing.as_deref()) {
            return None;
        }
        self.checkpoint(start.prompt, words);
        // The wake-up's budget, owned here: the handshake counts against it.
        let budget = self.mcp_cfg.timeout.unwrap_or(WAKEUP_FALLBACK_TIMEOUT);
        let connected = || self.client().stats().connected;
        let connect = async { self.connect().await.is_ok() };
        let caller = ClientCaller(self.current.clone());
        self.context.wakeup(&caller, &self.cfg.agent_name, wing.as_deref(), budget, connected, connect).await
    }

    /// A run the user started with `prompt` (`words`: its own words): a diary checkpoint in the
    /// background when one is due ([`Checkpoints`]); `[no-memory]` anywhere in the prompt keeps the
    /// turn out.
    fn checkpoint(&self, prompt: Option<&str>, words: Option<&str>) {
        if prompt.is_some_and(crate::palace::feed::no_memory::has_marker) {
            return;
        }
        let Some(turns) = words.or(prompt).and_then(|t| self.checkpoints.user_turn(t)) else { return };
        // Project scope: MemPalace's hooks' diary wing of the cwd; global: the agent's own.
        let wing = (self.cfg.scope == Scope::Project)
            .then(|| self.wing().cwd.map(|c| crate::palace::scope::diary_wing(&c)))
            .flatten();
        let (cfg, caller, checkpoints) = (self.cfg.clone(), self.caller(), self.checkpoints.clone());
        let timeout = self.mcp_cfg.timeout.unwrap_or(WAKEUP_FALLBACK_TIMEOUT);
        tokio::spawn(async move { checkpoints.write(&cfg, caller.as_ref(), turns, wing, timeout).await });
    }

    /// pi's second `before_agent_start` handler: the recall message of the run being started, or
    /// None. Waits at most until the recall budget's end; never fails.
    pub(crate) async fn recall(&self) -> Option<HiddenMessage> {
        self.context.recall(&self.cfg.recall).await
    }

    /// The `/mempalace-diary [topic]` user message; it says how to reach `mempalace_diary_write`
    /// when that tool is not declared to the model.
    pub(crate) fn diary_prompt(&self, topic: &str) -> String {
        // pi's own MCP offers the palace's tools: the model knows them by pi's names, and reaches
        // them the way pi describes its MCP servers (not through the bridge's exposure).
        let reach = match &self.cfg.pi_mcp {
            Some(_) => None,
            None => self.shelf.reach_hint(diary::DIARY_TOOL),
        };
        self.context.diary_prompt(&self.cfg.agent_name, topic, reach.as_deref(), self.cfg.pi_mcp.as_ref())
    }

    /// The palace as the rooms call it: through the client in use, whichever it is then.
    fn caller(&self) -> Arc<dyn PalaceCaller> {
        Arc::new(ClientCaller(self.current.clone()))
    }

    /// pi's `session_shutdown`: feeds the transcripts; on `quit` then stops the server. Bounded by
    /// the feed's own timeouts; never fails.
    pub(crate) async fn session_shutdown(&self, reason: &str) -> FeedOutcome {
        let outcome = self.feeder.shutdown(reason).await;
        if reason == "quit" && !self.shut_down.swap(true, Ordering::SeqCst) {
            self.client().shutdown().await;
        }
        outcome
    }

    /// pi emitted `agent_settled`: from now on it, not `agent_end`, triggers the feed.
    pub(crate) fn agent_settled_seen(&self) {
        self.settled_event.store(true, Ordering::Relaxed);
    }

    /// Whether `agent_end` triggers a feed: only in a pi that has no `agent_settled` event.
    pub(crate) fn feeds_on_agent_end(&self) -> bool {
        !self.settled_event.load(Ordering::Relaxed)
    }

    /// pi's `session_before_compact`: a feed at once, not debounced ([`Feeder::compacting`]).
    pub(crate) async fn compacting(&self) -> FeedOutcome {
        self.feeder.compacting().await
    }

    /// pi's `agent_settled` (or `agent_end` where there is none): a debounced mid-session feed.
    pub(crate) async fn settled(&self) -> FeedOutcome {
        self.feeder.settled().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::Path;

    /// A real MCP server over stdio, with faults and logs on request (`__test__/fixtures`).
    const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/__test__/fixtures/fault_mcp_server.py");

    /// A bridge on the fixture run with `args`, its files under `agent`, the environment `vars`
    /// on top (the feed off: these tests are about the door).
    fn bridge(agent: &Path, args: &[&str], vars: &[(&str, &str)]) -> Bridge {
        let argv: Vec<&str> = std::iter::once(SERVER).chain(args.iter().copied()).collect();
        let mut map: HashMap<String, String> = [
            ("MEMPALACE_MCP_BIN", "python3".to_string()),
            ("MEMPALACE_MCP_ARGS", argv.join(" ")),
            ("PI_CODING_AGENT_DIR", agent.display().to_string()),
            ("MEMPALACE_FEED", "0".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        map.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let get = move |k: &str| map.get(k).cloned();
        Bridge::new(
            PalaceConfig::from_lookup(&get).0,
            McpConfig::from_lookup(&get).0,
            tools::RESERVED_IN_TESTS.to_vec(),
        )
    }

    /// The `tools/call`s the fixture received (its `--log`), as (tool, arguments), in order.
    fn calls(log: &Path) -> Vec<(String, Value)> {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["method"] == "tools/call")
            .map(|m| (m["params"]["name"].as_str().unwrap_or_default().to_string(), m["params"]["arguments"].clone()))
            .collect()
    }

    fn user(prompt: &str) -> RunStart<'_> {
        RunStart { message_type: Some("user"), prompt: Some(prompt), at: None }
    }

    #[tokio::test]
    async fn everyone_waits_for_one_handshake_and_the_state_says_what_it_brought() {
        let d = tempfile::tempdir().unwrap();
        let b = bridge(d.path(), &[], &[]);
        assert_eq!(b.state(), PalaceState::Connecting);
        assert!(b.registration(None, &[]).awaiting, "no tools known yet, and the palace may come");
        let (x, y, z) = tokio::join!(b.connect(), b.connect(), b.connect());
        let tools = x.unwrap();
        assert_eq!((&tools, &tools), (&y.unwrap(), &z.unwrap()));
        assert_eq!(b.client().stats().handshakes, 1, "one handshake, shared");
        let n = tools.len();
        assert!(n > 0);
        assert_eq!(b.state(), PalaceState::Ready { offered: n, known: n });
        assert!(b.cfg.tools_cache_path().exists(), "the tool cache is written after the handshake");
        let offer = b.registration(None, &["echo".to_string()]);
        assert_eq!(offer.tools.len(), n - 1, "a name taken in pi is not offered");
        assert!(!offer.awaiting);
        let status = b.status_report();
        assert!(status.starts_with(&format!("MemPalace: ready · {n} tools\ntransport: stdio python3 ")), "{status}");
        assert!(status.contains(&format!("tools: {n} offered to pi of {n} known")), "{status}");
        assert!(status.contains("\nscope: global · wing: wing_conversations (from MEMPALACE_FEED_WING)\n"), "{status}");
    }

    #[tokio::test]
    async fn a_palace_call_passes_the_redactor_then_the_client() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path().join("stored.txt");
        let b = bridge(d.path(), &["--store", &store.display().to_string()], &[]);
        let r = b.call("store", json!({"text": "the key is AKIAQ4MBX7NVRT2ZK3PL"}), None).await.unwrap();
        let stored = std::fs::read_to_string(&store).unwrap();
        assert!(stored.starts_with("the key is ") && !stored.contains("AKIAQ4MBX7NVRT2ZK3PL"), "{stored}");
        assert!(r.content.len() == 2, "the model is told what was replaced: {:?}", r.content);
        // Arguments that are not an object reach the server as `{}`.
        let r = b.call("echo", json!(["not", "an", "object"]), None).await.unwrap();
        assert_eq!(crate::palace::connection::text_of(&r), "{}");
    }

    #[tokio::test]
    async fn the_wake_up_goes_once_to_the_first_run_a_user_started() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("log.jsonl");
        let b = bridge(d.path(), &["--log", &log.display().to_string()], &[("MEMPALACE_AGENT_NAME", "pi-test")]);
        b.session_start("startup", false, &[], None, None);
        let custom = RunStart { message_type: Some("custom"), prompt: None, at: None };
        assert_eq!(b.before_agent_start(custom, None).await, None);
        let diary = b.diary_prompt("");
        assert_eq!(b.before_agent_start(user(&diary), Some("diary")).await, None);
        assert!(calls(&log).is_empty(), "the runs this extension started call nothing");
        // The user's first prompt: the wake-up's two calls (the fixture has neither tool, so no
        // message), then nothing more for the session's later prompts.
        assert_eq!(b.before_agent_start(user("hello"), Some("hello")).await, None);
        let mut called = calls(&log);
        called.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            called,
            [
                ("mempalace_diary_read".to_string(), json!({"agent_name": "pi-test"})),
                ("mempalace_status".into(), json!({}))
            ]
        );
        assert_eq!(b.before_agent_start(user("again"), Some("again")).await, None);
        assert_eq!(calls(&log).len(), 2);
        // A resumed session gets none; a new one does.
        b.session_start("resume", true, &[], None, None);
        assert_eq!(b.before_agent_start(user("more"), Some("more")).await, None);
        assert_eq!(calls(&log).len(), 2);
        b.session_start("new", false, &[], None, None);
        assert_eq!(b.before_agent_start(user("fresh"), Some("fresh")).await, None);
        assert_eq!(calls(&log).len(), 4);
    }

    #[tokio::test]
    async fn recall_searches_for_the_prompt_a_user_started() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("log.jsonl");
        let b = bridge(
            d.path(),
            &["--log", &log.display().to_string()],
            &[("MEMPALACE_RECALL", "on"), ("MEMPALACE_RECALL_BUDGET_MS", "20000")],
        );
        b.session_start("resume", true, &[], None, None);
        b.connect().await.unwrap();
        let custom = RunStart { message_type: Some("custom"), prompt: None, at: None };
        assert_eq!(b.before_agent_start(custom, Some("the billing database")).await, None);
        assert_eq!(b.recall().await, None, "no search for a run an extension started");
        assert_eq!(b.before_agent_start(user("q"), Some("Which billing database did we choose?")).await, None);
        // The fixture has no search tool: nothing is injected, and the failure is counted.
        assert_eq!(b.recall().await, None);
        let searched: Vec<Value> =
            calls(&log).into_iter().filter(|(t, _)| t == "mempalace_search").map(|(_, a)| a).collect();
        assert!(searched.contains(&json!({"query": "billing database choose", "limit": 10})), "{searched:?}");
        let status = b.status_report();
        assert!(status.contains("0 searched, 0 injected (0 bytes), 0 over the budget, 1 failed"), "{status}");
    }

    #[tokio::test]
    async fn reconnect_starts_a_fresh_server_and_after_quit_nothing_starts() {
        let d = tempfile::tempdir().unwrap();
        let b = bridge(d.path(), &[], &[]);
        let pid = |r: CallResult| crate::palace::connection::text_of(&r);
        let first = pid(b.call("pid", json!({}), None).await.unwrap());
        assert_eq!(b.reconnect().await.unwrap().len(), b.tool_counts().known);
        let second = pid(b.call("pid", json!({}), None).await.unwrap());
        assert_ne!(first, second, "a new server");
        assert_eq!(b.client().stats().spawns, 1, "a fresh client: a new respawn budget");
        b.session_shutdown("quit").await;
        assert_eq!(b.state(), PalaceState::Stopped);
        assert_eq!(b.reconnect().await.unwrap_err(), Unavailable::ShutDown);
    }

    #[tokio::test]
    async fn a_palace_not_installed_is_said_so_and_costs_no_spawn() {
        let d = tempfile::tempdir().unwrap();
        let map: HashMap<&str, String> = HashMap::from([
            ("PATH", "/nonexistent".to_string()),
            ("PI_CODING_AGENT_DIR", d.path().display().to_string()),
        ]);
        let get = |k: &str| map.get(k).cloned();
        let b = Bridge::new(
            PalaceConfig::from_lookup(&get).0,
            McpConfig::from_lookup(&get).0,
            tools::RESERVED_IN_TESTS.to_vec(),
        );
        assert!(b.connect().await.is_err());
        assert!(
            matches!(b.state(), PalaceState::NotInstalled { ref bin } if bin == "mempalace-mcp"),
            "{:?}",
            b.state()
        );
        assert!(!b.registration(None, &[]).awaiting, "nothing to wait for");
        assert!(b.call("mempalace_status", json!({}), None).await.is_err());
        assert_eq!(b.client().stats().spawns, 0);
    }
}
