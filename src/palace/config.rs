//! The bridge's environment → [`PalaceConfig`]. Names and defaults are part of the interface
//! (docs/mempalace-bridge.md) and listed in [`crate::env::VARIABLES`]. A malformed number is
//! reported as a warning and the default is used.

use super::offer::tool_filter::ToolFilter;
use super::twin::{Coexistence, PiRole};
use crate::env::EnvReader;
use crate::mcp::McpConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Configuration of the MemPalace bridge's palace logic.
#[derive(Debug, Clone, PartialEq)]
pub struct PalaceConfig {
    /// Why the bridge is off (`None`: it is on): `MEMPALACE_BRIDGE=0`, or pi's own MCP runs
    /// MemPalace ([`crate::config::Config::effective`]).
    pub off: Option<BridgeOff>,
    /// `MEMPALACE_AGENT_NAME`, default `pi`.
    pub agent_name: String,
    /// `MEMPALACE_FEED` (on unless `0`).
    pub feed: bool,
    /// `MEMPALACE_FEED_BIN`, default `mempalace-pi-session`; used when it resolves on `PATH`
    /// (or is a path to an executable).
    pub feed_bin: String,
    /// `MEMPALACE_FEED_WING`, default `wing_conversations`.
    pub feed_wing: String,
    /// `MEMPALACE_CHECKPOINT_TURNS` (0: off): a diary checkpoint every N user turns.
    pub checkpoint_turns: usize,
    /// `MEMPALACE_SCOPE`: one wing for every session (default) or a wing per project.
    pub scope: super::scope::Scope,
    /// `MEMPALACE_FEED_DEBOUNCE_MS`, default 600000 (`0` = no debounce).
    pub feed_debounce: Duration,
    /// `MEMPALACE_FEED_PREPARE_TIMEOUT_MS`, default 120000 (must be > 0).
    pub prepare_timeout: Duration,
    /// `MEMPALACE_FEED_MINE_TIMEOUT_MS`, default 30000 (must be > 0).
    pub mine_timeout: Duration,
    /// `MEMPALACE_FEED_REDACT`: redaction of the staged transcripts (on by default).
    pub redact: Redact,
    /// `MEMPALACE_PI_SSH_TARGET` (remote feeding is skipped without it).
    pub ssh_target: Option<String>,
    /// `MEMPALACE_PI_SSH_CONFIG`.
    pub ssh_config: Option<PathBuf>,
    /// `MEMPALACE_PI_REMOTE_PATH`, default `~/.mempalace/inbox/pi-sessions`: the inbox on the
    /// palace host that staged sessions are rsynced into and mined from. A leading `~/` is the
    /// remote user's home (rsync gets the path relative to it; the MemPalace server expands `~`).
    pub remote_path: String,
    /// `HOME` (the home directory's sessions go to the workstation wing under project scope).
    pub home: Option<PathBuf>,
    /// `PI_CODING_AGENT_DIR`, default `$HOME/.pi/agent`.
    pub agent_dir: PathBuf,
    /// True when `MEMPALACE_REMOTE_URL` is set (the palace is on another machine).
    pub remote: bool,
    /// `PATH` as seen at load, for resolving `feed_bin`.
    pub search_path: Option<String>,
    /// `MEMPALACE_TOOLS`: the palace tools pi is offered (default: all).
    pub tools: super::offer::tool_filter::ToolFilter,
    /// `MEMPALACE_EXPOSURE` and `MEMPALACE_DIRECT_TOOLS`: how the tools pi is offered reach the model.
    pub exposure: super::offer::exposure::ExposureConfig,
    /// `MEMPALACE_RECALL*`: per-prompt recall (off by default).
    pub recall: super::context::recall::RecallConfig,
    /// What pi's own MCP does beside the bridge, when it runs this palace too
    /// ([`crate::config::Config::effective`]; None: nothing).
    pub pi_mcp: Option<PiRole>,
}

