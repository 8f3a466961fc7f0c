//! xiaozhi-server's admin API: the song catalogue (cached) and play-asset, over TCP or a UNIX socket.

use super::{send, send_json, Http, HttpError};
use crate::config::VoiceConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fetched catalogue (an empty one too) is reused.
pub(crate) const CATALOGUE_TTL: Duration = Duration::from_secs(60);

/// The admin endpoint, when one is configured.
pub(crate) struct Admin {
    http: Http,
    base: String,
    token: Option<crate::env::Secret>,
    timeout: Duration,
    // A tokio Mutex on purpose: it is held across the catalogue fetch, so calls that arrive while a
    // fetch is in flight wait for it and share its result instead of fetching again.
    catalogue: tokio::sync::Mutex<Option<(Instant, Arc<Vec<String>>)>>,
    catalogue_fetches: std::sync::atomic::AtomicUsize,
}

impl Admin {
    /// `None` when neither `XIAOZHI_HOST` nor `XIAOZHI_ADMIN_SOCKET` is set. `tcp` is the shared
    /// client; a UNIX socket gets a client of its own (a reqwest client binds one socket).
    pub(crate) fn new(cfg: &VoiceConfig, tcp: &Http) -> Option<Admin> {
        let (http, base) = if let Some(sock) = &cfg.admin_socket {
            (super::client(Some(sock)), "http://localhost".to_string())
        } else {
            let host = cfg.xiaozhi_host.as_ref()?;
            let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.clone() };
            (tcp.clone(), format!("http://{host}:{}", cfg.xiaozhi_port))
        };
        Some(Admin {
            http,
            base,
            token: cfg.admin_token.clone(),
            timeout: cfg.xiaozhi_timeout,
            catalogue: tokio::sync::Mutex::new(None),
            catalogue_fetches: Default::default(),
        })
    }

    /// Song catalogue fetches so far (calls that arrive during a fetch share it).
    pub(crate) fn catalogue_fetches(&self) -> usize {
        self.catalogue_fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> Result<reqwest::RequestBuilder, HttpError> {
        let mut r = self.http.client()?.request(method, format!("{}{path}", self.base)).timeout(self.timeout);
        if let Some(t) = &self.token {
            r = r.header("X-Admin-Token", t.expose());
        }
        Ok(r)
    }

    /// The song files, from cache when fresh. Any failure gives (and caches) an empty list.
    pub(crate) async fn catalogue(&self) -> Arc<Vec<String>> {
        let mut slot = self.catalogue.lock().await;
        if let Some((at, files)) = slot.as_ref() {
            if at.elapsed() < CATALOGUE_TTL {
                return files.clone();
            }
        }
        self.catalogue_fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let fetched = match self.request(reqwest::Method::GET, "/xiaozhi/admin/songs") {
            Ok(req) => send_json(req).await,
            Err(e) => Err(e),
        };
        let files = match fetched {
            Ok(v) => plain_files(&v),
            Err(e) => {
                crate::diag!("play_song: song catalogue unavailable: {e}");
                Vec::new()
            }
        };
        let files = Arc::new(files);
        *slot = Some((Instant::now(), files.clone()));
        files
    }

    /// Asks xiaozhi-server to play `asset`. Only status 200 is success.
    pub(crate) async fn play(&self, asset: &str) -> Result<(), HttpError> {
        let req = self
            .request(reqwest::Method::POST, "/xiaozhi/admin/play-asset")?
            .json(&serde_json::json!({ "asset": asset }));
        match send(req).await {
            Ok((200, _)) => Ok(()),
            Ok((status, body)) => Err(HttpError::Status { status, body }),
            Err(e) => Err(e),
        }
    }
}

/// The string entries of the catalogue's `files` that are plain file names. The rest (a path, a
/// control character, `.`/`..`: see [`is_plain_file_name`]) is dropped, with one stderr line for
/// this fetch, so the asset sent to play-asset is always `<ASSET_BASE>/<plain name>`.
fn plain_files(v: &serde_json::Value) -> Vec<String> {
    let names = v
        .get("files")
        .and_then(|f| f.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
    let (kept, dropped): (Vec<&str>, Vec<&str>) = names.into_iter().partition(|n| is_plain_file_name(n));
    if !dropped.is_empty() {
        let shown: Vec<String> = dropped
            .iter()
            .take(3)
            .map(|n| crate::text::first_chars(&n.escape_default().to_string(), 64).to_string())
            .collect();
        crate::diag!(
            "play_song: dropped {} catalogue entries that are not plain file names (e.g. {})",
            dropped.len(),
            shown.join(", ")
        );
    }
    kept.into_iter().map(str::to_string).collect()
}

/// A name that can only mean a file directly inside the asset folder: not empty, not `.` or `..`,
/// and without `/`, `\`, NUL or any other control character.
pub(crate) fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.chars().any(|c| c == '/' || c == '\\' || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_plain_file_names_are_kept() {
        for bad in [
            "../../etc/shadow.mp3",
            "a/b.mp3",
            "..",
            ".",
            "",
            "back\\slash.mp3",
            "nul\0.mp3",
            "bell\u{7}.mp3",
            "nl\n.mp3",
            "c1\u{85}.mp3",
            "del\u{7f}.mp3",
            "dir/",
        ] {
            assert!(!is_plain_file_name(bad), "{bad:?}");
        }
        for good in ["Rain.mp3", "..hidden.mp3", "a..b.mp3", ".mp3", "Baby Shark (Remix).ogg", "héé.mp3", "…"] {
            assert!(is_plain_file_name(good), "{good:?}");
        }
    }

    #[test]
    fn the_catalogue_keeps_plain_strings_in_order() {
        let v = json!({"files": ["../x.mp3", "B.mp3", 7, null, "a/b", "A.mp3"]});
        assert_eq!(plain_files(&v), vec!["B.mp3", "A.mp3"]);
        assert!(plain_files(&json!({"files": "A.mp3"})).is_empty());
        assert!(plain_files(&json!([])).is_empty());
    }
}
