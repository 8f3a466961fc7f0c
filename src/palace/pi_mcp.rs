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
//! - a stdio entry of pi's user-level `mcp.json`, the bridge being configured for stdio: the bridge
//!   starts a read-only twin of it (the entry's own command and arguments plus `--read-only`, with
//!   `MEMPALACE_MCP_READ_ONLY=1`, the entry's env and cwd resolved as pi resolves them). MemPalace
//!   3.11's read-only server hides the mutating tools, refuses them with `-32003` before any
//!   writer-lease check and so never takes the palace lock: pi's server stays the one writer. The
//!   twin serves the wake-up and recall; the bridge offers no palace tools (pi does), feeds no
//!   transcripts (a read-only server can't mine) and `/mempalace-diary` names pi's own tool.
//! - any other enabled MemPalace entry (another HTTP server, a project file's stdio entry, an env
//!   value the bridge can't resolve): the bridge steps aside completely (no server, no tools, no
//!   hooks, one stderr line saying which entry, why, and how to get the bridge back).
//!
//! Only the files are read (pi's own rules for them: a project entry replaces the user-level entry
//! of the same name; a project entry without `command`, `url` or `type` only overrides `enabled`).
//! The project file is read whether or not the user trusted the project in pi.

use super::config::BridgeOff;
use super::offer::tool_filter::ToolFilter;
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
    /// How pi starts it when it is a stdio server (None: an HTTP server), or why the bridge can't
    /// start a read-only twin of it.
    pub launch: Option<Result<Launch, String>>,
}

/// A stdio server's command line, environment and working directory, resolved the way pi 1.6
/// resolves them (`~` in the command, arguments and cwd; `$NAME`/`${NAME}` in env values; the cwd
/// relative to pi's). `Debug` shows the env's names, never its values (they may be secrets).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    pub bin: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("bin", &self.bin)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// The argument and the variable (MemPalace 3.11) that make a server read-only: the mutating tools
/// hidden from `tools/list`, refused with `-32003` before the writer lease is looked at.
pub(crate) const READ_ONLY_ARG: &str = "--read-only";
pub(crate) const READ_ONLY_ENV: &str = "MEMPALACE_MCP_READ_ONLY";

impl Launch {
    /// The read-only twin of this server: the same command, `--read-only` appended (once) and
    /// `MEMPALACE_MCP_READ_ONLY=1` added to its env.
    pub(crate) fn read_only(&self) -> Launch {
        let mut twin = self.clone();
        if !twin.args.iter().any(|a| a == READ_ONLY_ARG) {
            twin.args.push(READ_ONLY_ARG.into());
        }
        twin.env.retain(|(k, _)| k != READ_ONLY_ENV);
        twin.env.push((READ_ONLY_ENV.into(), "1".into()));
        twin
    }
}

/// What pi's own MCP does beside the bridge (kept in [`PalaceConfig::pi_mcp`] for `/mempalace
/// status`, `doctor`, the feed and `/mempalace-diary`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PiRole {
    /// pi's entry `name` (of `source`) is the bridge's own HTTP server: both use it.
    Shares { name: String, source: PathBuf },
    /// pi's stdio entry `name` (of `source`) writes the palace; the bridge reads it through a
    /// read-only twin.
    Writes { name: String, source: PathBuf },
}

impl PiRole {
    /// pi's name for one of the palace's tools (pi 1.6: `mcp__<server>__<tool>`, characters
    /// other than letters, digits and `_` as `_`).
    pub(crate) fn tool(&self, tool: &str) -> String {
        let (PiRole::Shares { name, .. } | PiRole::Writes { name, .. }) = self;
        format!("mcp__{}__{tool}", tool_prefix(name))
    }