/// `MEMPALACE_EXPOSURE` (an unknown value is a warning and the default) and `MEMPALACE_DIRECT_TOOLS`.
fn read_exposure(r: &EnvReader<'_>) -> super::offer::exposure::ExposureConfig {
    use super::offer::exposure::Exposure;
    let asked = r.text("MEMPALACE_EXPOSURE").and_then(|raw| {
        let e = Exposure::parse(&raw);
        if e.is_none() {
            r.warn(format!("MEMPALACE_EXPOSURE={raw:?} is not codemode, deferred or direct; using the default"));
        }
        e
    });
    let direct_tools =
        super::offer::tool_filter::ToolFilter::parse_listed(r.patterns("MEMPALACE_DIRECT_TOOLS").as_deref());
    if direct_tools.is_listed() {
        r.shown("MEMPALACE_DIRECT_TOOLS", direct_tools.to_string());
    }
    super::offer::exposure::ExposureConfig { asked, direct_tools }
}

/// `MEMPALACE_FEED_REDACT`: unset = on with the built-in rules; a path = on, plus that file's
/// patterns; `off` = no redaction (unsafe for a shared palace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redact {
    Off,
    On { patterns: Option<PathBuf> },
}

impl std::fmt::Display for Redact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Redact::Off => f.write_str("off (MEMPALACE_FEED_REDACT=off: transcripts are fed unredacted)"),
            Redact::On { patterns: None } => f.write_str("on (built-in rules)"),
            Redact::On { patterns: Some(p) } => write!(f, "on (built-in rules + {})", p.display()),
        }
    }
}

/// Why the bridge is off; `Display` is the reason the messages give in parentheses.
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeOff {
    /// `MEMPALACE_BRIDGE=0`.
    Switch,
    /// pi's own MCP runs a MemPalace server (`name`, defined in `source`): the bridge steps aside.
    PiMcp { name: String, source: PathBuf },
}

impl std::fmt::Display for BridgeOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BridgeOff::Switch => f.write_str("MEMPALACE_BRIDGE=0"),
            BridgeOff::PiMcp { name, source } => {
                write!(f, "pi's MCP runs the MemPalace server '{name}' of {}", source.display())
            }
        }
    }
}

impl PalaceConfig {
    /// The palace configuration alone from `get`, with its warnings (the tests; pi reads
    /// [`crate::config::Config`]).
    #[cfg(test)]
    pub fn from_lookup<F: Fn(&str) -> Option<String>>(get: &F) -> (Self, Vec<String>) {
        let r = EnvReader::new(get);
        let cfg = Self::read(&r);
        (cfg, r.finish().0)
    }

