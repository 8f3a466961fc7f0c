//! `agent_end`'s messages off the JS heap: only what the turn log reads leaves it.

use super::ext;
use crate::extension::{counts_block, reads_content, Content, Message};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

/// pi's `agent_end`: queues the turn's conversation row and a debounced transcript feed, and
/// returns at once. Returns true when a row write was queued (false: nothing to log, a repeat of a
/// logged turn, or voice tools off). Never throws: odd input is reported on stderr.
#[napi]
pub fn log_turn(env: Env, messages: Unknown) -> bool {
    match turn_messages(&env, messages) {
        Ok(messages) => ext().on_agent_end(&messages),
        Err(e) => {
            crate::diag!("turn log: unreadable agent_end messages: {e}");
            ext().on_agent_end(&[])
        }
    }
}

/// `agent_end`'s messages as [`Message`]s, read on the JS thread before the handler
/// returns: a content only where [`reads_content`] says, a block's text only where
/// [`counts_block`] does, so nothing else (images, tool results) leaves the JS heap.
fn turn_messages(env: &Env, messages: Unknown) -> Result<Vec<Message>> {
    if !messages.is_array()? {
        return Ok(Vec::new());
    }
    // SAFETY: `cast` doesn't check the type; `is_array` just did.
    let list: Array = unsafe { messages.cast()? };
    let mut out = Vec::with_capacity(list.len() as usize);
    for i in 0..list.len() {
        let Some(m) = list.get::<Unknown>(i)? else { continue };
        let Some(m) = object(m)? else {
            out.push(Message::default());
            continue;
        };
        let role = string(env, m.get("role")?)?.unwrap_or_default();
        let timestamp = match m.get::<Unknown>("timestamp")? {
            Some(t) if matches!(t.get_type()?, ValueType::Number | ValueType::String) => {
                Some(env.from_js_value::<Value, _>(t)?.to_string())
            }
            _ => None,
        };
        let content = if reads_content(&role) { content(env, m.get("content")?)? } else { Content::Absent };
        out.push(Message { role, timestamp, content });
    }
    Ok(out)
}

fn content(env: &Env, content: Option<Unknown>) -> Result<Content> {
    let Some(content) = content else { return Ok(Content::Absent) };
    if content.get_type()? == ValueType::String {
        return Ok(Content::Text(env.from_js_value(content)?));
    }
    if !content.is_array()? {
        return Ok(Content::Absent);
    }
    // SAFETY: `cast` doesn't check the type; `is_array` just did.
    let blocks: Array = unsafe { content.cast()? };
    let mut texts = Vec::new();
    for i in 0..blocks.len() {
        let Some(b) = blocks.get::<Unknown>(i)?.map(object).transpose()?.flatten() else { continue };
        if !string(env, b.get("type")?)?.is_some_and(|t| counts_block(&t)) {
            continue;
        }
        if let Some(text) = string(env, b.get("text")?)? {
            texts.push(text);
        }
    }
    Ok(Content::Blocks(texts))
}

/// `v` as an object, when it is one.
fn object(v: Unknown) -> Result<Option<Object>> {
    if v.get_type()? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `cast` doesn't check the type; `get_type` just said Object.
    Ok(Some(unsafe { v.cast()? }))
}

/// `v` as a string, when it is one.
fn string(env: &Env, v: Option<Unknown>) -> Result<Option<String>> {
    match v {
        Some(v) if v.get_type()? == ValueType::String => Ok(Some(env.from_js_value(v)?)),
        _ => Ok(None),
    }
}
