//! pi's `/mempalace` and `/mempalace-diary` commands and the palace's footer status, described as
//! data that the entry hands to pi as they are (`load.js`), and the operator's `feed`.

use super::Extension;
use crate::palace::connection::PalaceState;

/// A command as pi registers it (`pi.registerCommand`), minus its handler: pi's handler runs
/// [`Extension::run_command`] and does what its [`CommandReply`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    pub description: &'static str,
}

const DIARY: CommandSpec = CommandSpec {
    name: "mempalace-diary",
    description: "Ask the model to write a MemPalace diary entry for this session",
};

const MEMPALACE: CommandSpec = CommandSpec {
    name: "mempalace",
    description: "MemPalace bridge: `/mempalace status` says its state, `/mempalace reconnect` starts the palace again after it went down",
};

/// What pi does with a command's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandReply {
    /// Sent as the user's next message (`pi.sendUserMessage`).
    UserMessage(String),
    /// Shown to the user (`ctx.ui.notify`, level info) once the palace tools and the footer are
    /// brought up to date: the palace may have come back.
    Notice(String),
}

/// The longest footer text: pi's footer shares one line with the other extensions' statuses.
pub(super) const FOOTER_MAX: usize = 40;

/// The footer's short form of `state`; `/mempalace` has the rest.
fn footer_text(state: &PalaceState) -> String {
    let text = match state {
        PalaceState::Down(why) => match why.next_try() {
            Some(d) => format!("MemPalace: down, next try {}", crate::mcp::error::next_try_text(d)),
            None => "MemPalace: down (/mempalace)".to_string(),
        },
        PalaceState::NotInstalled { .. } => "MemPalace: not installed".to_string(),
        other => other.to_string(),
    };
    crate::text::first_chars(&text, FOOTER_MAX).to_string()
}

/// `/mempalace status` for a palace that is not installed says, after its first line, how to
/// install it, point the bridge at another server, or switch the bridge off.
fn with_install_help(report: String, state: &PalaceState) -> String {
    let PalaceState::NotInstalled { bin } = state else { return report };
    let (first, rest) = report.split_once('\n').unwrap_or((&report, ""));
    let help = format!(
        "to install it: `pipx install mempalace==3.11.0` (or `pip install mempalace==3.11.0`) so that `{bin}` is on PATH, then `/mempalace reconnect`\n\
         to use another server: MEMPALACE_MCP_BIN (a command) or MEMPALACE_REMOTE_URL (a palace over HTTP)\n\
         to switch the bridge off: MEMPALACE_BRIDGE=0"
    );
    format!("{first}\n{help}\n{rest}").trim_end().to_string()
}

/// The palace's entry in pi's footer (`ctx.ui.setStatus(key, text)`); no text clears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterStatus {
    pub key: &'static str,
    pub text: Option<String>,
}

impl Extension {
    /// The commands pi registers, in order: none when the bridge is off.
    pub fn commands(&self) -> Vec<CommandSpec> {
        match self.bridge {
            Some(_) => vec![DIARY, MEMPALACE],
            None => Vec::new(),
        }
    }

    /// Runs the command `name` with the text typed after it; None for a command there is not.
    pub async fn run_command(&self, name: &str, args: &str) -> Option<CommandReply> {
        match name {
            n if n == DIARY.name => self.diary_prompt(args).map(CommandReply::UserMessage),
            n if n == MEMPALACE.name => Some(CommandReply::Notice(self.palace_command(args).await)),
            _ => None,
        }
    }