    /// Reads the palace logic's variables, adding a warning per malformed value to `r`.
    pub fn read(r: &EnvReader<'_>) -> Self {
        let feed_debounce = r.millis("MEMPALACE_FEED_DEBOUNCE_MS", true);
        let prepare_timeout = r.millis("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", false);
        let mine_timeout = r.millis("MEMPALACE_FEED_MINE_TIMEOUT_MS", false);
        let home = || r.process("HOME").map(|h| h.trim().to_string()).filter(|h| !h.is_empty());
        let expanded = |name: &str| {
            r.path(name).map(|p| {
                let p = expand_home(&p, home().as_deref());
                r.shown(name, p.clone());
                PathBuf::from(p)
            })
        };
        let redact = match expanded("MEMPALACE_FEED_REDACT") {
            Some(p) if p.as_os_str().eq_ignore_ascii_case("off") => Redact::Off,
            patterns => Redact::On { patterns },
        };
        let agent_dir = expanded("PI_CODING_AGENT_DIR").unwrap_or_else(|| PathBuf::from(r.home()).join(".pi/agent"));
        // A target starting with `-` would reach rsync/ssh as an option: refused here, once.
        let ssh_target = r.text("MEMPALACE_PI_SSH_TARGET");
        let ssh_refused = ssh_target.as_deref().and_then(refused_ssh_target);
        let tools = super::offer::tool_filter::ToolFilter::parse(r.patterns("MEMPALACE_TOOLS").as_deref());
        if !tools.is_all() {
            r.shown("MEMPALACE_TOOLS", tools.to_string());
        }
        let exposure = read_exposure(r);
        let scope = r.text("MEMPALACE_SCOPE").map_or(super::scope::Scope::Global, |raw| {
            super::scope::Scope::parse(&raw).unwrap_or_else(|| {
                r.warn(format!("MEMPALACE_SCOPE={raw:?} is not global or project; using global"));
                super::scope::Scope::Global
            })
        });
        let cfg = PalaceConfig {
            off: (!r.switch("MEMPALACE_BRIDGE")).then_some(BridgeOff::Switch),
            agent_name: r.text_or_default("MEMPALACE_AGENT_NAME"),
            feed: r.switch("MEMPALACE_FEED"),
            feed_bin: r.text_or_default("MEMPALACE_FEED_BIN"),
            feed_wing: r.text_or_default("MEMPALACE_FEED_WING"),
            scope,
            checkpoint_turns: r.number("MEMPALACE_CHECKPOINT_TURNS", |_: &usize| true, "a whole number"),
            feed_debounce,
            prepare_timeout,
            mine_timeout,
            redact,
            ssh_target: ssh_target.filter(|_| ssh_refused.is_none()),
            ssh_config: expanded("MEMPALACE_PI_SSH_CONFIG"),
            remote_path: r.text_or_default("MEMPALACE_PI_REMOTE_PATH"),
            home: home().map(PathBuf::from),
            agent_dir,
            // `MEMPALACE_REMOTE_URL` is the MCP client's to read and check (`mcp::config`).
            remote: r.is_set("MEMPALACE_REMOTE_URL"),
            search_path: r.process("PATH"),
            tools,
            exposure,
            recall: super::context::recall::RecallConfig::read(r),
            pi_mcp: None,
        };
        if let Some(why) = ssh_refused {
            r.warn(why);
        }
        cfg
    }

    /// What pi's own MCP makes the bridge do ([`super::twin::decide`]'s `decision`): pi's server
    /// shared or read through a read-only twin (pi offers the palace's tools, the bridge none; the
    /// twin is started by `mcp`), or the bridge off beside it. Returns the one stderr line that
    /// says it (None when alone).
    pub(crate) fn beside_pi(&mut self, decision: &Coexistence, mcp: &mut McpConfig) -> Option<String> {
        match decision {
            Coexistence::Alone => {}
            Coexistence::ShareServer(_) | Coexistence::ReadOnlyTwin(..) => {
                self.tools = ToolFilter::none();
                self.pi_mcp = decision.role();
            }
            Coexistence::StepAside(s, _) => {
                self.off = Some(BridgeOff::PiMcp { name: s.name.clone(), source: s.source.clone() });
            }
        }
        decision.start_twin(mcp);
        decision.line(mcp)
    }

    /// True unless the bridge is off ([`PalaceConfig::off`]).
    pub(crate) fn enabled(&self) -> bool {
        self.off.is_none()
    }

    /// `<agentDir>/sessions`, where pi keeps its session JSONL.
    pub(crate) fn sessions_dir(&self) -> PathBuf {
        self.agent_dir.join("sessions")
    }

    /// `<agentDir>/mempalace-feed`, the built-in exporter's staging area and state.
    pub(crate) fn feed_dir(&self) -> PathBuf {
        self.agent_dir.join("mempalace-feed")
    }

    /// `<agentDir>/mempalace-feed.lock`, the feed's cross-process lock.
    pub fn lock_path(&self) -> PathBuf {
        self.agent_dir.join("mempalace-feed.lock")
    }

    /// `<agentDir>/mempalace-tools-cache.json`.
    pub(crate) fn tools_cache_path(&self) -> PathBuf {
        super::offer::cache::cache_path(&self.agent_dir)
    }
}

