//! The MCP Streamable HTTP transport: every message is a POST; the reply is a JSON body or an SSE
//! stream. `Mcp-Session-Id` is kept and resent; a 404 on a session re-initializes once.
//!
//! The bearer token lives only in a sensitive `HeaderValue`; every text that leaves this module
//! (errors, diagnostics) goes through `scrub`, so even a server echoing it can't leak it. The URL
//! may carry `user:password@` (reqwest sends it as basic auth): messages show it without them.
//!
//! No redirect is followed (docs/trust.md; the client is [`crate::http::client`]'s): a 3xx fails the
//! call, so the token and the body only ever go to the configured origin. One message (a JSON body, one SSE
//! event) is at most `max_message_bytes`; a longer one fails the request it answers.

use super::config::McpConfig;
use super::error::McpError;
use super::framing::SseParser;
use super::jsonrpc::{self, Incoming};
use super::race::{race, Failure, Raced};
use crate::env::{Secret, Url};
use crate::sync::lock;
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

const SESSION_HEADER: &str = "mcp-session-id";

pub(crate) struct HttpConn {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    url: reqwest::Url,
    /// `url` without credentials: the only form that is ever printed.
    shown: String,
    /// The URL's `user:password` parts, scrubbed from every text like the token.
    url_secrets: Vec<String>,
    auth: Option<HeaderValue>,
    token: Option<Secret>,
    cap: usize,
    /// std `Mutex`es: read or replaced between awaits, never held across one.
    session: Mutex<Option<String>>,
    protocol: Mutex<Option<String>>,
    next_id: AtomicU64,
    dead: watch::Sender<Option<String>>,
    debug: bool,
}

pub(crate) fn open(cfg: &McpConfig, client: reqwest::Client) -> Result<HttpConn, McpError> {
    let url = cfg
        .remote_url
        .as_ref()
        .and_then(Url::parse)
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| McpError::Config("MEMPALACE_REMOTE_URL is not an http(s) URL with a host".into()))?;
    let auth = match &cfg.remote_token {
        Some(t) => {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", t.expose())).map_err(|_| {
                McpError::Config("MEMPALACE_REMOTE_TOKEN contains characters a header can't carry".into())
            })?;
            v.set_sensitive(true);
            Some(v)
        }
        None => None,
    };
    // "user:password" and the password, as written in the URL and decoded. Not the user name
    // alone (not a secret, and a short one would mangle every message); nor a password under 3
    // characters, for the same reason (it is still never printed as part of the URL).
    let (user, pass) = (url.username().to_string(), url.password().unwrap_or_default().to_string());
    let url_secrets = if pass.is_empty() {
        Vec::new()
    } else {
        let mut v = vec![format!("{user}:{pass}"), format!("{}:{}", percent_decode(&user), percent_decode(&pass))];
        if pass.len() >= 3 {
            v.extend([pass.clone(), percent_decode(&pass)]);
        }
        v
    };
    Ok(HttpConn {
        inner: Arc::new(Inner {
            client,
            shown: crate::env::shown(&url),
            url,
            url_secrets,
            auth,
            token: cfg.remote_token.clone(),
            cap: cfg.max_message_bytes,
            session: Mutex::new(None),
            protocol: Mutex::new(None),
            next_id: AtomicU64::new(1),
            dead: watch::channel(None).0,
            debug: cfg.debug,
        }),
    })
}

impl HttpConn {
    pub(crate) fn is_dead(&self) -> bool {
        self.inner.dead.borrow().is_some()
    }

