//! The one process-wide state, and everything pi asks of it: the extension's core API.
//!
//! pi's `/reload` runs `index.js` again, but Node's require cache hands back the same native module,
//! so it finds this state and only re-registers: one store, one HTTP pool, one runtime.
//!
//! Every decision lives here, in plain Rust, one seam a file: the state and pi's events here;
//! which tools one load hands to pi ([`registry`]); which half (voice or palace) answers a call,
//! on which path, its cancellation and a panic becoming an [`Error`](crate::error::Error)
//! ([`calls`]); the commands and the footer status, described as data ([`commands`]); the counters
//! ([`stats`]). `node.rs` only converts.

mod calls;
mod commands;
mod registry;
mod stats;

pub use calls::{Done, ToolOutput};
pub use commands::{CommandReply, CommandSpec, FooterStatus};
pub use registry::{PalaceTools, Registration, ToolSpec};
pub use stats::{PalaceStats, Stats};
// The core types the binding converts, from the halves that own them.
pub use crate::palace::context::{EarlierMessage, HiddenMessage, RunStart};
pub use crate::palace::offer::exposure::PiView;
#[cfg(all(feature = "node", not(test)))] // the binding's alone (see lib.rs)
pub(crate) use crate::voice::turn_log::{counts_block, reads_content};
pub use crate::voice::turn_log::{Content, Message};

use crate::config::Config;
use crate::palace::bridge::Bridge;
use crate::palace::feed::redact::PiWrites;
use crate::voice::Voice;
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A pi event the core handles, as data: index.js registers one handler per entry, and `handler`
/// names the native call it ends in (the entry's adapter of the same name hands it pi's event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    pub event: &'static str,
    pub handler: &'static str,
}

/// The events of both halves (the voice tools' turn log; where the core's notices go; shutdown).
const EVENTS: [EventSpec; 3] = [
    EventSpec { event: "session_start", handler: "sessionStart" },
    EventSpec { event: "agent_end", handler: "logTurn" },
    EventSpec { event: "session_shutdown", handler: "sessionShutdown" },
];

/// The events only the palace half handles: the debounced feed, the wake-up and the prompt section,
/// the feed before pi compacts the session.
const PALACE_EVENTS: [EventSpec; 3] = [
    EventSpec { event: "agent_settled", handler: "agentSettled" },
    EventSpec { event: "before_agent_start", handler: "beforeAgentStart" },
    EventSpec { event: "session_before_compact", handler: "beforeCompact" },
];

/// The events of pi's own MCP writes to a MemPalace server of its `mcp.json` (redacted before the
/// call runs, the model told in its result): whatever the bridge does, while there is such a server.
const PI_WRITES_EVENTS: [EventSpec; 2] = [
    EventSpec { event: "tool_call", handler: "redactPiWrite" },
    EventSpec { event: "tool_result", handler: "notePiWrite" },
];

/// Recall's handler: a second `before_agent_start` handler, so its message is one of its own.
const RECALL_EVENT: EventSpec = EventSpec { event: "before_agent_start", handler: "recall" };

/// Counts how many times the state was built in this process (always 1: tests assert it).
static STATE_CREATIONS: AtomicUsize = AtomicUsize::new(0);

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
    voice: Option<Arc<Voice>>,
    /// `None` when the bridge is off: `bridge_off` says why.
    bridge: Option<Arc<Bridge>>,
    bridge_off: Option<crate::palace::config::BridgeOff>,
    /// `None` when pi's `mcp.json` enables no MemPalace server: else the redaction of the model's
    /// writes through pi's own tools of it.
    pi_writes: Option<PiWrites>,
    /// The calls [`Extension::cancel`] can stop, by call id.
    // A std Mutex: held only to insert or remove an entry, never across an await.
    cancels: Mutex<HashMap<u32, calls::Cancel>>,
    started: std::sync::Once,
}

static EXTENSION: Lazy<Extension> = Lazy::new(from_env);

