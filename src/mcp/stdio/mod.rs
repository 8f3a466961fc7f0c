//! The stdio transport's message side: one JSON-RPC message per line each way, requests routed
//! to their callers by id. The child process itself (spawn, reap, group kill, the kernel facts
//! behind "did it read it") is `child`'s.
//!
//! Four tasks per child: a writer (owns stdin, so a cancelled request can never leave half a line
//! in the pipe), a reader (routes replies by id, skips garbage, drops over-long lines as they
//! stream), a stderr drainer and a reaper (`child`).
//!
//! Bounds (docs/trust.md): one line at most `max_message_bytes`; our
//! requests and our replies to the server's requests go through bounded queues, and a server
//! that leaves more than [`MAX_UNANSWERED`] of its own requests unanswered because it does not
//! read its stdin is killed. The child runs in its own process group and is killed as a group, so
//! a wrapper script's children never outlive it.
//!
//! Whether a failed request reached the server: the writer tells each request the byte offset its
//! line started at; when the child dies, the bytes still unread in the stdin pipe (FIONREAD) tell
//! how far the server read. A line it never started reading is retried on a new server.

mod tasks;

use tasks::{read_loop, write_loop};

use super::child::{self, StderrTail};
use super::config::McpConfig;
use super::error::McpError;
use super::jsonrpc;
use super::race::{race, Failure, Raced};
use crate::sync::lock;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// Requests the server sent us whose replies are not yet written: more means it sends faster than
/// it reads (a ping flood from a server that never reads stdin grew memory without bound).
const MAX_UNANSWERED: usize = 64;
/// Our own messages queued for stdin. A full queue makes a request wait (within its timeout).
const REQUEST_QUEUE: usize = 64;
/// How long a failed request waits to learn whether its line reached the server.
const VERDICT_WAIT: Duration = Duration::from_secs(2);
/// What the server answered to one request: its `result`, or the error it or the transport gave.
type RpcOutcome = Result<Value, McpError>;

/// One line for stdin. `ack` gets the byte offset the line starts at, once the writer begins to
/// write it (dropped unsent: the line never left the client).
struct Out {
    line: Vec<u8>,
    ack: Option<oneshot::Sender<u64>>,
}

/// How far the server read its stdin, known once nothing can read it any more.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    /// Bytes of stdin consumed by the server: a line starting at or after this offset never
    /// reached it.
    Consumed(u64),
    /// The connection was stopped by us: every written line counts as having reached it.
    Unknown,
}

/// State shared with the tasks. std `Mutex`es: held for a map insert or a line push, never across
/// an `.await`.
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<RpcOutcome>>>,
    /// `Some(reason)` once the connection is dead; first reason wins.
    dead: watch::Sender<Option<String>>,
    /// Set by the writer when it stops (see [`Verdict`]).
    verdict: watch::Sender<Option<Verdict>>,
    /// Tells the reaper to stop the child's group with this grace.
    kill_tx: Mutex<Option<oneshot::Sender<Duration>>>,
    /// The last few stderr lines, quoted in crash messages.
    stderr: Arc<StderrTail>,
    /// We stopped the child (stall, flood, respawn, shutdown): its pending requests fail as sent,
    /// as the bridge contract says, even the ones still unread in the pipe.
    stopped_by_us: AtomicBool,
    debug: bool,
}

impl Shared {
    fn die(&self, reason: String) {
        let reason = match self.stderr.text() {
            Some(t) => format!("{reason}; its last stderr: {t}"),
            None => reason,
        };
        self.dead.send_if_modified(|d| {
            if d.is_none() {
                *d = Some(reason);
                true
            } else {
                false
            }
        });
        // Dropping the senders wakes every waiter; they read the reason from `dead`.
        lock(&self.pending).clear();
    }

    /// Marks the connection dead and has the reaper stop the child's process group.
    fn kill(&self, reason: String, grace: Duration) {
        // Before `die`: the writer reads it when it sees the death.
        self.stopped_by_us.store(true, Ordering::SeqCst);
        self.die(reason);
        if let Some(tx) = lock(&self.kill_tx).take() {
            let _ = tx.send(grace);
        }
    }

    fn reason(&self) -> String {
        self.dead.borrow().clone().unwrap_or_else(|| "the connection closed".into())
    }
}

pub(crate) struct StdioConn {
    pid: u32,
    sh: Arc<Shared>,
    next_id: AtomicU64,
    /// Our lines for stdin; `None` once stdin is closed (dropping the sender ends the writer,
    /// which drops `ChildStdin`: tokio's `shutdown()` would not close the pipe).
    writer: Mutex<Option<mpsc::Sender<Out>>>,
    /// The child's exit status text, once reaped and its group gone.
    exited: watch::Receiver<Option<String>>,
}