    /// Which server does what, for `/mempalace status` and `doctor`.
    pub(crate) fn line(&self) -> String {
        match self {
            PiRole::Shares { name, source } => format!(
                "pi's own MCP (mcp.json entry \"{name}\", {}) and this bridge use the same server: pi offers its tools, the bridge wakes the model up, recalls and feeds",
                source.display()
            ),
            PiRole::Writes { name, source } => format!(
                "pi's own MCP (mcp.json entry \"{name}\", {}) writes; this bridge reads through a read-only twin (wake-up, recall), offers no palace tools and feeds nothing",
                source.display()
            ),
        }
    }
}

/// What the bridge does beside pi's MCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Coexistence {
    /// No enabled MemPalace server in pi's configuration: the bridge works as configured.
    Alone,
    /// pi's server is the bridge's HTTP palace: the bridge keeps its work, pi offers the tools.
    ShareServer(PiMempalace),
    /// pi runs a stdio MemPalace server: the bridge reads the palace through this read-only twin
    /// of it (wake-up, recall); no palace tools, no feeding.
    ReadOnlyTwin(PiMempalace, Launch),
    /// pi runs another MemPalace server the bridge can't read beside it, and why: the bridge does
    /// nothing.
    StepAside(PiMempalace, String),
}

impl Coexistence {
    /// Applies the decision to `cfg` and `mcp`, returning the one stderr line that says it (None
    /// when alone). The line never holds the twin's env (it may carry secrets).
    pub(crate) fn apply(&self, cfg: &mut PalaceConfig, mcp: &mut crate::mcp::McpConfig) -> Option<String> {
        match self {
            Coexistence::Alone => None,
            Coexistence::ShareServer(s) => {
                cfg.tools = ToolFilter::none();
                cfg.pi_mcp = Some(PiRole::Shares { name: s.name.clone(), source: s.source.clone() });
                Some(format!(
                    "mempalace: pi's MCP server '{}' ({}) is this palace; its tools come from pi as mcp__{}__*, the bridge keeps the wake-up, diary and feeding",
                    s.name,
                    s.source.display(),
                    tool_prefix(&s.name)
                ))
            }
            Coexistence::ReadOnlyTwin(s, twin) => {
                cfg.tools = ToolFilter::none();
                cfg.pi_mcp = Some(PiRole::Writes { name: s.name.clone(), source: s.source.clone() });
                mcp.bin = twin.bin.clone();
                mcp.bin_set = true;
                mcp.args = twin.args.clone();
                mcp.child_env = twin.env.clone();
                mcp.cwd = Some(twin.cwd.clone());
                Some(format!(
                    "mempalace: pi's MCP server '{}' ({}) writes the palace; the bridge reads it through a read-only twin (`{}`) for the wake-up and recall, offers no palace tools (pi's are mcp__{}__*) and feeds no transcripts",
                    s.name,
                    s.source.display(),
                    mcp.target(),
                    tool_prefix(&s.name)
                ))
            }
            Coexistence::StepAside(s, why) => {
                cfg.off = Some(BridgeOff::PiMcp { name: s.name.clone(), source: s.source.clone() });
                Some(format!(
                    "mempalace: pi's MCP runs a MemPalace server '{}' ({}); the bridge steps aside ({why}; one writer per palace, no duplicate tools): no wake-up or feeding. To have them, set \"enabled\": false on that entry, or serve the palace over HTTP and give the entry's url to MEMPALACE_REMOTE_URL",
                    s.name,
                    s.source.display()
                ))
            }
        }
    }
}

