//! `dotty-pi-ext doctor`: what an operator needs to see when Dotty doesn't answer. Read-only: it
//! never writes a file, never creates brain.db and never writes the palace's tool cache.
//!
//! Each group of checks lives in a file of its own and adds [`Check`]s to a [`Report`], which
//! renders as text (one line per check, the fix after each problem) or JSON.

pub mod brain;
pub mod config;
pub mod feed;
pub mod palace;
pub mod runtime;
pub mod services;
pub mod tls;

use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    /// For a warning or failure: what to do, in one sentence.
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { name: name.into(), status: Status::Ok, detail: detail.into(), fix: None }
    }
    pub(crate) fn warn(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name: name.into(), status: Status::Warn, detail: detail.into(), fix: Some(fix.into()) }
    }
    pub fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name: name.into(), status: Status::Fail, detail: detail.into(), fix: Some(fix.into()) }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn push(&mut self, c: Check) {
        self.checks.push(c);
    }

    /// The worst status of all checks.
    pub fn status(&self) -> Status {
        self.checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok)
    }

    /// 0 all ok, 1 warnings, 2 failures.
    pub fn exit_code(&self) -> i32 {
        match self.status() {
            Status::Ok => 0,
            Status::Warn => 1,
            Status::Fail => 2,
        }
    }

    /// One line per check (`ok   name  detail`), the fix indented on the next line; a summary line.
    pub fn to_text(&self, color: bool) -> String {
        let width = self.checks.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
        let paint = |s: Status, text: &str| -> String {
            if !color {
                return text.to_string();
            }
            let code = match s {
                Status::Ok => "32",
                Status::Warn => "33",
                Status::Fail => "31",
            };
            format!("\x1b[{code}m{text}\x1b[0m")
        };
        let mut out = String::new();
        for c in &self.checks {
            let label = format!("{:<4}", c.status.label());
            out.push_str(&format!("{} {:<width$}  {}\n", paint(c.status, &label), c.name, one_line(&c.detail)));
            if let Some(fix) = &c.fix {
                out.push_str(&format!("     {:<width$}  fix: {}\n", "", one_line(fix)));
            }
        }
        let count = |s: Status| self.checks.iter().filter(|c| c.status == s).count();
        out.push_str(&format!(
            "{}: {} ok, {} warnings, {} failures\n",
            paint(self.status(), self.status().label()),
            count(Status::Ok),
            count(Status::Warn),
            count(Status::Fail)
        ));
        out
    }

    /// `{"status": "...", "exitCode": n, "checks": [{name, status, detail, fix}]}`.
    pub fn to_json(&self) -> String {
        let v = serde_json::json!({"status": self.status(), "exitCode": self.exit_code(), "checks": self.checks});
        serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into())
    }
}

fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// Facts about the calling process that only Node knows.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// `process.versions.node`.
    pub node_version: Option<String>,
    /// `process.execPath` (the global `node_modules` is found from it).
    pub node_exec_path: Option<String>,
    /// The working directory (pi is looked for in `node_modules` from here up).
    pub cwd: Option<std::path::PathBuf>,
}

/// The longest the palace check waits, whatever the configured init timeout says.
pub(crate) const PALACE_CAP: Duration = Duration::from_secs(10);

/// Runs every check against the environment `get` and pi's MCP configuration as seen from
/// `host.cwd`: the configuration pi would run with ([`crate::config::Config::effective`]).
/// `doctor` against this process's environment: the rendered report (`json`: the JSON shape; `color`:
/// ANSI colours) and its exit status (0/1/2).
pub async fn report(host: &Host, json: bool, color: bool) -> (String, i32) {
    let r = run(&crate::env::process, host).await;
    (if json { r.to_json() } else { r.to_text(color) }, r.exit_code())
}

/// `clean-turns [--dry-run] [--backup PATH|none]` on this process's brain.db, on a blocking thread:
/// the text and the exit status.
pub async fn clean_turns(dry_run: bool, backup: Option<&str>) -> (String, i32) {
    let path = crate::config::Config::from_lookup(&crate::env::process).voice.brain_db;
    let backup = crate::voice::clean_turns::Backup::from_arg(backup);
    let run = tokio::task::spawn_blocking(move || crate::voice::clean_turns::command(&path, dry_run, &backup)).await;
    run.unwrap_or_else(|e| (format!("clean-turns: internal error: {e}\n"), 1))
}

