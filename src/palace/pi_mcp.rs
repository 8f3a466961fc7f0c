//! pi's own MCP client (pi 1.x) beside the bridge.
//!
//! pi 1.x connects the servers of `<agentDir>/mcp.json` and `<cwd>/.pi/mcp.json` itself and offers
//! their tools as `mcp__<server>__<tool>`. When one of them is a MemPalace server, running the
//! bridge as well would offer the palace's tools twice and start a second server on a palace that
//! takes one writer (MemPalace 3.11 refuses a second process's writes with `-32001 Peer MCP writer
//! active`). pi's hooks have no way to call a tool through pi's own connection, so the bridge can't
//! borrow pi's server for the wake-up and the feed. The decision (README "pi's own MCP"):
//!
//! - pi's entry reaches the same HTTP server as `MEMPALACE_REMOTE_URL`: one server process, two
//!   clients. The bridge keeps the wake-up, `/mempalace-diary` and feeding and offers none of the
//!   palace's tools (pi does).
//! - any other enabled MemPalace entry: the bridge steps aside completely (no server, no tools, no
//!   hooks, one stderr line saying which entry and how to get the bridge back). pi's server is the
//!   one writer; the user's explicit pi configuration wins over the bridge's default.
//!
//! Only the files are read (pi's own rules for them: a project entry replaces the user-level entry
//! of the same name; a project entry without `command`, `url` or `type` only overrides `enabled`).
//! The project file is read whether or not the user trusted the project in pi.

use super::config::BridgeOff;
use super::tool_filter::ToolFilter;
use super::PalaceConfig;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Largest `mcp.json` looked at; a bigger one is not a hand-written MCP configuration.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// One MemPalace server pi's MCP configuration enables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PiMempalace {
    /// The server's name in `mcpServers` (pi's tools are `mcp__<name>__…`).
    pub name: String,
    /// The `mcp.json` that defines it.
    pub source: PathBuf,
    /// Its `url` when it is an HTTP server.
    pub url: Option<String>,
}

/// What the bridge does beside pi's MCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Coexistence {
    /// No enabled MemPalace server in pi's configuration: the bridge works as configured.
    Alone,
    /// pi's server is the bridge's HTTP palace: the bridge keeps its work, pi offers the tools.
    ShareServer(PiMempalace),
    /// pi runs another MemPalace server: the bridge does nothing.
    StepAside(PiMempalace),
}

impl Coexistence {
    /// Applies the decision to `cfg`, returning the one stderr line that says it (None when alone).
    pub(crate) fn apply(&self, cfg: &mut PalaceConfig) -> Option<String> {
        match self {
            Coexistence::Alone => None,
            Coexistence::ShareServer(s) => {
                cfg.tools = ToolFilter::none();
                Some(format!(
                    "mempalace: pi's MCP server '{}' ({}) is this palace; its tools come from pi as mcp__{}__*, the bridge keeps the wake-up, diary and feeding",
                    s.name,
                    s.source.display(),
                    tool_prefix(&s.name)
                ))
            }
            Coexistence::StepAside(s) => {
                cfg.off = Some(BridgeOff::PiMcp { name: s.name.clone(), source: s.source.clone() });
                Some(format!(
                    "mempalace: pi's MCP runs a MemPalace server '{}' ({}); the bridge steps aside (one writer per palace, no duplicate tools): no wake-up or feeding. To have them, set \"enabled\": false on that entry, or serve the palace over HTTP and give the entry's url to MEMPALACE_REMOTE_URL",
                    s.name,
                    s.source.display()
                ))
            }
        }
    }
}

/// The decision for the bridge configured with `remote_url`, given pi's enabled MemPalace servers.
pub(crate) fn decide(found: &[PiMempalace], remote_url: Option<&str>) -> Coexistence {
    let same = |s: &&PiMempalace| matches!((&s.url, remote_url), (Some(a), Some(b)) if same_url(a, b));
    if let Some(s) = found.iter().find(same) {
        return Coexistence::ShareServer(s.clone());
    }
    match found.first() {
        Some(s) => Coexistence::StepAside(s.clone()),
        None => Coexistence::Alone,
    }
}