/// The decision for the bridge configured with `remote_url`, given pi's enabled MemPalace servers:
/// the same HTTP server is shared; else the first stdio server the bridge can start a twin of is
/// read through one (the bridge configured for stdio only); else the bridge steps aside.
pub(crate) fn decide(found: &[PiMempalace], remote_url: Option<&str>) -> Coexistence {
    let same = |s: &&PiMempalace| matches!((&s.url, remote_url), (Some(a), Some(b)) if same_url(a, b));
    if let Some(s) = found.iter().find(same) {
        return Coexistence::ShareServer(s.clone());
    }
    if remote_url.is_none() {
        if let Some((s, Some(Ok(launch)))) =
            found.iter().map(|s| (s, &s.launch)).find(|(_, l)| matches!(l, Some(Ok(_))))
        {
            return Coexistence::ReadOnlyTwin(s.clone(), launch.read_only());
        }
    }
    let Some(s) = found.first() else { return Coexistence::Alone };
    let why = match (&s.launch, remote_url) {
        (None, _) => "an HTTP server that is not MEMPALACE_REMOTE_URL's".to_string(),
        (Some(_), Some(_)) => "a stdio server, while MEMPALACE_REMOTE_URL names the bridge's palace".to_string(),
        (Some(Err(why)), None) => why.clone(),
        (Some(Ok(_)), None) => unreachable!("a launchable entry makes a twin"),
    };
    Coexistence::StepAside(s.clone(), why)
}

/// pi's enabled MemPalace servers, from `<agent_dir>/mcp.json` and `<cwd>/.pi/mcp.json`: entries that
/// look like MemPalace, and any entry whose `url` is the bridge's `remote_url` whatever it is named.
/// A file that is missing, unreadable or not JSON counts as empty (pi reports it itself). `env`
/// resolves the `$NAME`s of stdio entries' env values; `home` is `~`.
pub(crate) fn find(
    agent_dir: &Path,
    cwd: Option<&Path>,
    remote_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PiMempalace> {
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
        .map(|(name, e)| {
            let launch = e.config.contains_key("command").then(|| {
                if e.source != user {
                    Err(format!(
                        "a stdio server of the project's {}: the bridge starts no command from a project's file",
                        e.source.display()
                    ))
                } else {
                    launch_of(&name, &e.config, cwd, env)
                }
            });
            PiMempalace { url: e.url(), name, source: e.source, launch }
        })
        .collect()
}

/// A stdio entry's launch as pi 1.6 resolves it (`createDefaultTransport`), or why the bridge
/// can't: a `!command` env value (the bridge runs no shell commands from pi's configuration), a
/// `$NAME` that is not set (pi can't start it either).
fn launch_of(
    name: &str,
    config: &Map<String, Value>,
    cwd: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Launch, String> {
    let home = env("HOME").filter(|h| !h.is_empty());
    let tilde = |v: &str| expand_tilde(v, home.as_deref());
    let bin = config
        .get("command")
        .and_then(Value::as_str)
        .map(tilde)
        .ok_or_else(|| format!("'{name}' has no command string"))?;
    let args = match config.get("args") {
        None => Vec::new(),
        Some(Value::Array(a)) => {
            a.iter().map(|v| v.as_str().map(tilde)).collect::<Option<Vec<_>>>().ok_or("its args are not strings")?
        }
        Some(_) => return Err("its args are not an array of strings".into()),
    };
    let mut vars = Vec::new();
    match config.get("env") {
        None => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = v.as_str().ok_or_else(|| format!("its env {k} is not a string"))?;
                vars.push((k.clone(), resolve_value(k, v, env)?));
            }
        }
        Some(_) => return Err("its env is not an object".into()),
    }
    let base = cwd.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let dir = match config.get("cwd") {
        None => base,
        Some(Value::String(c)) => base.join(tilde(c)),
        Some(_) => return Err("its cwd is not a string".into()),
    };
    Ok(Launch { bin, args, env: vars, cwd: dir })
}

/// `~` and `~/…` as the home directory, like pi.
fn expand_tilde(v: &str, home: Option<&str>) -> String {
    match (v, home) {
        ("~", Some(h)) => h.to_string(),
        (v, Some(h)) if v.starts_with("~/") => format!("{}/{}", h.trim_end_matches('/'), &v[2..]),
        (v, _) => v.to_string(),
    }
}

