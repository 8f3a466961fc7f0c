//! The process environment, in one place: the table of every variable the extension reads
//! ([`VARIABLES`]: name, default, how it is parsed, a one-line meaning), the one reader the
//! configuration modules read it through ([`EnvReader`]), and the two kinds of value that must never
//! be printed whole ([`Secret`], and [`Url`], which may carry `user:password@`).
//!
//! A variable is added here once: the readers take their defaults from its row, and
//! `dotty-pi-ext doctor` walks the table, showing each value as the readers parsed it. A name
//! read that is not in the table is recorded ([`Readings::unlisted`]), so a test catches it.
//! A leaf: nothing of the crate is imported here.

use std::cell::RefCell;
use std::collections::HashMap;

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

impl Var {
    /// A secret is never shown, only whether it is set.
    pub(crate) fn is_secret(&self) -> bool {
        self.kind == Kind::Secret
    }
}

const fn var(name: &'static str, default: DefaultValue, kind: Kind, meaning: &'static str) -> Var {
    Var { name, default, kind, meaning }
}

use DefaultValue::{Described, Number, Text};

/// Every variable the extension reads, in the order `doctor` shows them (voice tools, reaching
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
    var("MEMPALACE_AGENT_NAME", Text("pi"), Kind::Text, "agent name of the wake-up's diary read and /mempalace-diary"),
    var("MEMPALACE_TOOLS", Described("all"), Kind::Patterns, "the palace tools pi is offered (names or * patterns)"),
    var("MEMPALACE_EXPOSURE", Described("codemode where pi has tool exposure, else direct"), Kind::Text, "how palace tools reach the model: codemode, deferred or direct"),
    var("MEMPALACE_DIRECT_TOOLS", Described("none"), Kind::Patterns, "palace tools declared to the model in every exposure (names or * patterns)"),
    var("MEMPALACE_RECALL", Text("off"), Kind::Text, "on: each prompt of the user's gets the palace's drawers that bear on it, as a hidden message"),
    var("MEMPALACE_RECALL_BUDGET_MS", Number(500), Kind::Millis, "the longest a prompt waits for recall; then it goes on without"),
    var("MEMPALACE_RECALL_MAX_BYTES", Number(2000), Kind::Number, "cap on the recall message (UTF-8 bytes)"),
    var("MEMPALACE_RECALL_MIN_SCORE", Text("0.45"), Kind::Fraction, "least MemPalace similarity (0 to 1) a drawer needs to be recalled"),
    var("MEMPALACE_FEED", Text("1"), Kind::Switch, "0 disables transcript feeding"),
    var("MEMPALACE_FEED_BIN", Text("mempalace-pi-session"), Kind::Text, "external exporter, used when on PATH (else the built-in one)"),
    var("MEMPALACE_FEED_WING", Text("wing_conversations"), Kind::Text, "wing for the exporter and mempalace_mine"),
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

/// This process's environment, as a lookup for [`EnvReader`] (the only reader of it).
pub fn process(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Every variable of this process's environment (name, value; not UTF-8 ones skipped): what the
/// feed's redactor matches exactly ([`crate::palace::feed::redact`] picks the secrets by name).
pub fn process_all() -> Vec<(String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}

/// What one reading of the environment found: each variable that was set, as the readers parsed
/// it (the form `doctor` shows), and the names read that the table lacks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Readings {
    values: HashMap<&'static str, String>,
    /// Names read that are not in [`VARIABLES`] (or read as another kind than their row says).
    pub unlisted: Vec<String>,
}

impl Readings {
    /// `name`'s value as parsed (a secret as `set (hidden)`), `None` when it was unset.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// Reads environment variables through a lookup (the process environment, or a map in tests), each
/// looked up once, collecting one warning per malformed value and a [`Readings`]. Shared by the
/// voice, MCP and palace configuration.
pub struct EnvReader<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
    // RefCells: the reader is used from one thread, through `&self` so closures can share it.
    seen: RefCell<HashMap<String, Option<String>>>,
    readings: RefCell<Readings>,
    warnings: RefCell<Vec<String>>,
}

