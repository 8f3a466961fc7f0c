//! Which tools one load of the extension (one run of `index.js`: startup or `/reload`) hands to
//! pi: the voice tools, and the palace tools that pi may register now, each name once.

use super::Extension;
use serde_json::Value;
use std::collections::HashSet;

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

/// The tools one load of the extension handed to pi, so that pi never gets `registerTool` twice
/// for a name.
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

impl Extension {
    /// Resolves with the MemPalace server's own tool list (what `palace::tools` and
    /// `MEMPALACE_TOOLS` let through) once the background handshake is done; empty when the palace
    /// can't be had.
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
}

fn voice_spec(d: crate::voice::descriptors::Descriptor) -> ToolSpec {
    ToolSpec {
        name: d.tool.name().into(),
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
