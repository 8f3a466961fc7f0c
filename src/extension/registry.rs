//! Which tools one load of the extension (one run of `index.js`: startup or `/reload`) hands to
//! pi: the voice tools, and the palace tools that pi may register now, each name once (again only
//! when its exposure changed), with the tool pi reaches them through (`palace::offer::exposure`).

use super::Extension;
use crate::palace::offer::exposure::{Exposure, PiView};
use serde_json::Value;
use std::collections::HashMap;

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
    /// pi 1.x's `exposure` (`None`: pi's default, direct).
    pub exposure: Option<&'static str>,
    /// pi 1.x's `namespace` (`{name, aliases?, description, instructions?}`).
    pub namespace: Option<Value>,
    /// MCP `annotations`, exactly as the server declared them.
    pub annotations: Option<Value>,
}

/// The palace tools to register now, and the tools of pi to add to its active set (`codemode` or
/// `tool_search`, which reach the tools not declared; pi activates them only for its own MCP).
#[derive(Debug, Default)]
pub struct PalaceTools {
    pub tools: Vec<ToolSpec>,
    pub activate: Vec<String>,
}

/// The tools one load of the extension handed to pi, with the exposure each was registered with,
/// so that pi gets `registerTool` for a name again only when its exposure changed.
#[derive(Debug, Default)]
pub struct Registration {
    given: HashMap<String, Option<&'static str>>,
    /// pi's reaching tool was added to the active set by this load (once: a user may turn it off).
    activated: bool,
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

    /// The MemPalace tools pi may register now and doesn't have from this load (or has with
    /// another exposure): from the cached `tools/list` at load (pi's startup never waits for the
    /// palace), the server's own once its handshake is done. `pi`: what pi offers (`None` while pi
    /// loads extensions, when `getAllTools` throws): its tool names that are not this load's own
    /// belong to something else, which a palace tool never shadows; what it can do decides the
    /// exposure (before it is seen, the tools get the one asked for: a pi without exposure
    /// ignores it, and once seen a pi with exposure gets them again if that changed).
    pub fn palace_tools(&mut self, ext: &Extension, pi: Option<PiView>) -> PalaceTools {
        let Some(bridge) = &ext.bridge else { return PalaceTools::default() };
        let taken: Vec<String> = pi
            .as_ref()
            .map(|v| v.names.iter().filter(|n| !self.given.contains_key(*n)).cloned().collect())
            .unwrap_or_default();
        let offer = bridge.registration(pi.as_ref(), &taken);
        let (in_force, namespace) = (offer.in_force, offer.namespace);
        // Before any tool list is known (a first start, no cache) the configuration says whether
        // the palace's tools will be reached through pi's tool, as pi's own MCP activates it from
        // its configuration: a prompt sent before the handshake ends reaches the palace then.
        let reached = offer.tools.iter().any(|(_, exposure)| exposure.is_some())
            || (offer.awaiting && in_force.mode != Exposure::Direct);
        // On a pi without exposure every tool registered is direct, whatever it was given.
        let exposure_counts = pi.as_ref().is_none_or(|v| v.exposure);
        // Only what pi gets is made a spec (this runs on every prompt, mostly to find nothing new).
        let tools: Vec<ToolSpec> = offer
            .tools
            .into_iter()
            .filter(|(t, exposure)| self.is_changed(&t.name, *exposure, exposure_counts))
            .map(|(t, exposure)| palace_spec(t, exposure, Some(namespace.clone())))
            .collect();
        let tools = self.keep_changed(tools, exposure_counts);
        let mut activate = Vec::new();
        if let (Some(view), Some(via)) = (&pi, in_force.via) {
            if reached && !self.activated && !view.active.iter().any(|a| a == via) {
                activate.push(via.to_string());
            }
            self.activated |= reached;
        }
        PalaceTools { tools, activate }
    }

    fn keep_new(&mut self, tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
        self.keep_changed(tools, false)
    }

    /// Whether the tool `name` with `exposure` is not handed to pi yet, or (with
    /// `exposure_counts`) was handed with another exposure.
    fn is_changed(&self, name: &str, exposure: Option<&'static str>, exposure_counts: bool) -> bool {
        self.given.get(name).is_none_or(|before| exposure_counts && *before != exposure)
    }

    /// The tools not handed to pi yet, and (with `exposure_counts`) those handed with another
    /// exposure; each name once.
    fn keep_changed(&mut self, tools: Vec<ToolSpec>, exposure_counts: bool) -> Vec<ToolSpec> {
        tools
            .into_iter()
            .filter(|t| {
                let changed = self.is_changed(&t.name, t.exposure, exposure_counts);
                self.given.insert(t.name.clone(), t.exposure);
                changed
            })
            .collect()
    }
}