impl<'a> EnvReader<'a> {
    pub fn new(get: &'a dyn Fn(&str) -> Option<String>) -> Self {
        EnvReader { get, seen: RefCell::default(), readings: RefCell::default(), warnings: RefCell::default() }
    }

    /// The value as set (looked up once), `None` when unset or empty; a name the table lacks, or
    /// read as another kind than its row says, is recorded.
    fn lookup(&self, name: &str, kind: Kind) -> Option<String> {
        if variable(name).is_none_or(|v| v.kind != kind) {
            let mut r = self.readings.borrow_mut();
            if !r.unlisted.iter().any(|n| n == name) {
                r.unlisted.push(name.to_string());
            }
        }
        let mut seen = self.seen.borrow_mut();
        seen.entry(name.to_string()).or_insert_with(|| (self.get)(name)).clone().filter(|v| !v.is_empty())
    }

    /// The value trimmed, `None` when unset or blank.
    fn trimmed(&self, name: &str, kind: Kind) -> Option<String> {
        self.lookup(name, kind).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
    }

    /// Records what `doctor` shows for `name` (a value the caller parsed further, e.g. a path
    /// with `~` expanded).
    pub fn shown(&self, name: &str, value: impl Into<String>) {
        if let Some(v) = variable(name) {
            self.readings.borrow_mut().values.insert(v.name, value.into());
        }
    }

    fn default_number(name: &str) -> u64 {
        match variable(name).map(|v| v.default) {
            Some(DefaultValue::Number(n)) => n,
            _ => 0,
        }
    }

    /// A text variable, trimmed; `None` when unset or blank.
    pub fn text(&self, name: &str) -> Option<String> {
        let v = self.trimmed(name, Kind::Text);
        if let Some(v) = &v {
            self.shown(name, v.clone());
        }
        v
    }

    /// A text variable, or its row's default.
    pub(crate) fn text_or_default(&self, name: &str) -> String {
        self.text(name).unwrap_or_else(|| default_text(name).to_string())
    }

    /// A path as set, trimmed (the caller expands `~` and records what it made of it).
    pub fn path(&self, name: &str) -> Option<String> {
        let v = self.trimmed(name, Kind::Path);
        if let Some(v) = &v {
            self.shown(name, v.clone());
        }
        v
    }

    /// A URL, trimmed; shown without `user:password@`.
    pub fn url(&self, name: &str) -> Option<Url> {
        let v = self.trimmed(name, Kind::Url).map(Url::new);
        if let Some(u) = &v {
            self.shown(name, u.shown());
        }
        v
    }

    /// A secret, exactly as set (`trim`: without surrounding whitespace); shown as `set (hidden)`.
    pub(crate) fn secret(&self, name: &str, trim: bool) -> Option<Secret> {
        let v = if trim { self.trimmed(name, Kind::Secret) } else { self.lookup(name, Kind::Secret) };
        v.map(|s| {
            self.shown(name, "set (hidden)");
            Secret(s)
        })
    }

    /// Whitespace-separated words (an argument list); empty when unset.
    pub fn words(&self, name: &str) -> Vec<String> {
        let words: Vec<String> = self
            .lookup(name, Kind::Words)
            .map(|a| a.split_whitespace().map(String::from).collect())
            .unwrap_or_default();
        if !words.is_empty() {
            self.shown(name, words.join(" "));
        }
        words
    }

    /// A comma-separated list of patterns, as set, trimmed (the caller parses it and records the
    /// parsed form).
    pub(crate) fn patterns(&self, name: &str) -> Option<String> {
        self.trimmed(name, Kind::Patterns)
    }

