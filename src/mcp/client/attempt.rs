//! Getting a live connection: the current one, or a new one, one handshake at a time (every
//! concurrent caller waits for it), respawned after a capped, doubling backoff within the budget,
//! the old child gone before the next one opens the single-writer palace.

use super::latch::latched_now;
use super::{McpClient, DOWN_SUBJECT};
use crate::mcp::error::McpError;
use crate::mcp::handshake::handshake;
use crate::mcp::transport::Conn;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::time::Instant;

impl McpClient {
    /// A live, handshaken connection: the current one, or a new one.
    pub(super) async fn ready(&self) -> Result<Arc<Conn>, McpError> {
        {
            let st = self.st();
            if self.is_closed() {
                return Err(McpError::Closed);
            }
            let mut st = st;
            if let Some(e) = &st.latched {
                match st.retry {
                    // Due: this call makes the next try, or waits for the one under way.
                    Some(r) if r.at <= Instant::now() => {}
                    retry => {
                        let err = latched_now(e, retry);
                        // A remote palace given up on: this call checks its health early (in
                        // the background; the call fails at once as before).
                        if retry.is_some() && self.early_probe_due(&mut st) {
                            drop(st);
                            self.spawn_early_probe();
                        }
                        return Err(err);
                    }
                }
            } else if let Some(c) = st.conn.as_ref().filter(|c| st.ready && !c.is_dead()) {
                return Ok(c.clone());
            }
        }
        let mut closed = self.closed.subscribe();
        let init = self.cfg.init_timeout;
        let work = async {
            let guard = match init {
                Some(d) => tokio::time::timeout(d, self.connecting.lock()).await.map_err(|_| McpError::Timeout {
                    ms: d.as_millis() as u64,
                    method: "connect (waiting for the handshake)".into(),
                })?,
                None => self.connecting.lock().await,
            };
            let r = self.establish().await;
            drop(guard);
            r
        };
        tokio::select! {
            r = work => r,
            _ = closed.wait_for(|c| *c) => Err(McpError::Closed),
        }
    }

    /// Runs with `connecting` held: start (or respawn) until a handshake succeeds, the budget is
    /// used up, or a fatal error.
    async fn establish(&self) -> Result<Arc<Conn>, McpError> {
        let mut attempts = 0u32;
        let mut last: Option<McpError> = None;
        loop {
            let (old, backoff) = match self.next_attempt(attempts, last.as_ref())? {
                Next::Connected(c) => return Ok(c),
                Next::Attempt { old, backoff } => (old, backoff),
                Next::Retry { old } => {
                    if let Some(old) = old {
                        old.terminate(self.cfg.kill_grace).await;
                    }
                    return self.retry_once().await;
                }
            };
            // The palace is single-writer: the old child must be gone before the next one opens it.
            if let Some(old) = old {
                old.terminate(self.cfg.kill_grace).await;
            }
            if let Some(b) = backoff {
                tokio::time::sleep(b).await;
            }
            attempts += 1;
            match self.attempt().await {
                Ok(conn) => return Ok(conn),
                Err(e) if e.is_fatal() => {
                    self.latch(e.clone());
                    return Err(e);
                }
                Err(e) => last = Some(e),
            }
        }
    }

