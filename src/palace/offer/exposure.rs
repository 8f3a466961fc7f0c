//! How the palace tools reach the model on pi 1.x: `MEMPALACE_EXPOSURE` (`codemode`, `deferred`,
//! `direct`), `MEMPALACE_DIRECT_TOOLS`, and what this pi can do about them.
//!
//! pi ≥ 0.99 registers a tool with an `exposure`; its own MCP registers MCP tools `deferred` and
//! activates the `codemode` tool (setting "codemode") or `tool_search` (setting "deferred"), which
//! reach them by name: ~1.6 KB per request instead of ~35 KB for MemPalace's 47 tools declared
//! directly. The bridge does the same. What pi can do is read off `pi.getAllTools()` once pi has
//! loaded its extensions ([`PiView`]), never off a version number: every tool reported with an
//! `exposure` means pi has exposure, and a `codemode` or `tool_search` tool that declares
//! `reachesTools` is one that reaches other tools (pi's own MCP activates only such a tool).
//! Without exposure, or with neither tool, every palace tool is declared directly (one stderr
//! line when that is not what was asked for): no mode leaves a palace tool unreachable.

use super::tool_filter::ToolFilter;
use serde_json::{json, Value};
use std::fmt;

/// pi's tool that runs scripts calling other tools.
pub(crate) const CODEMODE_TOOL: &str = "codemode";
/// pi's tool that finds tools not declared yet and declares them.
pub(crate) const TOOL_SEARCH_TOOL: &str = "tool_search";
/// The namespace the palace tools are registered under (`searchTools`/`describeNamespace`).
pub(crate) const NAMESPACE: &str = "mempalace";

/// `MEMPALACE_EXPOSURE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Not declared; reached from pi's `codemode` scripts (the default where pi has exposure).
    Codemode,
    /// Not declared until pi's `tool_search` loads them.
    Deferred,
    /// Declared to the model (the only way on a pi without exposure).
    Direct,
}

impl Exposure {
    pub fn parse(raw: &str) -> Option<Exposure> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "codemode" => Some(Exposure::Codemode),
            "deferred" => Some(Exposure::Deferred),
            "direct" => Some(Exposure::Direct),
            _ => None,
        }
    }

    /// The tool of pi that reaches tools of this exposure, if any.
    fn reacher(self) -> Option<&'static str> {
        match self {
            Exposure::Codemode => Some(CODEMODE_TOOL),
            Exposure::Deferred => Some(TOOL_SEARCH_TOOL),
            Exposure::Direct => None,
        }
    }
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Direct => "direct",
        })
    }
}

/// `MEMPALACE_EXPOSURE` and `MEMPALACE_DIRECT_TOOLS` as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposureConfig {
    /// `None`: unset (codemode where pi has exposure, else direct, silently).
    pub asked: Option<Exposure>,
    /// The tools declared directly whatever the mode (same globs as `MEMPALACE_TOOLS`; unset:
    /// nothing listed).
    pub direct_tools: ToolFilter,
}

impl Default for ExposureConfig {
    /// Both unset: the mode wanted where pi can do anything, and no tool declared directly.
    fn default() -> Self {
        ExposureConfig { asked: None, direct_tools: ToolFilter::NothingListed }
    }
}

impl ExposureConfig {
    /// The mode wanted where pi can do anything.
    pub fn wanted(&self) -> Exposure {
        self.asked.unwrap_or(Exposure::Codemode)
    }

    /// Whether `MEMPALACE_DIRECT_TOOLS` names `tool`.
    pub fn direct_tool(&self, tool: &str) -> bool {
        self.direct_tools.allows(tool)
    }
}

/// What pi offers, read off `pi.getAllTools()` once pi has loaded its extensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PiView {
    /// Every tool name pi knows.
    pub names: Vec<String>,
    /// pi reports an `exposure` for its tools: its extension API has tool exposure.
    pub exposure: bool,
    /// The tools that declare `reachesTools` (pi 1.x's `codemode` and `tool_search`).
    pub reaching: Vec<String>,
    /// The active tools (`pi.getActiveTools()`).
    pub active: Vec<String>,
}

