//! The table of every environment variable the extension reads or sets for a child
//! ([`VARIABLES`]: name, default, how it is parsed, a one-line meaning). A variable is added here
//! once: the readers take their defaults from its row, `doctor` walks the table, and
//! docs/configuration.md and the README's tables name exactly its rows (a test checks them).

/// How a variable's value is read (and so how `doctor` shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// On unless exactly `0`.
    Switch,
    /// On only when exactly `1`.
    Flag,
    /// Text, trimmed.
    Text,
    /// A path (`~/` expanded where the row says so).
    Path,
    /// A URL that may carry `user:password@`: shown without them.
    Url,
    /// Never shown: only "set (hidden)" or "unset".
    Secret,
    /// Split on whitespace (an argument list).
    Words,
    /// A whole number.
    Number,
    /// A whole number of milliseconds.
    Millis,
    /// A number of seconds, fractions allowed.
    Seconds,
    /// A number from 0 to 1, fractions allowed (a score).
    Fraction,
    /// A comma-separated list of names or `*` patterns.
    Patterns,
    /// The process's own (`HOME`, `PATH`): read for the defaults and lookups that depend on it.
    Process,
    /// Never read: set by the extension in a child's environment (the row's default is the value
    /// set); `doctor` shows it when a child gets it.
    SetForChild,
}

/// A variable's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum DefaultValue {
    /// Used as is when the variable is unset.
    Text(&'static str),
    /// The number used when the variable is unset.
    Number(u64),
    /// Nothing is used, or the reader derives it; the text says what (`unset`, `$HOME/...`).
    Described(&'static str),
}

impl std::fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DefaultValue::Text(s) | DefaultValue::Described(s) => f.write_str(s),
            DefaultValue::Number(n) => write!(f, "{n}"),
        }
    }
}

/// One environment variable: a row of [`VARIABLES`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Var {
    pub name: &'static str,
    pub default: DefaultValue,
    pub kind: Kind,
    /// What it does, in one line (the README's table says the same at more length).
    pub meaning: &'static str,
}

const fn var(name: &'static str, default: DefaultValue, kind: Kind, meaning: &'static str) -> Var {
    Var { name, default, kind, meaning }
}

use DefaultValue::{Described, Number, Text};