    pub(crate) fn set_protocol(&self, v: &str) {
        *lock(&self.inner.protocol) = Some(v.to_string());
    }

    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
        cancel: &mut Option<oneshot::Receiver<()>>,
    ) -> Result<Value, Failure> {
        let inner = &self.inner;
        let mut dead = inner.dead.subscribe();
        if let Some(r) = inner.dead.borrow().clone() {
            return Err(Failure::not_sent(McpError::Crashed(r)));
        }
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let msg = jsonrpc::request(id, method, params);
        match race(inner.exchange(&msg, id), &mut dead, method, timeout, cancel, |why| self.spawn_cancel(id, why)).await
        {
            Raced::Finished(r) => r,
            Raced::Died(r) => Err(Failure::sent(McpError::Crashed(r))),
            Raced::GivenUp(f) => Err(f),
        }
    }

    /// `notifications/cancelled` in the background, bounded: the caller is not kept waiting.
    fn spawn_cancel(&self, id: u64, reason: &'static str) {
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), inner.round_trip(&jsonrpc::cancelled(id, reason), None))
                    .await;
        });
    }

    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        self.inner.round_trip(&jsonrpc::notification(method, params), None).await.map(|_| ()).map_err(|f| f.err)
    }

    pub(super) fn kill(&self, reason: &str) {
        self.inner.die(reason.to_string());
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.delete_session(Duration::from_secs(2)).await });
    }

    pub(crate) async fn terminate(&self, grace: Duration) {
        self.inner.die("the client closed the session".into());
        self.inner.delete_session(grace).await;
    }
}