/// The exposure in force, once pi's view was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InForce {
    pub mode: Exposure,
    /// pi's tool that reaches the palace tools not declared (`codemode`/`tool_search`).
    pub via: Option<&'static str>,
    /// Why the mode is not the one asked for (the stderr line), if so.
    pub fallback: Option<String>,
}

impl InForce {
    /// What pi makes of a tool registered before its view was seen (with the mode wanted): on a
    /// pi without exposure every tool is direct.
    pub(crate) fn tentative(cfg: &ExposureConfig) -> InForce {
        InForce { mode: cfg.wanted(), via: cfg.wanted().reacher(), fallback: None }
    }
}

/// The exposure `cfg` gets on the pi `view` describes.
pub(crate) fn resolve(cfg: &ExposureConfig, view: &PiView) -> InForce {
    let wanted = cfg.wanted();
    let direct = |fallback: Option<String>| InForce { mode: Exposure::Direct, via: None, fallback };
    if wanted == Exposure::Direct {
        return direct(None);
    }
    if !view.exposure {
        // The default on a pi without exposure is direct: nothing to say.
        return direct(cfg.asked.map(|asked| {
            format!(
                "mempalace: MEMPALACE_EXPOSURE={asked} needs tool exposure in pi's extension API (pi 0.99 or later), \
                 which this pi lacks; the palace tools are declared directly"
            )
        }));
    }
    let order = match wanted {
        Exposure::Deferred => [Exposure::Deferred, Exposure::Codemode],
        _ => [Exposure::Codemode, Exposure::Deferred],
    };
    let has = |e: Exposure| e.reacher().is_some_and(|r| view.reaching.iter().any(|n| n == r));
    match order.into_iter().find(|&e| has(e)) {
        Some(mode) => InForce {
            mode,
            via: mode.reacher(),
            fallback: (mode != wanted).then(|| {
                format!(
                    "mempalace: MEMPALACE_EXPOSURE={wanted}: this pi has no `{}` tool that reaches other tools; the palace tools are reached through `{}` instead",
                    wanted.reacher().unwrap_or_default(),
                    mode.reacher().unwrap_or_default()
                )
            }),
        },
        None => direct(Some(format!(
            "mempalace: MEMPALACE_EXPOSURE={wanted}: this pi has neither a `{CODEMODE_TOOL}` nor a `{TOOL_SEARCH_TOOL}` tool that reaches other tools \
             (built-in extensions off?); the palace tools are declared directly"
        ))),
    }
}

/// The `exposure` a palace tool is registered with: `None` for direct (pi's default), else
/// `deferred` (in both modes, as pi's own MCP: `codemode` would list every tool in the codemode
/// tool's description, 13.6 KB for MemPalace's 47).
pub(crate) fn tool_exposure(cfg: &ExposureConfig, in_force: &InForce, tool: &str) -> Option<&'static str> {
    (in_force.mode != Exposure::Direct && !cfg.direct_tool(tool)).then_some("deferred")
}

/// The server's `serverInfo` and `instructions`, as the palace's namespace needs them: what the
/// tool cache keeps beside the tools (bounded by `palace::tools`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// The palace's namespace as pi's `registerTool` takes it: `{name, aliases, description,
/// instructions}` from the server (its `serverInfo` and `instructions`), with the wake-up's
/// orientation.
pub(crate) fn namespace(server: &ServerMeta) -> Value {
    let who = server.title.as_deref().or(server.name.as_deref()).unwrap_or("MemPalace");
    let who = match &server.version {
        Some(v) => format!("{who} {v}"),
        None => who.to_string(),
    };
    let mut ns = json!({
        "name": NAMESPACE,
        "description": format!("{who}: your long-term memory palace. Search it before answering questions about past work."),
    });
    if let Some(alias) = server.name.as_deref().filter(|n| *n != NAMESPACE) {
        ns["aliases"] = json!([alias]);
    }
    if let Some(i) = server.instructions.as_deref().filter(|i| !i.trim().is_empty()) {
        ns["instructions"] = json!(i);
    }
    ns
}

