//! The one reader of the environment ([`EnvReader`]): each variable looked up once through a
//! lookup (the process environment, or a map in tests), parsed as its row of the table says, a
//! warning per malformed value, and what was read ([`Readings`], what `doctor` shows).

use super::table::{default_text, variable, DefaultValue, Kind};
use super::{Secret, Url};
use std::cell::RefCell;
use std::collections::HashMap;

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

    /// Records that a child gets `name` (a row of kind [`Kind::SetForChild`]), as `shown`; a name
    /// the table lacks as such is recorded as unlisted.
    pub(crate) fn set_for_child(&mut self, name: &str, shown: impl Into<String>) {
        match variable(name).filter(|v| v.kind == Kind::SetForChild) {
            Some(v) => {
                self.values.insert(v.name, shown.into());
            }
            None if !self.unlisted.iter().any(|n| n == name) => self.unlisted.push(name.to_string()),
            None => {}
        }
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
            Secret::new(s)
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

    /// A number from 0 to 1 whose row has no number for a default: None when unset, or malformed
    /// (reported).
    pub(crate) fn optional_fraction(&self, name: &str) -> Option<f64> {
        let raw = self.trimmed(name, Kind::Fraction)?;
        match raw.parse::<f64>() {
            Ok(v) if (0.0..=1.0).contains(&v) => {
                self.shown(name, v.to_string());
                Some(v)
            }
            _ => {
                self.warn(format!(
                    "{name}={raw:?} is not a number from 0 to 1; using the default {}",
                    default_text(name)
                ));
                None
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
