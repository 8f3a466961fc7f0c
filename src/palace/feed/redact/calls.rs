//! Palace-tool writes: what the model stores through a palace tool (`mempalace_add_drawer`,
//! `mempalace_diary_write`, `mempalace_kg_add`, …) reaches the shared palace as it is sent, so
//! every string of such a call's arguments (keys too) goes through the feed's redactor first, and
//! the tool result tells the model what was replaced (kinds and counts, never the values).
//!
//! Which tools store: the server's annotations decide. MCP's `readOnlyHint` defaults to false, so a
//! tool stores unless it says `readOnlyHint: true`. A server that annotates no tool at all (an
//! older MemPalace) is read with a fallback list of MemPalace's read-only tools ([`READ_ONLY`]);
//! any other tool of it counts as storing. `MEMPALACE_FEED_REDACT=off` turns this off with the feed.
//!
//! What was redacted is added up in `<feed dir>/tool-writes.json` (calls and counts per kind), which
//! `/mempalace status` and `dotty-pi-ext doctor` show beside the last feed.

use super::{describe, merge_counts, Counts, Redactor};
use crate::mcp::{CallResult, ToolInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// MemPalace's read-only tools (3.11.0 marks these `readOnlyHint: true`): the fallback for a
/// server whose tools carry no annotations.
pub const READ_ONLY: &[&str] = &[
    "mempalace_status",
    "mempalace_list_wings",
    "mempalace_list_rooms",
    "mempalace_get_taxonomy",
    "mempalace_get_aaak_spec",
    "mempalace_kg_query",
    "mempalace_kg_timeline",
    "mempalace_kg_stats",
    "mempalace_search",
    "mempalace_check_duplicate",
    "mempalace_get_drawer",
    "mempalace_get_drawers",
    "mempalace_list_drawers",
    "mempalace_diary_read",
    "mempalace_traverse",
    "mempalace_find_tunnels",
    "mempalace_graph_stats",
    "mempalace_list_tunnels",
    "mempalace_list_hallways",
    "mempalace_follow_tunnels",
    "mempalace_mesh_peers",
];

/// The file of the tally.
const FILE: &str = "tool-writes.json";

/// True when a call of `name` may store its arguments: see the module's text. `tools`: the
/// server's tools as listed (their annotations).
pub fn stores(name: &str, tools: &[ToolInfo]) -> bool {
    let read_only = |t: &ToolInfo| t.annotations.as_ref().and_then(|a| a.get("readOnlyHint")).and_then(Value::as_bool);
    if tools.iter().any(|t| t.annotations.is_some()) {
        return tools.iter().find(|t| t.name == name).and_then(read_only) != Some(true);
    }
    !READ_ONLY.contains(&name)
}

/// Redacts every string of `args` (keys too) when `name` stores (see [`stores`]); what it replaced.
pub fn redact_call_arguments(r: &Redactor, name: &str, tools: &[ToolInfo], args: &mut Value) -> Counts {
    let mut counts = Counts::new();
    if stores(name, tools) {
        r.redact_value(args, &mut counts);
    }
    counts
}

/// The redactor of palace-tool writes for this configuration (None: `MEMPALACE_FEED_REDACT=off`):
/// built once per process, as the feed's is per feeder.
pub fn for_calls(cfg: &crate::palace::PalaceConfig) -> Option<Arc<Redactor>> {
    static R: OnceLock<Option<Arc<Redactor>>> = OnceLock::new();
    if cfg.redact == crate::palace::config::Redact::Off {
        return None;
    }
    R.get_or_init(|| super::for_feed(cfg)).clone()
}

/// The hook of a palace tool call: when the tool `stores` (see [`stores`]), redacts `args` in place
/// and keeps the tally; what it replaced.
pub fn guard_call(cfg: &crate::palace::PalaceConfig, stores: bool, args: &mut Value) -> Counts {
    let mut counts = Counts::new();
    let Some(r) = stores.then(|| for_calls(cfg)).flatten() else { return counts };
    r.redact_value(args, &mut counts);
    if !counts.is_empty() {
        Tally::add(&cfg.feed_dir(), &counts);
    }
    counts
}

/// What the model is told, as one text block after the result, when something was replaced.
pub fn note(counts: &Counts) -> Option<String> {
    (!counts.is_empty()).then(|| {
        format!(
            "[mempalace bridge] secrets were redacted from this call's arguments before they were stored: {}. The palace holds [REDACTED:<kind>] in their place; the values were not sent.",
            describe(counts)
        )
    })
}

/// Adds [`note`] to a call's result.
pub fn tell_model(result: &mut CallResult, counts: &Counts) {
    if let Some(text) = note(counts) {
        result.content.push(serde_json::json!({"type": "text", "text": text}));
    }
}

/// The tally of palace-tool writes redacted (calls with a redaction, and counts per kind).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Tally {
    pub calls: u64,
    pub redacted: Counts,
}

