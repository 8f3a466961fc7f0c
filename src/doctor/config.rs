//! The configuration as read: every variable of [`crate::env::VARIABLES`] with its value as the
//! readers parsed it, or its default; a variable the extension sets for a child, as it sets it. Secrets are shown only as set/unset; a URL loses its
//! `user:password@`. A malformed value is a warning; so is a variable read that the table lacks.

use super::{Check, Report};
use crate::env::{Kind, Readings, VARIABLES};

/// One check per variable (`env NAME`); a variable named by a configuration warning is a warning.
pub fn check(readings: &Readings, warnings: &[String], report: &mut Report) {
    for var in VARIABLES {
        let shown = match (readings.value(var.name), var.kind) {
            (Some(v), _) => v.escape_debug().to_string(),
            (None, Kind::Secret) => "unset".to_string(),
            (None, Kind::SetForChild) => "not set: no child gets it now".to_string(),
            (None, _) => format!("{} (default)", var.default),
        };
        let (name, label) = (var.name, format!("env {}", var.name));
        let warning = warnings.iter().find(|w| mentions(w, name));
        report.push(match warning {
            Some(w) => Check::warn(label, format!("{shown}: {w}"), format!("set {name} to a valid value or unset it")),
            None => Check::ok(label, shown),
        });
    }
    for name in &readings.unlisted {
        report.push(Check::warn(
            format!("env {name}"),
            "read by the extension but not in its table of variables (src/env/table.rs)",
            "report it: doctor can't describe this variable",
        ));
    }
    for w in warnings.iter().filter(|w| !VARIABLES.iter().any(|v| mentions(w, v.name))) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(vars: &[(&str, &str)]) -> Report {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let c = crate::config::Config::from_lookup(&move |k: &str| map.get(k).cloned());
        let mut r = Report::default();
        check(&c.readings, &c.warnings, &mut r);
        r
    }

    fn line(r: &Report, n: &str) -> String {
        r.checks.iter().find(|c| c.name == format!("env {n}")).unwrap().detail.clone()
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
        assert_eq!(line(&r, "DOTTY_ADMIN_TOKEN"), "set (hidden)");
        assert_eq!(line(&r, "MEMPALACE_REMOTE_TOKEN"), "unset");
        assert_eq!(line(&r, "XIAOZHI_HOST"), "127.0.0.1");
        assert_eq!(line(&r, "XIAOZHI_HTTP_PORT"), "8003 (default)");
        assert_eq!(line(&r, "MEMPALACE_REMOTE_URL"), "https://palace.lan/mcp");
        assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn values_are_shown_as_parsed() {
        let r = run(&[
            ("XIAOZHI_HTTP_PORT", " 8004 "),
            ("DOTTY_BEHAVIOUR_URL", "http://h:1//"),
            ("MEMPALACE_TOOLS", " mempalace_search ,, mempalace_diary_* "),
            ("PI_CODING_AGENT_DIR", "~/agent"),
            ("HOME", "/home/u"),
            ("MEMPALACE_BRIDGE", "no"),
            ("MEMPALACE_MCP_ARGS", "  --palace   /p "),
        ]);
        assert_eq!(line(&r, "XIAOZHI_HTTP_PORT"), "8004");
        assert_eq!(line(&r, "DOTTY_BEHAVIOUR_URL"), "http://h:1");
        assert_eq!(line(&r, "MEMPALACE_TOOLS"), "mempalace_search,mempalace_diary_*");
        assert_eq!(line(&r, "PI_CODING_AGENT_DIR"), "/home/u/agent");
        assert_eq!(line(&r, "MEMPALACE_BRIDGE"), "1");
        assert_eq!(line(&r, "MEMPALACE_MCP_ARGS"), "--palace /p");
        assert_eq!(line(&r, "MEMPALACE_FEED"), "1 (default)");
    }

    /// Every variable the configuration asks for is in the table `doctor` walks: one read outside
    /// it (a new variable added to a reader only) fails here.
    #[test]
    fn doctor_lists_every_variable_the_code_reads() {
        let asked = std::cell::RefCell::new(Vec::<String>::new());
        let c = crate::config::Config::from_lookup(&|k: &str| {
            asked.borrow_mut().push(k.to_string());
            Some("1".to_string())
        });
        assert!(c.readings.unlisted.is_empty(), "read but not in crate::env::VARIABLES: {:?}", c.readings.unlisted);
        let mut r = Report::default();
        check(&c.readings, &c.warnings, &mut r);
        for name in asked.borrow().iter() {
            assert!(r.checks.iter().any(|c| c.name == format!("env {name}")), "doctor doesn't show {name}");
        }
        assert!(asked.borrow().iter().any(|n| n == "MEMPALACE_TOOLS"));
    }

    /// A variable the extension sets in a child's environment is named too, with what it sets: the
    /// read-only twin of pi's own MemPalace server gets `MEMPALACE_MCP_READ_ONLY=1`.
    #[test]
    fn doctor_names_what_the_bridge_sets_for_a_child() {
        let d = tempfile::tempdir().unwrap();
        let agent = d.path().join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        let vars = HashMap::from([("PI_CODING_AGENT_DIR".to_string(), agent.display().to_string())]);
        let detail = |c: &crate::config::Config| {
            let mut r = Report::default();
            check(&c.readings, &c.warnings, &mut r);
            assert!(c.readings.unlisted.is_empty(), "{:?}", c.readings.unlisted);
            line(&r, "MEMPALACE_MCP_READ_ONLY")
        };
        let alone = crate::config::Config::effective(&|k: &str| vars.get(k).cloned(), Some(d.path()));
        assert_eq!(detail(&alone), "not set: no child gets it now");
        let servers = serde_json::json!({"mcpServers": {"memory": {"command": "mempalace-mcp"}}});
        std::fs::write(agent.join("mcp.json"), servers.to_string()).unwrap();
        let twin = crate::config::Config::effective(&|k: &str| vars.get(k).cloned(), Some(d.path()));
        assert!(twin.mcp.child_env.contains(&("MEMPALACE_MCP_READ_ONLY".to_string(), "1".to_string())));
        assert_eq!(detail(&twin), "1, set for the read-only twin (mcp.json entry memory)");
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
