//! JSON-RPC 2.0 message shapes as MCP uses them: what we send (requests, notifications, our
//! replies, the `initialize` params) and what a server's message is ([`parse`]). A leaf that
//! knows only [`McpError`]; the framings that carry these messages are in `framing`.

use super::error::McpError;
use serde::Deserialize;
use serde_json::{json, Value};

/// The MCP protocol version this client asks for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions a server may answer with that this client understands.
pub const KNOWN_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The `initialize` params this client sends (also when an HTTP session is re-initialized).
pub(crate) fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "dotty-pi-ext", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// A request line/body.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification (no id: the server sends no reply).
pub(crate) fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(p) => json!({"jsonrpc": "2.0", "method": method, "params": p}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

/// `notifications/cancelled` for request `id`.
pub fn cancelled(id: u64, reason: &str) -> Value {
    notification("notifications/cancelled", Some(json!({"requestId": id, "reason": reason})))
}

/// A reply of ours to a request the server sent us.
pub fn reply(id: Value, outcome: Result<Value, (i64, &str)>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// What a message from the server is.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A reply to one of our requests (our ids are integers).
    Response { id: u64, outcome: Result<Value, RpcError> },
    /// A reply whose id isn't one of ours (e.g. `null` on a -32700 parse error); the id as text.
    Orphan(String),
    /// The server asks us something (`ping`, `roots/list`...): it needs a reply.
    Request { id: Value, method: String },
    /// A server notification (logging, progress, list_changed...).
    Notification { method: String },
    /// JSON, but not JSON-RPC.
    Invalid(String),
    /// Not JSON at all.
    NotJson,
}

/// The envelope, parsed typed: only what routing needs is kept, `params` of a server request are
/// skipped without being built, and the `result` becomes a `Value` once, directly from the bytes
/// (no intermediate `Value` of the whole message to pick apart and copy). Only a JSON object is an
/// envelope: a derived `Deserialize` would also take an array of the fields in order (found by
/// fuzz/: `[null, "ping"]` was a `ping` notification).
struct Envelope {
    id: Option<Value>,
    method: Option<String>,
    /// `Some` for any value, `null` included: a `"result": null` is still a result.
    result: Option<Value>,
    error: Option<Value>,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Envelope;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Envelope, A::Error> {
                let mut env = Envelope { id: None, method: None, result: None, error: None };
                let mut seen = [false; 4];
                while let Some(key) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    let slot = match key.as_ref() {
                        "id" => 0,
                        "method" => 1,
                        "result" => 2,
                        "error" => 3,
                        _ => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    // A repeated key is ambiguous (which one counts?): not a message.
                    if std::mem::replace(&mut seen[slot], true) {
                        return Err(serde::de::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    match slot {
                        0 => env.id = m.next_value()?,
                        1 => env.method = m.next_value()?,
                        2 => env.result = Some(m.next_value()?),
                        _ => env.error = m.next_value()?,
                    }
                }
                Ok(env)
            }
        }
        d.deserialize_map(Fields)
    }
}

/// Parses and classifies one message (a stdio line, an SSE event, one element of an HTTP body).
pub fn parse(bytes: &[u8]) -> Incoming {
    match serde_json::from_slice::<Envelope>(bytes) {
        Ok(env) => classify(env),
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            Incoming::Invalid("not a JSON-RPC object".into())
        }
        Err(_) => Incoming::NotJson,
    }
}

/// Parses an HTTP body: one message or a batch (array) of them; [`McpError::Protocol`] when it is
/// neither.
pub fn parse_body(bytes: &[u8]) -> Result<Vec<Incoming>, McpError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let batch: Vec<Envelope> = serde_json::from_slice(bytes)
            .map_err(|e| McpError::Protocol(format!("the reply is not a JSON-RPC batch ({e})")))?;
        return Ok(batch.into_iter().map(classify).collect());
    }
    match parse(bytes) {
        Incoming::NotJson => Err(McpError::Protocol("the reply is not JSON".into())),
        m => Ok(vec![m]),
    }
}

fn classify(env: Envelope) -> Incoming {
    let Envelope { id, method, result, error } = env;
    if let Some(method) = method {
        return match id {
            Some(id) => Incoming::Request { id, method },
            None => Incoming::Notification { method },
        };
    }
    if result.is_none() && error.is_none() {
        return Incoming::Invalid("neither method, result nor error".into());
    }
    let Some(id) = id.as_ref().and_then(Value::as_u64) else {
        return Incoming::Orphan(
            id.map_or_else(|| "null".into(), |v| crate::text::first_chars(&v.to_string(), 64).to_string()),
        );
    };
    let outcome = match error {
        Some(e) => Err(RpcError {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            message: e.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_string(),
            data: e.get("data").cloned(),
        }),
        None => Ok(result.unwrap_or(Value::Null)),
    };
    Incoming::Response { id, outcome }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_shapes() {
        let p = |v: Value| parse(v.to_string().as_bytes());
        assert_eq!(
            p(json!({"jsonrpc":"2.0","id":3,"result":{"a":1}})),
            Incoming::Response { id: 3, outcome: Ok(json!({"a":1})) }
        );
        assert_eq!(
            p(json!({"jsonrpc":"2.0","id":3,"result":null})),
            Incoming::Response { id: 3, outcome: Ok(Value::Null) }
        );
        let e = p(json!({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Unknown tool: x"}}));
        assert!(matches!(e, Incoming::Response { id: 4, outcome: Err(RpcError { code: -32601, .. }) }));
        assert_eq!(
            p(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})),
            Incoming::Orphan("null".into())
        );
        assert_eq!(
            p(json!({"jsonrpc":"2.0","id":"a","method":"ping","params":{"big":[1,2,3]}})),
            Incoming::Request { id: json!("a"), method: "ping".into() }
        );
        assert_eq!(
            p(json!({"jsonrpc":"2.0","method":"notifications/message"})),
            Incoming::Notification { method: "notifications/message".into() }
        );
        assert!(matches!(p(json!([1])), Incoming::Invalid(_)));
        assert!(matches!(p(json!({"x":1})), Incoming::Invalid(_)));
        assert_eq!(parse(b"this is not json {{{"), Incoming::NotJson);
        let batch = parse_body(br#" [{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","id":7,"result":1}]"#).unwrap();
        assert_eq!(batch[1], Incoming::Response { id: 7, outcome: Ok(json!(1)) });
        assert_eq!(parse_body(b"nope").unwrap_err(), McpError::Protocol("the reply is not JSON".into()));
        // Found by fuzz/ (jsonrpc): an array is not a message, whatever its elements.
        assert!(matches!(parse(br#"[null, "ping"]"#), Incoming::Invalid(_)));
        assert!(matches!(parse(br#"[7, null, {"a": 1}]"#), Incoming::Invalid(_)));
        assert!(parse_body(br#"[[null, "ping"]]"#).is_err());
        assert!(matches!(parse(br#"{"id": 1, "id": 2, "result": 1}"#), Incoming::Invalid(_)), "a duplicate key");
        // Escaped keys are the same keys.
        assert_eq!(parse(br#"{"\u0069d": 5, "result": 1}"#), Incoming::Response { id: 5, outcome: Ok(json!(1)) });
    }
}