impl Tally {
    /// The tally in `feed_dir`, if any.
    pub fn read(feed_dir: &Path) -> Option<Tally> {
        serde_json::from_slice(&std::fs::read(feed_dir.join(FILE)).ok()?).ok()
    }

    /// Adds one call's counts. Best effort: a call never fails for this.
    fn add(feed_dir: &Path, counts: &Counts) {
        let mut t = Tally::read(feed_dir).unwrap_or_default();
        t.calls += 1;
        merge_counts(&mut t.redacted, counts.clone());
        if let Ok(bytes) = serde_json::to_vec(&t) {
            let _ = std::fs::create_dir_all(feed_dir);
            let _ = crate::palace::files::write_atomic(&feed_dir.join(FILE), &bytes);
        }
    }

    /// "palace-tool writes redacted 3 (aws-access-token 1, jwt 2) in 2 calls"; None before any.
    pub fn line(feed_dir: &Path) -> Option<String> {
        let t = Tally::read(feed_dir).filter(|t| t.calls > 0)?;
        let s = if t.calls == 1 { "" } else { "s" };
        Some(format!("palace-tool writes redacted {} in {} call{s}", describe(&t.redacted), t.calls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, annotations: Option<Value>) -> ToolInfo {
        ToolInfo { name: name.into(), description: None, input_schema: json!({"type": "object"}), annotations }
    }

    #[test]
    fn which_tools_store_from_annotations_or_the_fallback_list() {
        let annotated = [
            tool("mempalace_search", Some(json!({"readOnlyHint": true}))),
            tool("mempalace_add_drawer", None),
            tool("x_write", Some(json!({"destructiveHint": false}))),
        ];
        assert!(!stores("mempalace_search", &annotated));
        assert!(stores("mempalace_add_drawer", &annotated), "no annotation: readOnlyHint is false");
        assert!(stores("x_write", &annotated) && stores("unknown", &annotated));
        let bare = [tool("mempalace_search", None), tool("mempalace_diary_write", None)];
        assert!(!stores("mempalace_search", &bare) && stores("mempalace_diary_write", &bare));
        assert!(stores("mempalace_kg_add", &[]) && !stores("mempalace_kg_query", &[]));
    }

    #[test]
    fn a_storing_call_s_strings_are_redacted_and_the_model_is_told_kinds_and_counts() {
        let r = Redactor::builtin();
        let token = "ghp_4Fq9ZkT2mX8vR1pL6sW3yN0bC5hJ7dA2eG9u";
        let mut args =
            json!({"wing": "w", "content": format!("deploy token {token}"), "n": 0.1, "meta": {token: [token]}});
        let c = redact_call_arguments(&r, "mempalace_add_drawer", &[], &mut args);
        assert!(!args.to_string().contains(token), "{args}");
        assert_eq!(args["content"], "deploy token [REDACTED:github-pat]");
        assert_eq!(c.get("github-pat"), Some(&3));
        let n = note(&c).unwrap();
        assert!(n.contains("github-pat 3") && !n.contains(token), "{n}");
        // A read-only tool's arguments are left alone (a search for a string is not a write).
        let mut q = json!({"query": token});
        assert!(redact_call_arguments(&r, "mempalace_search", &[], &mut q).is_empty());
        assert_eq!(q["query"], token);
    }

    #[test]
    fn redaction_off_turns_palace_tool_write_redaction_off() {
        let d = tempfile::tempdir().unwrap();
        let agent = d.path().display().to_string();
        let cfg = |redact: &str| {
            let map = std::collections::HashMap::from([
                ("PI_CODING_AGENT_DIR".to_string(), agent.clone()),
                ("MEMPALACE_FEED_REDACT".to_string(), redact.to_string()),
            ]);
            crate::palace::PalaceConfig::from_lookup(&move |k: &str| map.get(k).cloned()).0
        };
        let mut args = json!({"entry": "kept AKIAQ4MBX7NVRT2ZK3PL"});
        assert!(guard_call(&cfg("off"), true, &mut args).is_empty());
        assert_eq!(args["entry"], "kept AKIAQ4MBX7NVRT2ZK3PL");
        assert_eq!(Tally::read(&d.path().join("mempalace-feed")), None);
    }

    #[test]
    fn the_tally_adds_up() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Tally::line(d.path()), None);
        Tally::add(d.path(), &Counts::from([("jwt".to_string(), 2)]));
        Tally::add(d.path(), &Counts::from([("jwt".to_string(), 1), ("aws-access-token".to_string(), 1)]));
        assert_eq!(
            Tally::line(d.path()).unwrap(),
            "palace-tool writes redacted 4 (aws-access-token 1, jwt 3) in 2 calls"
        );
    }
}