/// Every variable the extension reads (or sets for a child), in the order `doctor` shows them (voice tools, reaching
/// MemPalace, the bridge's palace logic, the process's own). Defaults are part of the interface
/// (README, docs/configuration.md).
// A table, one variable per line (rustfmt would break the long rows into five lines each).
#[rustfmt::skip]
pub(crate) const VARIABLES: &[Var] = &[
    var("DOTTY_VOICE_TOOLS", Text("1"), Kind::Switch, "0 switches the voice tools and the per-turn log off"),
    var("DOTTY_BRAIN_DB", Described("$HOME/.pi/memory/brain.db"), Kind::Path, "brain.db (a path set here is never created)"),
    var("PERSON_MEMORY_MAX_FACTS", Number(6), Kind::Number, "facts returned by recall_person"),
    var("DOTTY_BEHAVIOUR_URL", Text("http://127.0.0.1:8090"), Kind::Url, "dotty-behaviour (trailing / removed)"),
    var("DOTTY_BEHAVIOUR_TIMEOUT_MS", Number(3000), Kind::Millis, "timeout for take_photo and the review classifier"),
    var("VOICE_THINKER_URL", Text("http://localhost:8080/v1/chat/completions"), Kind::Url, "llama-swap's chat completions endpoint"),
    var("VOICE_THINKER_TIMEOUT", Number(90), Kind::Seconds, "think_hard timeout in seconds (fractions allowed)"),
    var("VOICE_THINKER_MODEL", Text("qwen3.6:27b-think"), Kind::Text, "model asked by think_hard"),
    var("XIAOZHI_HOST", Described("unset"), Kind::Text, "xiaozhi-server host for play_song"),
    var("XIAOZHI_HTTP_PORT", Number(8003), Kind::Number, "xiaozhi-server admin port"),
    var("XIAOZHI_ADMIN_TIMEOUT_MS", Number(3000), Kind::Millis, "timeout of each admin request"),
    var("XIAOZHI_ADMIN_SOCKET", Described("unset"), Kind::Path, "the admin API over this UNIX socket instead of TCP"),
    var("DOTTY_ADMIN_TOKEN", Described("unset"), Kind::Secret, "sent as X-Admin-Token on every admin request"),
    var("VOICE_PLAY_SONG_ASSET_BASE", Text("/opt/xiaozhi-esp32-server/config/assets/songs"), Kind::Path, "asset path prefix sent to play-asset"),
    var("MEMPALACE_BRIDGE", Text("1"), Kind::Switch, "0 switches the MemPalace bridge off"),
    var("MEMPALACE_MCP_BIN", Text("mempalace-mcp"), Kind::Text, "the stdio server command"),
    var("MEMPALACE_MCP_ARGS", Described("empty"), Kind::Words, "extra arguments for it, split on whitespace"),
    var("MEMPALACE_REMOTE_URL", Described("unset"), Kind::Url, "a shared palace over Streamable HTTP (no child process)"),
    var("MEMPALACE_REMOTE_TOKEN", Described("unset"), Kind::Secret, "sent as Authorization: Bearer"),
    var("SSL_CERT_FILE", Described("unset: the system's CA bundle, else Mozilla's compiled in"), Kind::Path, "a PEM file of the CAs https:// trusts, instead of the system's"),
    var("SSL_CERT_DIR", Described("unset"), Kind::Text, "folders (:-separated) of PEM files of the CAs https:// trusts, instead of the system's"),
    var("MEMPALACE_MCP_TIMEOUT_MS", Number(60_000), Kind::Millis, "per-request timeout after the handshake; 0 = none"),
    var("MEMPALACE_MCP_INIT_TIMEOUT_MS", Number(300_000), Kind::Millis, "initialize + tools/list; 0 = none"),
    var("MEMPALACE_MCP_MAX_RESPAWNS", Number(2), Kind::Number, "respawns before the bridge stays down; 0 = fail fast"),
    var("MEMPALACE_MCP_RESPAWN_BACKOFF_MS", Number(1000), Kind::Millis, "first backoff, doubled per attempt (capped at 30 s)"),
    var("MEMPALACE_MCP_RETRY_MS", Number(30_000), Kind::Millis, "once down, the wait before the next try, doubled per failed try (capped at 300 s); 0 = stay down"),
    var("MEMPALACE_MCP_MAX_MESSAGE_BYTES", Number(4 * 1024 * 1024), Kind::Number, "longest MCP message taken from the server"),
    var("MEMPALACE_EXT_DEBUG", Described("unset"), Kind::Flag, "1 forwards the server's stderr to pi's stderr"),
    var("MEMPALACE_MCP_READ_ONLY", Text("1"), Kind::SetForChild, "never read: set to 1 for the read-only twin of pi's own MemPalace server, which then refuses writes"),
    var("MEMPALACE_AGENT_NAME", Text("pi"), Kind::Text, "agent name of the wake-up's diary read and /mempalace-diary"),
    var("MEMPALACE_TOOLS", Described("all"), Kind::Patterns, "the palace tools pi is offered (names or * patterns)"),
    var("MEMPALACE_EXPOSURE", Described("codemode where pi has tool exposure, else direct"), Kind::Text, "how palace tools reach the model: codemode, deferred or direct"),
    var("MEMPALACE_DIRECT_TOOLS", Described("none"), Kind::Patterns, "palace tools declared to the model in every exposure (names or * patterns)"),
    var("MEMPALACE_RECALL", Text("off"), Kind::Text, "on: each prompt of the user's gets the palace's drawers that bear on it, as a hidden message"),
    var("MEMPALACE_RECALL_BUDGET_MS", Number(500), Kind::Millis, "the longest a prompt waits for recall; then it goes on without"),
    var("MEMPALACE_RECALL_MAX_BYTES", Number(2000), Kind::Number, "cap on the recall message (UTF-8 bytes)"),
    var("MEMPALACE_RECALL_MIN_SCORE", Text("0.43"), Kind::Fraction, "least MemPalace similarity (0 to 1) the best drawer needs for anything to be recalled"),
    var("MEMPALACE_RECALL_OTHER_MIN_SCORE", Described("never"), Kind::Fraction, "project scope: least similarity a drawer of another wing needs to be recalled (unset: never)"),
    var("MEMPALACE_FEED", Text("1"), Kind::Switch, "0 disables transcript feeding"),
    var("MEMPALACE_FEED_BIN", Text("mempalace-pi-session"), Kind::Text, "external exporter, used when on PATH (else the built-in one)"),
    var("MEMPALACE_FEED_WING", Text("wing_conversations"), Kind::Text, "wing for the exporter and mempalace_mine"),
    var("MEMPALACE_CHECKPOINT_TURNS", Number(0), Kind::Number, "every N user turns a diary checkpoint of what the user said, composed by the bridge (0: off)"),
    var("MEMPALACE_SCOPE", Text("global"), Kind::Text, "global: every session into MEMPALACE_FEED_WING; project: a wing per project, as MemPalace's hooks name it"),
    var("MEMPALACE_FEED_DEBOUNCE_MS", Number(600_000), Kind::Millis, "minimum gap between mid-session feeds; 0 = none"),
    var("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", Number(120_000), Kind::Millis, "kills a wedged prepare step"),
    var("MEMPALACE_FEED_MINE_TIMEOUT_MS", Number(30_000), Kind::Millis, "caps the mempalace_mine call"),
    var("MEMPALACE_FEED_REDACT", Described("on, built-in rules"), Kind::Path, "a file of extra regexes to redact from fed transcripts and palace-tool writes; off = no redaction (unsafe for a shared palace)"),
    var("MEMPALACE_PI_SSH_TARGET", Described("unset"), Kind::Text, "remote palace: rsync target for the staged export"),
    var("MEMPALACE_PI_SSH_CONFIG", Described("unset"), Kind::Path, "ssh config file for that rsync"),
    // A leading `~/` is the remote user's home: rsync gets the path relative to it.
    var("MEMPALACE_PI_REMOTE_PATH", Text("~/.mempalace/inbox/pi-sessions"), Kind::Text, "where the export lands on the palace host"),
    var("PI_CODING_AGENT_DIR", Described("~/.pi/agent"), Kind::Path, "pi's agent dir: sessions, the tool cache, the feed's files"),
    var("HOME", Described("/root"), Kind::Process, "the home the defaults above that name it are under"),
    var("PATH", Described("unset"), Kind::Process, "where MEMPALACE_FEED_BIN is looked up"),
];