/// pi's enabled MemPalace servers, from `<agent_dir>/mcp.json` and `<cwd>/.pi/mcp.json`: entries that
/// look like MemPalace, and any entry whose `url` is the bridge's `remote_url` whatever it is named.
/// A file that is missing, unreadable or not JSON counts as empty (pi reports it itself).
pub(crate) fn find(agent_dir: &Path, cwd: Option<&Path>, remote_url: Option<&str>) -> Vec<PiMempalace> {
    let user = agent_dir.join("mcp.json");
    let mut servers = read_servers(&user);
    if let Some(project) = cwd.map(|c| c.join(".pi/mcp.json")).filter(|p| *p != user) {
        for (name, entry) in read_servers(&project) {
            merge(&mut servers, name, entry, &project);
        }
    }
    let ours = |e: &Entry| matches!((e.url(), remote_url), (Some(a), Some(b)) if same_url(&a, b));
    servers
        .into_iter()
        .filter(|(_, e)| e.enabled && (is_mempalace(&e.name_in_file, &e.config) || ours(e)))
        .map(|(name, e)| PiMempalace { url: e.url(), name, source: e.source })
        .collect()
}

struct Entry {
    name_in_file: String,
    config: Map<String, Value>,
    enabled: bool,
    source: PathBuf,
}

impl Entry {
    fn url(&self) -> Option<String> {
        self.config.get("url").and_then(Value::as_str).map(String::from)
    }
}

fn read_servers(path: &Path) -> Vec<(String, Entry)> {
    let text = match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() <= MAX_CONFIG_BYTES => std::fs::read_to_string(path).unwrap_or_default(),
        _ => return Vec::new(),
    };
    let Ok(Value::Object(mut root)) = serde_json::from_str::<Value>(&text) else { return Vec::new() };
    let Some(Value::Object(servers)) = root.remove("mcpServers") else { return Vec::new() };
    servers
        .into_iter()
        .filter_map(|(name, v)| match v {
            Value::Object(config) => {
                let enabled = config.get("enabled") != Some(&Value::Bool(false));
                Some((name.clone(), Entry { name_in_file: name, config, enabled, source: path.to_path_buf() }))
            }
            _ => None,
        })
        .collect()
}

/// pi's rule: a project entry replaces the user-level one of the same name, except one without
/// `command`, `url` or `type`, which only overrides `enabled` (and the exposure, irrelevant here).
fn merge(servers: &mut Vec<(String, Entry)>, name: String, entry: Entry, project: &Path) {
    let override_only = !["command", "url", "type"].iter().any(|k| entry.config.contains_key(*k));
    match servers.iter_mut().find(|(n, _)| same_server_name(n, &name)) {
        Some((_, user)) if override_only => {
            user.enabled = entry.enabled;
            user.source = project.to_path_buf();
        }
        Some(slot) => *slot = (name, entry),
        None if !override_only => servers.push((name, entry)),
        None => {}
    }
}

/// pi counts names that differ only in `-` and `_` as the same server.
fn same_server_name(a: &str, b: &str) -> bool {
    a.replace('-', "_") == b.replace('-', "_")
}

