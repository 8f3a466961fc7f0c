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
//!
//! Whatever the bridge does beside them, the model's writes through pi's own tools of these servers
//! are redacted in pi's `tool_call` event, as the bridge's palace-tool writes are
//! (`feed::redact::pi_writes`).

mod mcp_json;

pub(crate) use mcp_json::{find, Unlaunchable};

use crate::mcp::McpConfig;
use std::path::PathBuf;

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
    pub launch: Option<Result<Launch, Unlaunchable>>,
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
/// hidden from `tools/list`, refused with `-32003` before the writer lease is looked at. The
/// variable is a row of the environment table (its value the row's), so `doctor` names it.
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
        twin.env.push((READ_ONLY_ENV.into(), crate::env::default_text(READ_ONLY_ENV).into()));
        twin
    }
}

/// What pi's own MCP does beside the bridge (kept in `PalaceConfig::pi_mcp` for `/mempalace
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
    StepAside(PiMempalace, Aside),
}

/// Why the bridge steps aside for pi's MemPalace server; `Display` is the reason its stderr line
/// gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Aside {
    /// pi's entry is an HTTP server other than the bridge's.
    OtherHttp,
    /// pi's entry is a stdio server while the bridge has a palace of its own over HTTP.
    StdioBesideRemote,
    /// pi's stdio entry can't be started as a twin.
    Unlaunchable(Unlaunchable),
}

impl std::fmt::Display for Aside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Aside::OtherHttp => f.write_str("an HTTP server that is not MEMPALACE_REMOTE_URL's"),
            Aside::StdioBesideRemote => {
                f.write_str("a stdio server, while MEMPALACE_REMOTE_URL names the bridge's palace")
            }
            Aside::Unlaunchable(why) => write!(f, "{why}"),
        }
    }
}

impl Coexistence {
    /// pi's role beside a bridge that keeps running (pi's server shared, or read through a twin).
    pub(crate) fn role(&self) -> Option<PiRole> {
        match self {
            Coexistence::ShareServer(s) => Some(PiRole::Shares { name: s.name.clone(), source: s.source.clone() }),
            Coexistence::ReadOnlyTwin(s, _) => Some(PiRole::Writes { name: s.name.clone(), source: s.source.clone() }),
            Coexistence::Alone | Coexistence::StepAside(..) => None,
        }
    }

    /// The twin's start: the bridge's MCP client runs the read-only twin's command line, env and
    /// cwd instead of its own server (nothing for any other decision).
    pub(crate) fn start_twin(&self, mcp: &mut McpConfig) {
        if let Coexistence::ReadOnlyTwin(_, twin) = self {
            mcp.bin = twin.bin.clone();
            mcp.bin_set = true;
            mcp.args = twin.args.clone();
            mcp.child_env = twin.env.clone();
            mcp.cwd = Some(twin.cwd.clone());
        }
    }

    /// The one stderr line that says the decision (None when alone), the twin shown as `mcp` runs
    /// it. It never holds the twin's env (it may carry secrets).
    pub(crate) fn line(&self, mcp: &McpConfig) -> Option<String> {
        match self {
            Coexistence::Alone => None,
            Coexistence::ShareServer(s) => Some(format!(
                "mempalace: pi's MCP server '{}' ({}) is this palace; its tools come from pi as mcp__{}__*, the bridge keeps the wake-up, diary and feeding",
                s.name,
                s.source.display(),
                tool_prefix(&s.name)
            )),
            Coexistence::ReadOnlyTwin(s, _) => Some(format!(
                "mempalace: pi's MCP server '{}' ({}) writes the palace; the bridge reads it through a read-only twin (`{}`) for the wake-up and recall, offers no palace tools (pi's are mcp__{}__*) and feeds no transcripts",
                s.name,
                s.source.display(),
                mcp.target(),
                tool_prefix(&s.name)
            )),
            Coexistence::StepAside(s, why) => Some(format!(
                "mempalace: pi's MCP runs a MemPalace server '{}' ({}); the bridge steps aside ({why}; one writer per palace, no duplicate tools): no wake-up or feeding. To have them, set \"enabled\": false on that entry, or serve the palace over HTTP and give the entry's url to MEMPALACE_REMOTE_URL",
                s.name,
                s.source.display()
            )),
        }
    }
}

/// The decision for the bridge configured with `remote_url`, given pi's enabled MemPalace servers:
/// the same HTTP server is shared; else the first stdio server the bridge can start a twin of is
/// read through one (the bridge configured for stdio only); else the bridge steps aside.
pub(crate) fn decide(found: &[PiMempalace], remote_url: Option<&str>) -> Coexistence {
    let same = |s: &&PiMempalace| matches!((&s.url, remote_url), (Some(a), Some(b)) if mcp_json::same_url(a, b));
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
        (None, _) => Aside::OtherHttp,
        (Some(_), Some(_)) => Aside::StdioBesideRemote,
        (Some(Err(why)), None) => Aside::Unlaunchable(why.clone()),
        (Some(Ok(_)), None) => unreachable!("a launchable entry makes a twin"),
    };
    Coexistence::StepAside(s.clone(), why)
}

/// The `mcp__<server>__` prefix pi gives the server's tools (characters other than letters, digits
/// and `_` become `_`).
pub(crate) fn tool_prefix(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(s == http && why.to_string().contains("not MEMPALACE_REMOTE_URL's"), "{why}");
        assert_eq!(aside(decide(std::slice::from_ref(&http), None)).0, http);
        // A stdio entry while the bridge has a remote palace of its own, or one it can't launch.
        assert_eq!(aside(decide(std::slice::from_ref(&stdio), Some("http://h:1/mcp"))).1, Aside::StdioBesideRemote);
        let bad = PiMempalace { launch: Some(Err(Unlaunchable::EnvCommand("K".into()))), ..stdio.clone() };
        let why = aside(decide(std::slice::from_ref(&bad), None)).1;
        assert_eq!(why.to_string(), "its env K is a `!command`, which the bridge does not run");
        // The first entry that can have a twin is read, before an HTTP one that can't.
        assert!(matches!(decide(&[http.clone(), stdio.clone()], None), Coexistence::ReadOnlyTwin(s, _) if s == stdio));
    }
}
