//! What pi is offered of the palace, and how: the tools a `tools/list` (or its cache) lets through
//! ([`tools`], [`cache`]), the `MEMPALACE_TOOLS` filter ([`tool_filter`]), how they reach the model
//! on pi 1.x ([`exposure`]), and the [`Shelf`] the bridge keeps them on: the tools known, the
//! server's namespace texts, the exposure in force, and what is said once on stderr about them.

pub mod cache;
pub(crate) mod exposure;
pub(crate) mod tool_filter;
pub mod tools;

use crate::mcp::{CallResult, ToolInfo};
use crate::sync::lock;
use exposure::{ExposureConfig, InForce, PiView, ServerMeta};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tool_filter::ToolFilter;
use tools::{Refused, Why};

/// How many palace tools are known, and how many of them pi is offered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolCounts {
    pub(crate) known: usize,
    pub(crate) offered: usize,
}

/// The palace tools one load of the extension may register ([`Shelf::registration`]).
#[derive(Debug)]
pub(crate) struct Offer {
    /// The exposure in force.
    pub(crate) in_force: InForce,
    /// Each tool with the `exposure` it is registered with (`None`: direct).
    pub(crate) tools: Vec<(ToolInfo, Option<&'static str>)>,
    /// The palace's namespace for pi's `registerTool` (from the server's texts as last known).
    pub(crate) namespace: Value,
    /// No tool list is known yet (no cache, the handshake not done) and the palace may still come
    /// (installed, not known down): a first start.
    pub(crate) awaiting: bool,
}

/// The palace tools on offer: the last list known and what goes with it. The bridge stocks it
/// after each handshake ([`Shelf::stock`]) and asks it what to hand pi.
pub(crate) struct Shelf {
    /// `MEMPALACE_TOOLS`: which of the tools known pi is offered.
    filter: ToolFilter,
    /// `MEMPALACE_EXPOSURE` and `MEMPALACE_DIRECT_TOOLS`.
    exposure_cfg: ExposureConfig,
    /// The names no palace tool may take (the voice tools').
    reserved: Vec<&'static str>,
    cache_path: PathBuf,
    cache_key: String,
    /// The last tool list known (checked by [`tools`]): from the cache file at load, replaced by
    /// the server's own.
    // std Mutexes: swapped or cloned, never held across an await.
    tools: Mutex<Vec<ToolInfo>>,
    /// The server's namespace texts as last known (the cache's, then the server's).
    server: Mutex<ServerMeta>,
    /// The exposure in force once pi's view of its tools was seen (`None` before).
    exposure: Mutex<Option<InForce>>,
    /// What the last handshake refused, said together with the names taken in pi on the one
    /// stderr line of that handshake ([`Shelf::say_refused`]).
    pending_refused: Mutex<Option<Vec<Refused>>>,
    /// Names already said on stderr as taken by another tool of this pi process.
    said_taken: Mutex<Vec<String>>,
    /// Set once the `MEMPALACE_TOOLS` entries matching no palace tool were said on stderr.
    said_unmatched: AtomicBool,
}

impl Shelf {
    /// The shelf of this configuration, stocked from the cache file of the server `cache_key`
    /// names (a small file; one that can't be used is said on stderr and ignored).
    pub(crate) fn new(
        filter: ToolFilter,
        exposure_cfg: ExposureConfig,
        reserved: Vec<&'static str>,
        cache_path: PathBuf,
        cache_key: String,
    ) -> Shelf {
        let cached = cache::load(&cache_path, &cache_key, &reserved).unwrap_or_else(|why| {
            crate::diag!(
                "mempalace: ignoring the tool cache {} ({why}); it is replaced after the next good handshake",
                cache_path.display()
            );
            None
        });
        Shelf {
            filter,
            exposure_cfg,
            reserved,
            cache_path,
            cache_key,
            server: Mutex::new(cached.as_ref().map(|c| c.server.clone()).unwrap_or_default()),
            tools: Mutex::new(cached.map(|c| c.tools).unwrap_or_default()),
            exposure: Mutex::new(None),
            pending_refused: Mutex::new(None),
            said_taken: Mutex::new(Vec::new()),
            said_unmatched: AtomicBool::new(false),
        }
    }

