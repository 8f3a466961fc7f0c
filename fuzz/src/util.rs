//! Helpers shared by the checks: reading the fuzz input's parameter bytes, a reader that serves its
//! bytes in chosen chunk sizes, and driving a future that never waits.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

/// Splits `n` parameter bytes off the front of the input (missing ones read as 0).
pub fn params<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut p = [0u8; N];
    let k = data.len().min(N);
    p[..k].copy_from_slice(&data[..k]);
    (p, &data[k..])
}

/// Chunk sizes (each 1..=`max`) from parameter bytes.
pub fn chunk_sizes(bytes: &[u8], max: usize) -> Vec<usize> {
    bytes.iter().map(|&b| b as usize % max + 1).collect()
}

/// Splits `data` into consecutive chunks whose sizes cycle through `sizes`.
pub fn chunks<'a>(data: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    let mut k = 0;
    while !rest.is_empty() {
        let n = sizes[k % sizes.len()].min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
        k += 1;
    }
    out
}

/// An in-memory `AsyncBufRead` whose `fill_buf` hands out the data in chunks of the given sizes
/// (cycling), like a pipe delivering a child's output in arbitrary pieces. It never waits.
pub struct ChunkReader<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    pos: usize,
    end: usize,
    k: usize,
}

impl<'a> ChunkReader<'a> {
    pub fn new(data: &'a [u8], sizes: Vec<usize>) -> Self {
        assert!(!sizes.is_empty() && sizes.iter().all(|&s| s > 0));
        ChunkReader { data, sizes, pos: 0, end: 0, k: 0 }
    }
}

impl AsyncRead for ChunkReader<'_> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let chunk = match self.as_mut().poll_fill_buf(cx) {
            Poll::Ready(Ok(c)) => c,
            other => return other.map_ok(|_| ()),
        };
        let n = chunk.len().min(buf.remaining());
        buf.put_slice(&chunk[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for ChunkReader<'_> {
    fn poll_fill_buf(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let me = self.get_mut();
        if me.pos == me.end {
            let size = me.sizes[me.k % me.sizes.len()];
            me.k += 1;
            me.end = (me.pos + size).min(me.data.len());
        }
        Poll::Ready(Ok(&me.data[me.pos..me.end]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let me = self.get_mut();
        assert!(me.pos + amt <= me.end, "consumed more than was filled");
        me.pos += amt;
    }
}

/// Runs a future that must complete without waiting (all its I/O is in memory).
pub fn now<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a read from memory waited"),
    }
}

/// Python's `str.isspace()` codepoints, listed by hand from Python's definition (characters whose
/// bidirectional class is WS, B or S, or whose category is Zs), not derived from Rust's tables.
pub const PY_WHITESPACE: &[char] = &[
    '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1d}', '\u{1e}', '\u{1f}', ' ', '\u{85}', '\u{a0}', '\u{1680}',
    '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}',
    '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
];

/// Python's `s.strip()`, by index arithmetic over the codepoint list.
pub fn py_strip(s: &str) -> String {
    let cs: Vec<char> = s.chars().collect();
    let mut a = 0;
    let mut b = cs.len();
    while a < b && PY_WHITESPACE.contains(&cs[a]) {
        a += 1;
    }
    while b > a && PY_WHITESPACE.contains(&cs[b - 1]) {
        b -= 1;
    }
    cs[a..b].iter().collect()
}

/// Python's `s[:n]`.
pub fn py_prefix(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Python's `len(s)`: UTF-8 lead bytes (every byte that is not a continuation byte `10xxxxxx`).
pub fn py_len(s: &str) -> usize {
    s.bytes().filter(|b| b & 0xc0 != 0x80).count()
}
