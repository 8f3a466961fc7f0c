//! The configuration as read: every variable with its value or its default. Secrets are shown
//! only as set/unset; a URL loses its `user:password@`. A malformed value is a warning.

use super::{Check, Report};

/// (variable, default as the README gives it, secret).
pub const VARIABLES: &[(&str, &str, bool)] = &[
    ("DOTTY_VOICE_TOOLS", "1", false),
    ("DOTTY_BRAIN_DB", "$HOME/.pi/memory/brain.db", false),
    ("PERSON_MEMORY_MAX_FACTS", "6", false),
    ("DOTTY_BEHAVIOUR_URL", crate::config::DEFAULT_BEHAVIOUR_URL, false),
    ("DOTTY_BEHAVIOUR_TIMEOUT_MS", "3000", false),
    ("VOICE_THINKER_URL", crate::config::DEFAULT_THINKER_URL, false),
    ("VOICE_THINKER_TIMEOUT", "90", false),
    ("VOICE_THINKER_MODEL", crate::config::DEFAULT_THINKER_MODEL, false),
    ("XIAOZHI_HOST", "unset", false),
    ("XIAOZHI_HTTP_PORT", "8003", false),
    ("XIAOZHI_ADMIN_TIMEOUT_MS", "3000", false),
    ("XIAOZHI_ADMIN_SOCKET", "unset", false),
    ("DOTTY_ADMIN_TOKEN", "unset", true),
    ("VOICE_PLAY_SONG_ASSET_BASE", crate::config::DEFAULT_SONG_ASSET_BASE, false),
    ("MEMPALACE_BRIDGE", "1", false),
    ("MEMPALACE_MCP_BIN", crate::mcp::config::DEFAULT_BIN, false),
    ("MEMPALACE_MCP_ARGS", "empty", false),
    ("MEMPALACE_REMOTE_URL", "unset", false),
    ("MEMPALACE_REMOTE_TOKEN", "unset", true),
    ("MEMPALACE_MCP_TIMEOUT_MS", "60000", false),
    ("MEMPALACE_MCP_INIT_TIMEOUT_MS", "300000", false),
    ("MEMPALACE_MCP_MAX_RESPAWNS", "2", false),
    ("MEMPALACE_MCP_RESPAWN_BACKOFF_MS", "1000", false),
    ("MEMPALACE_MCP_MAX_MESSAGE_BYTES", "4194304", false),
    ("MEMPALACE_EXT_DEBUG", "unset", false),
    ("MEMPALACE_AGENT_NAME", crate::palace::config::DEFAULT_AGENT_NAME, false),
    ("MEMPALACE_FEED", "1", false),
    ("MEMPALACE_FEED_BIN", crate::palace::config::DEFAULT_FEED_BIN, false),
    ("MEMPALACE_FEED_WING", crate::palace::config::DEFAULT_FEED_WING, false),
    ("MEMPALACE_FEED_DEBOUNCE_MS", "600000", false),
    ("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", "120000", false),
    ("MEMPALACE_FEED_MINE_TIMEOUT_MS", "30000", false),
    ("MEMPALACE_PI_SSH_TARGET", "unset", false),
    ("MEMPALACE_PI_SSH_CONFIG", "unset", false),
    ("MEMPALACE_PI_REMOTE_PATH", crate::palace::config::DEFAULT_REMOTE_PATH, false),
    ("PI_CODING_AGENT_DIR", "~/.pi/agent", false),
];

/// One check per variable (`env NAME`); a variable named by a configuration warning is a warning.
pub fn check<F: Fn(&str) -> Option<String>>(get: &F, warnings: &[String], report: &mut Report) {
    for (name, default, secret) in VARIABLES {
        let value = get(name).filter(|v| !v.trim().is_empty());
        let shown = match (&value, secret) {
            (None, true) => "unset".to_string(),
            (Some(_), true) => "set (hidden)".to_string(),
            (None, false) => format!("{default} (default)"),
            (Some(v), false) if *name == "MEMPALACE_REMOTE_URL" => shown_url(v),
            (Some(v), false) => format!("{:?}", v.trim()).trim_matches('"').to_string(),
        };
        let label = format!("env {name}");
        let warning = warnings.iter().find(|w| mentions(w, name));
        report.push(match warning {
            Some(w) => Check::warn(label, format!("{shown}: {w}"), format!("set {name} to a valid value or unset it")),
            None => Check::ok(label, shown),
        });
    }
    for w in warnings.iter().filter(|w| !VARIABLES.iter().any(|(n, _, _)| mentions(w, n))) {
        report.push(Check::warn("env", w.clone(), "correct the variable the warning names"));
    }
}

/// `name` appears in `w` as a whole word (`MEMPALACE_FEED` is not in `MEMPALACE_FEED_BIN=...`).
fn mentions(w: &str, name: &str) -> bool {
    w.match_indices(name).any(|(i, _)| {
        let before = w[..i].chars().next_back();
        let after = w[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// A URL without `user:password@` (never printed).
fn shown_url(v: &str) -> String {
    match reqwest::Url::parse(v.trim()) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            let _ = u.set_username("");
            u.to_string()
        }
        Err(_) => "<not a URL>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(vars: &[(&str, &str)]) -> Report {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let get = move |k: &str| map.get(k).cloned();
        let (_, w) = crate::config::VoiceConfig::from_lookup(&get);
        let mut r = Report::default();
        check(&get, &w, &mut r);
        r
    }

    #[test]
    fn every_variable_with_value_or_default_and_secrets_hidden() {
        let r = run(&[
            ("DOTTY_ADMIN_TOKEN", "s3cret"),
            ("XIAOZHI_HOST", "127.0.0.1"),
            ("MEMPALACE_REMOTE_URL", "https://u:pw@palace.lan/mcp"),
        ]);
        assert_eq!(r.checks.len(), VARIABLES.len());
        let text = r.to_text(false);
        assert!(!text.contains("s3cret") && !text.contains("pw@"), "{text}");
        let line = |n: &str| r.checks.iter().find(|c| c.name == format!("env {n}")).unwrap().detail.clone();
        assert_eq!(line("DOTTY_ADMIN_TOKEN"), "set (hidden)");
        assert_eq!(line("MEMPALACE_REMOTE_TOKEN"), "unset");
        assert_eq!(line("XIAOZHI_HOST"), "127.0.0.1");
        assert_eq!(line("XIAOZHI_HTTP_PORT"), "8003 (default)");
        assert_eq!(line("MEMPALACE_REMOTE_URL"), "https://palace.lan/mcp");
        assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn a_malformed_value_warns_on_its_own_line() {
        let r = run(&[("XIAOZHI_HTTP_PORT", "eighty")]);
        let c = r.checks.iter().find(|c| c.name == "env XIAOZHI_HTTP_PORT").unwrap();
        assert_eq!(c.status, super::super::Status::Warn);
        assert!(c.detail.contains("eighty"));
        assert_eq!(r.exit_code(), 1);
        assert!(mentions("MEMPALACE_FEED_DEBOUNCE_MS=\"x\" is not", "MEMPALACE_FEED_DEBOUNCE_MS"));
        assert!(!mentions("MEMPALACE_FEED_DEBOUNCE_MS=\"x\" is not", "MEMPALACE_FEED"));
    }
}