    /// On unless set to `0`.
    pub(crate) fn switch(&self, name: &str) -> bool {
        let v = self.trimmed(name, Kind::Switch);
        let on = v.as_deref() != Some("0");
        if v.is_some() {
            self.shown(name, if on { "1" } else { "0" });
        }
        on
    }

    /// On only when set to `1`.
    pub fn flag(&self, name: &str) -> bool {
        let v = self.trimmed(name, Kind::Flag);
        let on = v.as_deref() == Some("1");
        if v.is_some() {
            self.shown(name, if on { "1" } else { "0" });
        }
        on
    }

    /// A process variable (`HOME`, `PATH`) as set (`None` when unset or empty).
    pub fn process(&self, name: &str) -> Option<String> {
        let v = self.lookup(name, Kind::Process);
        if let Some(v) = &v {
            self.shown(name, v.clone());
        }
        v
    }

    /// `$HOME`, or `/root` when it is unset (the one place that default lives).
    pub fn home(&self) -> String {
        match self.process("HOME").map(|h| h.trim().to_string()).filter(|h| !h.is_empty()) {
            Some(h) => h,
            None => match variable("HOME").map(|v| v.default) {
                Some(DefaultValue::Described(d)) => d.to_string(),
                _ => "/root".to_string(),
            },
        }
    }

    /// True when `name` is set (to anything but blanks), without reading it as any kind: a second
    /// module's view of a variable another one reads (the palace is remote when the MCP client
    /// has a URL).
    pub(crate) fn is_set(&self, name: &str) -> bool {
        let mut seen = self.seen.borrow_mut();
        seen.entry(name.to_string())
            .or_insert_with(|| (self.get)(name))
            .as_deref()
            .is_some_and(|v| !v.trim().is_empty())
    }

    /// A whole number; a malformed or invalid one is reported and gives the row's default.
    pub fn number<T>(&self, name: &str, valid: impl Fn(&T) -> bool, what: &str) -> T
    where
        T: std::str::FromStr + std::fmt::Display + TryFrom<u64> + Default,
    {
        let default = T::try_from(Self::default_number(name)).unwrap_or_default();
        self.parsed(name, Kind::Number, default, valid, what)
    }

    /// Milliseconds; zero allowed only when `allow_zero` (where the contract gives 0 a meaning).
    pub(crate) fn millis(&self, name: &str, allow_zero: bool) -> std::time::Duration {
        let what = if allow_zero { "a number of milliseconds" } else { "a positive number of milliseconds" };
        let ms = self.parsed(name, Kind::Millis, Self::default_number(name), |v| allow_zero || *v > 0, what);
        std::time::Duration::from_millis(ms)
    }

    /// Milliseconds, read as [`EnvReader::millis`] reads them with every whole number allowed, but
    /// reported as "a whole number ≥ 0" (the MCP client's wording); 0 stays 0.
    pub(crate) fn whole_millis(&self, name: &str) -> u64 {
        self.parsed(name, Kind::Millis, Self::default_number(name), |_| true, "a whole number ≥ 0")
    }

    /// Seconds, fractions allowed, above 0 and below 10⁹.
    pub fn seconds(&self, name: &str) -> std::time::Duration {
        let default = Self::default_number(name) as f64;
        let valid = |v: &f64| v.is_finite() && *v > 0.0 && *v < 1e9;
        std::time::Duration::from_secs_f64(self.parsed(
            name,
            Kind::Seconds,
            default,
            valid,
            "a positive number of seconds",
        ))
    }

    /// A number from 0 to 1 (fractions allowed); a malformed one is reported and gives the row's
    /// default.
    pub(crate) fn fraction(&self, name: &str) -> f64 {
        let default = default_text(name).parse().unwrap_or_default();
        self.parsed(name, Kind::Fraction, default, |v: &f64| (0.0..=1.0).contains(v), "a number from 0 to 1")
    }

