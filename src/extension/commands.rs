//! pi's `/mempalace` and `/mempalace-diary` commands and the palace's footer status, described as
//! data that the entry hands to pi as they are (`load.js`), and the operator's `feed`.

use super::Extension;

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
            "status" | "" => format!("{}\n{}", bridge.status_report(), bridge.exposure_report()),
            _ => "usage: /mempalace status (the palace's state) | /mempalace reconnect (start the palace again after it went down)".into(),
        }
    }

    /// What `/mempalace` and `feed` say when the bridge is off, with the reason (the switch, or
    /// pi's own MCP entry it stepped aside for).
    pub fn bridge_off(&self) -> String {
        let why = self.bridge_off.as_ref().map_or_else(|| "MEMPALACE_BRIDGE=0".to_string(), ToString::to_string);
        format!("the MemPalace bridge is off ({why})")
    }

    /// The palace's state in a few words for pi's footer (None when the bridge is off).
    pub fn palace_status(&self) -> Option<String> {
        self.bridge.as_ref().map(|b| b.status_line())
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