impl Inner {
    fn die(&self, reason: String) {
        self.dead.send_if_modified(|d| {
            if d.is_none() {
                *d = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn session(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    /// Removes the token and the URL's credentials from any text that leaves this module.
    fn scrub(&self, s: String) -> String {
        let mut s = match &self.token {
            Some(t) if !t.expose().is_empty() => s.replace(t.expose(), "<redacted>"),
            _ => s,
        };
        for secret in &self.url_secrets {
            s = s.replace(secret.as_str(), "<redacted>");
        }
        s
    }

    fn post(&self, msg: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(serde_json::to_vec(msg).unwrap_or_default());
        if let Some(a) = &self.auth {
            req = req.header(AUTHORIZATION, a.clone());
        }
        if let Some(s) = self.session() {
            req = req.header(SESSION_HEADER, s);
        }
        if let Some(p) = lock(&self.protocol).clone() {
            req = req.header("mcp-protocol-version", p);
        }
        req
    }

    /// One request with the expired-session rule: a 404 while we hold a session id means the
    /// server forgot it; initialize again once and resend.
    async fn exchange(&self, msg: &Value, id: u64) -> Result<Value, Failure> {
        let had_session = self.session().is_some();
        match self.round_trip(msg, Some(id)).await {
            Err(Failure { err: McpError::Http { status: 404, .. }, .. }) if had_session => {
                if self.debug {
                    crate::diag!("MemPalace session expired (HTTP 404); initializing a new one");
                }
                *lock(&self.session) = None;
                let init_id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let init = jsonrpc::request(init_id, "initialize", jsonrpc::initialize_params());
                self.round_trip(&init, Some(init_id)).await?;
                self.round_trip(&jsonrpc::notification("notifications/initialized", None), None).await?;
                self.round_trip(msg, Some(id)).await.map(Option::unwrap_or_default)
            }
            r => r.map(Option::unwrap_or_default),
        }
    }

    /// POSTs one message. For a request (`id` given) reads the reply; for a notification accepts
    /// any 2xx (202 is the norm).
    async fn round_trip(&self, msg: &Value, id: Option<u64>) -> Result<Option<Value>, Failure> {
        let resp = self.post(msg).send().await.map_err(|e| {
            let why = self.scrub(crate::diag::root_cause(&e));
            let where_why = format!("cannot reach {}: {why}", self.shown);
            // A certificate nobody vouches for stays one: no respawn or later try can fix it.
            let err =
                if is_certificate_error(&e) { McpError::Certificate(where_why) } else { McpError::Crashed(where_why) };
            if e.is_connect() {
                Failure::not_sent(err)
            } else {
                Failure::sent(err)
            }
        })?;
        if let Some(s) = resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            *lock(&self.session) = Some(s.to_string());
        }
        let status = resp.status();
        if status.is_redirection() {
            let location =
                resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("(no Location)");
            let location = match self.url.join(location) {
                Ok(u) => self.scrub(crate::env::shown(&u)),
                Err(_) => "(an invalid Location)".into(),
            };
            return Err(Failure::sent(McpError::Redirect {
                status: status.as_u16(),
                location: crate::text::first_chars(&location, 200).to_string(),
            }));
        }
        if !status.is_success() {
            let body = self.scrub(String::from_utf8_lossy(&read_prefix(resp, 4096).await).into_owned());
            return Err(Failure::sent(match status {
                StatusCode::UNAUTHORIZED => McpError::Unauthorized,
                StatusCode::FORBIDDEN => McpError::Forbidden,
                s if s.is_server_error() => {
                    McpError::Crashed(format!("HTTP {}: {}", s.as_u16(), crate::text::first_chars(body.trim(), 200)))
                }
                s => McpError::Http { status: s.as_u16(), body },
            }));
        }
        let Some(id) = id else {
            return Ok(None);
        };
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Err(Failure::sent(McpError::Protocol(format!(
                "HTTP {} without a reply to request {id} (a GET event stream is not supported)",
                status.as_u16()
            ))));
        }
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if is_sse {
            self.read_sse(resp, id).await.map(Some)
        } else {
            if resp.content_length().is_some_and(|n| n > self.cap as u64) {
                return Err(Failure::sent(McpError::TooLarge { cap: self.cap }));
            }
            let body = read_capped(resp, self.cap).await.map_err(|e| Failure::sent(e.map_text(|t| self.scrub(t))))?;
            let msgs = jsonrpc::parse_body(&body).map_err(Failure::sent)?;
            drop(body);
            for m in msgs {
                if let Some(r) = self.match_reply(m, id) {
                    return r.map(Some);
                }
            }
            Err(Failure::sent(McpError::Protocol(format!("the reply holds no response to request {id}"))))
        }
    }

    /// `Some` when `m` is the reply to `id`.
    fn match_reply(&self, m: Incoming, id: u64) -> Option<Result<Value, Failure>> {
        match m {
            Incoming::Response { id: got, outcome } if got == id => Some(outcome.map_err(|e| {
                Failure::sent(McpError::Rpc { code: e.code, message: self.scrub(e.message), data: e.data })
            })),
            other => {
                if self.debug {
                    crate::diag!("MemPalace (HTTP) sent a message we don't wait for: {other:?}");
                }
                None
            }
        }
    }

    async fn read_sse(&self, mut resp: reqwest::Response, id: u64) -> Result<Value, Failure> {
        let mut parser = SseParser::new(self.cap);
        loop {
            let chunk = resp
                .chunk()
                .await
                .map_err(|e| Failure::sent(McpError::Crashed(self.scrub(crate::diag::root_cause(&e)))))?;
            let events = match &chunk {
                Some(c) => parser.feed(c).map_err(Failure::sent)?,
                None => parser.finish(),
            };
            for data in events {
                match jsonrpc::parse(data.as_bytes()) {
                    Incoming::NotJson => crate::diag!("MemPalace (HTTP) sent an SSE event that is not JSON; skipped"),
                    m => {
                        if let Some(r) = self.match_reply(m, id) {
                            return r;
                        }
                    }
                }
            }
            if chunk.is_none() {
                return Err(Failure::sent(McpError::Crashed(format!(
                    "the SSE stream ended without a reply to request {id}"
                ))));
            }
        }
    }

    /// Ends the server's session, if it issued one (best effort, bounded).
    async fn delete_session(&self, limit: Duration) {
        let Some(s) = self.session() else { return };
        let mut req = self.client.delete(self.url.clone()).header(SESSION_HEADER, s);
        if let Some(a) = &self.auth {
            req = req.header(AUTHORIZATION, a.clone());
        }
        let _ = tokio::time::timeout(limit, req.send()).await;
    }
}

/// Whether `e`'s chain holds a failed verification of the server's certificate (rustls). The
/// rustls error sits inside an `io::Error` (itself maybe inside another), whose `source()` skips
/// what it holds: an `io::Error`'s next link is taken with `get_ref`.
fn is_certificate_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    for _ in 0..32 {
        let Some(err) = cur else { break };
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return matches!(
                r,
                rustls::Error::InvalidCertificate(_)
                    | rustls::Error::NoCertificatesPresented
                    | rustls::Error::InvalidCertRevocationList(_)
            );
        }
        cur = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|i| i as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}

/// How long the health check of a palace that went down may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The cheap check before a try of a palace that went down: `GET <origin>/healthz`, without the
/// token or the URL's credentials, at most [`PROBE_TIMEOUT`], no redirect followed (the client's
/// rule). `Ok` when a handshake is worth it: a 2xx, or a server that has no such endpoint (404,
/// 405, 501: it answers, and the handshake decides). `Err` with why not: no answer, another status
/// (a 5xx from a proxy whose palace is gone), or a certificate that fails verification (fatal).
pub(crate) async fn probe(cfg: &McpConfig, client: reqwest::Client) -> Result<(), McpError> {
    let Some(url) = cfg.remote_url.as_ref().and_then(|u| u.at_path("/healthz")) else {
        return Err(McpError::Config("MEMPALACE_REMOTE_URL is not an http(s) URL with a host".into()));
    };
    let shown = crate::env::shown(&url);
    match client.get(url).timeout(PROBE_TIMEOUT).send().await {
        Ok(resp) => {
            let status = resp.status();
            let answers = status.is_success()
                || matches!(
                    status,
                    StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_IMPLEMENTED
                );
            if answers {
                Ok(())
            } else {
                Err(McpError::Crashed(format!("{shown} answered HTTP {}", status.as_u16())))
            }
        }
        Err(e) => {
            let why = format!("cannot reach {shown}: {}", crate::diag::root_cause(&e));
            Err(if is_certificate_error(&e) { McpError::Certificate(why) } else { McpError::Crashed(why) })
        }
    }
}

/// A body, at most `cap` bytes: a longer one is [`McpError::TooLarge`] (nothing more is read).
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, McpError> {
    let mut out = Vec::new();
    while let Some(c) = resp.chunk().await.map_err(|e| McpError::Crashed(crate::diag::root_cause(&e)))? {
        if out.len() + c.len() > cap {
            return Err(McpError::TooLarge { cap });
        }
        out.extend_from_slice(&c);
    }
    Ok(out)
}

/// The first `cap` bytes of an error body, for the message.
async fn read_prefix(mut resp: reqwest::Response, cap: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(c)) = resp.chunk().await {
        out.extend_from_slice(&c[..c.len().min(cap - out.len())]);
        if out.len() >= cap {
            break;
        }
    }
    out
}

/// `%XX` escapes decoded (a URL's user and password are stored encoded); a stray `%` stays.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        let u = reqwest::Url::parse("http://alice:p%40ss@h:1/mcp").unwrap();
        assert_eq!(crate::env::shown(&u), "http://h:1/mcp");
        assert_eq!(percent_decode("p%40ss%2"), "p@ss%2");
    }

    #[test]
    fn a_certificate_verification_failure_is_found_however_deep_it_is_wrapped() {
        use std::io::{Error, ErrorKind};
        let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let nested = Error::other(Error::new(ErrorKind::InvalidData, bad()));
        assert!(is_certificate_error(&nested));
        assert!(is_certificate_error(&bad()));
        assert!(!is_certificate_error(&Error::new(ErrorKind::ConnectionRefused, "refused")));
        let other = Error::new(ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert!(!is_certificate_error(&other), "a TLS failure that is not the certificate's may pass");
    }

    #[test]
    fn scrub_removes_the_token_and_the_url_password() {
        let cfg = McpConfig {
            remote_url: Some("http://u:p%40ss-9@h:1/mcp".into()),
            remote_token: Some(Secret::new("tok-1")),
            ..McpConfig::default()
        };
        let c = open(&cfg, crate::http::client(None).unwrap()).unwrap();
        let s = c.inner.scrub("u:p%40ss-9 u:p@ss-9 p@ss-9 tok-1 user".into());
        assert_eq!(s, "<redacted> <redacted> <redacted> <redacted> user");
        assert_eq!(c.inner.shown, "http://h:1/mcp");
    }
}
