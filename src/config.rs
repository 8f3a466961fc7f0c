//! Environment → one typed [`Config`], read once at load through one [`EnvReader`]: the voice
//! tools' knobs here, the MCP client's in `mcp::config`, the palace logic's in `palace::config`
//! (each beside the code it configures; the variables, their names and defaults are in
//! [`crate::env::VARIABLES`]). [`Config::effective`] adds what pi's own MCP configuration decides,
//! so that pi, `feed` and `doctor` all describe the same bridge.
//!
//! A malformed value is reported once on stderr and the default is used: configuration never stops
//! pi from starting.

use crate::env::{EnvReader, Readings, Secret};
use crate::mcp::McpConfig;
use crate::palace::PalaceConfig;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole configuration of the extension.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub voice: VoiceConfig,
    pub mcp: McpConfig,
    pub palace: PalaceConfig,
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR`: what `https://` trusts (the process's roots are read once,
    /// at its first TLS handshake: `http::tls`).
    pub tls: crate::http::tls::TlsSettings,
    /// One line per malformed value, in reading order (voice, palace, MCP), for stderr.
    pub warnings: Vec<String>,
    /// Every variable that was set, as parsed (what `doctor` shows).
    pub readings: Readings,
    /// The stderr line saying what pi's own MCP made the bridge do ([`Config::effective`]; None
    /// when it changed nothing).
    pub pi_mcp: Option<String>,
}

impl Config {
    /// Reads every variable once from `get` (the process environment in production). Only the
    /// environment: what runs uses [`Config::effective`].
    pub(crate) fn from_lookup<F: Fn(&str) -> Option<String>>(get: &F) -> Config {
        let r = EnvReader::new(get);
        let voice = VoiceConfig::read(&r);
        let palace = PalaceConfig::read(&r);
        let mcp = McpConfig::read(&r);
        let tls = crate::http::tls::TlsSettings::read(&r);
        let (warnings, readings) = r.finish();
        Config { voice, mcp, palace, tls, warnings, readings, pi_mcp: None }
    }

    /// The configuration the extension runs with: the environment `get`, then pi's own MCP
    /// configuration (`<agentDir>/mcp.json`, `<cwd>/.pi/mcp.json`), which may make the bridge share
    /// pi's server or step aside (`palace::pi_mcp`). pi's load, `feed`, `feed --dry-run` and
    /// `doctor` all read this one.
    pub(crate) fn effective<F: Fn(&str) -> Option<String>>(get: &F, cwd: Option<&Path>) -> Config {
        let mut cfg = Self::from_lookup(get);
        // pi 1.x may run a MemPalace server of its own (its mcp.json): one writer, no duplicate tools.
        if cfg.palace.enabled() {
            let url = cfg.mcp.remote_url.as_ref().map(crate::env::Url::expose).map(String::from);
            let found = crate::palace::twin::find(&cfg.palace.agent_dir, cwd, url.as_deref(), get);
            let decision = crate::palace::twin::decide(&found, url.as_deref());
            cfg.pi_mcp = cfg.palace.beside_pi(&decision, &mut cfg.mcp);
            // What the bridge sets in the twin's environment is shown by `doctor` like the rest.
            if let crate::palace::twin::Coexistence::ReadOnlyTwin(s, _) = &decision {
                let name = crate::palace::twin::READ_ONLY_ENV;
                let value = crate::env::default_text(name);
                cfg.readings
                    .set_for_child(name, format!("{value}, set for the read-only twin (mcp.json entry {})", s.name));
            }
        }
        cfg
    }

    /// The configuration of this process: its environment and working directory.
    pub(crate) fn from_env() -> Config {
        Self::effective(&crate::env::process, std::env::current_dir().ok().as_deref())
    }
}

