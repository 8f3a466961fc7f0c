//! Dotty's home services over HTTP: one shared client (one keep-alive pool) for the whole process,
//! built by [`crate::http`].

pub(crate) mod dotty_behaviour;
pub(crate) mod thinker;
pub(crate) mod xiaozhi;

/// How an HTTP exchange failed, in the terms the replies need.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpError {
    /// No answer within the configured timeout (connect, headers or body).
    Timeout,
    /// Refused, unreachable, reset...: the innermost cause, short.
    Transport(String),
    /// The server answered with a non-success status.
    Status { status: u16, body: String },
    /// The server answered 2xx with a body that isn't the JSON we need.
    Body(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Timeout => f.write_str("timed out"),
            HttpError::Transport(e) => f.write_str(e),
            HttpError::Status { status, body } => write!(f, "HTTP {status}: {}", crate::text::first_chars(body, 120)),
            HttpError::Body(e) => write!(f, "bad response body: {e}"),
        }
    }
}

impl From<reqwest::Error> for HttpError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            HttpError::Timeout
        } else {
            // Without the URL: a configured URL may carry `user:password@`, never to be printed.
            HttpError::Transport(crate::diag::root_cause(&e.without_url()))
        }
    }
}

/// The most a home service may answer (body bytes). Their real answers are a few hundred bytes;
/// a longer body fails the call instead of being held in memory.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// The home services' HTTP client ([`crate::http::client`]: no redirect is followed, so
/// `X-Admin-Token` and POST bodies only ever go to the configured origin, and a 3xx is a failure
/// of that call; the review classifier then holds the fact), or why it could not be built: then
/// every call fails with that, as with a service that can't be reached.
#[derive(Debug, Clone)]
pub struct Http(Result<reqwest::Client, crate::http::BuildError>);

impl Http {
    /// The client, or the failure every call answers with.
    pub fn client(&self) -> Result<&reqwest::Client, HttpError> {
        self.0.as_ref().map_err(|e| HttpError::Transport(e.to_string()))
    }
}

impl From<Result<reqwest::Client, crate::http::BuildError>> for Http {
    fn from(built: Result<reqwest::Client, crate::http::BuildError>) -> Http {
        Http(built)
    }
}

/// Builds a client for the home services (`unix_socket`: the admin API's socket).
pub fn client(unix_socket: Option<&std::path::Path>) -> Http {
    Http(crate::http::client(unix_socket))
}

/// Sends a request and reads its body (at most [`MAX_BODY`] bytes), mapping failures to
/// [`HttpError`]. A non-2xx status (a 3xx too: redirects are not followed) is an error carrying
/// the body (the callers quote it).
pub async fn send(req: reqwest::RequestBuilder) -> Result<(u16, String), HttpError> {
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let body = read_capped(resp, MAX_BODY).await?;
    if (200..300).contains(&status) {
        Ok((status, body))
    } else {
        Err(HttpError::Status { status, body })
    }
}

/// The body as text, read chunk by chunk and abandoned (the connection dropped) as soon as it
/// passes `cap`: a hostile answer costs at most `cap` bytes of memory, never its whole length.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<String, HttpError> {
    let too_large = || HttpError::Body(format!("reply larger than {} MiB", cap >> 20));
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    // What `Response::text` does for these services' JSON: UTF-8, invalid sequences replaced.
    Ok(match String::from_utf8(body) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// [`send`], then parse the 2xx body as JSON.
pub(crate) async fn send_json(req: reqwest::RequestBuilder) -> Result<serde_json::Value, HttpError> {
    let (_, body) = send(req).await?;
    serde_json::from_str(&body).map_err(|e| HttpError::Body(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A one-shot HTTP server on port 0 that answers every connection with `head` and then
    /// `body_bytes` of 'x' (chunked when `head` says so); counts the requests it got.
    async fn serve(head: String, body_bytes: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let head = head.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    if s.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunked = head.contains("chunked");
                    let piece = vec![b'x'; 64 * 1024];
                    let mut left = body_bytes;
                    while left > 0 {
                        let n = left.min(piece.len());
                        let frame = if chunked {
                            [format!("{n:x}\r\n").into_bytes(), piece[..n].to_vec(), b"\r\n".to_vec()].concat()
                        } else {
                            piece[..n].to_vec()
                        };
                        if s.write_all(&frame).await.is_err() {
                            return; // the client hung up: what a capped reader does
                        }
                        left -= n;
                    }
                    if chunked {
                        let _ = s.write_all(b"0\r\n\r\n").await;
                    }
                });
            }
        });
        (url, hits)
    }

    #[tokio::test]
    async fn a_body_over_the_cap_fails_without_being_read_whole() {
        let client = client(None).client().unwrap().clone();
        let (url, _) = serve(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".into(),
            50 << 20,
        )
        .await;
        let t0 = std::time::Instant::now();
        let e = send(client.get(&url)).await.unwrap_err();
        assert_eq!(e, HttpError::Body("reply larger than 1 MiB".into()));
        // It stopped at the cap instead of reading 50 MB (which takes far longer on a debug build).
        assert!(t0.elapsed() < std::time::Duration::from_secs(5), "{:?}", t0.elapsed());
        // A declared length over the cap fails before any of the body is read.
        let (url, _) = serve(format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", 2 << 20), 0).await;
        assert_eq!(send(client.get(&url)).await.unwrap_err(), HttpError::Body("reply larger than 1 MiB".into()));
        // Exactly the cap is fine.
        let (url, _) = serve(format!("HTTP/1.1 200 OK\r\ncontent-length: {MAX_BODY}\r\n\r\n"), MAX_BODY).await;
        assert_eq!(send(client.get(&url)).await.unwrap().1.len(), MAX_BODY);
        // A non-2xx answer over the cap is the same failure.
        let (url, _) = serve("HTTP/1.1 500 Oops\r\ntransfer-encoding: chunked\r\n\r\n".into(), 3 << 20).await;
        assert_eq!(send(client.get(&url)).await.unwrap_err(), HttpError::Body("reply larger than 1 MiB".into()));
    }

    #[tokio::test]
    async fn redirects_are_not_followed() {
        let client = client(None).client().unwrap().clone();
        let (elsewhere, hits) = serve("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".into(), 0).await;
        for status in
            ["301 Moved Permanently", "302 Found", "303 See Other", "307 Temporary Redirect", "308 Permanent Redirect"]
        {
            let (url, _) =
                serve(format!("HTTP/1.1 {status}\r\nlocation: {elsewhere}/stolen\r\ncontent-length: 0\r\n\r\n"), 0)
                    .await;
            let e = send(client.post(&url).header("X-Admin-Token", "t").body("secret body")).await.unwrap_err();
            assert!(matches!(e, HttpError::Status { status: 300..=399, .. }), "{status}: {e:?}");
        }
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0, "a redirect was followed");
    }

    #[tokio::test]
    async fn transport_errors_never_carry_the_url_or_its_credentials() {
        let client = client(None).client().unwrap().clone();
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let e = send(client.get(format!("http://user:hunter2@127.0.0.1:{port}/x"))).await.unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = send(client.get("ftp://user:hunter2@127.0.0.1/x")).await.unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
