//! The latch: a client given up on (its respawn budget used up) and its tries after that, each
//! when it is due (`MEMPALACE_MCP_RETRY_MS`, doubled per failed try up to 300 s; a remote palace's
//! health check first), by the first call after it or a background task; and the errors no try can
//! fix (401/403, a certificate, the configuration), latched for good.

use super::{McpClient, State, DOWN_SUBJECT};
use crate::mcp::error::McpError;
use crate::mcp::transport::Conn;
use std::sync::Arc;
use tokio::time::Instant;

/// At most one early health check of a remote palace per this long.
pub(super) const EARLY_PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The next try of a client latched down by a used-up budget.
#[derive(Debug, Clone, Copy)]
pub(super) struct Retry {
    /// When it is due.
    pub(super) at: Instant,
    /// Tries that failed since the give-up (the wait doubles with each).
    pub(super) failed: u32,
}

impl McpClient {
    /// Latches the client down with `e` (once: a client already down stays down as it is). A
    /// give-up with retrying on schedules the next try, in a background task too.
    pub(super) fn latch(&self, e: McpError) {
        let mut st = self.st();
        if st.latched.is_some() {
            return;
        }
        let (e, retry) = match e {
            McpError::Down { respawns, last, .. } => match self.cfg.retry_delay(0) {
                Some(d) => (McpError::Down { respawns, last, retry_in: Some(d) }, Some(d)),
                None => (McpError::Down { respawns, last, retry_in: None }, None),
            },
            other => (other, None),
        };
        crate::diag::say_about(DOWN_SUBJECT, down_line(&e));
        st.latched = Some(e);
        st.retry = retry.map(|d| Retry { at: Instant::now() + d, failed: 0 });
        if retry.is_some() {
            st.give_ups += 1;
            let give_up = st.give_ups;
            drop(st);
            self.spawn_tries(give_up);
        }
    }

    /// A try after a give-up met an error no try can fix: down for good, said once more (what
    /// broke is news).
    fn latch_for_good(&self, e: McpError) {
        let mut st = self.st();
        crate::diag::say_about(DOWN_SUBJECT, down_line(&e));
        st.latched = Some(e);
        st.retry = None;
    }

    /// A try after a give-up failed: the next one waits twice as long (up to the cap). Nothing is
    /// said (the give-up's line said it), but in debug mode. Returns the error for the caller.
    fn try_failed(&self, e: McpError) -> McpError {
        let mut st = self.st();
        let failed = st.retry.map_or(0, |r| r.failed) + 1;
        let Some(d) = self.cfg.retry_delay(failed) else {
            st.retry = None;
            return st.latched.clone().unwrap_or(e);
        };
        st.retry = Some(Retry { at: Instant::now() + d, failed });
        if let Some(McpError::Down { last, .. }) = st.latched.as_mut() {
            *last = Some(Box::new(e.clone()));
        }
        if self.cfg.debug {
            crate::diag!("MemPalace is still down ({e}); next try {}", crate::mcp::error::next_try_text(d));
        }
        st.latched.as_ref().map_or(e, |l| latched_now(l, st.retry))
    }

