//! The two framings MCP messages travel in, each bounded by the message cap: newline-delimited
//! lines (stdio, [`read_line_capped`] with its streaming [`IdScan`]) and Server-Sent Events
//! (Streamable HTTP, [`SseParser`]). A leaf that knows only [`McpError`]: bytes in, message bytes
//! out (or [`McpError::TooLarge`]).

use super::error::McpError;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Reads the top-level `"id"` of a message while its bytes stream past, keeping nothing else: an
/// over-long line is discarded as it arrives, yet the request it answers can still be failed at
/// once instead of waiting for its timeout. Only keys at depth 1 count (an `"id"` inside `result`
/// is not the message's), strings and escapes are tracked, and wherever the id sits (first or
/// last key) it is found.
#[derive(Default)]
pub struct IdScan {
    depth: u32,
    in_str: bool,
    esc: bool,
    /// At depth 1, the next string is a key.
    want_key: bool,
    /// The key being read (`None` once longer than any key we look for).
    key: Option<Vec<u8>>,
    /// The last complete depth-1 key.
    last_key: Vec<u8>,
    /// The raw bytes of the `id` value being read.
    id_raw: Option<Vec<u8>>,
    /// A top-level `id` value: `Some` once read.
    pub id: Option<Value>,
    /// A top-level `method` key was seen (a request or notification, not a reply).
    pub has_method: bool,
    /// A top-level `result` or `error` key was seen.
    pub has_outcome: bool,
}

/// The longest id value (its raw bytes, spaces around it included) the scan reads.
const MAX_ID_BYTES: usize = 128;

impl IdScan {
    /// Ready for the next message.
    pub(crate) fn reset(&mut self) {
        *self = IdScan::default();
    }

    /// Enough is known: the id, and whether this is a reply or a request.
    fn done(&self) -> bool {
        self.id.is_some() && (self.has_method || self.has_outcome)
    }

    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            if self.done() {
                return;
            }
            // Inside a long string value nothing matters but its end: skip to the next quote or
            // backslash at once (a 32 MiB text is one string).
            if self.in_str && !self.esc && self.key.is_none() && self.id_raw.is_none() {
                match bytes.iter().position(|&c| c == b'"' || c == b'\\') {
                    Some(i) if i > 0 => {
                        bytes = &bytes[i..];
                        continue;
                    }
                    Some(_) => {}
                    None => return,
                }
            }
            self.byte(b);
            bytes = rest;
        }
    }

    fn byte(&mut self, b: u8) {
        if let Some(raw) = self.id_raw.as_mut() {
            let ends = !self.in_str && self.depth == 1 && (b == b',' || b == b'}');
            // One byte past the limit is kept to know the value was cut: a cut value is no id (the
            // first 128 bytes of `   ...  12` or of a long number may read as another number).
            if !ends && raw.len() <= MAX_ID_BYTES {
                raw.push(b);
            }
            if ends {
                let raw = self.id_raw.take().unwrap_or_default();
                self.id = if raw.len() > MAX_ID_BYTES { None } else { serde_json::from_slice(&raw).ok() };
            }
        }
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
                if let Some(k) = self.key.take() {
                    self.last_key = k;
                }
                return;
            }
            if let Some(k) = self.key.as_mut() {
                if k.len() < 16 {
                    k.push(b);
                } else {
                    self.key = None;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_str = true;
                if self.depth == 1 && self.want_key {
                    self.key = Some(Vec::new());
                    self.want_key = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.want_key = b == b'{';
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => match self.last_key.as_slice() {
                b"id" => self.id_raw = Some(Vec::new()),
                b"method" => self.has_method = true,
                b"result" | b"error" => self.has_outcome = true,
                _ => {}
            },
            b',' if self.depth == 1 => {
                self.want_key = true;
                self.last_key.clear();
            }
            _ => {}
        }
    }
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
/// longer line is consumed and dropped as it streams (never held whole) so the next read starts at
/// the next line; its bytes go through `scan`, when given, to learn which request it answered.
pub async fn read_line_capped<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
    mut scan: Option<&mut IdScan>,
) -> std::io::Result<Line> {
    buf.clear();
    if let Some(s) = scan.as_deref_mut() {
        s.reset();
    }
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
            if let Some(s) = scan.as_deref_mut() {
                s.feed(buf);
                s.feed(part);
            }
            discarded += buf.len() + part.len();
            // Give the memory back: the kept prefix was up to `cap` bytes.
            *buf = Vec::new();
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
/// Only `data:` matters for MCP (`event`, `id`, `retry` and comments are ignored). Lines end at
/// CRLF, LF or a lone CR, and one BOM at the start of the stream is dropped, as the event-stream
/// format says (found by fuzz/: a lone CR was kept in the line, and a BOM hid the first field).
#[derive(Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    cap: usize,
    /// The last byte ended a line with CR: a LF right after it belongs to the same line end.
    after_cr: bool,
    /// The first line is over (or is known not to start with a BOM).
    started: bool,
}

const BOM: &[u8] = b"\xef\xbb\xbf";

impl SseParser {
    pub fn new(cap: usize) -> Self {
        SseParser { cap, ..Default::default() }
    }

