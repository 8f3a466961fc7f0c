//! play_song: resolve a spoken name against xiaozhi's catalogue, then ask xiaozhi to play it.

use super::songs::{best_match, no_match_reply};
use super::Voice;
use crate::services::HttpError;
use crate::text::{first_chars, strip, without_extension};

pub(super) async fn play_song(v: &Voice, name: &str) -> String {
    let n = strip(name);
    if n.is_empty() {
        return "(no song name given)".into();
    }
    let Some(admin) = &v.admin else {
        return "(can't reach xiaozhi-server)".into();
    };
    let catalogue = admin.catalogue().await;
    if catalogue.is_empty() {
        return "(song catalogue is empty)".into();
    }
    let Some(file) = best_match(n, &catalogue) else {
        return no_match_reply(n, &catalogue);
    };
    let asset = format!("{}/{file}", v.cfg.song_asset_base);
    match admin.play(&asset).await {
        Ok(()) => format!("playing {}", without_extension(file)),
        Err(HttpError::Status { status, body }) => {
            format!("(couldn't play {file}: HTTP {status}: {})", first_chars(&body, 120))
        }
        Err(e) => {
            crate::diag!("play_song: {file}: {e}");
            format!("(couldn't play {file}: {e})")
        }
    }
}