/// The row of `name`.
pub(crate) fn variable(name: &str) -> Option<&'static Var> {
    VARIABLES.iter().find(|v| v.name == name)
}

/// The default of a text variable (`""` for a variable whose default is not a text).
pub(crate) fn default_text(name: &str) -> &'static str {
    match variable(name).map(|v| v.default) {
        Some(DefaultValue::Text(s)) => s,
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_name_once_and_every_number_default_a_number() {
        for (i, v) in VARIABLES.iter().enumerate() {
            assert!(VARIABLES[..i].iter().all(|w| w.name != v.name), "{} twice", v.name);
            let numeric = matches!(v.kind, Kind::Number | Kind::Millis | Kind::Seconds);
            assert_eq!(numeric, matches!(v.default, DefaultValue::Number(_)), "{}", v.name);
            assert!(!v.meaning.is_empty(), "{}", v.name);
        }
    }

    /// The variables a table of `doc` names (the first column's backticked names, in the tables
    /// headed `| variable | default | meaning |` between the headings `from` and `to`).
    fn documented(doc: &str, from: &str, to: &str) -> std::collections::BTreeSet<String> {
        let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).unwrap();
        let start = text.find(from).unwrap_or_else(|| panic!("{doc} has no {from:?}"));
        let end = text[start..].find(to).map_or(text.len(), |at| start + at);
        let mut names = std::collections::BTreeSet::new();
        let mut in_table = false;
        for line in text[start..end].lines() {
            if line.starts_with("| variable | default | meaning |") {
                in_table = true;
                continue;
            }
            if !line.starts_with('|') {
                in_table = false;
                continue;
            }
            if in_table && !line.starts_with("|---") {
                let first = line.split('|').nth(1).unwrap_or_default();
                names.extend(first.split('`').skip(1).step_by(2).map(String::from));
            }
        }
        names
    }

    #[test]
    fn the_docs_tables_name_exactly_the_variables_of_the_table() {
        let table: std::collections::BTreeSet<String> = VARIABLES.iter().map(|v| v.name.to_string()).collect();
        let configuration = documented("docs/configuration.md", "# ", "## Variables the bridge passes on");
        assert_eq!(configuration, table, "docs/configuration.md's tables against src/env/table.rs's VARIABLES");
        let readme = documented("README.md", "## Configuration", "\n## ");
        assert_eq!(readme, table, "the README's configuration tables against src/env/table.rs's VARIABLES");
    }
}
