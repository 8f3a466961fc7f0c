//! The home services, each with one harmless GET and its configured timeout: dotty-behaviour
//! (`/api/voice/person_review_status`), llama-swap (`/v1/models` next to the completions URL),
//! xiaozhi-server's admin API (`/xiaozhi/admin/songs`, with the token).

use super::Check;
use crate::config::VoiceConfig;
use crate::http::{client, BuildError};
use crate::services::{send, HttpError};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The client, or the failed check `name` that says it could not be built (no fallback client).
fn built(name: &str, client: Result<reqwest::Client, BuildError>) -> Result<reqwest::Client, Check> {
    client.map_err(|e| Check::fail(name, e.to_string(), "report it: the HTTP client can't be built here"))
}

pub async fn check(cfg: &VoiceConfig) -> Vec<Check> {
    if !cfg.enabled {
        return vec![Check::ok("services", "not used (DOTTY_VOICE_TOOLS=0)")];
    }
    let tcp = match built("services", client(None)) {
        Ok(c) => c,
        Err(failed) => return vec![failed],
    };
    let (a, b, c) = tokio::join!(behaviour(cfg, &tcp), thinker(cfg, &tcp), xiaozhi(cfg, &tcp));
    vec![a, b, c]
}

/// dotty-behaviour's review classifier, asked about a person named `doctor`.
async fn behaviour(cfg: &VoiceConfig, tcp: &reqwest::Client) -> Check {
    probe(
        "dotty-behaviour",
        tcp.get(format!("{}/api/voice/person_review_status?person_id=doctor", cfg.behaviour_url))
            .timeout(cfg.behaviour_timeout),
        cfg.behaviour_timeout,
        |v| format!("needs_review={}", v.get("needs_review").map_or("<missing>".into(), Value::to_string)),
        "start dotty-behaviour or set DOTTY_BEHAVIOUR_URL to where it listens",
    )
    .await
}

/// llama-swap's model list, and whether `VOICE_THINKER_MODEL` is in it (a warning when not).
async fn thinker(cfg: &VoiceConfig, tcp: &reqwest::Client) -> Check {
    let model = cfg.thinker_model.clone();
    let mut c = probe(
        "llama-swap",
        tcp.get(models_url(&cfg.thinker_url)).timeout(cfg.thinker_timeout),
        cfg.thinker_timeout,
        move |v| {
            let ids: Vec<&str> = v
                .get("data")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).collect())
                .unwrap_or_default();
            let among = if ids.contains(&model.as_str()) { "among them" } else { "NOT among them" };
            format!("{} models, {model} {among}", ids.len())
        },
        "start llama-swap or set VOICE_THINKER_URL to its /v1/chat/completions",
    )
    .await;
    if c.status == super::Status::Ok && c.detail.contains("NOT among them") {
        c.status = super::Status::Warn;
        c.fix = Some(
            "set VOICE_THINKER_MODEL to one of llama-swap's models, or add the model to llama-swap's config".into(),
        );
    }
    c
}

/// xiaozhi-server's admin API (its song list, with the token), over TCP or its UNIX socket.
async fn xiaozhi(cfg: &VoiceConfig, tcp: &reqwest::Client) -> Check {
    let (http, base) = if let Some(sock) = &cfg.admin_socket {
        match built("xiaozhi admin", client(Some(sock))) {
            Ok(c) => (c, "http://localhost".to_string()),
            Err(failed) => return failed,
        }
    } else if let Some(host) = &cfg.xiaozhi_host {
        let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.clone() };
        (tcp.clone(), format!("http://{host}:{}", cfg.xiaozhi_port))
    } else {
        return Check::warn(
            "xiaozhi admin",
            "not configured: play_song can't reach xiaozhi-server",
            "set XIAOZHI_HOST (and XIAOZHI_HTTP_PORT) or XIAOZHI_ADMIN_SOCKET",
        );
    };
    let mut req = http.get(format!("{base}/xiaozhi/admin/songs")).timeout(cfg.xiaozhi_timeout);
    if let Some(t) = &cfg.admin_token {
        req = req.header("X-Admin-Token", t.expose());
    }
    probe(
        "xiaozhi admin",
        req,
        cfg.xiaozhi_timeout,
        |v| format!("{} songs", v.get("files").and_then(Value::as_array).map_or(0, Vec::len)),
        "start xiaozhi-server or fix XIAOZHI_HOST / XIAOZHI_HTTP_PORT / XIAOZHI_ADMIN_SOCKET",
    )
    .await
}