/// Configuration of Dotty's voice tools and the per-turn log.
#[derive(Debug, Clone)]
pub struct VoiceConfig {
    /// `DOTTY_VOICE_TOOLS=0` switches the voice tools and the log off.
    pub enabled: bool,
    /// `DOTTY_BRAIN_DB`, default `$HOME/.pi/memory/brain.db`.
    pub brain_db: PathBuf,
    /// True when `DOTTY_BRAIN_DB` was given: such a file is never created.
    pub brain_db_explicit: bool,
    /// `PERSON_MEMORY_MAX_FACTS`, default 6.
    pub person_max_facts: u32,
    /// `DOTTY_BEHAVIOUR_URL` without trailing `/`, default `http://127.0.0.1:8090`.
    pub behaviour_url: String,
    /// `DOTTY_BEHAVIOUR_TIMEOUT_MS`, default 3000.
    pub behaviour_timeout: Duration,
    /// `VOICE_THINKER_URL`, default `http://localhost:8080/v1/chat/completions`.
    pub thinker_url: String,
    /// `VOICE_THINKER_TIMEOUT` in seconds (fractions allowed), default 90: the reasoner is not kept
    /// resident, and its cold load alone takes 30-50 s (production raised it from 30 for that).
    pub thinker_timeout: Duration,
    /// `VOICE_THINKER_MODEL`, default `qwen3.6:27b-think`.
    pub thinker_model: String,
    /// `XIAOZHI_HOST`, unset by default.
    pub xiaozhi_host: Option<String>,
    /// `XIAOZHI_HTTP_PORT`, default 8003.
    pub xiaozhi_port: u16,
    /// `XIAOZHI_ADMIN_TIMEOUT_MS`, default 3000.
    pub xiaozhi_timeout: Duration,
    /// `DOTTY_ADMIN_TOKEN`, sent as `X-Admin-Token` when set. Never logged.
    pub admin_token: Option<Secret>,
    /// `XIAOZHI_ADMIN_SOCKET`: talk to the admin API over this UNIX socket instead of TCP.
    pub admin_socket: Option<PathBuf>,
    /// `VOICE_PLAY_SONG_ASSET_BASE` without trailing `/`.
    pub song_asset_base: String,
}

impl VoiceConfig {
    /// The voice configuration alone from `get`, with its warnings (tests; pi reads [`Config`]).
    pub fn from_lookup<F: Fn(&str) -> Option<String>>(get: &F) -> (Self, Vec<String>) {
        let r = EnvReader::new(get);
        let cfg = Self::read(&r);
        (cfg, r.finish().0)
    }

    /// Reads the voice tools' variables, adding a warning per malformed value to `r`.
    pub fn read(r: &EnvReader<'_>) -> Self {
        let enabled = r.switch("DOTTY_VOICE_TOOLS");
        let (brain_db, brain_db_explicit) = match r.path("DOTTY_BRAIN_DB") {
            Some(p) => (PathBuf::from(p), true),
            None => (PathBuf::from(r.home()).join(".pi/memory/brain.db"), false),
        };
        let person_max_facts = r.number("PERSON_MEMORY_MAX_FACTS", |v: &u32| *v > 0, "a positive integer");
        let behaviour_url = base_url(r, "DOTTY_BEHAVIOUR_URL");
        let behaviour_timeout = r.millis("DOTTY_BEHAVIOUR_TIMEOUT_MS", false);
        let thinker_url = r
            .url("VOICE_THINKER_URL")
            .map_or_else(|| crate::env::default_text("VOICE_THINKER_URL").into(), |u| u.expose().to_string());
        let thinker_timeout = r.seconds("VOICE_THINKER_TIMEOUT");
        let thinker_model = r.text_or_default("VOICE_THINKER_MODEL");
        let xiaozhi_host = r.text("XIAOZHI_HOST");
        let xiaozhi_port = r.number("XIAOZHI_HTTP_PORT", |v: &u16| *v > 0, "a TCP port (1-65535)");
        let xiaozhi_timeout = r.millis("XIAOZHI_ADMIN_TIMEOUT_MS", false);
        let admin_token = r.secret("DOTTY_ADMIN_TOKEN", false);
        let admin_socket = r.path("XIAOZHI_ADMIN_SOCKET").map(PathBuf::from);
        let song_asset_base = trim_slash(
            r.path("VOICE_PLAY_SONG_ASSET_BASE")
                .unwrap_or_else(|| crate::env::default_text("VOICE_PLAY_SONG_ASSET_BASE").into()),
        );
        if r.is_set("VOICE_PLAY_SONG_ASSET_BASE") {
            r.shown("VOICE_PLAY_SONG_ASSET_BASE", song_asset_base.clone());
        }
        // The admin API is plain http:// over TCP: a token sent to another machine crosses the
        // network readable by anyone on the path. Said once, at load (never the token itself).
        if let (Some(_), None, Some(host)) = (&admin_token, &admin_socket, &xiaozhi_host) {
            if !crate::http::is_loopback_host(host) {
                r.warn(format!(
                    "warning: DOTTY_ADMIN_TOKEN is sent over plain http:// to {}:{xiaozhi_port}; anyone on that network path can read it (use a loopback address or XIAOZHI_ADMIN_SOCKET)",
                    host.escape_debug()
                ));
            }
        }
        VoiceConfig {
            enabled,
            brain_db,
            brain_db_explicit,
            person_max_facts,
            behaviour_url,
            behaviour_timeout,
            thinker_url,
            thinker_timeout,
            thinker_model,
            xiaozhi_host,
            xiaozhi_port,
            xiaozhi_timeout,
            admin_token,
            admin_socket,
            song_asset_base,
        }
    }
}

