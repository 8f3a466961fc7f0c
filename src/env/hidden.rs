//! The two kinds of value that must never be printed whole: a [`Secret`] (a token), and a [`Url`],
//! which may carry `user:password@`: the one rule for a URL without its credentials.

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
        if let Some(u) = self.parse().filter(reqwest::Url::has_host) {
            return at_path(&u, None).to_string();
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

    /// The URL parsed, without `user:password@`, query and fragment, at `path` of its origin: where
    /// a request that must not carry the credentials goes (the palace's `/healthz` probe).
    pub(crate) fn at_path(&self, path: &str) -> Option<reqwest::Url> {
        self.parse().map(|u| at_path(&u, Some(path)))
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
    without_credentials(url).to_string()
}

/// `url` without `user:password@`: the one place they are taken off.
fn without_credentials(url: &reqwest::Url) -> reqwest::Url {
    let mut u = url.clone();
    let _ = u.set_password(None);
    let _ = u.set_username("");
    u
}

/// `url` without credentials, query and fragment, at `path` (`None`: its own path).
fn at_path(url: &reqwest::Url, path: Option<&str>) -> reqwest::Url {
    let mut u = without_credentials(url);
    if let Some(p) = path {
        u.set_path(p);
    }
    u.set_query(None);
    u.set_fragment(None);
    u
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let probe = u.at_path("/healthz").unwrap();
        assert_eq!(probe.as_str(), "http://h:1/healthz");
        assert!(Url::new("not a url").at_path("/healthz").is_none());
    }
}
