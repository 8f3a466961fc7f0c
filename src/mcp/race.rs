//! The one request race both transports run: the reply against the connection dying, the timeout
//! and the caller's cancel. A leaf: it knows [`McpError`] and nothing of stdio or HTTP; each
//! transport brings its exchange (write + wait for the reply), its dead-reason watch, and how it
//! tells the server that a request was given up.

use super::error::McpError;
use std::future::Future;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// A failed request, and whether it may have reached the server. A request that surely did not
/// (the child was already gone, the TCP connection was refused) can be retried on a new server
/// without risking a double write; one that may have (the server died while working on it) is not.
#[derive(Debug)]
pub(super) struct Failure {
    pub err: McpError,
    pub sent: bool,
}

impl Failure {
    pub(super) fn sent(err: McpError) -> Self {
        Failure { err, sent: true }
    }
    pub(crate) fn not_sent(err: McpError) -> Self {
        Failure { err, sent: false }
    }
}

/// How a raced request ended.
pub(crate) enum Raced<T> {
    /// The exchange finished (with a reply or its own failure).
    Finished(T),
    /// The connection died first, for this reason. Whether the request reached the server is the
    /// transport's to judge.
    Died(String),
    /// Timed out or cancelled: the server was told (`notifications/cancelled`); the request counts
    /// as sent.
    GivenUp(Failure),
}

/// Runs `exchange` until it finishes, the connection dies (`dead` holds a reason), `timeout`
/// passes, or `cancel` fires. On timeout or cancel, `give_up` is called with the reason for
/// `notifications/cancelled`, after `exchange` is dropped.
pub(crate) async fn race<T>(
    exchange: impl Future<Output = T>,
    dead: &mut watch::Receiver<Option<String>>,
    method: &str,
    timeout: Option<Duration>,
    cancel: &mut Option<oneshot::Receiver<()>>,
    give_up: impl FnOnce(&'static str),
) -> Raced<T> {
    // `biased`: a reply that is there wins over a death, a timeout or a cancel seen at once.
    tokio::select! {
        biased;
        r = exchange => Raced::Finished(r),
        r = died(dead) => Raced::Died(r),
        _ = sleep_opt(timeout) => {
            give_up("timed out");
            let ms = timeout.map_or(0, |d| d.as_millis() as u64);
            Raced::GivenUp(Failure::sent(McpError::Timeout { ms, method: method.to_string() }))
        }
        _ = cancelled(cancel) => {
            give_up("cancelled by the caller");
            Raced::GivenUp(Failure::sent(McpError::Cancelled))
        }
    }
}

/// Resolves when the caller cancels (the sender sent `()`); never when there is no receiver or
/// the sender was dropped without sending (that means "no cancellation will come").
pub(crate) async fn cancelled(rx: &mut Option<oneshot::Receiver<()>>) {
    if let Some(r) = rx.as_mut() {
        if r.await.is_ok() {
            *rx = None;
            return;
        }
        *rx = None;
    }
    std::future::pending::<()>().await
}

/// Sleeps for `d`, or forever when there is no timeout.
async fn sleep_opt(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

/// Waits until a dead-reason watch holds a reason, and returns it.
async fn died(rx: &mut watch::Receiver<Option<String>>) -> String {
    match rx.wait_for(|d| d.is_some()).await {
        Ok(r) => r.clone().unwrap_or_default(),
        Err(_) => "the connection was dropped".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Runs `race` over `exchange` and returns how it ended and what the server was told.
    async fn run<T>(
        exchange: impl Future<Output = T>,
        dead: Option<&str>,
        timeout: Option<Duration>,
        cancel: &mut Option<oneshot::Receiver<()>>,
    ) -> (Raced<T>, Option<&'static str>) {
        let (tx, mut rx) = watch::channel(dead.map(String::from));
        let told = Cell::new(None);
        let r = race(exchange, &mut rx, "tools/call", timeout, cancel, |why| told.set(Some(why))).await;
        drop(tx);
        (r, told.get())
    }

    #[tokio::test]
    async fn each_way_a_request_can_end() {
        let pending = std::future::pending::<()>;
        // A reply that is there wins over a death seen at the same time.
        let (r, told) = run(async { 7 }, Some("gone"), Some(Duration::ZERO), &mut None).await;
        assert!(matches!(r, Raced::Finished(7)) && told.is_none());
        let (r, _) = run(pending(), Some("the server exited"), None, &mut None).await;
        assert!(matches!(r, Raced::Died(ref why) if why == "the server exited"));
        let (r, told) = run(pending(), None, Some(Duration::from_millis(1)), &mut None).await;
        assert!(matches!(r, Raced::GivenUp(Failure { err: McpError::Timeout { ms: 1, .. }, sent: true })));
        assert_eq!(told, Some("timed out"));
        let (tx, rx) = oneshot::channel();
        let mut cancel = Some(rx);
        let _ = tx.send(());
        let (r, told) = run(pending(), None, None, &mut cancel).await;
        assert!(matches!(r, Raced::GivenUp(Failure { err: McpError::Cancelled, sent: true })));
        assert_eq!((told, cancel.is_none()), (Some("cancelled by the caller"), true));
        // A cancel sender dropped unsent means "never cancelled": the timeout still ends it.
        let (tx, rx) = oneshot::channel::<()>();
        drop(tx);
        let (r, _) = run(pending(), None, Some(Duration::from_millis(1)), &mut Some(rx)).await;
        assert!(matches!(r, Raced::GivenUp(Failure { err: McpError::Timeout { .. }, .. })));
    }
}
