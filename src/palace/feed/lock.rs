//! The cross-process feed lock: a non-blocking `flock` on `<agentDir>/mempalace-feed.lock`, so two
//! processes (two pi sessions, pi and the operator's `feed`) never feed at once; the loser skips.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The non-blocking cross-process feed lock (released when dropped).
#[derive(Debug)]
pub(super) struct FeedLock(
    #[allow(dead_code, reason = "held, never read: the flock lasts as long as the open file")] std::fs::File,
);

impl FeedLock {
    /// `flock(LOCK_EX | LOCK_NB)` on `path` (created if missing). `Ok(None)` when another open
    /// file description holds it.
    pub(super) fn try_acquire(path: &Path) -> std::io::Result<Option<FeedLock>> {
        if let Some(parent) = path.parent() {
            crate::palace::files::create_private_dir(parent)?;
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(path)?;
        // SAFETY: flock on a file descriptor we own for the duration of the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Some(FeedLock(file)));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(err)
        }
    }
}