/// The `mcp__<server>__` prefix pi gives the server's tools (characters other than letters, digits
/// and `_` become `_`).
fn tool_prefix(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// Whether an entry launches or reaches MemPalace: its name, its command or one of its arguments
/// mentions `mempalace` (`mempalace-mcp`, `python -m mempalace.mcp_server`, `uvx --from mempalace …`,
/// `/opt/mempalace/bin/…`), or its URL does. A wrapper script whose name, path and arguments don't
/// say `mempalace`, behind a server named otherwise, is not recognised.
fn is_mempalace(name: &str, config: &Map<String, Value>) -> bool {
    let says = |s: &str| s.to_ascii_lowercase().contains("mempalace");
    let strs = |k: &str| -> Vec<&str> {
        match config.get(k) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    };
    says(name) || ["command", "args", "url"].iter().flat_map(|k| strs(k)).any(says)
}

/// Two URLs name the same server: equal once the scheme and host are lower case, the default port
/// and a trailing `/` dropped. Credentials, query and fragment are ignored.
fn same_url(a: &str, b: &str) -> bool {
    fn norm(u: &str) -> Option<String> {
        let u = reqwest::Url::parse(u.trim()).ok()?;
        Some(format!(
            "{}://{}:{}{}",
            u.scheme(),
            u.host_str()?,
            u.port_or_known_default()?,
            u.path().trim_end_matches('/')
        ))
    }
    matches!((norm(a), norm(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let agent = t.path().join("agent");
        let cwd = t.path().join("project");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        (t, agent, cwd)
    }

    fn write(path: &Path, servers: Value) {
        std::fs::write(path, serde_json::json!({ "mcpServers": servers }).to_string()).unwrap();
    }

    #[test]
    fn recognises_the_ways_mempalace_is_launched() {
        let (_t, agent, cwd) = dirs();
        write(
            &agent.join("mcp.json"),
            serde_json::json!({
                "memory": { "command": "mempalace-mcp", "args": ["--palace", "/p"] },
                "pm": { "command": "python3", "args": ["-m", "mempalace.mcp_server"] },
                "uv": { "command": "uvx", "args": ["--from", "MemPalace==3.11.0", "mempalace-mcp"] },
                "wrapped": { "command": "/opt/MemPalace/bin/run" },
                "my-mempalace": { "command": "./start.sh" },
                "served": { "url": "http://127.0.0.1:8765/mcp" },
                "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
                "off": { "command": "mempalace-mcp", "enabled": false },
            }),
        );
        let mut names: Vec<String> = find(&agent, Some(&cwd), None).into_iter().map(|s| s.name).collect();
        names.sort();
        assert_eq!(names, ["memory", "my-mempalace", "pm", "uv", "wrapped"]);
        // An HTTP entry of any name is the bridge's palace when it has the bridge's URL.
        let found = find(&agent, Some(&cwd), Some("http://127.0.0.1:8765/mcp/"));
        assert!(
            found.iter().any(|s| s.name == "served" && s.url.as_deref() == Some("http://127.0.0.1:8765/mcp")),
            "{found:?}"
        );
    }

    #[test]
    fn the_project_file_replaces_or_overrides_like_pi() {
        let (_t, agent, cwd) = dirs();
        write(
            &agent.join("mcp.json"),
            serde_json::json!({ "mempalace": { "command": "mempalace-mcp" }, "other": { "command": "x" } }),
        );
        // An override without command/url/type switches the user-level server off.
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "mempalace": { "enabled": false } }));
        assert!(find(&agent, Some(&cwd), None).is_empty());
        // A full project entry replaces the user-level one of the same name (`-` and `_` alike).
        write(
            &cwd.join(".pi/mcp.json"),
            serde_json::json!({ "other": { "url": "http://h:1/mcp", "description": "mempalace over http" } }),
        );
        let found = find(&agent, Some(&cwd), None);
        assert_eq!(found.len(), 1, "{found:?}");
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "other": { "command": "mempalace-mcp" } }));
        let found = find(&agent, Some(&cwd), None);
        let other = found.iter().find(|s| s.name == "other").unwrap();
        assert_eq!((found.len(), &other.source), (2, &cwd.join(".pi/mcp.json")));
        // A project override of a server the user doesn't have adds nothing.
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "mem-palace": { "enabled": true } }));
        assert_eq!(find(&agent, Some(&cwd), None).len(), 1);
    }

    #[test]
    fn missing_or_broken_files_count_as_empty() {
        let (_t, agent, cwd) = dirs();
        assert!(find(&agent, Some(&cwd), None).is_empty());
        std::fs::write(agent.join("mcp.json"), "{ not json").unwrap();
        std::fs::write(cwd.join(".pi/mcp.json"), r#"{"mcpServers": ["mempalace"]}"#).unwrap();
        assert!(find(&agent, Some(&cwd), None).is_empty());
    }

    #[test]
    fn decides_share_for_the_same_http_server_else_step_aside() {
        let http = PiMempalace {
            name: "palace".into(),
            source: "/a/mcp.json".into(),
            url: Some("HTTP://127.0.0.1:80/mcp/".into()),
        };
        let stdio = PiMempalace { name: "mempalace".into(), source: "/a/mcp.json".into(), url: None };
        assert_eq!(decide(&[], None), Coexistence::Alone);
        assert_eq!(decide(std::slice::from_ref(&stdio), None), Coexistence::StepAside(stdio.clone()));
        assert_eq!(
            decide(&[stdio.clone(), http.clone()], Some("http://127.0.0.1/mcp")),
            Coexistence::ShareServer(http.clone())
        );
        assert_eq!(
            decide(std::slice::from_ref(&http), Some("http://127.0.0.1:8765/mcp")),
            Coexistence::StepAside(http.clone())
        );
        assert_eq!(decide(std::slice::from_ref(&http), None), Coexistence::StepAside(http));
    }

    #[test]
    fn applying_the_decision() {
        let (mut cfg, _) = PalaceConfig::from_lookup(&|_: &str| None);
        let s = PiMempalace { name: "mem-palace".into(), source: "/h/.pi/agent/mcp.json".into(), url: None };
        assert_eq!(Coexistence::Alone.apply(&mut cfg), None);
        let said = Coexistence::ShareServer(s.clone()).apply(&mut cfg).unwrap();
        assert!(cfg.enabled() && !cfg.tools.allows("mempalace_search"), "{said}");
        assert_eq!(cfg.tools.to_string(), "none, pi's own MCP offers them"); // what /mempalace status says
        assert!(said.contains("mcp__mem_palace__*") && said.contains("/h/.pi/agent/mcp.json"), "{said}");
        let said = Coexistence::StepAside(s).apply(&mut cfg).unwrap();
        assert!(!cfg.enabled() && said.contains("steps aside") && said.contains("\"enabled\": false"), "{said}");
    }
}