/// Why an rsync/ssh target is refused: one starting with `-` would reach rsync or ssh as an
/// option (`-oProxyCommand=...` runs a command), and an empty one is no host.
pub(crate) fn refused_ssh_target(target: &str) -> Option<String> {
    if target.starts_with('-') {
        return Some(format!(
            "MEMPALACE_PI_SSH_TARGET {} starts with '-' and would be read as an option by rsync/ssh: refused, remote feeding is off",
            super::offer::tools::shown(target)
        ));
    }
    target.trim().is_empty().then(|| "MEMPALACE_PI_SSH_TARGET is empty: remote feeding is off".to_string())
}

/// `~` or `~/x` → `$HOME` or `$HOME/x` (pi does the same for `PI_CODING_AGENT_DIR`).
fn expand_home(p: &str, home: Option<&str>) -> String {
    match (p, home) {
        ("~", Some(h)) => h.to_string(),
        (p, Some(h)) if p.starts_with("~/") => format!("{}/{}", h.trim_end_matches('/'), &p[2..]),
        (p, _) => p.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::twin::{Aside, Launch, PiMempalace};
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> (PalaceConfig, Vec<String>) {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        PalaceConfig::from_lookup(&move |k: &str| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let (c, w) = cfg(&[("HOME", "/home/u")]);
        assert!(w.is_empty(), "{w:?}");
        assert!(c.enabled() && c.feed && !c.remote);
        assert_eq!(c.agent_name, "pi");
        assert_eq!(c.feed_bin, "mempalace-pi-session");
        assert_eq!(c.feed_wing, "wing_conversations");
        assert_eq!(c.feed_debounce, Duration::from_millis(600_000));
        assert_eq!(c.prepare_timeout, Duration::from_millis(120_000));
        assert_eq!(c.mine_timeout, Duration::from_millis(30_000));
        assert_eq!(c.ssh_target, None);
        assert_eq!(c.ssh_config, None);
        assert_eq!(c.remote_path, "~/.mempalace/inbox/pi-sessions");
        assert_eq!(c.agent_dir, PathBuf::from("/home/u/.pi/agent"));
        assert_eq!(c.lock_path(), PathBuf::from("/home/u/.pi/agent/mempalace-feed.lock"));
        assert_eq!(c.tools_cache_path(), PathBuf::from("/home/u/.pi/agent/mempalace-tools-cache.json"));
        assert!(c.tools.is_all());
        assert_eq!(c.exposure, super::super::offer::exposure::ExposureConfig::default());
    }

    #[test]
    fn exposure_and_direct_tools() {
        use super::super::offer::exposure::Exposure;
        let (c, w) = cfg(&[
            ("MEMPALACE_EXPOSURE", " Deferred "),
            ("MEMPALACE_DIRECT_TOOLS", "mempalace_search,mempalace_diary_*"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.exposure.asked, Some(Exposure::Deferred));
        assert!(c.exposure.direct_tool("mempalace_diary_write") && !c.exposure.direct_tool("mempalace_kg_add"));
        let (c, w) = cfg(&[("MEMPALACE_EXPOSURE", "hidden")]);
        assert_eq!(c.exposure.asked, None);
        assert!(!c.exposure.direct_tools.allows("mempalace_search"), "unset: the filter itself lists nothing");
        assert_eq!(c.exposure.direct_tools.to_string(), "none");
        assert_eq!(w, ["MEMPALACE_EXPOSURE=\"hidden\" is not codemode, deferred or direct; using the default"]);
    }

    #[test]
    fn overrides() {
        let (c, w) = cfg(&[
            ("HOME", "/home/u"),
            ("MEMPALACE_BRIDGE", "0"),
            ("MEMPALACE_AGENT_NAME", "pi-laptop"),
            ("MEMPALACE_FEED", "0"),
            ("MEMPALACE_FEED_BIN", "/opt/x"),
            ("MEMPALACE_FEED_WING", "wing_x"),
            ("MEMPALACE_FEED_DEBOUNCE_MS", "0"),
            ("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", "5"),
            ("MEMPALACE_FEED_MINE_TIMEOUT_MS", " 7 "),
            ("MEMPALACE_PI_SSH_TARGET", "me@host"),
            ("MEMPALACE_PI_SSH_CONFIG", "~/.ssh/cfg"),
            ("MEMPALACE_PI_REMOTE_PATH", "/srv/inbox"),
            ("PI_CODING_AGENT_DIR", "~/agent"),
            ("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp"),
            ("MEMPALACE_TOOLS", "mempalace_search, mempalace_diary_*"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert!(!c.enabled() && !c.feed && c.remote);
        assert_eq!(c.off, Some(BridgeOff::Switch));
        assert_eq!(c.agent_name, "pi-laptop");
        assert_eq!(c.feed_bin, "/opt/x");
        assert_eq!(c.feed_wing, "wing_x");
        assert_eq!(c.feed_debounce, Duration::ZERO);
        assert_eq!(c.prepare_timeout, Duration::from_millis(5));
        assert_eq!(c.mine_timeout, Duration::from_millis(7));
        assert_eq!(c.ssh_target.as_deref(), Some("me@host"));
        assert_eq!(c.ssh_config, Some(PathBuf::from("/home/u/.ssh/cfg")));
        assert_eq!(c.remote_path, "/srv/inbox");
        assert_eq!(c.agent_dir, PathBuf::from("/home/u/agent"));
        assert_eq!(c.tools.to_string(), "mempalace_search,mempalace_diary_*");
        assert!(c.tools.allows("mempalace_diary_write") && !c.tools.allows("mempalace_status"));
    }

    #[test]
    fn an_ssh_target_that_is_an_option_is_refused() {
        let (c, w) = cfg(&[
            ("MEMPALACE_PI_SSH_TARGET", "-oProxyCommand=touch /tmp/x"),
            ("MEMPALACE_REMOTE_URL", "http://h/mcp"),
        ]);
        assert_eq!(c.ssh_target, None);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("starts with '-'") && w[0].contains("refused"), "{w:?}");
    }

    #[test]
    fn malformed_numbers_warn_and_default() {
        let (c, w) = cfg(&[
            ("MEMPALACE_FEED_DEBOUNCE_MS", "ten"),
            ("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", "0"),
            ("MEMPALACE_FEED_MINE_TIMEOUT_MS", "-3"),
            ("MEMPALACE_BRIDGE", "1"),
        ]);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("MEMPALACE_FEED_DEBOUNCE_MS"));
        assert!(c.enabled());
        assert_eq!(c.feed_debounce, Duration::from_millis(600_000));
        assert_eq!(c.prepare_timeout, Duration::from_millis(120_000));
        assert_eq!(c.mine_timeout, Duration::from_millis(30_000));
        assert_eq!(c.agent_dir, PathBuf::from("/root/.pi/agent"));
    }

    #[test]
    fn applying_the_decision() {
        let (mut cfg, _) = PalaceConfig::from_lookup(&|_: &str| None);
        let mut mcp = crate::mcp::McpConfig::default();
        let s =
            PiMempalace { name: "mem-palace".into(), source: "/h/.pi/agent/mcp.json".into(), url: None, launch: None };
        assert_eq!(cfg.beside_pi(&Coexistence::Alone, &mut mcp), None);
        let said = cfg.beside_pi(&Coexistence::ShareServer(s.clone()), &mut mcp).unwrap();
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
        let said = cfg.beside_pi(&twin, &mut mcp).unwrap();
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
        let said = cfg.beside_pi(&Coexistence::StepAside(s, Aside::OtherHttp), &mut mcp).unwrap();
        assert!(
            !cfg.enabled()
                && said.contains("steps aside (an HTTP server that is not MEMPALACE_REMOTE_URL's;")
                && said.contains("\"enabled\": false"),
            "{said}"
        );
    }
}
