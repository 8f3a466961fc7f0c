//! Production's direct calls (src/tools/<tool>.ts): thin conversions to `crate::voice::direct`.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

/// Runs the voice tool `name` once, outside pi, and resolves with its reply: `args` as the model
/// would pass them (`{"question": …}`), `options` production's per-call overrides (`dbPath`,
/// `sessionId`, `baseUrl`, `timeoutMs`, `url`, `timeoutSec`, `model`, `host`, `port`). Reads the
/// extension's environment; never starts the palace bridge or anything that outlives the call.
#[napi]
pub async fn direct_call(name: String, args: Option<Value>, options: Option<Value>) -> Result<String> {
    let (args, options) = (args.unwrap_or(Value::Null), options.unwrap_or(Value::Null));
    crate::voice::direct::call(&name, &args, &options).await.map_err(|e| Error::new(Status::InvalidArg, e.to_string()))
}

/// [`direct_call`] for memory_lookup, remember and recall_person, returning the reply
/// synchronously (production's signatures): blocks until brain.db answered, a write until it
/// committed.
#[napi]
pub fn direct_call_sync(name: String, args: Option<Value>, options: Option<Value>) -> Result<String> {
    let (args, options) = (args.unwrap_or(Value::Null), options.unwrap_or(Value::Null));
    crate::voice::direct::call_blocking(&name, &args, &options)
        .map_err(|e| Error::new(Status::InvalidArg, e.to_string()))
}
