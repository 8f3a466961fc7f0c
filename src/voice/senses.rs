//! The tools that ask another machine: think_hard (llama-swap) and take_photo (dotty-behaviour).

use super::Voice;
use crate::services::{dotty_behaviour, thinker, HttpError};
use crate::text::{first_chars, strip};

pub(super) async fn think_hard(v: &Voice, question: &str) -> String {
    let q = strip(question);
    if q.is_empty() {
        return "(empty question)".into();
    }
    match thinker::ask(&v.http, &v.cfg, q).await {
        Ok(answer) => first_chars(strip(&answer), 500).to_string(),
        Err(HttpError::Timeout) => {
            crate::diag!("think_hard: no answer within {:?}", v.cfg.thinker_timeout);
            "(I'm slow today, try again in a moment)".into()
        }
        Err(e) => {
            crate::diag!("think_hard: {e}");
            "(thinking failed)".into()
        }
    }
}

pub(super) async fn take_photo(v: &Voice) -> String {
    match dotty_behaviour::take_photo(&v.http, &v.cfg).await {
        Ok(description) => description,
        Err(e) => {
            crate::diag!("take_photo: {e}");
            "(I can't see anything fresh right now)".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The tools that reach a home service answer their failure reply when the HTTP client could
    /// not be built: the failure reaches them, never a default client (which follows redirects).
    #[tokio::test]
    async fn a_client_that_could_not_be_built_gives_the_failure_replies_and_sends_nothing() {
        // A thinker and a behaviour daemon in one, answering anything: a usable client reaches it.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 8192];
                let _ = s.read(&mut buf).await;
                let body = r#"{"choices":[{"message":{"content":"because"}}],"description":"a cat"}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(format!("{head}{body}").as_bytes()).await;
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let vars = [
            ("DOTTY_BRAIN_DB", dir.path().join("brain.db").display().to_string()),
            ("DOTTY_BEHAVIOUR_URL", url.clone()),
            ("VOICE_THINKER_URL", format!("{url}/v1/chat/completions")),
        ];
        let (cfg, _) = crate::config::VoiceConfig::from_lookup(&|k: &str| {
            vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        });
        let mut v = Voice::new(cfg);
        assert_eq!(think_hard(&v, "why?").await, "because");
        assert_eq!(take_photo(&v).await, "a cat");
        let before = hits.load(std::sync::atomic::Ordering::SeqCst);
        v.http = crate::services::Http::from(crate::http::failed_build());
        assert_eq!(think_hard(&v, "why?").await, "(thinking failed)");
        assert_eq!(take_photo(&v).await, "(I can't see anything fresh right now)");
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), before, "a request was sent");
    }
}