/// How the model reaches `tool` when it is not declared, in a few words for a prompt (the
/// `/mempalace-diary` prompt, the system prompt section); `None` when it is declared.
pub(crate) fn reach_hint(cfg: &ExposureConfig, in_force: &InForce, tool: &str) -> Option<String> {
    tool_exposure(cfg, in_force, tool)?;
    Some(match in_force.via {
        Some(TOOL_SEARCH_TOOL) => format!(
            "`{tool}` is not declared to you yet: load it with the `{TOOL_SEARCH_TOOL}` tool (query \"{tool}\"), then call it"
        ),
        _ => format!(
            "`{tool}` is not declared to you: call it from a `{CODEMODE_TOOL}` script, `await tools.{tool}({{ ... }})`"
        ),
    })
}

/// The system prompt section (pi's `systemPromptOptions.sections`) that tells the model the palace
/// tools it is not declared exist and how to reach them, as pi's own MCP does for its servers
/// (`mcp_servers`); `None` when every palace tool is declared.
pub(crate) fn prompt_section(cfg: &ExposureConfig, in_force: &InForce, tools: &[String]) -> Option<String> {
    let hidden = tools.iter().filter(|t| tool_exposure(cfg, in_force, t).is_some()).count();
    if hidden == 0 {
        return None;
    }
    let how = match in_force.via {
        Some(TOOL_SEARCH_TOOL) => format!(
            "load the ones you need with `{TOOL_SEARCH_TOOL}` (e.g. query \"mempalace search\"), then call them"
        ),
        _ => format!(
            "call them from `{CODEMODE_TOOL}` scripts as `await tools.mempalace_search({{ query }})`; \
             `await searchTools(\"...\", {{ namespace: \"{NAMESPACE}\" }})` finds them and `await describeTool(name)` shows one's parameters"
        ),
    };
    Some(format!(
        "MemPalace, your long-term memory palace: {hidden} tools (namespace `{NAMESPACE}`, named `mempalace_*`) are not declared to you; {how}."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(asked: Option<&str>, direct: Option<&str>) -> ExposureConfig {
        ExposureConfig { asked: asked.and_then(Exposure::parse), direct_tools: ToolFilter::parse_listed(direct) }
    }

    fn pi(exposure: bool, reaching: &[&str]) -> PiView {
        PiView { exposure, reaching: reaching.iter().map(|s| s.to_string()).collect(), ..PiView::default() }
    }

    #[test]
    fn parses_the_three_modes() {
        assert_eq!(Exposure::parse(" Codemode "), Some(Exposure::Codemode));
        assert_eq!(Exposure::parse("deferred"), Some(Exposure::Deferred));
        assert_eq!(Exposure::parse("direct"), Some(Exposure::Direct));
        assert_eq!(Exposure::parse("hidden"), None);
    }

    #[test]
    fn codemode_is_the_default_where_pi_has_exposure_and_direct_where_it_has_none() {
        let pi16 = pi(true, &["codemode", "tool_search"]);
        let r = resolve(&cfg(None, None), &pi16);
        assert_eq!((r.mode, r.via, r.fallback), (Exposure::Codemode, Some("codemode"), None));
        let r = resolve(&cfg(Some("deferred"), None), &pi16);
        assert_eq!((r.mode, r.via), (Exposure::Deferred, Some("tool_search")));
        assert_eq!(resolve(&cfg(Some("direct"), None), &pi16).mode, Exposure::Direct);

        let pi074 = pi(false, &[]);
        assert_eq!(resolve(&cfg(None, None), &pi074), InForce { mode: Exposure::Direct, via: None, fallback: None });
        let r = resolve(&cfg(Some("codemode"), None), &pi074);
        assert_eq!(r.mode, Exposure::Direct);
        assert!(r.fallback.unwrap().contains("MEMPALACE_EXPOSURE=codemode needs tool exposure"));
    }

    #[test]
    fn no_mode_leaves_a_tool_unreachable() {
        let r = resolve(&cfg(None, None), &pi(true, &["tool_search"]));
        assert_eq!((r.mode, r.via), (Exposure::Deferred, Some("tool_search")));
        assert!(r.fallback.unwrap().contains("reached through `tool_search` instead"));
        let r = resolve(&cfg(Some("deferred"), None), &pi(true, &["codemode"]));
        assert_eq!(r.mode, Exposure::Codemode);
        let r = resolve(&cfg(None, None), &pi(true, &["something_else"]));
        assert_eq!(r.mode, Exposure::Direct);
        assert!(r.fallback.unwrap().contains("neither a `codemode` nor a `tool_search` tool"));
    }

    #[test]
    fn direct_tools_are_declared_in_every_mode_and_the_rest_deferred() {
        let c = cfg(None, Some("mempalace_search, mempalace_diary_*"));
        let r = resolve(&c, &pi(true, &["codemode"]));
        assert_eq!(tool_exposure(&c, &r, "mempalace_search"), None);
        assert_eq!(tool_exposure(&c, &r, "mempalace_diary_write"), None);
        assert_eq!(tool_exposure(&c, &r, "mempalace_kg_add"), Some("deferred"));
        assert_eq!(tool_exposure(&cfg(None, None), &r, "mempalace_search"), Some("deferred"), "unset: none direct");
        let direct = resolve(&c, &pi(false, &[]));
        assert_eq!(tool_exposure(&c, &direct, "mempalace_kg_add"), None);
    }

    #[test]
    fn prompts_name_the_way_to_a_tool_not_declared() {
        let c = cfg(None, None);
        let code = resolve(&c, &pi(true, &["codemode"]));
        let hint = reach_hint(&c, &code, "mempalace_diary_write").unwrap();
        assert!(hint.contains("`codemode` script") && hint.contains("tools.mempalace_diary_write("), "{hint}");
        let search = resolve(&cfg(Some("deferred"), None), &pi(true, &["tool_search"]));
        assert!(reach_hint(&c, &search, "mempalace_diary_write").unwrap().contains("`tool_search`"));
        let c2 = cfg(None, Some("mempalace_diary_write"));
        assert_eq!(reach_hint(&c2, &code, "mempalace_diary_write"), None, "declared: no hint");

        let names: Vec<String> = ["mempalace_search", "mempalace_kg_add"].map(String::from).to_vec();
        let s = prompt_section(&c, &code, &names).unwrap();
        assert!(s.contains("2 tools (namespace `mempalace`") && s.contains("searchTools"), "{s}");
        assert_eq!(prompt_section(&c, &resolve(&c, &pi(false, &[])), &names), None);
    }

    #[test]
    fn the_namespace_comes_from_the_server() {
        let s = ServerMeta { name: Some("mempalace".into()), version: Some("3.11.0".into()), ..ServerMeta::default() };
        assert_eq!(
            namespace(&s),
            json!({"name": "mempalace", "description": "mempalace 3.11.0: your long-term memory palace. Search it before answering questions about past work."})
        );
        let s = ServerMeta {
            name: Some("palace-srv".into()),
            title: Some("My Palace".into()),
            instructions: Some("Use search first.".into()),
            ..ServerMeta::default()
        };
        let ns = namespace(&s);
        assert_eq!(ns["aliases"], json!(["palace-srv"]));
        assert_eq!(ns["instructions"], "Use search first.");
        assert!(ns["description"].as_str().unwrap().starts_with("My Palace: "));
    }
}
