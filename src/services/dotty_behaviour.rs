//! dotty-behaviour: the person-review classifier and the cached camera description.

use super::{send_json, Http, HttpError};
use crate::config::VoiceConfig;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// What JavaScript's `encodeURIComponent` leaves alone, so query strings match the TypeScript original.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

pub(crate) fn encode_component(s: &str) -> String {
    utf8_percent_encode(s, URI_COMPONENT).to_string()
}

/// The classifier's verdict. Fails closed: only a 2xx answer whose `needs_review` is exactly JSON
/// `false` approves; anything else (including every failure) holds the fact for review.
#[derive(Debug, PartialEq)]
pub(crate) enum Review {
    Approved,
    Held(String),
}

pub(crate) async fn person_review(http: &Http, cfg: &VoiceConfig, name: &str) -> Review {
    let url = format!("{}/api/voice/person_review_status?person_id={}", cfg.behaviour_url, encode_component(name));
    let answer = match http.client() {
        Ok(c) => send_json(c.get(url).timeout(cfg.behaviour_timeout)).await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(v) if v.get("needs_review") == Some(&serde_json::Value::Bool(false)) => Review::Approved,
        Ok(v) => Review::Held(format!(
            "classifier said needs_review={}",
            v.get("needs_review").map_or("<missing>".into(), |x| x.to_string())
        )),
        Err(e) => Review::Held(format!("classifier unavailable: {e}")),
    }
}

/// The daemon's latest description, when it gives a non-empty string.
pub(crate) async fn take_photo(http: &Http, cfg: &VoiceConfig) -> Result<String, HttpError> {
    let url = format!("{}/api/voice/take_photo", cfg.behaviour_url);
    let v = send_json(http.client()?.get(url).timeout(cfg.behaviour_timeout)).await?;
    match v.get("description") {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(HttpError::Body("no description".into())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn encodes_like_encode_uri_component() {
        assert_eq!(super::encode_component("Ada Lovelace & co/?#é"), "Ada%20Lovelace%20%26%20co%2F%3F%23%C3%A9");
        assert_eq!(super::encode_component("a-b_c.d!e~f*g'h(i)"), "a-b_c.d!e~f*g'h(i)");
    }
}
