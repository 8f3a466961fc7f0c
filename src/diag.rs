//! Diagnostics go to stderr, never stdout: in pi's RPC mode stdout is the protocol channel.
//!
//! Node makes fd 2 non-blocking when it is a pipe, so a plain `eprintln!` can fail with EAGAIN when
//! the reader is slow, and `eprintln!` panics on failure. Lines are therefore handed to one writer
//! thread that waits for the pipe (poll) and never makes the caller wait; when too many lines are
//! queued, new ones are dropped rather than blocking a voice turn.

use once_cell::sync::Lazy;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::time::{Duration, Instant};

/// Writes one `[dotty-pi-ext]`-prefixed line on stderr, without blocking.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::diag::emit(format!("[dotty-pi-ext] {}\n", format_args!($($arg)*)))
    };
}

/// Longest line written; user text inside a diagnostic can be a megabyte.
const MAX_LINE: usize = 2000;
const QUEUE: usize = 1024;

static PENDING: AtomicUsize = AtomicUsize::new(0);
pub(crate) static DROPPED: AtomicUsize = AtomicUsize::new(0);

static SINK: Lazy<Option<SyncSender<String>>> = Lazy::new(|| {
    let (tx, rx) = sync_channel::<String>(QUEUE);
    std::thread::Builder::new()
        .name("dotty-stderr".into())
        .spawn(move || {
            for line in rx {
                write_fd2(line.as_bytes());
                PENDING.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .ok()?;
    Some(tx)
});

/// Cuts an over-long line at a character boundary, keeping it one line.
fn cut(mut line: String) -> String {
    if line.len() > MAX_LINE {
        let mut at = MAX_LINE;
        while !line.is_char_boundary(at) {
            at -= 1;
        }
        line.truncate(at);
        line.push_str("…\n");
    }
    line
}

/// Queues a finished line (with its newline) for stderr.
pub(crate) fn emit(line: String) {
    let line = cut(line);
    match &*SINK {
        Some(tx) => {
            PENDING.fetch_add(1, Ordering::SeqCst);
            if tx.try_send(line).is_err() {
                PENDING.fetch_sub(1, Ordering::SeqCst);
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        None => write_fd2(line.as_bytes()),
    }
}

/// Waits (at most `limit`) until queued lines are written; used at shutdown.
pub fn flush(limit: Duration) {
    let t0 = Instant::now();
    while PENDING.load(Ordering::SeqCst) > 0 && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// write(2) on fd 2 until done, waiting for a full non-blocking pipe; gives up on a real error.
fn write_fd2(mut buf: &[u8]) {
    while !buf.is_empty() {
        // SAFETY: writing a valid, live byte slice to fd 2.
        let n = unsafe { libc::write(2, buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            buf = &buf[n as usize..];
            continue;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) => {
                let mut pfd = libc::pollfd { fd: 2, events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 1000) };
            }
            _ => return,
        }
    }
}

/// Renders an error with its whole `source()` chain, outermost first, joined with ": " (reqwest's
/// `Display` hides the cause). A cause whose text is already there (an error that prints its
/// source itself) is not said twice. The one renderer of a cause chain: stderr lines and the JS
/// error's message ([`crate::error::Error::from_chain`]) both use it.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

/// The innermost cause of an error: the short reason a person can act on
/// ("Connection refused (os error 111)" rather than "error sending request for url ...").
pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = err;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let line = super::cut(format!("{}\n", "é".repeat(5000)));
        assert!(line.len() <= super::MAX_LINE + "…\n".len());
        assert!(line.ends_with("é…\n"));
        assert_eq!(super::cut("short\n".into()), "short\n");
    }

    #[test]
    fn a_chain_is_said_outermost_first_without_repeating_a_cause() {
        #[derive(Debug)]
        struct Wraps(&'static str, std::io::Error);
        impl std::fmt::Display for Wraps {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for Wraps {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.1)
            }
        }
        let e = Wraps("sending the request", std::io::Error::other("connection refused"));
        assert_eq!(super::chain(&e), "sending the request: connection refused");
        let e = Wraps("sending the request (connection refused)", std::io::Error::other("connection refused"));
        assert_eq!(super::chain(&e), "sending the request (connection refused)");
        assert_eq!(super::root_cause(&e), "connection refused");
    }
}
