//! `sse`: the Server-Sent Events parser of MCP's Streamable HTTP transport.
//!
//! Model: the WHATWG event-stream rules (one leading BOM dropped; lines end at CRLF, LF or a lone
//! CR; `data` fields joined with `\n`; a blank line dispatches an event with data; other fields
//! and comments ignored), plus the parser's own two rules: the stream's end dispatches a last
//! event without its blank line, and an event whose data plus its current line exceeds the cap is
//! an error. The same bytes in any chunking give the same events (or the same error).

use crate::util::{chunk_sizes, chunks, params};
use dotty_pi_ext::mcp::framing::SseParser;
use dotty_pi_ext::mcp::McpError;

/// Input: one byte for the cap (`8 * b + 3` bytes), three for the chunk sizes, then the stream.
pub fn check(data: &[u8]) {
    let ([c, s1, s2, s3], stream) = params::<4>(data);
    let cap = c as usize * 8 + 3;
    let want = model(stream, cap);
    for sizes in [vec![stream.len().max(1)], vec![1], chunk_sizes(&[s1, s2, s3], 32)] {
        let got = run(stream, cap, &sizes);
        assert_eq!(got, want, "chunks {sizes:?}, cap {cap}, stream {:?}", String::from_utf8_lossy(stream));
    }
}

fn run(stream: &[u8], cap: usize, sizes: &[usize]) -> Result<Vec<String>, ()> {
    let mut p = SseParser::new(cap);
    let mut events = Vec::new();
    for chunk in chunks(stream, sizes) {
        match p.feed(chunk) {
            Ok(evs) => events.extend(evs),
            Err(e) => {
                assert_eq!(e, McpError::TooLarge { cap }, "the error names the cap");
                return Err(());
            }
        }
    }
    events.extend(p.finish());
    Ok(events)
}

fn model(stream: &[u8], cap: usize) -> Result<Vec<String>, ()> {
    let stream = stream.strip_prefix(b"\xef\xbb\xbf").unwrap_or(stream);
    // Lines, and whether the stream ended inside the last one.
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\r' => {
                lines.push(&stream[start..i]);
                i += if stream.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            }
            b'\n' => {
                lines.push(&stream[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    let tail = &stream[start..];
    let mut events = Vec::new();
    let mut data: Option<Vec<u8>> = None;
    // The cap: while a line is read, its bytes so far plus the event's data so far.
    let too_big = |line: &[u8], data: &Option<Vec<u8>>| line.len() + data.as_ref().map_or(0, |d| d.len()) > cap;
    for line in &lines {
        if too_big(line, &data) {
            return Err(());
        }
        field_line(line, &mut data, &mut events);
    }
    if too_big(tail, &data) {
        return Err(());
    }
    if !tail.is_empty() {
        field_line(tail, &mut data, &mut events);
    }
    field_line(b"", &mut data, &mut events);
    Ok(events)
}

/// One line of the stream (WHATWG "process the field").
fn field_line(line: &[u8], data: &mut Option<Vec<u8>>, events: &mut Vec<String>) {
    if line.is_empty() {
        if let Some(d) = data.take() {
            events.push(String::from_utf8_lossy(&d).into_owned());
        }
        return;
    }
    let (name, value) = match line.iter().position(|&b| b == b':') {
        Some(c) => (&line[..c], line[c + 1..].strip_prefix(b" ").unwrap_or(&line[c + 1..])),
        None => (line, &b""[..]),
    };
    if name == b"data" {
        match data {
            Some(d) => {
                d.push(b'\n');
                d.extend_from_slice(value);
            }
            None => *data = Some(value.to_vec()),
        }
    }
}
