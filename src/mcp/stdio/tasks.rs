//! The two tasks that own a child's pipes: the writer (stdin: our requests and our replies to the
//! server's requests, each line whole; it learns how far the server read when it stops) and the
//! reader (stdout: replies routed to their callers by id, the server's requests answered through
//! the bounded queue, garbage and over-long lines reported and dropped as they stream).

use super::{line_of, Out, RpcOutcome, Shared, Verdict, MAX_UNANSWERED, VERDICT_WAIT};
use crate::mcp::child;
use crate::mcp::error::McpError;
use crate::mcp::framing::{self, IdScan, Line};
use crate::mcp::jsonrpc::{self, Incoming};
use crate::sync::lock;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::BufReader;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, watch};

/// Why the writer stopped.
enum WriterEnd {
    /// The child and its group are gone, or a write failed (no reader left): what is unread in
    /// the pipe now stays unread.
    NoReader,
    /// Stopped by us (kill, close): the child may still read what is in the pipe.
    Stopped,
}

pub(super) async fn write_loop(
    pid: u32,
    mut stdin: ChildStdin,
    mut requests: mpsc::Receiver<Out>,
    mut replies: mpsc::Receiver<Vec<u8>>,
    sh: Arc<Shared>,
    mut exited: watch::Receiver<Option<String>>,
) {
    let mut dead = sh.dead.subscribe();
    let mut written = 0u64;
    let end = loop {
        let out = tokio::select! {
            biased;
            _ = exited.wait_for(Option::is_some) => break WriterEnd::NoReader,
            _ = dead.wait_for(Option::is_some) => None,
            Some(line) = replies.recv() => Some(Out { line, ack: None }),
            r = requests.recv() => match r {
                Some(out) => Some(out),
                None => break WriterEnd::Stopped,
            },
        };
        let Some(out) = out else {
            // Dead because the child exited (noticed first by a reader or a peek): once its group
            // is gone, what is unread stays unread. Else we stopped it: close stdin now.
            if !sh.stopped_by_us.load(Ordering::SeqCst)
                && child::is_gone(pid)
                && matches!(tokio::time::timeout(VERDICT_WAIT, exited.wait_for(Option::is_some)).await, Ok(Ok(_)))
            {
                break WriterEnd::NoReader;
            }
            break WriterEnd::Stopped;
        };
        if let Some(ack) = out.ack {
            // The last moment to notice a dying child: a request not written is retried.
            if child::sigkill_pending(pid) {
                continue; // the ack is dropped: never sent
            }
            let _ = ack.send(written);
        }
        if let Err(e) = child::write_counted(&mut stdin, &out.line, &mut written).await {
            sh.die(format!("writing to its stdin failed ({e})"));
            break WriterEnd::NoReader;
        }
    };
    let verdict = match end {
        _ if sh.stopped_by_us.load(Ordering::SeqCst) => Verdict::Unknown,
        WriterEnd::NoReader => {
            child::unread_bytes(&stdin).map_or(Verdict::Unknown, |n| Verdict::Consumed(written.saturating_sub(n)))
        }
        WriterEnd::Stopped => Verdict::Unknown,
    };
    sh.verdict.send_replace(Some(verdict));
    drop(stdin); // EOF for the child
}

pub(super) async fn read_loop(
    stdout: ChildStdout,
    sh: Arc<Shared>,
    replies: mpsc::Sender<Vec<u8>>,
    mut exited: watch::Receiver<Option<String>>,
    cap: usize,
    grace: Duration,
) {
    let mut r = BufReader::with_capacity(256 * 1024, stdout);
    let mut buf = Vec::new();
    let mut scan = IdScan::default();
    let mut router = Router { sh: &sh, replies, grace, reported: 0 };
    loop {
        match framing::read_line_capped(&mut r, &mut buf, cap, Some(&mut scan)).await {
            Ok(Line::Ok) => {
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if router.route(&buf).is_err() {
                    break;
                }
                if buf.capacity() > 1024 * 1024 {
                    buf = Vec::new(); // an idle connection does not keep a 4 MiB buffer
                }
            }
            Ok(Line::TooLong(n)) => router.too_long(n, &scan, cap),
            Ok(Line::Eof) | Err(_) => break,
        }
    }
    drop(router); // closes our side of the reply queue
                  // stdout closed: usually the child is exiting. Wait briefly for its status: a better message.
    let status = tokio::time::timeout(Duration::from_millis(500), exited.wait_for(|s| s.is_some())).await;
    let reason = match status {
        Ok(Ok(s)) => format!("the server exited ({})", s.clone().unwrap_or_default()),
        _ => "the server closed its stdout".to_string(),
    };
    sh.die(reason);
}