    fn parsed<T: std::str::FromStr + std::fmt::Display>(
        &self,
        name: &str,
        kind: Kind,
        default: T,
        valid: impl Fn(&T) -> bool,
        what: &str,
    ) -> T {
        match self.trimmed(name, kind) {
            None => default,
            Some(raw) => match raw.parse::<T>() {
                Ok(v) if valid(&v) => {
                    self.shown(name, v.to_string());
                    v
                }
                _ => {
                    self.warn(format!("{name}={raw:?} is not {what}; using the default {default}"));
                    self.shown(name, default.to_string());
                    default
                }
            },
        }
    }

    /// Adds a warning of the caller's own.
    pub(crate) fn warn(&self, w: String) {
        self.warnings.borrow_mut().push(w);
    }

    /// The warnings, in reading order, and what was read.
    pub fn finish(self) -> (Vec<String>, Readings) {
        (self.warnings.into_inner(), self.readings.into_inner())
    }
}

/// A secret (token) whose `Debug` never shows it, so it can't leak through a log of the config.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A URL as configured, which may carry `user:password@` (sent as basic auth): the one rule for
/// hiding them. `Debug` and `Display` show it without them ([`Url::shown`]); a cache key leaves
/// them out too ([`Url::key`]); only [`Url::expose`] gives the URL as set, for the one place that
/// connects to it.
#[derive(Clone, PartialEq, Eq)]
pub struct Url(String);

impl Url {
    pub fn new(raw: impl Into<String>) -> Url {
        Url(raw.into())
    }

    /// The URL as set, credentials included.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// The URL parsed, when it is one.
    pub fn parse(&self) -> Option<reqwest::Url> {
        reqwest::Url::parse(self.0.trim()).ok()
    }

    /// The URL without `user:password@`, as it may be printed; `<not a URL>` when it is not one
    /// with a host (`user:pw@h/x` parses as scheme `user` and a path that holds the password).
    pub fn shown(&self) -> String {
        self.parse().filter(reqwest::Url::has_host).map_or_else(|| "<not a URL>".into(), |u| shown(&u))
    }

    /// The URL without `user:password@`, query and fragment, for keying what is stored about a
    /// server (a token someone put in the query stays out too). Parsed as a URL where it is one;
    /// else cut by hand at the last `@` before the path (never leaving a password in).
    pub fn key(&self) -> String {
        let url = self.0.trim();
        if let Some(mut u) = self.parse().filter(reqwest::Url::has_host) {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            return u.to_string();
        }
        let url = url.split(['#', '?']).next().unwrap_or(url);
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r)) => (format!("{s}://"), r),
            None => (String::new(), url),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        format!("{scheme}{host}{path}")
    }
}

impl From<&str> for Url {
    fn from(s: &str) -> Url {
        Url::new(s)
    }
}

impl From<String> for Url {
    fn from(s: String) -> Url {
        Url::new(s)
    }
}

impl std::fmt::Debug for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Url({})", self.shown())
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

