//! pi's own MCP writes (issue 33): when pi 1.x runs a MemPalace server from its `mcp.json`, the
//! model stores through pi's `mcp__<server>__mempalace_*` tools, not the bridge's, so the bridge's
//! redaction of palace-tool writes never sees them. pi's `tool_call` event lets an extension change
//! a call's input in place before the tool runs: the strings (keys too) of a storing call of one of
//! those servers pass through the same redactor as the bridge's palace-tool writes
//! ([`calls::guard_call`]: the same rules, the same tally, the same `MEMPALACE_FEED_REDACT=off`).
//! Which tools store: [`calls::stores`] with its fallback list (pi's event carries no annotations).
//!
//! pi's `tool_result` event of that call gets the note the bridge gives ([`calls::note`]: kinds and
//! counts, never the values) as one more text block. A nested call (a codemode script's
//! `ctx.executeTool`) goes through both events too, but its result reaches the script, not the
//! model: its counts are also handed to the call that made it, whose result the model reads.
//!
//! The bridge's own tools are not pi's MCP tools (no `mcp__` prefix): they are redacted once, in
//! the bridge.

use super::{calls, merge_counts, Counts};
use crate::palace::twin::PiMempalace;
use crate::palace::PalaceConfig;
use serde_json::Value;
use std::sync::Mutex;

/// Calls redacted whose `tool_result` hasn't come are kept at most this many (a call another
/// extension blocked after the redaction never gets one): past it the oldest are forgotten.
const MAX_PENDING: usize = 256;

/// The redaction of pi's own MCP writes to its MemPalace servers.
#[derive(Debug)]
pub(crate) struct PiWrites {
    /// `mcp__<server>__` of each of pi's enabled MemPalace servers, as pi names their tools.
    prefixes: Vec<String>,
    /// The palace configuration: the redaction switch and patterns, and where the tally is kept.
    cfg: PalaceConfig,
    /// What was redacted in calls whose `tool_result` hasn't come yet, by pi's tool call id, in
    /// the order they were redacted.
    pending: Mutex<Vec<(String, Counts)>>,
}

impl PiWrites {
    /// Redaction of the writes to `servers` (pi's enabled MemPalace servers, `twin::find`);
    /// None when there are none.
    pub(crate) fn new(servers: &[PiMempalace], cfg: PalaceConfig) -> Option<PiWrites> {
        let prefixes: Vec<String> =
            servers.iter().map(|s| format!("mcp__{}__", crate::palace::twin::tool_prefix(&s.name))).collect();
        (!prefixes.is_empty()).then(|| PiWrites { prefixes, cfg, pending: Mutex::new(Vec::new()) })
    }

