//! JSON-RPC 2.0 message shapes and the two framings MCP uses: newline-delimited (stdio) and
//! Server-Sent Events (Streamable HTTP).

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// A request line/body.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification (no id: the server sends no reply).
pub fn notification(method: &str, params: Option<Value>) -> Value {
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
    /// A reply whose id isn't one of ours (e.g. `null` on a -32700 parse error).
    Orphan(Value),
    /// The server asks us something (`ping`, `roots/list`...): it needs a reply.
    Request { id: Value, method: String },
    /// A server notification (logging, progress, list_changed...).
    Notification { method: String },
    /// JSON, but not JSON-RPC.
    Invalid(String),
}

/// Classifies one parsed message.
pub fn classify(v: Value) -> Incoming {
    let Value::Object(mut m) = v else {
        return Incoming::Invalid("not a JSON object".into());
    };
    if let Some(method) = m.get("method").and_then(Value::as_str).map(String::from) {
        return match m.remove("id") {
            Some(id) if !id.is_null() => Incoming::Request { id, method },
            _ => Incoming::Notification { method },
        };
    }
    let has_result = m.contains_key("result");
    let error = m.remove("error");
    if !has_result && error.is_none() {
        return Incoming::Invalid("neither method, result nor error".into());
    }
    let id = match m.get("id").and_then(Value::as_u64) {
        Some(id) => id,
        None => return Incoming::Orphan(Value::Object(m)),
    };
    let outcome = match error {
        Some(e) => Err(RpcError {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            message: e.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_string(),
            data: e.get("data").cloned(),
        }),
        None => Ok(m.remove("result").unwrap_or(Value::Null)),
    };
    Incoming::Response { id, outcome }
}

/// The outcome of reading one line with a size cap.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A complete line (without its `\n`/`\r\n`) is in the buffer.
    Ok,
    /// The line was longer than the cap: its bytes (this many) were discarded, the buffer is empty.
    TooLong(usize),
    /// End of stream (a final unterminated line, if any, is returned as `Ok` first).
    Eof,
}

/// Reads one `\n`-terminated line into `buf` (cleared first), keeping at most `cap` bytes: a
/// longer line is consumed and dropped so the next read starts at the next line.
pub async fn read_line_capped<R: AsyncBufRead + Unpin>(r: &mut R, buf: &mut Vec<u8>, cap: usize) -> std::io::Result<Line> {
    buf.clear();
    let mut discarded = 0usize;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if discarded > 0 {
                Line::TooLong(discarded)
            } else if buf.is_empty() {
                Line::Eof
            } else {
                strip_cr(buf);
                Line::Ok
            });
        }
        let nl = memchr(chunk);
        let (part, used) = match nl {
            Some(i) => (&chunk[..i], i + 1),
            None => (chunk, chunk.len()),
        };
        if discarded > 0 || buf.len() + part.len() > cap {
            discarded += buf.len() + part.len();
            buf.clear();
        } else {
            buf.extend_from_slice(part);
        }
        r.consume(used);
        if nl.is_some() {
            if discarded > 0 {
                return Ok(Line::TooLong(discarded));
            }
            strip_cr(buf);
            return Ok(Line::Ok);
        }
    }
}

fn memchr(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'\n')
}

fn strip_cr(buf: &mut Vec<u8>) {
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
}

/// An incremental Server-Sent Events parser: feed bytes, get the `data` of each complete event.
/// Only `data:` matters for MCP (`event`, `id`, `retry` and comments are ignored).
#[derive(Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    cap: usize,
}

impl SseParser {
    pub fn new(cap: usize) -> Self {
        SseParser { cap, ..Default::default() }
    }

    /// Feeds a chunk; returns the data of every event it completed. Errors when one event grows
    /// past the cap.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for &b in chunk {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.on_line(&line, &mut out);
            } else {
                self.line.push(b);
                if self.line.len() + self.data.len() > self.cap {
                    return Err(format!("an SSE event is larger than {} bytes", self.cap));
                }
            }
        }
        Ok(out)
    }

    /// Ends the stream: a last event without its blank line still counts.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.on_line(&line, &mut out);
        }
        self.on_line(b"", &mut out);
        out
    }

    fn on_line(&mut self, line: &[u8], out: &mut Vec<String>) {
        if line.is_empty() {
            if self.has_data {
                out.push(String::from_utf8_lossy(&self.data).into_owned());
            }
            self.data.clear();
            self.has_data = false;
            return;
        }
        if let Some(rest) = line.strip_prefix(b"data") {
            let value = match rest.first() {
                None => rest,
                Some(b':') => rest[1..].strip_prefix(b" ").unwrap_or(&rest[1..]),
                Some(_) => return, // a field named e.g. "dataX"
            };
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_shapes() {
        assert_eq!(classify(json!({"jsonrpc":"2.0","id":3,"result":{"a":1}})), Incoming::Response { id: 3, outcome: Ok(json!({"a":1})) });
        let e = classify(json!({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Unknown tool: x"}}));
        assert!(matches!(e, Incoming::Response { id: 4, outcome: Err(RpcError { code: -32601, .. }) }));
        assert!(matches!(classify(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})), Incoming::Orphan(_)));
        assert_eq!(classify(json!({"jsonrpc":"2.0","id":"a","method":"ping"})), Incoming::Request { id: json!("a"), method: "ping".into() });
        assert_eq!(classify(json!({"jsonrpc":"2.0","method":"notifications/message"})), Incoming::Notification { method: "notifications/message".into() });
        assert!(matches!(classify(json!([1])), Incoming::Invalid(_)));
        assert!(matches!(classify(json!({"x":1})), Incoming::Invalid(_)));
    }

    #[tokio::test]
    async fn capped_lines() {
        let input = b"short\r\n0123456789abcdef\nok\nlast".to_vec();
        // A tiny BufReader capacity makes the reader cross chunk boundaries.
        let mut r = tokio::io::BufReader::with_capacity(3, &input[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"short");
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).await.unwrap(), Line::TooLong(16));
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"ok");
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"last");
        assert_eq!(read_line_capped(&mut r, &mut buf, 8).await.unwrap(), Line::Eof);
    }

    #[test]
    fn sse_events_across_chunks() {
        let mut p = SseParser::new(1 << 20);
        let mut got = Vec::new();
        for chunk in [&b": comment\nevent: message\nda"[..], b"ta: {\"a\":\r\ndata:1}\n", b"\nid: 7\ndata: x\n\n", b"data: tail"] {
            got.extend(p.feed(chunk).unwrap());
        }
        got.extend(p.finish());
        assert_eq!(got, ["{\"a\":\n1}", "x", "tail"]);
        let mut small = SseParser::new(4);
        assert!(small.feed(b"data: 123456\n").is_err());
    }
}