    /// A handshake's `list` and `server` texts: the tools as [`tools`] lets them through (the cache
    /// file refreshed when they or the server's texts changed). `say_refused`: what the list
    /// refused is said with the names taken in pi when the tools are next handed to pi.
    pub(crate) fn stock(&self, list: Vec<ToolInfo>, server: ServerMeta, say_refused: bool) -> Vec<ToolInfo> {
        let admitted = tools::admit(list, &self.reserved);
        if say_refused {
            *lock(&self.pending_refused) = Some(admitted.refused);
        }
        let tools = admitted.tools;
        self.say_unmatched(&tools);
        let changed = *lock(&self.tools) != tools || *lock(&self.server) != server;
        if changed {
            if let Err(e) = cache::save(&self.cache_path, &self.cache_key, &tools, &server, &self.reserved) {
                crate::diag!("mempalace: could not write the tool cache {}: {e}", self.cache_path.display());
            }
            *lock(&self.tools) = tools.clone();
            *lock(&self.server) = server;
        }
        tools
    }

    /// Whether no tool list is known yet (no cache, no handshake).
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.tools).is_empty()
    }

    /// `f` of the tools known, under the lock (nothing cloned).
    pub(crate) fn with_tools<R>(&self, f: impl FnOnce(&[ToolInfo]) -> R) -> R {
        f(&lock(&self.tools))
    }

    /// The tools known right now (the cache until the server has answered).
    pub(crate) fn known_tools(&self) -> Vec<ToolInfo> {
        lock(&self.tools).clone()
    }

    /// How many tools are known and how many of them pi is offered (`MEMPALACE_TOOLS`), counted
    /// without copying them (the footer asks on every prompt).
    pub(crate) fn tool_counts(&self) -> ToolCounts {
        let tools = lock(&self.tools);
        ToolCounts { known: tools.len(), offered: tools.iter().filter(|t| self.filter.allows(&t.name)).count() }
    }

    /// The known tools pi is offered (`MEMPALACE_TOOLS`), before any name clash is looked at.
    pub(crate) fn offered_tools(&self) -> Vec<ToolInfo> {
        self.filter.apply(self.known_tools())
    }

    /// The known tools pi may register now: those `MEMPALACE_TOOLS` offers, minus those whose
    /// names something else in this pi process has (`taken`: pi's tool names, minus this
    /// extension's own). A name taken is said once on stderr, on the same line as what the last
    /// handshake refused (one line per handshake).
    fn tools_for_pi(&self, taken: &[String]) -> Vec<ToolInfo> {
        let known = self.offered_tools();
        let clash: Vec<String> = tools::taken_elsewhere(&known, taken).into_iter().map(String::from).collect();
        let mut said = lock(&self.said_taken);
        let new: Vec<Refused> = clash
            .iter()
            .filter(|n| !said.contains(n))
            .map(|n| Refused { name: n.clone(), why: Why::AlreadyRegistered })
            .collect();
        said.extend(new.iter().map(|r| r.name.clone()));
        drop(said);
        self.say_refused(new);
        known.into_iter().filter(|t| !clash.contains(&t.name)).collect()
    }

    /// The one stderr line of what the last handshake refused (if not said yet) and of `taken`
    /// (names found taken in pi since).
    pub(crate) fn say_refused(&self, taken: Vec<Refused>) {
        let (source, mut all) = match lock(&self.pending_refused).take() {
            Some(refused) => ("the palace's tool list", refused),
            None => ("the palace", Vec::new()),
        };
        all.extend(taken);
        if let Some(line) = tools::summary(source, &all) {
            crate::diag!("{line}");
        }
    }

    /// Each `MEMPALACE_TOOLS` and `MEMPALACE_DIRECT_TOOLS` entry that matches none of the server's
    /// tools, said once on stderr.
    fn say_unmatched(&self, tools: &[ToolInfo]) {
        let lists = [
            ("MEMPALACE_TOOLS", "it offers pi nothing", &self.filter),
            ("MEMPALACE_DIRECT_TOOLS", "it declares nothing directly", &self.exposure_cfg.direct_tools),
        ];
        let unmatched: Vec<(&str, &str, &str)> = lists
            .iter()
            .flat_map(|&(var, outcome, list)| list.unmatched(tools).into_iter().map(move |p| (var, outcome, p)))
            .collect();
        if !unmatched.is_empty() && !self.said_unmatched.swap(true, Ordering::SeqCst) {
            for (var, outcome, p) in unmatched {
                crate::diag!(
                    "mempalace: {var} entry {} matches none of the palace's {} tools; {outcome}",
                    tools::shown(p),
                    tools.len()
                );
            }
        }
    }

    /// The exposure in force on the pi `view` describes: resolved (and remembered) from
    /// `MEMPALACE_EXPOSURE` and what pi can do; a fallback from what was asked is said once on
    /// stderr.
    fn expose_on(&self, view: &PiView) -> InForce {
        let in_force = exposure::resolve(&self.exposure_cfg, view);
        let mut current = lock(&self.exposure);
        if current.as_ref() != Some(&in_force) {
            if let Some(line) = &in_force.fallback {
                crate::diag!("{line}");
            }
            *current = Some(in_force.clone());
        }
        in_force
    }

    /// The exposure in force: as resolved on pi's view, or, before pi's view was seen, the one
    /// the tools are registered with at load.
    pub(crate) fn exposure(&self) -> InForce {
        lock(&self.exposure).clone().unwrap_or_else(|| InForce::tentative(&self.exposure_cfg))
    }

    /// The `exposure` the tool `name` is registered with (`None`: direct).
    fn tool_exposure(&self, in_force: &InForce, name: &str) -> Option<&'static str> {
        exposure::tool_exposure(&self.exposure_cfg, in_force, name)
    }

    /// What one load of the extension may register now, asked once: the exposure in force on pi's
    /// `view` (`None` while pi loads extensions: the one asked for), the tools pi may register (not
    /// those whose names are `taken` in pi), each with its exposure, and the palace's namespace.
    /// `may_come`: whether the palace may still bring tools (asked only when none is known).
    pub(crate) fn registration(&self, view: Option<&PiView>, taken: &[String], may_come: &dyn Fn() -> bool) -> Offer {
        let in_force = match view {
            Some(view) => self.expose_on(view),
            None => self.exposure(),
        };
        self.offer(in_force, self.tools_for_pi(taken), may_come)
    }

    /// The server's own `tools`, once the handshake is done, as [`Shelf::registration`] offers them
    /// (every tool `MEMPALACE_TOOLS` lets through; pi sorts out the names taken when it registers).
    pub(crate) fn registration_of(&self, tools: Vec<ToolInfo>, may_come: &dyn Fn() -> bool) -> Offer {
        self.offer(self.exposure(), self.filter.apply(tools), may_come)
    }

    fn offer(&self, in_force: InForce, tools: Vec<ToolInfo>, may_come: &dyn Fn() -> bool) -> Offer {
        let tools = tools
            .into_iter()
            .map(|t| {
                let exposure = self.tool_exposure(&in_force, &t.name);
                (t, exposure)
            })
            .collect();
        let unlisted = self.is_empty();
        // A palace that is not installed, or known down, will bring no tools to reach; nor will
        // one whose tools pi is offered by nothing of the bridge's (pi's own MCP offers them).
        let awaiting = unlisted && self.filter.offers_any() && may_come();
        Offer { in_force, tools, namespace: exposure::namespace(&lock(&self.server)), awaiting }
    }

    /// The system prompt section on the palace tools not declared, once pi's view was seen.
    pub(crate) fn prompt_section(&self) -> Option<String> {
        let in_force = lock(&self.exposure).clone()?;
        let names: Vec<String> = self.offered_tools().into_iter().map(|t| t.name).collect();
        exposure::prompt_section(&self.exposure_cfg, &in_force, &names)
    }

    /// How the model reaches `tool` when it is not declared to it (pi 1.x's codemode/deferred),
    /// in the exposure in force.
    pub(crate) fn reach_hint(&self, tool: &str) -> Option<String> {
        exposure::reach_hint(&self.exposure_cfg, &self.exposure(), tool)
    }

    /// `/mempalace status`'s exposure line: the mode in force, how it reaches the tools, how many
    /// are direct.
    pub(crate) fn exposure_report(&self) -> String {
        let in_force = self.exposure();
        let offered = self.offered_tools();
        let direct = offered.iter().filter(|t| self.tool_exposure(&in_force, &t.name).is_none()).count();
        let via = in_force.via.map(|v| format!(" through pi's `{v}` tool")).unwrap_or_default();
        let seen = if lock(&self.exposure).is_some() { "" } else { " (pi's tools not seen yet)" };
        let asked = self.exposure_cfg.asked.map_or_else(|| "unset".to_string(), |e| e.to_string());
        format!(
            "exposure: {}{via}{seen}, {direct} of {} tools direct (MEMPALACE_EXPOSURE={asked}, MEMPALACE_DIRECT_TOOLS={})",
            in_force.mode,
            offered.len(),
            self.exposure_cfg.direct_tools
        )
    }
}

/// MCP content blocks → pi content blocks: text and images as they are, anything else (audio,
/// resources) as its JSON text so the model still sees it.
pub(crate) fn to_pi_content(r: &CallResult) -> Vec<Value> {
    r.content
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or_default()}),
            Some("image") => json!({"type": "image", "data": b.get("data").cloned().unwrap_or_default(), "mimeType": b.get("mimeType").cloned().unwrap_or_default()}),
            _ => json!({"type": "text", "text": b.to_string()}),
        })
        .collect()
}