/// One env value as pi resolves it: `$NAME` and `${NAME}` from the environment (unset or empty:
/// pi can't start the server), `$$` and `$!` as `$` and `!`. A value starting with `!` is a
/// shell command to pi; the bridge runs none. Errors name the variable, never its value.
fn resolve_value(key: &str, v: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    if v.starts_with('!') {
        return Err(format!("its env {key} is a `!command`, which the bridge does not run"));
    }
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let lookup =
        |n: &str| env(n).filter(|x| !x.is_empty()).ok_or_else(|| format!("its env {key} names ${n}, which is not set"));
    let (mut out, mut rest) = (String::new(), v);
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.chars().next() {
            Some(c @ ('$' | '!')) => {
                out.push(c);
                rest = &after[1..];
            }
            Some('{') => match after.find('}') {
                Some(end) if after[1..end].starts_with(is_start) && after[1..end].chars().all(is_name) => {
                    out.push_str(&lookup(&after[1..end])?);
                    rest = &after[end + 1..];
                }
                Some(end) => {
                    out.push_str(&rest[i..i + 1 + end + 1]);
                    rest = &after[end + 1..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            },
            Some(c) if is_start(c) => {
                let end = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
                out.push_str(&lookup(&after[..end])?);
                rest = &after[end..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
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

    fn no_env(_: &str) -> Option<String> {
        None
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
        let mut names: Vec<String> = find(&agent, Some(&cwd), None, &no_env).into_iter().map(|s| s.name).collect();
        names.sort();
        assert_eq!(names, ["memory", "my-mempalace", "pm", "uv", "wrapped"]);
        // An HTTP entry of any name is the bridge's palace when it has the bridge's URL.
        let found = find(&agent, Some(&cwd), Some("http://127.0.0.1:8765/mcp/"), &no_env);
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
        assert!(find(&agent, Some(&cwd), None, &no_env).is_empty());
        // A full project entry replaces the user-level one of the same name (`-` and `_` alike).
        write(
            &cwd.join(".pi/mcp.json"),
            serde_json::json!({ "other": { "url": "http://h:1/mcp", "description": "mempalace over http" } }),
        );
        let found = find(&agent, Some(&cwd), None, &no_env);
        assert_eq!(found.len(), 1, "{found:?}");
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "other": { "command": "mempalace-mcp" } }));
        let found = find(&agent, Some(&cwd), None, &no_env);
        let other = found.iter().find(|s| s.name == "other").unwrap();
        assert_eq!((found.len(), &other.source), (2, &cwd.join(".pi/mcp.json")));
        // A project override of a server the user doesn't have adds nothing.
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "mem-palace": { "enabled": true } }));
        assert_eq!(find(&agent, Some(&cwd), None, &no_env).len(), 1);
    }

    #[test]
    fn missing_or_broken_files_count_as_empty() {
        let (_t, agent, cwd) = dirs();
        assert!(find(&agent, Some(&cwd), None, &no_env).is_empty());
        std::fs::write(agent.join("mcp.json"), "{ not json").unwrap();
        std::fs::write(cwd.join(".pi/mcp.json"), r#"{"mcpServers": ["mempalace"]}"#).unwrap();
        assert!(find(&agent, Some(&cwd), None, &no_env).is_empty());
    }

    #[test]
    fn decides_share_for_the_same_http_server_a_twin_for_stdio_else_step_aside() {
        let http = PiMempalace {
            name: "palace".into(),
            source: "/a/mcp.json".into(),
            url: Some("HTTP://127.0.0.1:80/mcp/".into()),
            launch: None,
        };
        let launch = Launch {
            bin: "mempalace-mcp".into(),
            args: vec!["--palace".into(), "/p".into()],
            env: vec![("MEMPALACE_API_KEY".into(), "s3cret".into())],
            cwd: "/work".into(),
        };
        let stdio =
            PiMempalace { name: "mempalace".into(), source: "/a/mcp.json".into(), url: None, launch: Some(Ok(launch)) };
        assert_eq!(decide(&[], None), Coexistence::Alone);
        // A stdio entry: a read-only twin of it, `--read-only` appended, its env and cwd carried.
        let Coexistence::ReadOnlyTwin(s, twin) = decide(std::slice::from_ref(&stdio), None) else { panic!() };
        assert_eq!(s, stdio);
        assert_eq!(twin.bin, "mempalace-mcp");
        assert_eq!(twin.args, ["--palace", "/p", "--read-only"]);
        assert_eq!(
            twin.env,
            [("MEMPALACE_API_KEY".to_string(), "s3cret".to_string()), ("MEMPALACE_MCP_READ_ONLY".into(), "1".into())]
        );
        assert_eq!(twin.cwd, PathBuf::from("/work"));
        assert_eq!(twin.read_only(), twin, "--read-only is appended once");
        assert!(!format!("{twin:?}").contains("s3cret"), "Debug never shows env values");
        // The HTTP entry of the bridge's own server is shared, whatever else pi runs.
        assert_eq!(
            decide(&[stdio.clone(), http.clone()], Some("http://127.0.0.1/mcp")),
            Coexistence::ShareServer(http.clone())
        );
        // Another HTTP server: step aside, saying why.
        let aside = |c: Coexistence| match c {
            Coexistence::StepAside(s, why) => (s, why),
            other => panic!("{other:?}"),
        };
        let (s, why) = aside(decide(std::slice::from_ref(&http), Some("http://127.0.0.1:8765/mcp")));
        assert!(s == http && why.contains("not MEMPALACE_REMOTE_URL's"), "{why}");
        assert_eq!(aside(decide(std::slice::from_ref(&http), None)).0, http);
        // A stdio entry while the bridge has a remote palace of its own, or one it can't launch.
        assert!(aside(decide(std::slice::from_ref(&stdio), Some("http://h:1/mcp"))).1.contains("MEMPALACE_REMOTE_URL"));
        let bad = PiMempalace { launch: Some(Err("its env K is a `!command`".into())), ..stdio.clone() };
        assert_eq!(aside(decide(std::slice::from_ref(&bad), None)).1, "its env K is a `!command`");
        // The first entry that can have a twin is read, before an HTTP one that can't.
        assert!(matches!(decide(&[http.clone(), stdio.clone()], None), Coexistence::ReadOnlyTwin(s, _) if s == stdio));
    }

    #[test]
    fn a_stdio_entry_s_launch_is_resolved_like_pi() {
        let (_t, agent, cwd) = dirs();
        write(
            &agent.join("mcp.json"),
            serde_json::json!({
                "mempalace": {
                    "command": "~/bin/mempalace-mcp",
                    "args": ["--palace", "~/palace"],
                    "env": { "TOKEN": "Bearer ${SECRET}", "PLAIN": "a$$b$!c", "ODD": "${1x}" },
                    "cwd": "sub",
                },
                "bad": { "command": "mempalace-mcp", "env": { "K": "!pass show palace" } },
                "unset": { "command": "mempalace-mcp", "env": { "K": "$NOT_SET" } },
            }),
        );
        let env = |k: &str| match k {
            "HOME" => Some("/home/u".to_string()),
            "SECRET" => Some("xyz".to_string()),
            _ => None,
        };
        let found = find(&agent, Some(&cwd), None, &env);
        let launch = |n: &str| found.iter().find(|s| s.name == n).unwrap().launch.clone().unwrap();
        let l = launch("mempalace").unwrap();
        assert_eq!(l.bin, "/home/u/bin/mempalace-mcp");
        assert_eq!(l.args, ["--palace", "/home/u/palace"]);
        let mut vars = l.env.clone();
        vars.sort();
        let want: Vec<(String, String)> = [("ODD", "${1x}"), ("PLAIN", "a$b!c"), ("TOKEN", "Bearer xyz")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(vars, want);
        assert_eq!(l.cwd, cwd.join("sub"));
        assert!(launch("bad").unwrap_err().contains("`!command`"));
        let unset = launch("unset").unwrap_err();
        assert!(unset.contains("$NOT_SET") && unset.contains("not set"), "{unset}");
        // A project file's stdio entry: pi runs it only in a trusted project; the bridge never.
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "mempalace": { "command": "mempalace-mcp" } }));
        let found = find(&agent, Some(&cwd), None, &env);
        let why = found.iter().find(|s| s.name == "mempalace").unwrap().launch.clone().unwrap().unwrap_err();
        assert!(why.contains("starts no command from a project's file"), "{why}");
    }

    #[test]
    fn applying_the_decision() {
        let (mut cfg, _) = PalaceConfig::from_lookup(&|_: &str| None);
        let mut mcp = crate::mcp::McpConfig::default();
        let s =
            PiMempalace { name: "mem-palace".into(), source: "/h/.pi/agent/mcp.json".into(), url: None, launch: None };
        assert_eq!(Coexistence::Alone.apply(&mut cfg, &mut mcp), None);
        let said = Coexistence::ShareServer(s.clone()).apply(&mut cfg, &mut mcp).unwrap();
        assert!(cfg.enabled() && !cfg.tools.allows("mempalace_search"), "{said}");
        assert_eq!(cfg.tools.to_string(), "none, pi's own MCP offers them"); // what /mempalace status says
        assert!(said.contains("mcp__mem_palace__*") && said.contains("/h/.pi/agent/mcp.json"), "{said}");
        assert!(matches!(&cfg.pi_mcp, Some(PiRole::Shares { name, .. }) if name == "mem-palace"));
        // The twin: the bridge's server becomes pi's command with --read-only, its env and cwd.
        let (mut cfg, _) = PalaceConfig::from_lookup(&|_: &str| None);
        let launch = Launch {
            bin: "bash".into(),
            args: vec!["start.sh".into()],
            env: vec![("API_KEY".into(), "s3cret".into())],
            cwd: "/srv".into(),
        };
        let twin = Coexistence::ReadOnlyTwin(s.clone(), launch.read_only());
        let said = twin.apply(&mut cfg, &mut mcp).unwrap();
        assert!(cfg.enabled() && !cfg.tools.allows("mempalace_search"));
        assert_eq!(
            (mcp.bin.as_str(), mcp.args.as_slice(), mcp.bin_set),
            ("bash", &["start.sh".to_string(), "--read-only".into()][..], true)
        );
        assert_eq!(
            mcp.child_env,
            [("API_KEY".to_string(), "s3cret".to_string()), ("MEMPALACE_MCP_READ_ONLY".into(), "1".into())]
        );
        assert_eq!(mcp.cwd, Some(PathBuf::from("/srv")));
        assert!(said.contains("read-only twin (`bash start.sh --read-only`)") && !said.contains("s3cret"), "{said}");
        let role = cfg.pi_mcp.clone().unwrap();
        assert_eq!(role.tool("mempalace_diary_write"), "mcp__mem_palace__mempalace_diary_write");
        assert!(role.line().starts_with("pi's own MCP (mcp.json entry \"mem-palace\", /h/.pi/agent/mcp.json) writes; this bridge reads through a read-only twin (wake-up, recall)"), "{}", role.line());
        assert_eq!(
            crate::palace::feed::SkipReason::of_config(&cfg),
            Some(crate::palace::feed::SkipReason::PiMcpWrites)
        );
        let said = Coexistence::StepAside(s, "an HTTP server".into()).apply(&mut cfg, &mut mcp).unwrap();
        assert!(
            !cfg.enabled() && said.contains("steps aside (an HTTP server;") && said.contains("\"enabled\": false"),
            "{said}"
        );
    }
}