    /// Decides whether another attempt may run (`attempts` made by this call, `last` the last one's
    /// error) and takes the old connection out of the state. Counts a respawn against the budget;
    /// latches the client down when the budget is used up.
    fn next_attempt(&self, attempts: u32, last: Option<&McpError>) -> Result<Next, McpError> {
        let max = self.cfg.max_respawns;
        let mut st = self.st();
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        if let Some(e) = &st.latched {
            return match st.retry {
                Some(r) if attempts == 0 && r.at <= Instant::now() => {
                    st.ready = false;
                    Ok(Next::Retry { old: st.conn.take() })
                }
                // Another caller's try failed while we waited: its next one is later.
                retry => Err(latched_now(e, retry)),
            };
        }
        if let Some(c) = st.conn.as_ref().filter(|c| st.ready && !c.is_dead()) {
            return Ok(Next::Connected(c.clone())); // another caller connected while we waited
        }
        let old = st.conn.take();
        st.ready = false;
        let mut backoff = None;
        if st.attempted {
            if st.respawns_used >= max {
                let e =
                    McpError::Down { respawns: st.respawns_used, last: last.cloned().map(Box::new), retry_in: None };
                drop(st);
                self.latch(e.clone());
                return Err(self.down_error().unwrap_or(e)); // with the next try, if there is one
            }
            if attempts > max {
                // The budget keeps being reset by a server that answers and then dies:
                // stop this call here, the next one tries again.
                return Err(last.cloned().unwrap_or_else(|| McpError::Crashed("the server stopped".into())));
            }
            backoff = Some(self.cfg.backoff(st.respawns_used));
            st.respawns_used += 1;
            self.respawns.fetch_add(1, Ordering::Relaxed);
        }
        st.attempted = true;
        Ok(Next::Attempt { old, backoff })
    }

    /// One attempt: starts the child or opens the session, then the handshake (bounded by the init
    /// timeout). A connection whose handshake fails is killed. Each failure is said only when
    /// debugging: a palace that can't be had at all costs pi one stderr line (the latch, or the
    /// bridge's fail-soft line).
    pub(super) async fn attempt(&self) -> Result<Arc<Conn>, McpError> {
        let conn = match Conn::open(&self.cfg, &self.http) {
            Ok(c) => {
                self.spawns.fetch_add(1, Ordering::Relaxed);
                self.warn_plain_http();
                Arc::new(c)
            }
            // Nothing was started: no spawn to count.
            Err(e @ McpError::NotInstalled { .. }) => return Err(e),
            Err(e) => {
                self.spawns.fetch_add(1, Ordering::Relaxed);
                if self.cfg.debug && !e.is_fatal() {
                    crate::diag!("MemPalace did not start: {e}");
                }
                return Err(e);
            }
        };
        {
            // In the state before the handshake: shutdown() finds it and stops it.
            let mut st = self.st();
            st.conn = Some(conn.clone());
            st.ready = false;
        }
        let outcome = match self.cfg.init_timeout {
            Some(d) => tokio::time::timeout(d, handshake(&conn)).await.unwrap_or_else(|_| {
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                Err(McpError::Timeout { ms: d.as_millis() as u64, method: "initialize + tools/list".into() })
            }),
            None => handshake(&conn).await,
        };
        match outcome {
            Ok(done) => {
                crate::diag::over(DOWN_SUBJECT); // a later give-up is news again
                let mut st = self.st();
                st.tools = done.tools;
                st.server_info = done.server_info;
                st.instructions = done.instructions;
                st.ready = true;
                st.respawns_used = 0;
                if st.retry.take().is_some() {
                    st.latched = None; // a try after a give-up worked: up again
                    if self.cfg.debug {
                        crate::diag!("MemPalace is back: {}", self.cfg.target());
                    }
                }
                self.handshakes.fetch_add(1, Ordering::Relaxed);
                Ok(conn)
            }
            Err(e) => {
                conn.kill(&format!("handshake failed: {e}"), self.cfg.kill_grace);
                if self.cfg.debug && !e.is_fatal() {
                    crate::diag!("MemPalace handshake failed: {e}");
                }
                Err(e)
            }
        }
    }
}

/// What [`McpClient::next_attempt`] decided.
enum Next {
    /// Another caller connected meanwhile: use its connection.
    Connected(Arc<Conn>),
    /// Stop `old` (if any), wait `backoff` (a respawn), then attempt.
    Attempt { old: Option<Arc<Conn>>, backoff: Option<std::time::Duration> },
    /// Down after a give-up and the next try is due: stop `old` (if any), then make it.
    Retry { old: Option<Arc<Conn>> },
}