/// `…/v1/chat/completions` → `…/v1/models`; any other URL: `<origin>/v1/models`.
pub(crate) fn models_url(thinker_url: &str) -> String {
    if let Some(base) = thinker_url.strip_suffix("/chat/completions") {
        return format!("{base}/models");
    }
    match reqwest::Url::parse(thinker_url) {
        Ok(u) => format!("{}/v1/models", u.origin().ascii_serialization()),
        Err(_) => thinker_url.to_string(),
    }
}

async fn probe(
    name: &str,
    req: reqwest::RequestBuilder,
    timeout: Duration,
    summary: impl FnOnce(&Value) -> String,
    down_fix: &str,
) -> Check {
    let t0 = Instant::now();
    let r = send(req).await;
    let ms = t0.elapsed().as_millis();
    match r {
        Ok((status, body)) => match serde_json::from_str::<Value>(&body) {
            Ok(v) => Check::ok(name, format!("HTTP {status} in {ms} ms: {}", summary(&v))),
            Err(_) => Check::warn(
                name,
                format!("HTTP {status} in {ms} ms but not JSON: {}", crate::text::first_chars(&body, 80)),
                "check that the URL points at this service and not something else",
            ),
        },
        Err(HttpError::Status { status: s @ (401 | 403), .. }) => Check::fail(
            name,
            format!("HTTP {s} in {ms} ms: the token was refused"),
            "set DOTTY_ADMIN_TOKEN to the admin token xiaozhi-server is configured with",
        ),
        Err(HttpError::Status { status, body }) => Check::fail(
            name,
            format!("HTTP {status} in {ms} ms: {}", crate::text::first_chars(&body, 80)),
            "check the service's own log; the URL may point at the wrong service or path",
        ),
        Err(HttpError::Timeout) => {
            Check::fail(name, format!("no answer within {} ms", timeout.as_millis()), down_fix.to_string())
        }
        Err(e) => Check::fail(name, format!("unreachable: {e}"), down_fix.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Answers every request with `status` and `body`.
    async fn serve(status: &'static str, body: &'static str) -> u16 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).as_bytes()).await;
            }
        });
        port
    }

    fn cfg(vars: &[(&str, String)]) -> VoiceConfig {
        let map: std::collections::HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        VoiceConfig::from_lookup(&move |k: &str| map.get(k).cloned()).0
    }

    #[test]
    fn models_url_sits_next_to_completions() {
        assert_eq!(models_url("http://localhost:8080/v1/chat/completions"), "http://localhost:8080/v1/models");
        assert_eq!(models_url("http://h:1/other"), "http://h:1/v1/models");
    }

    #[tokio::test]
    async fn up_down_and_refused_token() {
        let ok = serve("200 OK", r#"{"needs_review":false,"files":["a.mp3"],"data":[{"id":"m"}]}"#).await;
        let refused = serve("401 Unauthorized", r#"{"error":"bad token"}"#).await;
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let c = cfg(&[
            ("DOTTY_BEHAVIOUR_URL", format!("http://127.0.0.1:{ok}")),
            ("VOICE_THINKER_URL", format!("http://127.0.0.1:{dead}/v1/chat/completions")),
            ("VOICE_THINKER_MODEL", "m".into()),
            ("XIAOZHI_HOST", "127.0.0.1".into()),
            ("XIAOZHI_HTTP_PORT", refused.to_string()),
            ("DOTTY_ADMIN_TOKEN", "wrong".into()),
        ]);
        let r = check(&c).await;
        assert_eq!(r[0].status, Status::Ok, "{r:?}");
        assert!(r[0].detail.contains("needs_review=false"));
        assert_eq!(r[1].status, Status::Fail);
        assert!(r[1].detail.starts_with("unreachable"), "{}", r[1].detail);
        assert_eq!(r[2].status, Status::Fail);
        assert!(r[2].detail.contains("401") && r[2].fix.as_deref().unwrap().contains("DOTTY_ADMIN_TOKEN"));
    }
}