/// A parsed URL without `user:password@`: the form of [`Url::shown`], for a URL met on the way (a
/// redirect's `Location`).
pub fn shown(url: &reqwest::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_password(None);
    let _ = u.set_username("");
    u.to_string()
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

    #[test]
    fn a_name_outside_the_table_or_read_as_another_kind_is_recorded() {
        let get = |n: &str| Some(format!("{n}-value"));
        let r = EnvReader::new(&get);
        assert_eq!(r.text("NOT_IN_THE_TABLE").as_deref(), Some("NOT_IN_THE_TABLE-value"));
        let _ = r.text("MEMPALACE_FEED_DEBOUNCE_MS"); // a Millis row read as text
        let _ = r.text("VOICE_THINKER_MODEL");
        let (_, readings) = r.finish();
        assert_eq!(readings.unlisted, ["NOT_IN_THE_TABLE", "MEMPALACE_FEED_DEBOUNCE_MS"]);
    }

    #[test]
    fn each_variable_is_looked_up_once_and_shown_as_parsed() {
        let asked = RefCell::new(Vec::new());
        let get = |n: &str| {
            asked.borrow_mut().push(n.to_string());
            match n {
                "XIAOZHI_HTTP_PORT" => Some(" 8004 ".into()),
                "MEMPALACE_REMOTE_URL" => Some("http://u:pw@h:1/mcp".into()),
                "DOTTY_ADMIN_TOKEN" => Some("s3cret".into()),
                "MEMPALACE_BRIDGE" => Some("yes".into()),
                _ => None,
            }
        };
        let r = EnvReader::new(&get);
        assert_eq!(r.number::<u16>("XIAOZHI_HTTP_PORT", |_| true, "a port"), 8004);
        assert!(r.is_set("MEMPALACE_REMOTE_URL"));
        assert_eq!(
            r.url("MEMPALACE_REMOTE_URL").map(|u| u.expose().to_string()).as_deref(),
            Some("http://u:pw@h:1/mcp")
        );
        assert_eq!(r.secret("DOTTY_ADMIN_TOKEN", false).map(|s| s.expose().to_string()).as_deref(), Some("s3cret"));
        assert!(r.switch("MEMPALACE_BRIDGE"));
        assert_eq!(r.millis("XIAOZHI_ADMIN_TIMEOUT_MS", false), std::time::Duration::from_millis(3000));
        let (w, readings) = r.finish();
        assert!(w.is_empty() && readings.unlisted.is_empty(), "{w:?} {readings:?}");
        assert_eq!(readings.value("XIAOZHI_HTTP_PORT"), Some("8004"));
        assert_eq!(readings.value("MEMPALACE_REMOTE_URL"), Some("http://h:1/mcp"));
        assert_eq!(readings.value("DOTTY_ADMIN_TOKEN"), Some("set (hidden)"));
        assert_eq!(readings.value("MEMPALACE_BRIDGE"), Some("1"));
        assert_eq!(readings.value("XIAOZHI_ADMIN_TIMEOUT_MS"), None);
        assert_eq!(asked.borrow().iter().filter(|n| *n == "MEMPALACE_REMOTE_URL").count(), 1);
    }

    #[test]
    fn a_url_is_shown_and_keyed_without_its_credentials() {
        let u = Url::new("http://alice:p%40ss@h:1/mcp?token=t#f");
        assert_eq!(u.shown(), "http://h:1/mcp?token=t#f");
        assert_eq!(u.key(), "http://h:1/mcp");
        assert_eq!(format!("{u} {u:?}"), "http://h:1/mcp?token=t#f Url(http://h:1/mcp?token=t#f)");
        assert_eq!(u.expose(), "http://alice:p%40ss@h:1/mcp?token=t#f");
        assert_eq!(Url::new("user:pw@ftp//nowhere").shown(), "<not a URL>");
        assert_eq!(Url::new("user:s3cret@h:1/mcp").key(), "h:1/mcp");
        assert_eq!(shown(&reqwest::Url::parse("https://a:b@x/y").unwrap()), "https://x/y");
    }

    /// Every read of the process environment goes through this module: a variable read elsewhere
    /// would be missing from the table and from `doctor`.
    #[test]
    fn nothing_outside_this_module_reads_the_process_environment() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("src/env.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for needle in ["env::var(", "env::var_os(", "env::vars(", "env::vars_os("] {
                        if text.contains(needle) {
                            out.push(format!("{}: {needle}", p.display()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
        assert!(found.is_empty(), "read the environment through crate::env: {found:?}");
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
        assert_eq!(configuration, table, "docs/configuration.md's tables against src/env.rs's VARIABLES");
        let readme = documented("README.md", "## Configuration", "\n## ");
        assert_eq!(readme, table, "the README's configuration tables against src/env.rs's VARIABLES");
    }
}
