//! The one way this crate takes a std `Mutex`.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, taking the data even when a panicking thread poisoned it. Every value behind our
/// std locks is consistent at each unlock (a map insert, a swap, a counter), and a panic in one
/// tool call (caught at the boundary) must not take every later call down with it. These locks are
/// held for a few instructions and never across an `.await`.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