    /// The background tries of give-up number `give_up`: each when it is due, through
    /// [`McpClient::ready`] (so one at a time with the calls'), until one works, an error no try
    /// can fix, another give-up's task takes over, or the client is shut down or dropped.
    fn spawn_tries(&self, give_up: u64) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let me = self.me.clone();
        let mut closed = self.closed.subscribe();
        rt.spawn(async move {
            loop {
                let at = match me.upgrade().and_then(|c| c.next_try_of(give_up)) {
                    Some(at) => at,
                    None => return,
                };
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = closed.wait_for(|c| *c) => return,
                }
                let Some(client) = me.upgrade() else { return };
                // Its outcome is the client's state: connected again, or the next try scheduled.
                let _ = client.ready().await;
            }
        });
    }

    /// When give-up `give_up`'s next try is due; `None` when there is none (up again, down for
    /// good, a later give-up, closed).
    fn next_try_of(&self, give_up: u64) -> Option<Instant> {
        let st = self.st();
        if self.is_closed() || st.give_ups != give_up || st.latched.is_none() {
            return None;
        }
        st.retry.map(|r| r.at)
    }

    /// Whether a call made while down (a give-up, tries scheduled) should check a remote palace's
    /// health now: over HTTP, none under way, none in the last [`EARLY_PROBE_EVERY`]. Marks one
    /// under way when so. A stdio palace keeps its schedule.
    pub(super) fn early_probe_due(&self, st: &mut State) -> bool {
        if self.cfg.remote_url.is_none() || st.probing || st.last_probe.is_some_and(|t| t.elapsed() < EARLY_PROBE_EVERY)
        {
            return false;
        }
        st.probing = true;
        st.last_probe = Some(Instant::now());
        true
    }

    /// The early health check in the background: when `/healthz` answers, the next try is made
    /// due now and made at once (through [`McpClient::ready`]: one at a time with the calls' and
    /// the background tries'); an error no try can fix then (401/403) latches the client down
    /// for good, as a scheduled try would.
    pub(super) fn spawn_early_probe(&self) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.st().probing = false;
            return;
        };
        let me = self.me.clone();
        rt.spawn(async move {
            let Some(client) = me.upgrade() else { return };
            let up = Conn::probe(&client.cfg, &client.http).await.is_ok();
            let due = {
                let mut st = client.st();
                st.probing = false;
                let latched = st.latched.is_some();
                match st.retry.as_mut().filter(|_| up && latched) {
                    Some(r) => {
                        r.at = Instant::now();
                        true
                    }
                    None => false,
                }
            };
            if due && !client.is_closed() {
                let _ = client.ready().await;
            }
        });
    }

    /// The one try of a give-up that is due (with `connecting` held): a remote palace's health
    /// check, then an attempt. Up again: the budget is reset and the latch cleared (in
    /// [`McpClient::attempt`]). An error no try can fix latches the client down for good; any other
    /// schedules the next try.
    pub(super) async fn retry_once(&self) -> Result<Arc<Conn>, McpError> {
        let outcome = match Conn::probe(&self.cfg, &self.http).await {
            Ok(()) => self.attempt().await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(conn) => Ok(conn),
            Err(e) if e.is_fatal() => {
                self.latch_for_good(e.clone());
                Err(e)
            }
            Err(e) => Err(self.try_failed(e)),
        }
    }
}

/// A latched error as a call gets it now: a give-up says when its next try is.
pub(super) fn latched_now(e: &McpError, retry: Option<Retry>) -> McpError {
    match (e, retry) {
        (McpError::Down { respawns, last, .. }, Some(r)) => McpError::Down {
            respawns: *respawns,
            last: last.clone(),
            retry_in: Some(r.at.saturating_duration_since(Instant::now())),
        },
        (e, _) => e.clone(),
    }
}

/// The one line said when the client goes down: what broke, what that means for the tools and
/// the feeding, and what brings it back.
fn down_line(e: &McpError) -> String {
    match e {
        McpError::NotInstalled { .. } => format!(
            "{e}: pi works without palace tools and transcripts are not fed; `/mempalace status` says how to install it or switch the bridge off"
        ),
        McpError::Down { .. } => format!("{e} (until then palace tools fail and transcripts are not fed)"),
        other => format!(
            "MemPalace is down: {other}; `/mempalace reconnect` or a restart of pi tries again (until then palace tools fail and transcripts are not fed)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::McpConfig;

    fn client(vars: &[(&str, &str)]) -> Arc<McpClient> {
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        McpClient::new(McpConfig::from_lookup(&get).0)
    }

    #[tokio::test]
    async fn a_call_while_down_probes_a_remote_palace_once_per_two_seconds_and_a_stdio_one_never() {
        let http = client(&[("MEMPALACE_REMOTE_URL", "http://127.0.0.1:9/mcp")]);
        let due = |c: &McpClient| c.early_probe_due(&mut c.st());
        assert!(due(&http), "the first call while down probes");
        assert!(!due(&http), "one probe in flight");
        http.st().probing = false;
        assert!(!due(&http), "not again within 2 s");
        let two_seconds_ago = Instant::now().checked_sub(EARLY_PROBE_EVERY).unwrap();
        http.st().last_probe = Some(two_seconds_ago);
        assert!(due(&http), "again after 2 s");
        let stdio = client(&[("MEMPALACE_MCP_BIN", "mempalace-mcp")]);
        assert!(!due(&stdio), "stdio keeps its schedule");
    }
}
