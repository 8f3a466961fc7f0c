//! The one HTTP client builder. Every client of the process (the home services' pool, the admin
//! socket's, `doctor`'s, the MCP transport's) is built here, with the same rules: no proxy from the
//! environment (these are services on the same host or a palace the user named; the TypeScript
//! original used Node's `fetch`, which ignores proxies), a keep-alive pool, and no redirect ever
//! followed (docs/trust.md): a token, a basic-auth password or a POST body only ever goes to the
//! configured origin, and a 3xx fails the call that got it.
//!
//! TLS is [`tls`]'s: one configuration for every client, whose roots are loaded at the first
//! `https://` handshake (the system's, or Mozilla's compiled in when the system has none), so plain
//! `http://` never needs a certificate store.
//!
//! When a client can't be built there is no fallback (reqwest's default client follows redirects):
//! the caller gets a [`BuildError`] and every call it makes fails with it.

pub(crate) mod tls;

use std::path::Path;
use std::time::Duration;

/// The `User-Agent` of every request.
const USER_AGENT: &str = concat!("dotty-pi-ext/", env!("CARGO_PKG_VERSION"));

/// Why a client could not be built; `Display` is the message its calls fail with.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildError(String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP client setup failed ({})", self.0)
    }
}

impl std::error::Error for BuildError {}

/// True for `localhost`, 127.0.0.0/8 and ::1 (bracketed or not).
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}

/// A client with the rules above; `unix_socket`: every request goes over this socket instead of
/// TCP (a reqwest client binds one socket).
pub(crate) fn client(unix_socket: Option<&Path>) -> Result<reqwest::Client, BuildError> {
    build(USER_AGENT, unix_socket)
}

/// [`client`] with its one input that can make building fail given, so a test can make it fail
/// for real (an agent that is no header value).
fn build(user_agent: &str, unix_socket: Option<&Path>) -> Result<reqwest::Client, BuildError> {
    // reqwest is built without a TLS provider or roots of its own: the configuration is tls.rs's.
    let tls = tls::client_config().map_err(|e| BuildError(crate::diag::chain(&e)))?;
    let mut b = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .user_agent(user_agent);
    if let Some(path) = unix_socket {
        b = b.unix_socket(path);
    }
    b.build().map_err(|e| BuildError(crate::diag::chain(&e)))
}

/// A client whose building failed for real, for the tests of what its callers do with that.
#[cfg(test)]
pub(crate) fn failed_build() -> Result<reqwest::Client, BuildError> {
    build("an agent\nthat is no header", None)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_and_a_failure_is_an_error_not_a_default_client() {
        assert!(super::client(None).is_ok());
        let e = super::failed_build().unwrap_err();
        assert!(e.to_string().starts_with("HTTP client setup failed ("), "{e}");
    }
}
