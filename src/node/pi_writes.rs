//! pi's own MCP writes (its `tool_call` and `tool_result` events) handed to the core, which
//! redacts a storing call's input and says what it replaced (`feed/redact/pi_writes.rs`).

use super::ext;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

/// pi's `tool_call` (its `toolCallId`, `toolName` and `input`): the input with every secret
/// redacted when the call stores into a MemPalace server of pi's own `mcp.json` (the entry puts
/// its keys in place of `event.input`'s), else null: leave the input as it is.
#[napi]
pub fn redact_pi_write(env: Env, tool_call_id: String, tool_name: String, input: Unknown) -> Result<Option<Value>> {
    // Only a call the core may change is read off the JS heap (a `write` call's input may be large).
    if !ext().handles_tool_call(&tool_name) {
        return Ok(None);
    }
    let input: Value = env.from_js_value(input)?;
    Ok(ext().on_tool_call(&tool_call_id, &tool_name, input))
}

/// pi's `tool_result` (its `toolCallId` and `parentToolCallId`): the text block that tells the model
/// what was redacted from that call (kinds and counts), else null.
#[napi]
pub fn note_pi_write(tool_call_id: String, parent_tool_call_id: Option<String>) -> Option<String> {
    ext().on_tool_result(&tool_call_id, parent_tool_call_id.as_deref())
}
