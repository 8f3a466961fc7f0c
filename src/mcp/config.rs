//! Environment → [`McpConfig`]. Names and defaults are part of the interface
//! (docs/mempalace-bridge.md) and listed in [`crate::env::VARIABLES`]; a malformed value gives a
//! warning and the default.

use crate::env::{EnvReader, Secret, Url};
use std::time::Duration;

/// How to reach MemPalace and how patient to be with it.
#[derive(Clone)]
pub struct McpConfig {
    /// `MEMPALACE_MCP_BIN`, default `mempalace-mcp`: the stdio server command.
    pub bin: String,
    /// `MEMPALACE_MCP_BIN` is set: `bin` is the user's choice, not the default. A default that is
    /// not on [`McpConfig::search_path`] means MemPalace is not installed ([`McpError::NotInstalled`](super::McpError::NotInstalled)).
    pub bin_set: bool,
    /// `PATH` as seen at load: where the default `bin` is looked for.
    pub search_path: Option<String>,
    /// `MEMPALACE_MCP_ARGS`, split on whitespace.
    pub args: Vec<String>,
    /// Extra environment for the stdio child on top of the inherited one (tests use it; the
    /// bridge passes none). `MEMPALACE_REMOTE_TOKEN` and `DOTTY_ADMIN_TOKEN` are removed from the
    /// child's environment whatever this says.
    pub child_env: Vec<(String, String)>,
    /// The stdio child's working directory (None: ours). Set for the read-only twin of pi's own
    /// MemPalace server (`palace::pi_mcp`), from its `mcp.json` entry.
    pub cwd: Option<std::path::PathBuf>,
    /// `MEMPALACE_REMOTE_URL`: when set, no child; MCP Streamable HTTP to this URL. It may carry
    /// `user:password@` (sent as basic auth), which [`Url`] never shows.
    pub remote_url: Option<Url>,
    /// `MEMPALACE_REMOTE_TOKEN`, sent as `Authorization: Bearer <token>`. Never logged.
    pub remote_token: Option<Secret>,
    /// `MEMPALACE_MCP_TIMEOUT_MS` (default 60000; 0 → `None` = no timeout): every request after
    /// the handshake.
    pub timeout: Option<Duration>,
    /// `MEMPALACE_MCP_INIT_TIMEOUT_MS` (default 300000; 0 → `None`): `initialize` + `tools/list`.
    pub init_timeout: Option<Duration>,
    /// `MEMPALACE_MCP_MAX_RESPAWNS` (default 2; 0 = fail-fast latch).
    pub max_respawns: u32,
    /// `MEMPALACE_MCP_RESPAWN_BACKOFF_MS` (default 1000): the first backoff, doubled per attempt.
    pub respawn_backoff: Duration,
    /// Upper bound of the doubled backoff (30 s).
    pub backoff_cap: Duration,
    /// `MEMPALACE_MCP_RETRY_MS` (default 30000; 0 → `None` = the old permanent latch): once the
    /// respawn budget is used up, the wait before the client tries again on its own; doubled per
    /// failed try, up to `retry_cap`.
    pub retry: Option<Duration>,
    /// Upper bound of the doubled retry wait (300 s; a larger `retry` is used as it is).
    pub retry_cap: Duration,
    /// SIGTERM → SIGKILL grace when a child is stopped (2 s).
    pub kill_grace: Duration,
    /// `MEMPALACE_EXT_DEBUG=1`: the server's stderr lines go to our stderr (prefixed); else drained.
    pub debug: bool,
    /// `MEMPALACE_MCP_MAX_MESSAGE_BYTES` (default 4 MiB): the longest message (stdio line, HTTP
    /// body, SSE event) taken from the server. A longer one fails the request it answers.
    pub max_message_bytes: usize,
}

/// By hand: the URL may carry a password and the token is a secret; Debug shows neither.
impl std::fmt::Debug for McpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConfig")
            .field("bin", &self.bin)
            .field("bin_set", &self.bin_set)
            .field("args", &self.args)
            .field("child_env", &self.child_env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("remote_url", &self.remote_url)
            .field("remote_token", &self.remote_token)
            .field("timeout", &self.timeout)
            .field("init_timeout", &self.init_timeout)
            .field("max_respawns", &self.max_respawns)
            .field("respawn_backoff", &self.respawn_backoff)
            .field("retry", &self.retry)
            .field("debug", &self.debug)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish_non_exhaustive()
    }
}

