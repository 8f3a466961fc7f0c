//! llama-swap: one non-streaming chat completion with thinking switched off.

use super::{send_json, Http, HttpError};
use crate::config::VoiceConfig;
use serde_json::{json, Value};

pub(crate) const SYSTEM_PROMPT: &str = "Answer the user's question concisely in 1-2 sentences. Be precise.";

/// The request body, in the contract's key order. `enable_thinking: false` is essential: otherwise
/// the model spends its 200 tokens reasoning.
pub(crate) fn request_body(model: &str, question: &str) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question}
        ],
        "max_tokens": 200,
        "temperature": 0.3,
        "stream": false,
        "chat_template_kwargs": {"enable_thinking": false}
    })
}

/// `choices[0].message.content` (missing or null → empty). No `choices`, an empty list or no
/// `message` is a failure.
pub(crate) fn answer_of(v: &Value) -> Result<String, HttpError> {
    let message = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(|c| c.get("message"))
        .ok_or_else(|| HttpError::Body("no choices[0].message".into()))?;
    Ok(match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => return Err(HttpError::Body(format!("message.content is not a string: {other}"))),
    })
}

pub(crate) async fn ask(http: &Http, cfg: &VoiceConfig, question: &str) -> Result<String, HttpError> {
    let body =
        serde_json::to_vec(&request_body(&cfg.thinker_model, question)).map_err(|e| HttpError::Body(e.to_string()))?;
    let req = http
        .client()?
        .post(&cfg.thinker_url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .timeout(cfg.thinker_timeout);
    answer_of(&send_json(req).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_exact_and_ordered() {
        let b = serde_json::to_string(&request_body("m", "why \"sky\"?")).unwrap();
        assert_eq!(
            b,
            r#"{"model":"m","messages":[{"role":"system","content":"Answer the user's question concisely in 1-2 sentences. Be precise."},{"role":"user","content":"why \"sky\"?"}],"max_tokens":200,"temperature":0.3,"stream":false,"chat_template_kwargs":{"enable_thinking":false}}"#
        );
    }

    #[test]
    fn answers() {
        assert_eq!(answer_of(&json!({"choices":[{"message":{"content":" hi "}}]})).unwrap(), " hi ");
        assert_eq!(answer_of(&json!({"choices":[{"message":{"content":null}}]})).unwrap(), "");
        assert_eq!(answer_of(&json!({"choices":[{"message":{}}]})).unwrap(), "");
        assert!(answer_of(&json!({"choices":[]})).is_err());
        assert!(answer_of(&json!({"choices":[{}]})).is_err());
        assert!(answer_of(&json!({})).is_err());
        assert!(answer_of(&json!([1])).is_err());
    }
}