    /// Feeds a chunk; returns the data of every event it completed. Errors when one event grows
    /// past the cap.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, McpError> {
        let mut out = Vec::new();
        for &b in chunk {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            if b == b'\n' || b == b'\r' {
                self.after_cr = b == b'\r';
                self.started = true;
                let line = std::mem::take(&mut self.line);
                self.on_line(&line, &mut out);
            } else {
                self.line.push(b);
                if !self.started && !BOM.starts_with(&self.line) {
                    self.started = true;
                } else if !self.started && self.line == BOM {
                    self.started = true;
                    self.line.clear();
                }
                if self.line.len() + self.data.len() > self.cap {
                    return Err(McpError::TooLarge { cap: self.cap });
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
    use serde_json::json;

    fn scan(s: &str) -> IdScan {
        let mut sc = IdScan::default();
        // One byte at a time and all at once must agree.
        for b in s.as_bytes() {
            sc.feed(std::slice::from_ref(b));
        }
        let mut whole = IdScan::default();
        whole.feed(s.as_bytes());
        assert_eq!((&sc.id, sc.has_method, sc.has_outcome), (&whole.id, whole.has_method, whole.has_outcome), "{s}");
        sc
    }

    #[test]
    fn id_scan_finds_the_top_level_id_anywhere() {
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":12,"result":{"content":"xxxx"#).id,
            Some(json!(12)),
            "a prefix is enough"
        );
        let s = scan(r#"{"jsonrpc":"2.0","result":{"id":99,"t":"\"id\":5,"},"id" : 7 }"#);
        assert_eq!(
            (s.id, s.has_outcome, s.has_method),
            (Some(json!(7)), true, false),
            "nested and quoted ids don't count"
        );
        let s = scan(r#"{"method":"ping","params":{"id":1},"id":"a,}b"}"#);
        assert_eq!((s.id, s.has_method), (Some(json!("a,}b")), true));
        assert_eq!(scan(r#"{"jsonrpc":"2.0","result":[1,{"id":3}]}"#).id, None);
        assert_eq!(scan(r#"{"a\\":"id","b":"\"id\":4","id":5}"#).id, Some(json!(5)), "escapes");
        assert_eq!(scan(r#"[{"id":5}]"#).id, None, "a batch is not one reply");
        // Found by fuzz/ (jsonrpc): an id value longer than the scan reads was cut to a number.
        let spaced = format!(r#"{{"id":{}1234567,"result":1}}"#, " ".repeat(124));
        assert_eq!(scan(&spaced).id, None, "cut: not 1234");
        let spaced = format!(r#"{{"id":{}1234,"result":1}}"#, " ".repeat(124));
        assert_eq!(scan(&spaced).id, Some(json!(1234)), "exactly 128 bytes");
    }

    #[tokio::test]
    async fn capped_lines() {
        let input = b"short\r\n0123456789abcdef\nok\nlast".to_vec();
        // A tiny BufReader capacity makes the reader cross chunk boundaries.
        let mut r = tokio::io::BufReader::with_capacity(3, &input[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 8, None).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"short");
        assert_eq!(read_line_capped(&mut r, &mut buf, 8, None).await.unwrap(), Line::TooLong(16));
        assert_eq!(read_line_capped(&mut r, &mut buf, 8, None).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"ok");
        assert_eq!(read_line_capped(&mut r, &mut buf, 8, None).await.unwrap(), Line::Ok);
        assert_eq!(buf, b"last");
        assert_eq!(read_line_capped(&mut r, &mut buf, 8, None).await.unwrap(), Line::Eof);
        // An over-long reply: discarded, but its id is read as it streams past.
        let input = format!("{{\"jsonrpc\":\"2.0\",\"result\":\"{}\",\"id\":41}}\nnext\n", "x".repeat(1000));
        let mut r = tokio::io::BufReader::with_capacity(64, input.as_bytes());
        let mut sc = IdScan::default();
        assert_eq!(
            read_line_capped(&mut r, &mut buf, 100, Some(&mut sc)).await.unwrap(),
            Line::TooLong(input.len() - 6)
        );
        assert_eq!((sc.id.clone(), sc.has_outcome), (Some(json!(41)), true));
        assert!(buf.capacity() <= 100, "nothing of it is kept");
        assert_eq!(read_line_capped(&mut r, &mut buf, 100, Some(&mut sc)).await.unwrap(), Line::Ok);
        assert_eq!((buf.as_slice(), sc.id.clone()), (&b"next"[..], None));
    }

    #[test]
    fn sse_events_across_chunks() {
        let mut p = SseParser::new(1 << 20);
        let mut got = Vec::new();
        for chunk in
            [&b": comment\nevent: message\nda"[..], b"ta: {\"a\":\r\ndata:1}\n", b"\nid: 7\ndata: x\n\n", b"data: tail"]
        {
            got.extend(p.feed(chunk).unwrap());
        }
        got.extend(p.finish());
        assert_eq!(got, ["{\"a\":\n1}", "x", "tail"]);
        let mut small = SseParser::new(4);
        assert_eq!(small.feed(b"data: 123456\n"), Err(McpError::TooLarge { cap: 4 }));
    }

    /// Found by fuzz/ (sse): lone-CR line ends and a leading BOM, in any chunking.
    #[test]
    fn sse_line_ends_and_bom() {
        let stream = b"\xef\xbb\xbfdata: a\rdata: b\r\rdata: c\r\n\r\ndata: d\n\n\xef\xbb\xbfdata: e\n\n";
        for size in [1, 2, 3, stream.len()] {
            let mut p = SseParser::new(1 << 20);
            let mut got = Vec::new();
            for chunk in stream.chunks(size) {
                got.extend(p.feed(chunk).unwrap());
            }
            got.extend(p.finish());
            // Only the stream's first BOM is dropped: a later one makes its line another field.
            assert_eq!(got, ["a\nb", "c", "d"], "chunks of {size}");
        }
    }
}