    /// The MemPalace tool pi's tool `pi_name` calls, when it is a tool of one of pi's MemPalace
    /// servers (`mcp__mem_palace__mempalace_add_drawer` → `mempalace_add_drawer`).
    pub(crate) fn palace_tool<'a>(&self, pi_name: &'a str) -> Option<&'a str> {
        self.prefixes.iter().find_map(|p| pi_name.strip_prefix(p.as_str())).filter(|t| !t.is_empty())
    }

    /// Whether a call of pi's tool `tool` stores into one of pi's MemPalace servers (its input is
    /// then worth reading: [`PiWrites::tool_call`]).
    pub(crate) fn stores(&self, tool: &str) -> bool {
        self.palace_tool(tool).is_some_and(|name| calls::stores(name, &[]))
    }

    /// pi's `tool_call`: when `tool` stores into one of pi's MemPalace servers, redacts `input` in
    /// place (the tally kept) and remembers the counts for the call's `tool_result`. True when
    /// `input` changed.
    pub(crate) fn tool_call(&self, call_id: &str, tool: &str, input: &mut Value) -> bool {
        let counts = calls::guard_call(&self.cfg, self.stores(tool), input);
        if counts.is_empty() {
            return false;
        }
        self.remember(call_id, counts);
        true
    }

    /// pi's `tool_result` of `call_id`: the note to add to its content (None: nothing redacted in
    /// it, nor in the nested calls it made). A nested call's counts go on to `parent`, the call
    /// that made it.
    pub(crate) fn tool_result(&self, call_id: &str, parent: Option<&str>) -> Option<String> {
        let counts = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let i = pending.iter().position(|(id, _)| id == call_id)?;
            pending.remove(i).1
        };
        if let Some(parent) = parent.filter(|p| !p.is_empty() && *p != call_id) {
            self.remember(parent, counts.clone());
        }
        calls::note(&counts)
    }

    /// Adds `counts` to what `call_id`'s result will say.
    fn remember(&self, call_id: &str, counts: Counts) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match pending.iter_mut().find(|(id, _)| id == call_id) {
            Some((_, c)) => merge_counts(c, counts),
            None => {
                if pending.len() >= MAX_PENDING {
                    pending.remove(0);
                }
                pending.push((call_id.to_string(), counts));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    const PAT: &str = "ghp_4Fq9ZkT2mX8vR1pL6sW3yN0bC5hJ7dA2eG9u";

    fn server(name: &str) -> PiMempalace {
        PiMempalace { name: name.into(), source: "/a/mcp.json".into(), url: None, launch: None }
    }

    /// The palace configuration of an agent dir `agent` (MEMPALACE_FEED_REDACT as `redact`).
    fn cfg(agent: &std::path::Path, redact: Option<&str>) -> PalaceConfig {
        let mut map = HashMap::from([("PI_CODING_AGENT_DIR".to_string(), agent.display().to_string())]);
        if let Some(r) = redact {
            map.insert("MEMPALACE_FEED_REDACT".into(), r.into());
        }
        PalaceConfig::from_lookup(&move |k: &str| map.get(k).cloned()).0
    }

    fn writes(agent: &std::path::Path, names: &[&str], redact: Option<&str>) -> PiWrites {
        let servers: Vec<PiMempalace> = names.iter().map(|n| server(n)).collect();
        PiWrites::new(&servers, cfg(agent, redact)).unwrap()
    }

    #[test]
    fn pi_s_tool_names_of_its_mempalace_servers_are_matched_with_dashes_as_underscores() {
        let d = tempfile::tempdir().unwrap();
        assert!(PiWrites::new(&[], cfg(d.path(), None)).is_none(), "no MemPalace server in pi's mcp.json");
        let w = writes(d.path(), &["mem-palace", "memory"], None);
        assert_eq!(w.palace_tool("mcp__mem_palace__mempalace_add_drawer"), Some("mempalace_add_drawer"));
        assert_eq!(w.palace_tool("mcp__memory__mempalace_kg_add"), Some("mempalace_kg_add"));
        // pi never names a tool with the `-`; another server, the bridge's own tools, pi's tools.
        assert_eq!(w.palace_tool("mcp__mem-palace__mempalace_add_drawer"), None);
        assert_eq!(w.palace_tool("mcp__github__create_issue"), None);
        assert_eq!(w.palace_tool("mcp__memory2__mempalace_add_drawer"), None);
        assert_eq!(w.palace_tool("mempalace_add_drawer"), None);
        assert_eq!(w.palace_tool("mcp__memory__"), None);
        assert_eq!(w.palace_tool("bash"), None);
        assert!(w.stores("mcp__memory__mempalace_diary_write") && !w.stores("mcp__memory__mempalace_search"));
        assert!(!w.stores("mcp__github__create_issue") && !w.stores("write"));
    }

    #[test]
    fn a_storing_call_is_redacted_in_place_counted_and_its_result_told() {
        let d = tempfile::tempdir().unwrap();
        let w = writes(d.path(), &["mem-palace"], None);
        let mut input = json!({"wing": "w", "room": "r", "content": format!("deploy token {PAT}")});
        assert!(w.tool_call("c1", "mcp__mem_palace__mempalace_add_drawer", &mut input));
        assert_eq!(input["content"], "deploy token [REDACTED:github-pat]");
        assert_eq!(input["wing"], "w");
        let tally = calls::Tally::read(&d.path().join("mempalace-feed")).unwrap();
        assert_eq!((tally.calls, tally.redacted.get("github-pat")), (1, Some(&1)));
        let note = w.tool_result("c1", None).unwrap();
        assert!(note.contains("github-pat 1") && !note.contains(PAT), "{note}");
        assert_eq!(note, calls::note(&Counts::from([("github-pat".to_string(), 1)])).unwrap(), "the bridge's note");
        assert_eq!(w.tool_result("c1", None), None, "told once");
        // A call with nothing secret: unchanged, nothing counted, nothing said.
        let mut plain = json!({"entry": "nothing secret"});
        assert!(!w.tool_call("c2", "mcp__mem_palace__mempalace_diary_write", &mut plain));
        assert_eq!(plain, json!({"entry": "nothing secret"}));
        assert_eq!(w.tool_result("c2", None), None);
        assert_eq!(calls::Tally::read(&d.path().join("mempalace-feed")).unwrap().calls, 1);
    }

    #[test]
    fn read_only_tools_and_other_servers_are_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let w = writes(d.path(), &["mempalace"], None);
        for tool in ["mcp__mempalace__mempalace_search", "mcp__github__create_issue", "mempalace_add_drawer"] {
            let mut input = json!({"query": PAT, "body": PAT, "content": PAT});
            assert!(!w.tool_call("c", tool, &mut input), "{tool}");
            assert_eq!(input, json!({"query": PAT, "body": PAT, "content": PAT}), "{tool}");
        }
        assert_eq!(w.tool_result("c", None), None);
        assert_eq!(calls::Tally::read(&d.path().join("mempalace-feed")), None);
    }

    #[test]
    fn redaction_off_leaves_pi_s_writes_as_they_are() {
        let d = tempfile::tempdir().unwrap();
        let w = writes(d.path(), &["mempalace"], Some("off"));
        let mut input = json!({"subject": "ci", "predicate": "uses", "object": PAT});
        assert!(!w.tool_call("c", "mcp__mempalace__mempalace_kg_add", &mut input));
        assert_eq!(input["object"], PAT);
        assert_eq!(w.tool_result("c", None), None);
        assert_eq!(calls::Tally::read(&d.path().join("mempalace-feed")), None);
    }

    #[test]
    fn a_nested_call_s_note_reaches_the_call_that_made_it() {
        let d = tempfile::tempdir().unwrap();
        let w = writes(d.path(), &["mempalace"], None);
        let mut a = json!({"entry": format!("rotated {PAT}")});
        let mut b = json!({"object": PAT});
        assert!(w.tool_call("top/1", "mcp__mempalace__mempalace_diary_write", &mut a));
        assert!(w.tool_call("top/2", "mcp__mempalace__mempalace_kg_add", &mut b));
        assert!(w.tool_result("top/1", Some("top")).unwrap().contains("github-pat 1"));
        assert!(w.tool_result("top/2", Some("top")).unwrap().contains("github-pat 1"));
        // codemode's own result, which the model reads, says both.
        assert!(w.tool_result("top", None).unwrap().contains(": 2 (github-pat 2)"));
    }

    #[test]
    fn calls_never_told_are_forgotten_past_the_bound() {
        let d = tempfile::tempdir().unwrap();
        let w = writes(d.path(), &["mempalace"], None);
        for i in 0..=MAX_PENDING {
            let mut input = json!({"entry": PAT});
            assert!(w.tool_call(&format!("c{i}"), "mcp__mempalace__mempalace_diary_write", &mut input));
        }
        assert_eq!(w.pending.lock().unwrap().len(), MAX_PENDING);
        assert_eq!(w.tool_result("c0", None), None, "the oldest was forgotten");
        assert!(w.tool_result(&format!("c{MAX_PENDING}"), None).is_some());
    }
}
