//! pi's own MCP configuration as pi 1.6 reads it: `<agentDir>/mcp.json` and `<cwd>/.pi/mcp.json`
//! (a project entry replaces the user-level entry of the same name; one without `command`, `url` or
//! `type` only overrides `enabled`), the MemPalace servers among their entries, and how pi launches
//! a stdio entry (`~`, `$NAME`/`${NAME}`, the cwd), or why the bridge can't ([`Unlaunchable`]).

use super::{Launch, PiMempalace};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Largest `mcp.json` looked at; a bigger one is not a hand-written MCP configuration.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Why the bridge can't start a read-only twin of a stdio entry; `Display` is the reason said on
/// stderr. It names a variable, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unlaunchable {
    /// The entry is in the project's `mcp.json` (this one): the bridge starts no command from it.
    ProjectFile(PathBuf),
    /// The entry (this name) has no `command` string.
    NoCommand(String),
    /// Its `args` are not all strings.
    ArgsNotStrings,
    /// Its `args` are not an array.
    ArgsNotArray,
    /// Its `env` is not an object.
    EnvNotObject,
    /// Its env value of this variable is not a string.
    EnvNotString(String),
    /// Its env value of this variable is a `!command` (pi runs it in a shell; the bridge doesn't).
    EnvCommand(String),
    /// Its env value of `key` names `$name`, which is not set (pi can't start it either).
    EnvUnset { key: String, name: String },
    /// Its `cwd` is not a string.
    CwdNotString,
}

impl std::fmt::Display for Unlaunchable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unlaunchable::ProjectFile(p) => write!(
                f,
                "a stdio server of the project's {}: the bridge starts no command from a project's file",
                p.display()
            ),
            Unlaunchable::NoCommand(name) => write!(f, "'{name}' has no command string"),
            Unlaunchable::ArgsNotStrings => f.write_str("its args are not strings"),
            Unlaunchable::ArgsNotArray => f.write_str("its args are not an array of strings"),
            Unlaunchable::EnvNotObject => f.write_str("its env is not an object"),
            Unlaunchable::EnvNotString(k) => write!(f, "its env {k} is not a string"),
            Unlaunchable::EnvCommand(k) => write!(f, "its env {k} is a `!command`, which the bridge does not run"),
            Unlaunchable::EnvUnset { key, name } => write!(f, "its env {key} names ${name}, which is not set"),
            Unlaunchable::CwdNotString => f.write_str("its cwd is not a string"),
        }
    }
}

impl std::error::Error for Unlaunchable {}

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
                    Err(Unlaunchable::ProjectFile(e.source.clone()))
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
) -> Result<Launch, Unlaunchable> {
    let home = env("HOME").filter(|h| !h.is_empty());
    let tilde = |v: &str| expand_tilde(v, home.as_deref());
    let bin = config
        .get("command")
        .and_then(Value::as_str)
        .map(tilde)
        .ok_or_else(|| Unlaunchable::NoCommand(name.to_string()))?;
    let args = match config.get("args") {
        None => Vec::new(),
        Some(Value::Array(a)) => {
            a.iter().map(|v| v.as_str().map(tilde)).collect::<Option<Vec<_>>>().ok_or(Unlaunchable::ArgsNotStrings)?
        }
        Some(_) => return Err(Unlaunchable::ArgsNotArray),
    };
    let mut vars = Vec::new();
    match config.get("env") {
        None => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = v.as_str().ok_or_else(|| Unlaunchable::EnvNotString(k.clone()))?;
                vars.push((k.clone(), resolve_value(k, v, env)?));
            }
        }
        Some(_) => return Err(Unlaunchable::EnvNotObject),
    }
    let base = cwd.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let dir = match config.get("cwd") {
        None => base,
        Some(Value::String(c)) => base.join(tilde(c)),
        Some(_) => return Err(Unlaunchable::CwdNotString),
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
fn resolve_value(key: &str, v: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, Unlaunchable> {
    if v.starts_with('!') {
        return Err(Unlaunchable::EnvCommand(key.to_string()));
    }
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let lookup = |n: &str| {
        env(n)
            .filter(|x| !x.is_empty())
            .ok_or_else(|| Unlaunchable::EnvUnset { key: key.to_string(), name: n.to_string() })
    };
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
pub(super) fn same_url(a: &str, b: &str) -> bool {
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
        assert_eq!(launch("bad").unwrap_err(), Unlaunchable::EnvCommand("K".into()));
        let unset = launch("unset").unwrap_err().to_string();
        assert_eq!(unset, "its env K names $NOT_SET, which is not set");
        // A project file's stdio entry: pi runs it only in a trusted project; the bridge never.
        write(&cwd.join(".pi/mcp.json"), serde_json::json!({ "mempalace": { "command": "mempalace-mcp" } }));
        let found = find(&agent, Some(&cwd), None, &env);
        let why = found.iter().find(|s| s.name == "mempalace").unwrap().launch.clone().unwrap().unwrap_err();
        assert!(why.to_string().contains("starts no command from a project's file"), "{why}");
    }
}