impl Extension {
    /// Resolves with the MemPalace server's own tool list (what `palace::offer::tools` and
    /// `MEMPALACE_TOOLS` let through) once the background handshake is done; empty when the palace
    /// can't be had.
    pub async fn palace_tools(&self) -> Vec<ToolSpec> {
        let Some(bridge) = self.bridge.clone() else { return Vec::new() };
        match bridge.registration_when_connected().await {
            Ok(offer) => offer
                .tools
                .into_iter()
                .map(|(t, exposure)| palace_spec(t, exposure, Some(offer.namespace.clone())))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// pi 1.x's system prompt section (`mempalace`) on the palace tools not declared to the model
    /// and how to reach them; `None` when every one is declared (or the bridge is off).
    pub fn palace_prompt_section(&self) -> Option<String> {
        self.bridge.as_ref()?.prompt_section()
    }
}

fn voice_spec(d: crate::voice::descriptors::Descriptor) -> ToolSpec {
    ToolSpec {
        name: d.tool.name().into(),
        label: d.label.into(),
        description: d.description.into(),
        prompt_snippet: Some(d.prompt_snippet.into()),
        prompt_guidelines: Some(d.prompt_guidelines.iter().map(|s| s.to_string()).collect()),
        parameters: d.parameters,
        exposure: None,
        namespace: None,
        annotations: None,
    }
}

/// A palace tool as pi registers it. It passed `palace::offer::tools` (name, schema type, size), so its
/// schema converts to a JS value: napi-rs refuses a value of over a million nodes or 128 levels,
/// which made a cached million-value schema throw at load, taking the voice tools along.
fn palace_spec(t: crate::mcp::ToolInfo, exposure: Option<&'static str>, namespace: Option<Value>) -> ToolSpec {
    ToolSpec {
        label: t.name.clone(),
        name: t.name,
        description: t.description.unwrap_or_default(),
        prompt_snippet: None,
        prompt_guidelines: None,
        parameters: t.input_schema,
        // Only where the tool is not direct: a direct tool is registered as before the exposure.
        namespace: namespace.filter(|_| exposure.is_some()),
        exposure,
        annotations: t.annotations,
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
            exposure: None,
            namespace: None,
            annotations: None,
        }
    }

    /// An extension whose bridge is configured by `vars`, its agent dir (the tool cache's) `dir`.
    fn palace_only(dir: &std::path::Path, vars: &[(&str, &str)]) -> Extension {
        let mut map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        map.insert("PI_CODING_AGENT_DIR".into(), dir.display().to_string());
        let get = move |k: &str| map.get(k).cloned();
        let (pal, _) = crate::palace::PalaceConfig::from_lookup(&get);
        let (mcp, _) = crate::mcp::McpConfig::from_lookup(&get);
        Extension::new(None, crate::palace::bridge::Bridge::from_config(pal, mcp, crate::voice::Tool::names()), None)
    }

    #[test]
    fn a_first_start_without_a_tool_cache_activates_the_reaching_tool_from_the_configuration() {
        let pi = |reaching: &str| PiView {
            names: vec![reaching.into()],
            exposure: true,
            reaching: vec![reaching.into()],
            active: Vec::new(),
        };
        for (asked, via) in [("codemode", "codemode"), ("deferred", "tool_search")] {
            let dir = tempfile::tempdir().unwrap();
            let ext = palace_only(dir.path(), &[("MEMPALACE_EXPOSURE", asked), ("MEMPALACE_MCP_BIN", "mempalace-mcp")]);
            let mut r = Registration::default();
            let first = r.palace_tools(&ext, Some(pi(via)));
            assert!(first.tools.is_empty(), "no cache: no tool yet");
            assert_eq!(first.activate, [via], "{asked}: pi's `{via}` is activated before the handshake ends");
            assert!(r.palace_tools(&ext, Some(pi(via))).activate.is_empty(), "once a load");
        }
        let dir = tempfile::tempdir().unwrap();
        let direct = palace_only(dir.path(), &[("MEMPALACE_EXPOSURE", "direct")]);
        assert!(
            Registration::default().palace_tools(&direct, Some(pi("codemode"))).activate.is_empty(),
            "direct: nothing"
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

    #[test]
    fn a_tool_is_handed_again_only_when_its_exposure_changed_on_a_pi_with_exposure() {
        let mut r = Registration::default();
        let deferred = |n: &str| ToolSpec { exposure: Some("deferred"), ..spec(n) };
        assert_eq!(r.keep_changed(vec![deferred("a"), deferred("b")], true).len(), 2);
        assert!(r.keep_changed(vec![deferred("a")], true).is_empty(), "same exposure");
        assert!(r.keep_changed(vec![spec("a")], false).is_empty(), "a pi without exposure: it is direct already");
        let again: Vec<String> = r.keep_changed(vec![spec("b")], true).into_iter().map(|t| t.name).collect();
        assert_eq!(again, ["b"], "deferred → direct on a pi with exposure");
    }
}
