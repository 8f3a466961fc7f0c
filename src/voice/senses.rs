//! The tools that ask another machine: think_hard (llama-swap) and take_photo (dotty-behaviour).

use super::Voice;
use crate::services::{dotty_behaviour, thinker, HttpError};
use crate::text::{first_chars, strip};

pub async fn think_hard(v: &Voice, question: &str) -> String {
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

pub async fn take_photo(v: &Voice) -> String {
    match dotty_behaviour::take_photo(&v.http, &v.cfg).await {
        Ok(description) => description,
        Err(e) => {
            crate::diag!("take_photo: {e}");
            "(I can't see anything fresh right now)".into()
        }
    }
}