/// A base URL (`name`, or its default) without trailing `/`; shown as it is used.
fn base_url(r: &EnvReader<'_>, name: &str) -> String {
    match r.url(name) {
        Some(u) => {
            let url = trim_slash(u.expose().to_string());
            r.shown(name, trim_slash(crate::env::Url::new(url.as_str()).shown()));
            url
        }
        None => crate::env::default_text(name).into(),
    }
}

fn trim_slash(mut s: String) -> String {
    while s.ends_with('/') {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> (VoiceConfig, Vec<String>) {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        VoiceConfig::from_lookup(&move |k: &str| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let (c, w) = cfg(&[("HOME", "/home/dotty")]);
        assert!(w.is_empty());
        assert!(c.enabled);
        assert_eq!(c.brain_db, PathBuf::from("/home/dotty/.pi/memory/brain.db"));
        assert!(!c.brain_db_explicit);
        assert_eq!(c.person_max_facts, 6);
        assert_eq!(c.behaviour_url, "http://127.0.0.1:8090");
        assert_eq!(c.behaviour_timeout, Duration::from_millis(3000));
        assert_eq!(c.thinker_url, "http://localhost:8080/v1/chat/completions");
        assert_eq!(c.thinker_timeout, Duration::from_secs(90));
        assert_eq!(c.thinker_model, "qwen3.6:27b-think");
        assert_eq!(c.xiaozhi_host, None);
        assert_eq!(c.xiaozhi_port, 8003);
        assert_eq!(c.admin_token, None);
        assert_eq!(c.song_asset_base, "/opt/xiaozhi-esp32-server/config/assets/songs");
    }

    #[test]
    fn overrides_and_trailing_slashes() {
        let (c, w) = cfg(&[
            ("DOTTY_BRAIN_DB", "/x/brain.db"),
            ("DOTTY_BEHAVIOUR_URL", "http://h:1//"),
            ("VOICE_THINKER_TIMEOUT", "0.25"),
            ("VOICE_PLAY_SONG_ASSET_BASE", "/songs/"),
            ("DOTTY_VOICE_TOOLS", "0"),
        ]);
        assert!(w.is_empty());
        assert!(c.brain_db_explicit);
        assert!(!c.enabled);
        assert_eq!(c.behaviour_url, "http://h:1");
        assert_eq!(c.thinker_timeout, Duration::from_millis(250));
        assert_eq!(c.song_asset_base, "/songs");
    }

    #[test]
    fn malformed_values_warn_and_use_defaults() {
        let (c, w) = cfg(&[
            ("XIAOZHI_HTTP_PORT", "eighty"),
            ("DOTTY_BEHAVIOUR_TIMEOUT_MS", "-5"),
            ("VOICE_THINKER_TIMEOUT", "NaN"),
            ("PERSON_MEMORY_MAX_FACTS", "0"),
        ]);
        assert_eq!(w.len(), 4, "{w:?}");
        assert_eq!(c.xiaozhi_port, 8003);
        assert_eq!(c.behaviour_timeout, Duration::from_millis(3000));
        assert_eq!(c.thinker_timeout, Duration::from_secs(90));
        assert_eq!(c.person_max_facts, 6);
    }

    #[test]
    fn admin_token_to_another_host_over_plain_http_warns_once() {
        let warned = |vars: &[(&str, &str)]| {
            cfg(vars).1.iter().filter(|w| w.contains("DOTTY_ADMIN_TOKEN") && w.contains("plain http")).count()
        };
        assert_eq!(warned(&[("XIAOZHI_HOST", "192.0.2.10"), ("DOTTY_ADMIN_TOKEN", "t0k")]), 1);
        assert_eq!(warned(&[("XIAOZHI_HOST", "dotty.lan"), ("DOTTY_ADMIN_TOKEN", "t0k")]), 1);
        for quiet in [
            &[("XIAOZHI_HOST", "127.0.0.1"), ("DOTTY_ADMIN_TOKEN", "t")][..],
            &[("XIAOZHI_HOST", "127.1.2.3"), ("DOTTY_ADMIN_TOKEN", "t")],
            &[("XIAOZHI_HOST", "LocalHost"), ("DOTTY_ADMIN_TOKEN", "t")],
            &[("XIAOZHI_HOST", "::1"), ("DOTTY_ADMIN_TOKEN", "t")],
            &[("XIAOZHI_HOST", "[::1]"), ("DOTTY_ADMIN_TOKEN", "t")],
            &[("XIAOZHI_HOST", "192.0.2.10"), ("XIAOZHI_ADMIN_SOCKET", "/run/a.sock"), ("DOTTY_ADMIN_TOKEN", "t")],
            &[("XIAOZHI_HOST", "192.0.2.10")],
        ] {
            assert_eq!(warned(quiet), 0, "{quiet:?}");
        }
        let (_, w) = cfg(&[("XIAOZHI_HOST", "192.0.2.10"), ("DOTTY_ADMIN_TOKEN", "t0k-secret")]);
        assert!(w.iter().all(|l| !l.contains("t0k-secret")));
    }

    #[test]
    fn token_never_in_warnings_or_debug_of_warnings() {
        let (c, w) = cfg(&[("DOTTY_ADMIN_TOKEN", "s3cret"), ("XIAOZHI_HTTP_PORT", "x")]);
        assert_eq!(c.admin_token.as_ref().map(Secret::expose), Some("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(w.iter().all(|l| !l.contains("s3cret")));
    }

    #[test]
    fn one_config_read_once() {
        let map: HashMap<&str, &str> = HashMap::from([
            ("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp"),
            ("MEMPALACE_MCP_TIMEOUT_MS", "soon"),
            ("MEMPALACE_FEED_DEBOUNCE_MS", "ten"),
            ("XIAOZHI_HTTP_PORT", "eighty"),
        ]);
        let seen = std::cell::RefCell::new(Vec::new());
        let c = Config::from_lookup(&|k: &str| {
            seen.borrow_mut().push(k.to_string());
            map.get(k).map(|v| v.to_string())
        });
        // Without HOME both defaults are under /root; the palace is remote because the MCP
        // configuration has a URL.
        assert_eq!(c.voice.brain_db, PathBuf::from("/root/.pi/memory/brain.db"));
        assert_eq!(c.palace.agent_dir, PathBuf::from("/root/.pi/agent"));
        assert!(c.palace.remote);
        assert_eq!(c.mcp.remote_url.as_ref().map(crate::env::Url::expose), Some("http://172.17.0.1:8765/mcp"));
        // Warnings in reading order: voice, palace, MCP.
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert!(c.warnings[0].starts_with("XIAOZHI_HTTP_PORT"));
        assert!(c.warnings[1].starts_with("MEMPALACE_FEED_DEBOUNCE_MS"));
        assert!(c.warnings[2].starts_with("MEMPALACE_MCP_TIMEOUT_MS"));
        let url_reads = seen.borrow().iter().filter(|k| *k == "MEMPALACE_REMOTE_URL").count();
        assert_eq!(url_reads, 1, "MEMPALACE_REMOTE_URL is read once");
        let remote = Config::from_lookup(&|k: &str| (k == "HOME").then(|| "/home/u".to_string()));
        assert!(!remote.palace.remote);
        assert_eq!(remote.palace.agent_dir, PathBuf::from("/home/u/.pi/agent"));
    }
}