/// The state as this process's environment configures it (built once, on first use).
fn from_env() -> Extension {
    STATE_CREATIONS.fetch_add(1, Ordering::SeqCst);
    // The effective configuration: pi 1.x's own MCP may run the MemPalace server (one writer, no
    // duplicate tools), and then the bridge steps aside (`Config::effective`).
    let cfg = Config::from_env();
    for w in cfg.warnings.iter().chain(&cfg.pi_mcp) {
        crate::diag!("{w}");
    }
    let pi_writes = pi_writes(&cfg, std::env::current_dir().ok().as_deref(), &crate::env::process);
    let voice = cfg.voice.enabled.then(|| Arc::new(Voice::new(cfg.voice)));
    let bridge_off = cfg.palace.off.clone();
    let bridge = Bridge::from_config(cfg.palace, cfg.mcp, crate::voice::Tool::names());
    Extension::new(voice, bridge, bridge_off).with_pi_writes(pi_writes)
}

/// The redaction of the model's writes through pi's own MCP tools of the MemPalace servers pi's
/// `mcp.json` enables (`cwd`: pi's, for the project's file; `env`: the environment), whether the
/// bridge shares pi's server, reads it through a twin or steps aside for it; None without such a
/// server, or with `MEMPALACE_BRIDGE=0` (the palace half off completely: no hooks).
fn pi_writes(cfg: &Config, cwd: Option<&std::path::Path>, env: &dyn Fn(&str) -> Option<String>) -> Option<PiWrites> {
    if cfg.palace.off == Some(crate::palace::config::BridgeOff::Switch) {
        return None;
    }
    let url = cfg.mcp.remote_url.as_ref().map(crate::env::Url::expose);
    let servers = crate::palace::twin::find(&cfg.palace.agent_dir, cwd, url, env);
    PiWrites::new(&servers, cfg.palace.clone())
}

impl Extension {
    fn new(
        voice: Option<Arc<Voice>>,
        bridge: Option<Arc<Bridge>>,
        bridge_off: Option<crate::palace::config::BridgeOff>,
    ) -> Extension {
        Extension {
            voice,
            bridge,
            bridge_off,
            pi_writes: None,
            cancels: Mutex::new(HashMap::new()),
            started: std::sync::Once::new(),
        }
    }

    /// The same state, redacting pi's own MCP writes with `w`.
    fn with_pi_writes(self, w: Option<PiWrites>) -> Extension {
        Extension { pi_writes: w, ..self }
    }