/// Below this a message can't even hold a tool list; a smaller setting is refused.
const MIN_MAX_MESSAGE_BYTES: u64 = 4096;

/// A byte count as the contract writes it: "4 MiB", "512 KiB", "3000 bytes".
pub(crate) fn human_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// The configuration of an empty environment (the table's defaults) with the fixed bounds.
impl Default for McpConfig {
    fn default() -> Self {
        McpConfig::read(&EnvReader::new(&|_: &str| None))
    }
}

impl McpConfig {
    /// The MCP configuration alone from `get`, with its warnings (tests; pi reads
    /// [`crate::config::Config`]). Warnings never quote the token or the URL (it may carry
    /// credentials).
    pub fn from_lookup<F: Fn(&str) -> Option<String>>(get: &F) -> (Self, Vec<String>) {
        let r = EnvReader::new(get);
        let cfg = Self::read(&r);
        (cfg, r.finish().0)
    }

    /// Reads the MCP client's variables, adding a warning per malformed value to `r` (never
    /// quoting the token or the URL).
    pub fn read(r: &EnvReader<'_>) -> Self {
        let ms_or_none = |v: u64| (v > 0).then(|| Duration::from_millis(v));
        let timeout = ms_or_none(r.whole_millis("MEMPALACE_MCP_TIMEOUT_MS"));
        let init_timeout = ms_or_none(r.whole_millis("MEMPALACE_MCP_INIT_TIMEOUT_MS"));
        let max_respawns = r.number::<u64>("MEMPALACE_MCP_MAX_RESPAWNS", |_| true, "a whole number ≥ 0");
        let respawn_backoff = Duration::from_millis(r.whole_millis("MEMPALACE_MCP_RESPAWN_BACKOFF_MS"));
        let retry = ms_or_none(r.whole_millis("MEMPALACE_MCP_RETRY_MS"));
        let max_message_bytes = r.number::<u64>(
            "MEMPALACE_MCP_MAX_MESSAGE_BYTES",
            |v| (MIN_MAX_MESSAGE_BYTES..=u32::MAX as u64).contains(v),
            "a whole number of bytes from 4096 to 4294967295",
        ) as usize;
        let remote_url = r.url("MEMPALACE_REMOTE_URL");
        if let Some(u) = &remote_url {
            if !u.parse().is_some_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some()) {
                // Not a silent fallback to a local palace: the user meant a remote one.
                r.warn("MEMPALACE_REMOTE_URL is not an http(s) URL with a host; the palace stays unreachable".into());
            }
        }
        McpConfig {
            bin: r.text_or_default("MEMPALACE_MCP_BIN"),
            bin_set: r.is_set("MEMPALACE_MCP_BIN"),
            search_path: r.process("PATH"),
            args: r.words("MEMPALACE_MCP_ARGS"),
            child_env: Vec::new(),
            cwd: None,
            remote_url,
            remote_token: r.secret("MEMPALACE_REMOTE_TOKEN", true),
            timeout,
            init_timeout,
            max_respawns: max_respawns.min(u32::MAX as u64) as u32,
            respawn_backoff,
            backoff_cap: Duration::from_secs(30),
            retry,
            retry_cap: Duration::from_secs(300),
            kill_grace: Duration::from_secs(2),
            debug: r.flag("MEMPALACE_EXT_DEBUG"),
            max_message_bytes,
        }
    }

    /// Whether MemPalace's server is missing: the default command, not set by the user, not on
    /// `PATH`, and no remote palace (pi's own MCP entries were looked at before: a stdio one sets
    /// the read-only twin's command, `bin_set`, another switches the bridge off).
    pub fn not_installed(&self) -> bool {
        self.remote_url.is_none()
            && !self.bin_set
            && self.bin == crate::env::default_text("MEMPALACE_MCP_BIN")
            && crate::process_group::resolve_bin(&self.bin, self.child_path().or(self.search_path.as_deref())).is_none()
    }

    /// The `PATH` given to the child on top of the inherited environment, if any.
    fn child_path(&self) -> Option<&str> {
        self.child_env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str())
    }

    /// The backoff before respawn attempt `n` (0-based): `respawn_backoff · 2ⁿ`, capped.
    pub fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.respawn_backoff.saturating_mul(factor).min(self.backoff_cap)
    }

    /// The wait before the next try of a client that gave up, after `failed` tries since it gave
    /// up: `retry · 2ⁿ`, capped at `retry_cap` (never below `retry`); `None` when retrying is off
    /// (`MEMPALACE_MCP_RETRY_MS=0`).
    pub fn retry_delay(&self, failed: u32) -> Option<Duration> {
        let first = self.retry?;
        let factor = 1u32.checked_shl(failed.min(31)).unwrap_or(u32::MAX);
        Some(first.saturating_mul(factor).min(self.retry_cap.max(first)))
    }

    /// A short, token-free description of the server ("`mempalace-mcp --palace /p`" or the URL
    /// without credentials), for messages and cache keys.
    pub fn target(&self) -> String {
        match &self.remote_url {
            Some(u) => u.shown(),
            None => std::iter::once(self.bin.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> (McpConfig, Vec<String>) {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        McpConfig::from_lookup(&move |k: &str| map.get(k).cloned())
    }

    #[test]
    fn defaults_match_the_contract() {
        let (c, w) = cfg(&[]);
        assert!(w.is_empty());
        assert_eq!(c.bin, "mempalace-mcp");
        assert!(c.args.is_empty());
        assert_eq!(c.remote_url, None);
        assert!(c.remote_token.is_none());
        assert_eq!(c.timeout, Some(Duration::from_millis(60_000)));
        assert_eq!(c.init_timeout, Some(Duration::from_millis(300_000)));
        assert_eq!(c.max_respawns, 2);
        assert_eq!(c.respawn_backoff, Duration::from_millis(1000));
        assert_eq!(c.retry, Some(Duration::from_millis(30_000)));
        assert!(!c.debug);
        assert_eq!(c.max_message_bytes, 4 * 1024 * 1024);
    }

    #[test]
    fn not_installed_is_the_default_command_missing_from_path_with_nothing_else_configured() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("mempalace-mcp");
        let path = dir.path().display().to_string();
        let missing = cfg(&[("PATH", &path)]).0;
        assert!(missing.not_installed());
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        assert!(missing.not_installed(), "a file that is not executable is no command");
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert!(!missing.not_installed(), "on PATH");
        let elsewhere = cfg(&[("PATH", "/nonexistent")]).0;
        assert!(elsewhere.not_installed());
        assert!(!cfg(&[("PATH", "/nonexistent"), ("MEMPALACE_MCP_BIN", "mempalace-mcp")]).0.not_installed());
        assert!(!cfg(&[("PATH", "/nonexistent"), ("MEMPALACE_REMOTE_URL", "http://h:1/mcp")]).0.not_installed());
        // The child's own PATH (tests) is where it would be looked up.
        let child = McpConfig { child_env: vec![("PATH".into(), path)], ..elsewhere };
        assert!(!child.not_installed());
    }

    #[test]
    fn overrides_zero_means_none_and_args_split() {
        let (c, w) = cfg(&[
            ("MEMPALACE_MCP_BIN", "/opt/mp/bin/mempalace-mcp"),
            ("MEMPALACE_MCP_ARGS", "  --palace /p   --read-only "),
            ("MEMPALACE_MCP_TIMEOUT_MS", "0"),
            ("MEMPALACE_MCP_INIT_TIMEOUT_MS", "0"),
            ("MEMPALACE_MCP_MAX_RESPAWNS", "0"),
            ("MEMPALACE_MCP_RESPAWN_BACKOFF_MS", "250"),
            ("MEMPALACE_EXT_DEBUG", "1"),
            ("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp"),
            ("MEMPALACE_REMOTE_TOKEN", "s3cret"),
            ("MEMPALACE_MCP_MAX_MESSAGE_BYTES", "1048576"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.max_message_bytes, 1 << 20);
        assert_eq!(c.bin, "/opt/mp/bin/mempalace-mcp");
        assert_eq!(c.args, ["--palace", "/p", "--read-only"]);
        assert_eq!((c.timeout, c.init_timeout, c.max_respawns), (None, None, 0));
        assert_eq!(c.respawn_backoff, Duration::from_millis(250));
        assert!(c.debug);
        assert_eq!(c.remote_url.as_ref().map(Url::expose), Some("http://172.17.0.1:8765/mcp"));
        assert_eq!(c.remote_token.as_ref().map(Secret::expose), Some("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn malformed_values_warn_and_use_defaults() {
        let (c, w) = cfg(&[
            ("MEMPALACE_MCP_TIMEOUT_MS", "soon"),
            ("MEMPALACE_MCP_INIT_TIMEOUT_MS", "-1"),
            ("MEMPALACE_MCP_MAX_RESPAWNS", "2.5"),
            ("MEMPALACE_MCP_RESPAWN_BACKOFF_MS", "1e3"),
            ("MEMPALACE_EXT_DEBUG", "yes"),
            ("MEMPALACE_REMOTE_URL", "user:pw@ftp//nowhere"),
            ("MEMPALACE_REMOTE_TOKEN", "s3cret"),
            ("MEMPALACE_MCP_MAX_MESSAGE_BYTES", "4MiB"),
        ]);
        assert_eq!(w.len(), 6, "{w:?}");
        assert!(w.iter().any(|l| l.contains("MEMPALACE_MCP_MAX_MESSAGE_BYTES")), "{w:?}");
        assert_eq!(c.max_message_bytes, 4 * 1024 * 1024);
        let (c, w) = cfg(&[("MEMPALACE_MCP_MAX_MESSAGE_BYTES", "10")]);
        assert_eq!((c.max_message_bytes, w.len()), (4 * 1024 * 1024, 1), "too small to hold a tool list");
        assert!(w.iter().all(|l| !l.contains("s3cret") && !l.contains(":pw@")));
        assert_eq!(c.timeout, Some(Duration::from_millis(60_000)));
        assert_eq!(c.init_timeout, Some(Duration::from_millis(300_000)));
        assert_eq!(c.max_respawns, 2);
        assert_eq!(c.respawn_backoff, Duration::from_millis(1000));
        assert!(!c.debug);
    }

    #[test]
    fn sizes_read_as_the_contract_writes_them() {
        assert_eq!(human_bytes(4 * 1024 * 1024), "4 MiB");
        assert_eq!(human_bytes(1536 * 1024), "1.5 MiB");
        assert_eq!(human_bytes(512 * 1024), "512 KiB");
        assert_eq!(human_bytes(5000), "5000 bytes");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let c = McpConfig::default();
        let b: Vec<u64> = (0..8).map(|n| c.backoff(n).as_millis() as u64).collect();
        assert_eq!(b, [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
        assert_eq!(c.backoff(200), Duration::from_secs(30));
    }

    #[test]
    fn retries_after_a_give_up_double_from_30_s_up_to_300_s_and_0_means_never() {
        let c = McpConfig::default();
        let secs: Vec<u64> = (0..8).map(|n| c.retry_delay(n).unwrap().as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 300, 300, 300, 300]);
        assert_eq!(c.retry_delay(u32::MAX), Some(Duration::from_secs(300)));
        let (never, w) = cfg(&[("MEMPALACE_MCP_RETRY_MS", "0")]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!((never.retry, never.retry_delay(0), never.retry_delay(5)), (None, None, None));
        let (short, _) = cfg(&[("MEMPALACE_MCP_RETRY_MS", "300")]);
        let ms: Vec<u128> = (0..4).map(|n| short.retry_delay(n).unwrap().as_millis()).collect();
        assert_eq!(ms, [300, 600, 1200, 2400]);
        // A first wait above the cap is taken as it is, and not doubled.
        let (long, _) = cfg(&[("MEMPALACE_MCP_RETRY_MS", "600000")]);
        assert_eq!(
            (long.retry_delay(0), long.retry_delay(3)),
            (Some(Duration::from_secs(600)), Some(Duration::from_secs(600)))
        );
        let (bad, w) = cfg(&[("MEMPALACE_MCP_RETRY_MS", "soon")]);
        assert_eq!((bad.retry, w.len()), (Some(Duration::from_secs(30)), 1));
    }

    #[test]
    fn target_hides_url_credentials() {
        let c = McpConfig { remote_url: Some("http://u:pw@h:1/mcp".into()), ..McpConfig::default() };
        assert_eq!(c.target(), "http://h:1/mcp");
        assert!(!format!("{c:?}").contains("pw"), "{c:?}");
        let c = McpConfig { remote_url: Some("http://alice:pw-9@h:1/mcp".into()), ..McpConfig::default() };
        assert!(!format!("{c:?} {}", c.target()).contains("pw-9") && !c.target().contains("alice"));
        let c = McpConfig { args: vec!["--palace".into(), "/p".into()], ..McpConfig::default() };
        assert_eq!(c.target(), "mempalace-mcp --palace /p");
    }
}