pub async fn run<F: Fn(&str) -> Option<String>>(get: &F, host: &Host) -> Report {
    let mut report = Report::default();
    let crate::config::Config { voice, palace: pal, mcp, tls: tls_settings, warnings, readings, pi_mcp } =
        crate::config::Config::effective(get, host.cwd.as_deref());
    config::check(&readings, &warnings, &mut report);
    // Which server does what: pi's role when the bridge works beside it, else why it stepped aside.
    match (&pal.pi_mcp, pi_mcp) {
        (Some(role), _) => report.push(Check::ok("pi's MCP", role.line())),
        (None, Some(said)) => report.push(Check::ok("pi's MCP", said.trim_start_matches("mempalace: "))),
        (None, None) => {}
    }
    if pal.enabled() {
        let (line, bad_file) = scope_line(&pal, host.cwd.as_deref());
        report.push(match bad_file {
            false => Check::ok("palace scope", line),
            true => Check::warn(
                "palace scope",
                line,
                "put {\"wing\": \"<name>\"} in .pi/mempalace.json, the name as MemPalace slugs it (lower case, no / or ..)",
            ),
        });
    }
    let brain_path = voice.brain_db.clone();
    let (voice_enabled, explicit) = (voice.enabled, voice.brain_db_explicit);
    let brain_checks = tokio::task::spawn_blocking(move || brain::check(&brain_path, voice_enabled, explicit))
        .await
        .unwrap_or_default();
    report.checks.extend(brain_checks);
    let (svc, pal_checks) = tokio::join!(services::check(&voice), palace::check(&pal, &mcp, PALACE_CAP));
    report.checks.extend(svc);
    report.push(tls::check(&tls_settings));
    report.checks.extend(pal_checks);
    report.checks.extend(runtime::check(host));
    report
}