    pub fn get() -> &'static Extension {
        &EXTENSION
    }

    /// The pi events this state handles: the palace's only while the bridge is on; pi's own MCP
    /// writes' while pi's `mcp.json` enables a MemPalace server.
    pub fn pi_events(&self) -> Vec<EventSpec> {
        let palace = self.bridge.as_ref().map_or(&[][..], |_| &PALACE_EVENTS[..]);
        // After the wake-up's handler: pi runs an extension's handlers in order, one message each.
        let recall = self.bridge.as_ref().filter(|b| b.cfg.recall.on).map(|_| RECALL_EVENT);
        let writes = self.pi_writes.as_ref().map_or(&[][..], |_| &PI_WRITES_EVENTS[..]);
        EVENTS.iter().chain(palace).cloned().chain(recall).chain(writes.iter().cloned()).collect()
    }

    /// Whether pi's `tool_call` of `tool` is one [`Extension::on_tool_call`] may change (a call
    /// that stores into one of pi's own MemPalace servers): only such a call's input is worth
    /// reading off the JS heap.
    pub fn handles_tool_call(&self, tool: &str) -> bool {
        self.pi_writes.as_ref().is_some_and(|w| w.stores(tool))
    }

    /// pi's `tool_call` (`tool`: pi's tool name; `input`: its arguments): the input with every
    /// secret redacted when the call stores into one of pi's own MemPalace servers and something
    /// was replaced (the entry puts it in place of pi's), else None (leave it as it is).
    /// A panic is one stderr line and None: pi's handler never throws for this.
    pub fn on_tool_call(&self, call_id: &str, tool: &str, input: serde_json::Value) -> Option<serde_json::Value> {
        let w = self.pi_writes.as_ref()?;
        let redact = move || {
            let mut input = input;
            w.tool_call(call_id, tool, &mut input).then_some(input)
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(redact)).unwrap_or_else(|_| {
            crate::diag!("{tool}: its input could not be redacted and goes as it is (a panic in the redactor)");
            None
        })
    }

    /// pi's `tool_result` of `call_id` (`parent`: the call that made it, for a nested call): the
    /// text block telling the model what was redacted from that call, or None.
    pub fn on_tool_result(&self, call_id: &str, parent: Option<&str>) -> Option<String> {
        self.pi_writes.as_ref()?.tool_result(call_id, parent)
    }

    /// Opens brain.db and starts the MemPalace handshake in the background, once per process.
    /// Never blocks.
    pub fn start(&self) {
        self.started.call_once(|| {
            if let Some(voice) = &self.voice {
                spawn(voice.warm_up());
            }
            if let Some(bridge) = self.bridge.clone() {
                spawn(async move {
                    let _ = bridge.connect().await;
                });
            }
        });
    }

    /// pi's `agent_end` (`messages`: what the binding read off the JS heap): queues the turn's
    /// conversation row and, in a pi without `agent_settled`, a debounced transcript feed; returns
    /// at once. True when a row write was queued (false: nothing to log, a repeat of a logged turn,
    /// or voice tools off).
    pub fn on_agent_end(&self, messages: &[Message]) -> bool {
        if let Some(bridge) = self.bridge.clone().filter(|b| b.feeds_on_agent_end()) {
            spawn(async move {
                bridge.settled().await;
            });
        }
        let Some(voice) = &self.voice else { return false };
        match voice.log_turn(messages) {
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

    /// pi's `session_before_compact` (pi 1.x: `/compact`, the threshold, an overflow): the session
    /// fed at once in the background (not debounced; joins a feed that runs). Returns at once: the
    /// compaction never waits for it.
    pub fn on_before_compact(&self) {
        if let Some(bridge) = self.bridge.clone() {
            spawn(async move {
                bridge.compacting().await;
            });
        }
    }

    /// pi's `session_start`: arms the wake-up for a fresh session (`startup`, `new`) that holds no
    /// messages yet (a thread continued at startup is a resume).
    /// `cwd`: pi's `ctx.cwd`; `trusted`: pi's `ctx.isProjectTrusted()` (None on a pi without
    /// project trust): the session's wing under `MEMPALACE_SCOPE=project`.
    pub fn on_session_start(
        &self,
        reason: &str,
        has_messages: bool,
        earlier: &[EarlierMessage],
        cwd: Option<&std::path::Path>,
        trusted: Option<bool>,
    ) {
        if let Some(b) = &self.bridge {
            b.session_start(reason, has_messages, earlier, cwd, trusted);
        }
    }

    /// pi's `before_agent_start`: the wake-up message on the first prompt of a fresh session,
    /// else None; only a run a user started counts (`start`: pi's `messageType` and `prompt`).
    /// Bounded by the request timeout: never holds the prompt hostage.
    pub async fn on_before_agent_start(&self, start: RunStart<'_>) -> Option<HiddenMessage> {
        // Recall searches for the person's own words, never the voice provider's scaffolding.
        let words = start.prompt.map(crate::voice::scaffolding::spoken);
        self.bridge.clone()?.before_agent_start(start, words.as_deref()).await
    }

    /// pi's second `before_agent_start` handler (registered only with `MEMPALACE_RECALL=on`): the
    /// hidden recall message of the run being started, or None; waits at most the recall budget.
    pub async fn on_recall(&self) -> Option<HiddenMessage> {
        self.bridge.clone()?.recall().await
    }

    /// Resolves when every queued conversation row has been written and queued diagnostics have
    /// reached stderr.
    pub async fn flush(&self) {
        if let Some(voice) = self.voice.clone() {
            voice.flush_log().await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn without_a_bridge_the_palace_events_do_nothing() {
        let ext = Extension::new(None, None, Some(crate::palace::config::BridgeOff::Switch));
        assert!(!ext.on_agent_end(&Message::list_from_json(&json!([{"role": "user", "content": "hi"}]))));
        ext.on_agent_settled();
        ext.on_session_start("startup", false, &[], None, None);
        assert_eq!(ext.on_before_agent_start(RunStart::default()).await, None);
        assert_eq!(ext.diary_prompt("x"), None);
        assert_eq!(ext.palace_status(), None);
        assert_eq!(ext.palace_command("reconnect").await, "the MemPalace bridge is off (MEMPALACE_BRIDGE=0)");
        let mut r = Registration::default();
        assert!(r.voice_tools(&ext).is_empty() && r.palace_tools(&ext, None).tools.is_empty());
        assert_eq!(ext.palace_prompt_section(), None);
        let events: Vec<&str> = ext.pi_events().iter().map(|e| e.event).collect();
        assert_eq!(events, ["session_start", "agent_end", "session_shutdown"], "no palace: none of its events");
        assert_eq!(ext.on_tool_call("c", "mcp__mempalace__mempalace_add_drawer", json!({"content": "x"})), None);
        assert_eq!(ext.on_tool_result("c", None), None);
    }

    #[test]
    fn pi_s_own_mempalace_server_brings_the_write_events_whatever_the_bridge_does() {
        let d = tempfile::tempdir().unwrap();
        let agent = d.path().join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        let vars = |bridge: &str| {
            let map = HashMap::from([
                ("PI_CODING_AGENT_DIR".to_string(), agent.display().to_string()),
                ("MEMPALACE_BRIDGE".to_string(), bridge.to_string()),
            ]);
            move |k: &str| map.get(k).cloned()
        };
        let ext = |get: &dyn Fn(&str) -> Option<String>| {
            let cfg = Config::effective(&get, Some(d.path()));
            Extension::new(None, None, cfg.palace.off.clone()).with_pi_writes(pi_writes(&cfg, Some(d.path()), get))
        };
        let handlers = |e: &Extension| e.pi_events().iter().map(|e| (e.event, e.handler)).collect::<Vec<_>>();
        let writes = |e: &Extension| handlers(e).iter().any(|(e, _)| e.starts_with("tool_"));
        // No mcp.json: nothing of pi's own MCP.
        assert!(!writes(&ext(&vars("1"))));
        // An HTTP server that is not the bridge's: the bridge steps aside, pi's writes are redacted.
        std::fs::write(
            agent.join("mcp.json"),
            r#"{"mcpServers": {"mem-palace": {"url": "http://127.0.0.1:9/mempalace/mcp"}}}"#,
        )
        .unwrap();
        let cfg = Config::effective(&vars("1"), Some(d.path()));
        assert!(matches!(cfg.palace.off, Some(crate::palace::config::BridgeOff::PiMcp { .. })), "{:?}", cfg.palace.off);
        // MEMPALACE_BRIDGE=0: the palace half is off completely, no hooks.
        assert!(!writes(&ext(&vars("0"))));
        let ext = ext(&vars("1"));
        let events = handlers(&ext);
        assert!(ext.handles_tool_call("mcp__mem_palace__mempalace_kg_add") && !ext.handles_tool_call("write"));
        assert!(events.contains(&("tool_call", "redactPiWrite")) && events.contains(&("tool_result", "notePiWrite")));
        let pat = "ghp_4Fq9ZkT2mX8vR1pL6sW3yN0bC5hJ7dA2eG9u";
        let input = json!({"wing": "w", "room": "r", "content": format!("token {pat}")});
        let out = ext.on_tool_call("c1", "mcp__mem_palace__mempalace_add_drawer", input).unwrap();
        assert_eq!(out, json!({"wing": "w", "room": "r", "content": "token [REDACTED:github-pat]"}));
        assert!(ext.on_tool_result("c1", None).unwrap().contains("github-pat 1"));
        assert_eq!(ext.on_tool_call("c2", "mcp__mem_palace__mempalace_search", json!({"query": pat})), None);
    }
}