/// Starts the child (`child::spawn`) and the four tasks that serve it.
pub(super) fn spawn(cfg: &McpConfig) -> Result<StdioConn, McpError> {
    let child::Spawned { child, pid, group, stdin, stdout, stderr } = child::spawn(cfg)?;
    let (kill_tx, kill_rx) = oneshot::channel();
    let sh = Arc::new(Shared {
        pending: Mutex::new(HashMap::new()),
        dead: watch::channel(None).0,
        verdict: watch::channel(None).0,
        kill_tx: Mutex::new(Some(kill_tx)),
        stderr: Arc::new(StderrTail::new()),
        stopped_by_us: AtomicBool::new(false),
        debug: cfg.debug,
    });
    let (wtx, wrx) = mpsc::channel(REQUEST_QUEUE);
    let (rtx, rrx) = mpsc::channel(MAX_UNANSWERED);
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(write_loop(pid, stdin, wrx, rrx, sh.clone(), exit_rx.clone()));
    tokio::spawn(read_loop(stdout, sh.clone(), rtx, exit_rx.clone(), cfg.max_message_bytes, cfg.kill_grace));
    let (tail, debug) = (sh.stderr.clone(), cfg.debug);
    tokio::spawn(async move { tail.drain(stderr, debug).await });
    let reaper = sh.clone();
    tokio::spawn(async move {
        let text = child::reap(child, group, kill_rx, &reaper.stderr).await;
        let _ = exit_tx.send(Some(text.clone()));
        reaper.die(format!("the server exited ({text})"));
    });
    Ok(StdioConn { pid, sh, next_id: AtomicU64::new(1), writer: Mutex::new(Some(wtx)), exited: exit_rx })
}

impl StdioConn {
    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    /// Dead when said so, or when the child has exited though its reaper has not run yet: its
    /// exit status is there to be read (a request sent now would go to a corpse).
    pub(crate) fn is_dead(&self) -> bool {
        if self.sh.dead.borrow().is_some() {
            return true;
        }
        if child::is_gone(self.pid) {
            // Not a kill of ours: the reaper reaps it and says how it ended.
            self.sh.die("the server exited".into());
            return true;
        }
        false
    }

    fn sender(&self) -> Option<mpsc::Sender<Out>> {
        lock(&self.writer).clone()
    }

    /// Queues a line without waiting (cancel notices: best effort).
    fn try_send(&self, msg: &Value) {
        if let Some(tx) = self.sender() {
            let _ = tx.try_send(Out { line: line_of(msg), ack: None });
        }
    }

    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
        cancel: &mut Option<oneshot::Receiver<()>>,
    ) -> Result<Value, Failure> {
        let mut dead = self.sh.dead.subscribe();
        if self.is_dead() {
            return Err(Failure::not_sent(McpError::Crashed(self.sh.reason())));
        }
        let Some(tx) = self.sender() else {
            return Err(Failure::not_sent(McpError::Crashed(self.sh.reason())));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply_tx, reply_rx) = oneshot::channel();
        lock(&self.sh.pending).insert(id, reply_tx);
        // Removes the entry however this function ends (reply, timeout, cancel, or the caller
        // dropping the future).
        let _guard = PendingGuard { sh: &self.sh, id };
        let (ack_tx, mut ack_rx) = oneshot::channel();
        let exchange = async {
            tx.send(Out { line: line_of(&jsonrpc::request(id, method, params)), ack: Some(ack_tx) })
                .await
                .map_err(|_| ())?;
            reply_rx.await.map_err(|_| ())
        };
        let give_up = |why| self.try_send(&jsonrpc::cancelled(id, why));
        match race(exchange, &mut dead, method, timeout, cancel, give_up).await {
            Raced::Finished(Ok(Ok(v))) => Ok(v),
            Raced::Finished(Ok(Err(e))) => Err(Failure::sent(e)),
            Raced::Finished(Err(())) => Err(self.failure(&mut ack_rx, self.sh.reason()).await),
            Raced::Died(r) => Err(self.failure(&mut ack_rx, r).await),
            Raced::GivenUp(f) => Err(f),
        }
    }

    /// The connection died under a request: did its line reach the server? Not when it was never
    /// written, nor when the server never read up to it.
    async fn failure(&self, ack: &mut oneshot::Receiver<u64>, reason: String) -> Failure {
        let err = McpError::Crashed(reason);
        let mut verdict = self.sh.verdict.subscribe();
        let reached = tokio::time::timeout(VERDICT_WAIT, async {
            let Ok(start) = ack.await else { return false };
            match verdict.wait_for(Option::is_some).await.map(|v| *v) {
                Ok(Some(Verdict::Consumed(upto))) => upto > start,
                _ => true,
            }
        })
        .await
        .unwrap_or(true);
        if reached {
            Failure::sent(err)
        } else {
            Failure::not_sent(err)
        }
    }

    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        let sent = match self.sender() {
            Some(tx) => tx.send(Out { line: line_of(&jsonrpc::notification(method, params)), ack: None }).await.is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(McpError::Crashed(self.sh.reason()))
        }
    }

    fn close_stdin(&self) {
        lock(&self.writer).take();
    }

    pub(super) fn kill(&self, reason: &str, grace: Duration) {
        self.close_stdin();
        self.sh.kill(reason.to_string(), grace);
    }

    pub(crate) async fn terminate(&self, grace: Duration) {
        self.kill("the client stopped the server", grace);
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|s| s.is_some()).await;
    }
}

fn line_of(msg: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(msg).unwrap_or_default();
    line.push(b'\n');
    line
}

struct PendingGuard<'a> {
    sh: &'a Shared,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.sh.pending).remove(&self.id);
    }
}
