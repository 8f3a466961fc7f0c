//! The stdio transport: a child process, one JSON-RPC message per line each way.
//!
//! Four tasks per child: a writer (owns stdin, so a cancelled request can never leave half a line
//! in the pipe), a reader (routes replies by id, skips garbage, caps line length), a stderr
//! drainer (Node closes fd 2 for its children, so stderr must be piped, never inherited) and a
//! reaper (owns the `Child`: the only place that signals it, so a signal never hits a reused pid).

use super::config::McpConfig;
use super::error::McpError;
use super::jsonrpc::{self, Incoming, Line, RpcError};
use super::transport::{cancelled, died, sleep_opt, Failure};
use super::MAX_MESSAGE_BYTES;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, watch};

type Reply = Result<Value, RpcError>;

/// State shared with the tasks. std `Mutex`es: held for a map insert or a line push, never across
/// an `.await`.
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    /// `Some(reason)` once the connection is dead; first reason wins.
    dead: watch::Sender<Option<String>>,
    /// The last few stderr lines, quoted in crash messages ("mempalace not installed ...").
    stderr_tail: Mutex<VecDeque<String>>,
    debug: bool,
}

impl Shared {
    fn die(&self, reason: String) {
        let reason = match self.tail() {
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
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn reason(&self) -> String {
        self.dead.borrow().clone().unwrap_or_else(|| "the connection closed".into())
    }

    fn tail(&self) -> Option<String> {
        let t = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        (!t.is_empty()).then(|| t.iter().cloned().collect::<Vec<_>>().join(" | "))
    }
}

pub(crate) struct StdioConn {
    pid: u32,
    sh: Arc<Shared>,
    next_id: AtomicU64,
    /// Lines to write; `None` once stdin is closed (dropping the sender ends the writer, which
    /// drops `ChildStdin`: tokio's `shutdown()` would not close the pipe).
    writer: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    /// Tells the reaper to stop the child with this grace. Dropping it does the same (2 s).
    kill_tx: Mutex<Option<oneshot::Sender<Duration>>>,
    /// The child's exit status text, once reaped.
    exited: watch::Receiver<Option<String>>,
}

/// Starts the child. It inherits our environment minus `MEMPALACE_REMOTE_TOKEN`.
pub(crate) fn spawn(cfg: &McpConfig) -> Result<StdioConn, McpError> {
    let mut cmd = Command::new(&cfg.bin);
    cmd.args(&cfg.args)
        .envs(cfg.child_env.iter().map(|(k, v)| (k, v)))
        .env_remove("MEMPALACE_REMOTE_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| McpError::Spawn(format!("`{}`: {e}", cfg.bin)))?;
    let pid = child.id().unwrap_or(0);
    let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(i), Some(o), Some(e)) => (i, o, e),
        _ => return Err(McpError::Spawn("the child's pipes are missing".into())),
    };
    let sh = Arc::new(Shared {
        pending: Mutex::new(HashMap::new()),
        dead: watch::channel(None).0,
        stderr_tail: Mutex::new(VecDeque::new()),
        debug: cfg.debug,
    });
    let (wtx, wrx) = mpsc::unbounded_channel();
    let (kill_tx, kill_rx) = oneshot::channel();
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(write_loop(stdin, wrx, sh.clone()));
    tokio::spawn(read_loop(stdout, sh.clone(), wtx.downgrade(), exit_rx.clone()));
    tokio::spawn(drain_stderr(stderr, sh.clone()));
    tokio::spawn(reap(child, kill_rx, exit_tx, sh.clone()));
    Ok(StdioConn {
        pid,
        sh,
        next_id: AtomicU64::new(1),
        writer: Mutex::new(Some(wtx)),
        kill_tx: Mutex::new(Some(kill_tx)),
        exited: exit_rx,
    })
}

impl StdioConn {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn is_dead(&self) -> bool {
        self.dead_reason().is_some()
    }

    fn dead_reason(&self) -> Option<String> {
        self.sh.dead.borrow().clone()
    }

    /// Queues one message; false when stdin is already closed.
    fn send(&self, msg: &Value) -> bool {
        let mut line = serde_json::to_vec(msg).unwrap_or_default();
        line.push(b'\n');
        match &*self.writer.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(line).is_ok(),
            None => false,
        }
    }

    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
        cancel: &mut Option<oneshot::Receiver<()>>,
    ) -> Result<Value, Failure> {
        let mut dead = self.sh.dead.subscribe();
        if let Some(r) = self.dead_reason() {
            return Err(Failure::not_sent(McpError::Crashed(r)));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.sh.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, tx);
        // Removes the entry however this function ends (reply, timeout, cancel, or the caller
        // dropping the future).
        let _guard = PendingGuard { sh: &self.sh, id };
        if !self.send(&jsonrpc::request(id, method, params)) {
            return Err(Failure::not_sent(McpError::Crashed(self.sh.reason())));
        }
        tokio::select! {
            biased;
            r = rx => match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(Failure::sent(McpError::Rpc { code: e.code, message: e.message, data: e.data })),
                Err(_) => Err(Failure::sent(McpError::Crashed(self.sh.reason()))),
            },
            r = died(&mut dead) => Err(Failure::sent(McpError::Crashed(r))),
            _ = sleep_opt(timeout) => {
                self.send(&jsonrpc::cancelled(id, "timed out"));
                let ms = timeout.map_or(0, |d| d.as_millis() as u64);
                Err(Failure::sent(McpError::Timeout { ms, method: method.to_string() }))
            }
            _ = cancelled(cancel) => {
                self.send(&jsonrpc::cancelled(id, "cancelled by the caller"));
                Err(Failure::sent(McpError::Cancelled))
            }
        }
    }

    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        if self.send(&jsonrpc::notification(method, params)) {
            Ok(())
        } else {
            Err(McpError::Crashed(self.sh.reason()))
        }
    }

    fn close_stdin(&self) {
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    pub fn kill(&self, reason: &str, grace: Duration) {
        self.sh.die(reason.to_string());
        self.close_stdin();
        if let Some(tx) = self.kill_tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send(grace);
        }
    }

    pub async fn terminate(&self, grace: Duration) {
        self.kill("the client stopped the server", grace);
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|s| s.is_some()).await;
    }
}