/// `MEMPALACE_SCOPE` and the wing a session in `cwd` files into (a project file as pi would use
/// it once it trusts the project: doctor is not pi and can't ask); true when the project file is
/// there but can't be used.
fn scope_line(pal: &crate::palace::PalaceConfig, cwd: Option<&std::path::Path>) -> (String, bool) {
    use crate::palace::scope::{session_wing, Chosen, PROJECT_FILE};
    let cwd = cwd.map(std::path::Path::to_path_buf).unwrap_or_default();
    let w = session_wing(pal.scope, &pal.feed_wing, &cwd, pal.home.as_deref(), Some(true));
    let own = session_wing(pal.scope, &pal.feed_wing, &cwd, pal.home.as_deref(), Some(false)).name;
    let how = match w.chosen {
        Chosen::Global => "MEMPALACE_FEED_WING".to_string(),
        Chosen::Cwd => format!("the folder {}, as MemPalace's hooks name it", cwd.display()),
        Chosen::ProjectFile => format!("{PROJECT_FILE}, used when pi trusts the project (else {own})"),
    };
    let bad_file = w.note.is_some();
    let note = w.note.map(|n| format!("; {n}")).unwrap_or_default();
    (format!("{} · wing {} (from {how}{note})", pal.scope, w.name), bad_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_shows_the_scope_and_the_wing_and_warns_of_a_project_file_it_can_t_use() {
        let d = tempfile::tempdir().unwrap();
        let cwd = d.path().join("Beta Service");
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        let pal = |scope: &str| {
            let vars =
                [("MEMPALACE_SCOPE", scope.to_string()), ("PI_CODING_AGENT_DIR", d.path().display().to_string())];
            crate::palace::PalaceConfig::from_lookup(&|k: &str| {
                vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
            })
            .0
        };
        let (line, bad) = scope_line(&pal("global"), Some(&cwd));
        assert_eq!((line.as_str(), bad), ("global · wing wing_conversations (from MEMPALACE_FEED_WING)", false));
        let (line, bad) = scope_line(&pal("project"), Some(&cwd));
        assert!(line.starts_with("project · wing beta_service (from the folder ") && !bad, "{line}");
        std::fs::write(cwd.join(".pi/mempalace.json"), r#"{"wing": "beta_shared"}"#).unwrap();
        let (line, bad) = scope_line(&pal("project"), Some(&cwd));
        assert!(
            line.contains(
                "wing beta_shared (from .pi/mempalace.json, used when pi trusts the project (else beta_service))"
            ) && !bad,
            "{line}"
        );
        std::fs::write(cwd.join(".pi/mempalace.json"), r#"{"wing": "../etc"}"#).unwrap();
        let (line, bad) = scope_line(&pal("project"), Some(&cwd));
        assert!(line.contains("wing beta_service") && line.contains("ignored") && bad, "{line}");
    }

    /// pi's own MCP runs MemPalace (its user-level mcp.json). A stdio entry: the bridge reads
    /// through a read-only twin and feeds nothing; another HTTP server: the bridge steps aside.
    /// `doctor` and `feed --dry-run` read the same effective configuration as pi's load, so they
    /// say which server does what, by the entry's name.
    #[tokio::test]
    async fn doctor_and_the_feed_plan_agree_with_pi_about_its_own_mcp() {
        let t = tempfile::tempdir().unwrap();
        let (agent, cwd) = (t.path().join("agent"), t.path().join("project"));
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let servers = serde_json::json!({"mcpServers": {"memory": {"command": "/nonexistent/mempalace-mcp", "args": ["--palace", "/p"]}}});
        std::fs::write(agent.join("mcp.json"), servers.to_string()).unwrap();
        let agent_dir = agent.display().to_string();
        let get = |k: &str| match k {
            "PI_CODING_AGENT_DIR" => Some(agent_dir.clone()),
            "DOTTY_VOICE_TOOLS" => Some("0".to_string()),
            "MEMPALACE_MCP_INIT_TIMEOUT_MS" => Some("2000".to_string()),
            _ => None,
        };
        let cfg = crate::config::Config::effective(&get, Some(&cwd));
        assert!(cfg.palace.enabled());
        assert_eq!(cfg.mcp.target(), "/nonexistent/mempalace-mcp --palace /p --read-only");
        assert!(
            cfg.pi_mcp.as_deref().is_some_and(|l| l.contains("'memory'") && l.contains("read-only twin")),
            "{:?}",
            cfg.pi_mcp
        );
        assert_eq!(feed::plan(&cfg.palace), format!("feeding is off ({}): nothing would be sent", feed::PI_MCP_WRITES));
        let host = Host { cwd: Some(cwd.clone()), ..Host::default() };
        let report = run(&get, &host).await;
        let detail =
            |report: &Report, name: &str| report.checks.iter().find(|c| c.name == name).map(|c| c.detail.clone());
        let role = detail(&report, "pi's MCP").unwrap();
        assert!(role.starts_with(&format!("pi's own MCP (mcp.json entry \"memory\", {}) writes; this bridge reads through a read-only twin (wake-up, recall)", agent.join("mcp.json").display())), "{role}");
        assert_eq!(detail(&report, "palace feed"), Some(format!("off ({})", feed::PI_MCP_WRITES)));
        // Another HTTP server: the bridge steps aside, and says it for that entry.
        let servers = serde_json::json!({"mcpServers": {"memory": {"url": "http://127.0.0.1:9/mempalace"}}});
        std::fs::write(agent.join("mcp.json"), servers.to_string()).unwrap();
        let why = format!("pi's MCP runs the MemPalace server 'memory' of {}", agent.join("mcp.json").display());
        let cfg = crate::config::Config::effective(&get, Some(&cwd));
        assert!(!cfg.palace.enabled());
        assert_eq!(feed::plan(&cfg.palace), format!("feeding is off ({why}): nothing would be sent"));
        let report = run(&get, &host).await;
        assert_eq!(detail(&report, "palace"), Some(format!("bridge off ({why})")));
        assert!(detail(&report, "pi's MCP").is_some_and(|d| d.contains("'memory'") && d.contains("steps aside")));
        // Without pi's entry (or with it disabled) the bridge is on, as pi would run it.
        let servers = serde_json::json!({"mcpServers": {"memory": {"command": "mempalace-mcp", "enabled": false}}});
        std::fs::write(agent.join("mcp.json"), servers.to_string()).unwrap();
        let cfg = crate::config::Config::effective(&get, Some(&cwd));
        assert!(cfg.palace.enabled() && cfg.palace.pi_mcp.is_none());
    }

    #[test]
    fn exit_codes_and_rendering() {
        let mut r = Report::default();
        assert_eq!(r.exit_code(), 0);
        r.push(Check::ok("a", "fine"));
        assert_eq!(r.exit_code(), 0);
        r.push(Check::warn("bb", "meh\nline", "do x"));
        assert_eq!(r.exit_code(), 1);
        let t = r.to_text(false);
        assert!(t.contains("ok   a   fine\n"), "{t}");
        assert!(t.contains("warn bb  meh line\n"), "{t}");
        assert!(t.contains("fix: do x"), "{t}");
        assert!(!t.contains('\x1b'));
        assert!(r.to_text(true).contains("\x1b[33mwarn\x1b[0m"));
        r.push(Check::fail("c", "broken", "fix it"));
        assert_eq!(r.exit_code(), 2);
        let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(j["exitCode"], 2);
        assert_eq!(j["status"], "fail");
        assert_eq!(j["checks"][1]["status"], "warn");
        assert_eq!(j["checks"][0]["fix"], serde_json::Value::Null);
    }
}