    /// `/mempalace <args>`: `reconnect` starts the palace again (a new server and respawn budget)
    /// and says how that went; anything else answers the usage.
    pub async fn palace_command(&self, args: &str) -> String {
        let Some(bridge) = self.bridge.clone() else { return self.bridge_off() };
        match args.trim() {
            "reconnect" => match bridge.reconnect().await {
                Ok(tools) => format!("MemPalace connected: {} tools", tools.len()),
                Err(e) => format!("MemPalace is still unavailable: {e}"),
            },
            "status" | "" => {
                format!("{}
{}", with_install_help(bridge.status_report(), &bridge.state()), bridge.exposure_report())
            }
            _ => "usage: /mempalace status (the palace's state) | /mempalace reconnect (start the palace again after it went down)".into(),
        }
    }

    /// What `/mempalace` and `feed` say when the bridge is off, with the reason (the switch, or
    /// pi's own MCP entry it stepped aside for).
    pub fn bridge_off(&self) -> String {
        let why = self.bridge_off.as_ref().map_or_else(|| "MEMPALACE_BRIDGE=0".to_string(), ToString::to_string);
        format!("the MemPalace bridge is off ({why})")
    }

    /// The palace's state in a few words for pi's footer (None when the bridge is off): at most
    /// [`FOOTER_MAX`] characters, so that no terminal cuts it; the reason is `/mempalace status`'s.
    pub fn palace_status(&self) -> Option<String> {
        self.bridge.as_ref().map(|b| footer_text(&b.state()))
    }

    /// The footer entry that shows [`Extension::palace_status`].
    pub fn footer_status(&self) -> FooterStatus {
        FooterStatus { key: "mempalace", text: self.palace_status() }
    }

    /// The user message `/mempalace-diary [topic]` sends (None when the bridge is off); the run it
    /// starts gets no wake-up.
    pub fn diary_prompt(&self, topic: &str) -> Option<String> {
        self.bridge.as_ref().map(|b| b.diary_prompt(topic))
    }

    /// The operator's `feed` (command line): connects to the palace and feeds the transcripts
    /// once, as a session end would; None when the bridge is off.
    pub async fn feed_once(&self) -> Option<crate::palace::feed::FeedOutcome> {
        let bridge = self.bridge.clone()?;
        let _ = bridge.connect().await; // a palace that can't be had is the outcome's to say
        bridge.say_refused(Vec::new()); // no pi to hand the tools to: what the handshake refused, now
        Some(bridge.session_shutdown("cli").await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_a_bridge_there_are_no_commands_and_no_footer_text() {
        let ext = Extension::new(None, None, Some(crate::palace::config::BridgeOff::Switch));
        assert!(ext.commands().is_empty());
        assert_eq!(ext.run_command("mempalace-diary", "x").await, None);
        assert_eq!(ext.run_command("nope", "").await, None);
        assert_eq!(ext.footer_status(), FooterStatus { key: "mempalace", text: None });
    }

    /// A bridge configured by `vars` (its agent dir a temp folder: the tool cache lives there).
    fn bridge_with(dir: &std::path::Path, vars: &[(&str, &str)]) -> Extension {
        let agent = dir.display().to_string();
        let mut map: std::collections::HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        map.insert("PI_CODING_AGENT_DIR".into(), agent);
        let get = move |k: &str| map.get(k).cloned();
        let (pal, _) = crate::palace::PalaceConfig::from_lookup(&get);
        let (mcp, _) = crate::mcp::McpConfig::from_lookup(&get);
        Extension::new(None, crate::palace::bridge::Bridge::from_config(pal, mcp, crate::voice::Tool::names()), None)
    }

    #[test]
    fn every_footer_state_is_short_and_the_reason_stays_in_the_status() {
        use crate::mcp::McpError;
        use crate::palace::connection::Unavailable;
        let long = McpError::Down {
            respawns: 2,
            last: Some(Box::new(McpError::Spawn(format!(
                "`{}`: No such file or directory (os error 2)",
                "x".repeat(200)
            )))),
            retry_in: None,
        };
        let retrying = |ms| match long.clone() {
            McpError::Down { respawns, last, .. } => {
                McpError::Down { respawns, last, retry_in: Some(std::time::Duration::from_millis(ms)) }
            }
            other => other,
        };
        let states = [
            (PalaceState::Connecting, "MemPalace: connecting…"),
            (PalaceState::Ready { offered: 47, known: 47 }, "MemPalace: ready · 47 tools"),
            (PalaceState::Ready { offered: 3, known: 47 }, "MemPalace: ready · 3 of 47 tools"),
            (PalaceState::Ready { offered: 511, known: 512 }, "MemPalace: ready · 511 of 512 tools"),
            (PalaceState::Down(Unavailable::Handshake(long.clone())), "MemPalace: down (/mempalace)"),
            (PalaceState::Down(Unavailable::Down(McpError::Unauthorized)), "MemPalace: down (/mempalace)"),
            (PalaceState::Down(Unavailable::Down(retrying(24_500))), "MemPalace: down, next try in 25 s"),
            (PalaceState::Down(Unavailable::Down(retrying(299_999))), "MemPalace: down, next try in 300 s"),
            (PalaceState::Down(Unavailable::Down(retrying(0))), "MemPalace: down, next try now"),
            (PalaceState::NotInstalled { bin: "mempalace-mcp".into() }, "MemPalace: not installed"),
            (PalaceState::Stopped, "MemPalace: stopped"),
        ];
        for (state, footer) in states {
            assert_eq!(footer_text(&state), footer);
            assert!(footer.chars().count() <= FOOTER_MAX, "{footer}");
        }
        // The long form (the status's first line) keeps the whole reason.
        let down = PalaceState::Down(Unavailable::Handshake(long.clone())).to_string();
        assert!(
            down.starts_with("MemPalace is down: gave up after 2 respawns (last error: cannot start MemPalace: `xxx"),
            "{down}"
        );
        assert!(down.ends_with("`/mempalace reconnect` or a restart of pi tries again"), "{down}");
        let down = PalaceState::Down(Unavailable::Down(retrying(25_000))).to_string();
        assert!(down.ends_with("; next try in 25 s, or `/mempalace reconnect` now"), "{down}");
    }

    /// Nothing on PATH, nothing configured: not installed at once, no start and no respawn; the
    /// footer says so and the status says how to install it or switch the bridge off.
    #[tokio::test]
    async fn a_palace_that_is_not_installed_is_a_state_with_no_respawns_and_install_help() {
        let dir = tempfile::tempdir().unwrap();
        let empty_path = dir.path().join("bin");
        std::fs::create_dir(&empty_path).unwrap();
        let ext = bridge_with(dir.path(), &[("PATH", empty_path.to_str().unwrap())]);
        let bridge = ext.bridge.clone().unwrap();
        let e = bridge.connect().await.unwrap_err();
        assert_eq!(e, crate::mcp::McpError::NotInstalled { bin: "mempalace-mcp".into() });
        let s = bridge.client().stats();
        assert_eq!((s.spawns, s.respawns, s.down), (0, 0, true));
        assert_eq!(ext.palace_status().as_deref(), Some("MemPalace: not installed"));
        let status = ext.palace_command("status").await;
        let lines: Vec<&str> = status.lines().collect();
        assert_eq!(lines[0], "MemPalace: not installed (`mempalace-mcp` is not on PATH)");
        assert!(lines[1].starts_with("to install it: `pipx install mempalace==3.11.0`"), "{status}");
        assert!(lines[3] == "to switch the bridge off: MEMPALACE_BRIDGE=0", "{status}");
        assert!(lines[4].starts_with("transport: stdio mempalace-mcp"), "{status}");
        // A later call fails at once with the same reason, still without a start.
        let call = bridge.call("mempalace_status", serde_json::json!({}), None).await.unwrap_err();
        assert!(call.to_string().contains("not installed"), "{call}");
        assert_eq!(bridge.client().stats().spawns, 0);
    }

    /// The same missing command is not "not installed" when the user named it, or when the palace
    /// is remote: a configured server that fails is down (after its respawns), as before, and
    /// says when it tries again (with `MEMPALACE_MCP_RETRY_MS=0` it doesn't).
    #[tokio::test]
    async fn a_configured_command_that_is_missing_is_down_not_uninstalled() {
        for (retry, footer, reason_end) in [
            ("30000", "MemPalace: down, next try in 30 s", "; next try in 30 s, or `/mempalace reconnect` now"),
            ("0", "MemPalace: down (/mempalace)", "; `/mempalace reconnect` or a restart of pi tries again"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let ext = bridge_with(
                dir.path(),
                &[
                    ("PATH", "/nonexistent"),
                    ("MEMPALACE_MCP_BIN", "mempalace-mcp"),
                    ("MEMPALACE_MCP_RESPAWN_BACKOFF_MS", "1"),
                    ("MEMPALACE_MCP_RETRY_MS", retry),
                ],
            );
            let bridge = ext.bridge.clone().unwrap();
            let e = bridge.connect().await.unwrap_err();
            assert!(matches!(e, crate::mcp::McpError::Down { respawns: 2, .. }), "{e}");
            assert_eq!(ext.palace_status().as_deref(), Some(footer));
            let status = ext.palace_command("status").await;
            let first = status.lines().next().unwrap();
            assert!(first.starts_with("MemPalace is down: gave up after 2 respawns"), "{status}");
            assert!(first.ends_with(reason_end), "{status}");
        }
    }

    #[tokio::test]
    async fn the_bridge_off_message_names_pi_s_mcp_entry_when_the_bridge_stepped_aside() {
        let ext = Extension::new(
            None,
            None,
            Some(crate::palace::config::BridgeOff::PiMcp {
                name: "memory".into(),
                source: "/h/.pi/agent/mcp.json".into(),
            }),
        );
        assert_eq!(
            ext.palace_command("status").await,
            "the MemPalace bridge is off (pi's MCP runs the MemPalace server 'memory' of /h/.pi/agent/mcp.json)"
        );
    }
}