struct PendingGuard<'a> {
    sh: &'a Shared,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.sh.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

async fn write_loop(mut stdin: ChildStdin, mut rx: mpsc::UnboundedReceiver<Vec<u8>>, sh: Arc<Shared>) {
    while let Some(line) = rx.recv().await {
        let r = async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
        .await;
        if let Err(e) = r {
            sh.die(format!("writing to its stdin failed ({e})"));
            break;
        }
    }
    drop(stdin); // EOF for the child
}

async fn read_loop(stdout: ChildStdout, sh: Arc<Shared>, wtx: mpsc::WeakUnboundedSender<Vec<u8>>, mut exited: watch::Receiver<Option<String>>) {
    let mut r = BufReader::with_capacity(256 * 1024, stdout);
    let mut buf = Vec::new();
    let mut reported = 0u32;
    let mut report = |what: String| {
        reported += 1;
        if reported <= 10 {
            crate::diag!("MemPalace {what}; skipped{}", if reported == 10 { " (further ones are not reported)" } else { "" });
        }
    };
    loop {
        match jsonrpc::read_line_capped(&mut r, &mut buf, MAX_MESSAGE_BYTES).await {
            Ok(Line::Ok) => {
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let v: Value = match serde_json::from_slice(&buf) {
                    Ok(v) => v,
                    Err(_) => {
                        report(format!("wrote a line that is not JSON: {:?}", crate::text::take(&String::from_utf8_lossy(&buf), 120)));
                        continue;
                    }
                };
                match jsonrpc::classify(v) {
                    Incoming::Response { id, outcome } => {
                        let tx = sh.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                        if let Some(tx) = tx {
                            let _ = tx.send(outcome);
                        } else if sh.debug {
                            crate::diag!("MemPalace answered request {id}, which is no longer waiting");
                        }
                    }
                    Incoming::Orphan(v) => report(format!("sent a reply to no request of ours: {}", crate::text::take(&v.to_string(), 200))),
                    Incoming::Request { id, method } => {
                        let answer = if method == "ping" { Ok(serde_json::json!({})) } else { Err((-32601, "Method not found")) };
                        let mut line = serde_json::to_vec(&jsonrpc::reply(id, answer)).unwrap_or_default();
                        line.push(b'\n');
                        // A weak sender: the reader must not keep stdin open after close_stdin().
                        if let Some(tx) = wtx.upgrade() {
                            let _ = tx.send(line);
                        }
                    }
                    Incoming::Notification { method } => {
                        if sh.debug {
                            crate::diag!("MemPalace notification: {method}");
                        }
                    }
                    Incoming::Invalid(why) => report(format!("wrote a message that is not JSON-RPC ({why})")),
                }
            }
            Ok(Line::TooLong(n)) => report(format!("wrote a {n}-byte line, over the {MAX_MESSAGE_BYTES}-byte cap")),
            Ok(Line::Eof) | Err(_) => break,
        }
    }
    drop(wtx);
    // stdout closed: usually the child is exiting. Wait briefly for its status: a better message.
    let status = tokio::time::timeout(Duration::from_millis(500), exited.wait_for(|s| s.is_some())).await;
    let reason = match status {
        Ok(Ok(s)) => format!("the server exited ({})", s.clone().unwrap_or_default()),
        _ => "the server closed its stdout".to_string(),
    };
    sh.die(reason);
}

async fn drain_stderr(stderr: ChildStderr, sh: Arc<Shared>) {
    let mut r = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        match jsonrpc::read_line_capped(&mut r, &mut buf, 64 * 1024).await {
            Ok(Line::Ok) => {
                let line = String::from_utf8_lossy(&buf);
                if sh.debug {
                    crate::diag!("mempalace: {line}");
                }
                if !line.trim().is_empty() {
                    let mut t = sh.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
                    if t.len() == 3 {
                        t.pop_front();
                    }
                    t.push_back(crate::text::take(line.trim(), 300).to_string());
                }
            }
            Ok(Line::TooLong(_)) => {}
            Ok(Line::Eof) | Err(_) => break,
        }
    }
}

async fn reap(mut child: Child, kill_rx: oneshot::Receiver<Duration>, exit_tx: watch::Sender<Option<String>>, sh: Arc<Shared>) {
    let status = tokio::select! {
        s = child.wait() => s,
        g = kill_rx => stop(&mut child, g.unwrap_or(Duration::from_secs(2))).await,
    };
    let text = match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("wait failed: {e}"),
    };
    let _ = exit_tx.send(Some(text.clone()));
    sh.die(format!("the server exited ({text})"));
}

/// SIGTERM (plus SIGCONT, so a stopped child can act on it), then SIGKILL after `grace`.
async fn stop(child: &mut Child, grace: Duration) -> std::io::Result<std::process::ExitStatus> {
    if let Some(pid) = child.id() {
        // SAFETY: plain kill(2) on our own unreaped child: the pid can't have been reused.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
            libc::kill(pid as libc::pid_t, libc::SIGCONT);
        }
    }
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(s) => s,
        Err(_) => {
            let _ = child.start_kill();
            child.wait().await
        }
    }
}