/// Where each message from the server goes: replies to their callers, its requests answered
/// through the bounded reply queue, garbage reported (the first 10 times).
struct Router<'a> {
    sh: &'a Shared,
    replies: mpsc::Sender<Vec<u8>>,
    grace: Duration,
    reported: u32,
}

/// The server floods us with requests and was killed: stop reading.
struct Flooded;

impl Router<'_> {
    fn route(&mut self, line: &[u8]) -> Result<(), Flooded> {
        let sh = self.sh;
        match jsonrpc::parse(line) {
            Incoming::Response { id, outcome } => {
                let outcome = outcome.map_err(|e| McpError::Rpc { code: e.code, message: e.message, data: e.data });
                deliver(sh, id, outcome);
            }
            Incoming::Orphan(id) => self.report(format!("sent a reply to no request of ours (id {id})")),
            Incoming::Request { id, method } => {
                let answer =
                    if method == "ping" { Ok(serde_json::json!({})) } else { Err((-32601, "Method not found")) };
                match self.replies.try_send(line_of(&jsonrpc::reply(id, answer))) {
                    Ok(()) | Err(TrySendError::Closed(_)) => {}
                    Err(TrySendError::Full(_)) => {
                        let why = format!("MemPalace sent requests faster than it read our replies (more than {MAX_UNANSWERED} unanswered); killed");
                        // Said once by the latch or the failed call; per kill only when debugging.
                        if sh.debug {
                            crate::diag!("{why}");
                        }
                        sh.kill(why, self.grace);
                        return Err(Flooded);
                    }
                }
            }
            Incoming::Notification { method } => {
                if sh.debug {
                    crate::diag!("MemPalace notification: {method}");
                }
            }
            Incoming::Invalid(why) => self.report(format!("wrote a message that is not JSON-RPC ({why})")),
            Incoming::NotJson => self.report(format!(
                "wrote a line that is not JSON: {:?}",
                crate::text::first_chars(&String::from_utf8_lossy(line), 120)
            )),
        }
        Ok(())
    }

    /// A line of `n` bytes over the cap, already discarded: the request it answers (when `scan`
    /// found one) fails now instead of at its timeout.
    fn too_long(&mut self, n: usize, scan: &IdScan, cap: usize) {
        let size = crate::mcp::config::human_bytes(cap);
        match scan.id.as_ref().and_then(Value::as_u64).filter(|_| !scan.has_method) {
            Some(id) => {
                if self.sh.debug {
                    crate::diag!(
                        "MemPalace wrote a {n}-byte reply to request {id}, over the {size} cap; the request fails"
                    );
                }
                deliver(self.sh, id, Err(McpError::TooLarge { cap }));
            }
            None => self.report(format!("wrote a {n}-byte line, over the {size} cap, that answers no request of ours")),
        }
    }

    fn report(&mut self, what: String) {
        self.reported += 1;
        if self.reported <= 10 {
            crate::diag!(
                "MemPalace {what}; skipped{}",
                if self.reported == 10 { " (further ones are not reported)" } else { "" }
            );
        }
    }
}

/// Hands a reply to the request waiting for `id`.
fn deliver(sh: &Shared, id: u64, outcome: RpcOutcome) {
    let tx = lock(&sh.pending).remove(&id);
    if let Some(tx) = tx {
        let _ = tx.send(outcome);
    } else if sh.debug {
        crate::diag!("MemPalace answered request {id}, which is no longer waiting");
    }
}
