//! The store's own threads: a few readers taking read jobs off one queue, and one writer that
//! commits whatever writes are queued when it wakes in one transaction ([`Brain::write_all`]).
//!
//! Why threads of our own rather than tokio's blocking pool: a call then costs one wake-up to get
//! here and one (the caller's callback) to get back, where `spawn_blocking` from a tokio task cost
//! JS → tokio worker → blocking thread → tokio worker → JS, about 60 µs and 8 futex calls per
//! lookup on the bench machine (bench/README.md). The threads start on first use and end when the
//! [`Brain`] is dropped (its senders go with it); they hold only a weak reference to it.

use super::{Brain, BrainError, Result, WriteOp, MAX_GROUP, MAX_READERS};
use crate::sync::lock;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

/// A read: gets the store, or `None` when it is gone.
pub(super) type ReadJob = Box<dyn FnOnce(Option<&Brain>) + Send>;

/// A write and where its result goes (called on the writer thread after COMMIT).
pub(super) struct WriteJob {
    pub op: WriteOp,
    pub done: Box<dyn FnOnce(Result<String>) + Send>,
}

/// The queues into the threads; `None` inside when no thread could be started.
#[derive(Default)]
pub(super) struct Lanes {
    read: OnceLock<Option<Arc<ReadQueue>>>,
    write: OnceLock<Option<Sender<WriteJob>>>,
}

/// The readers' one queue. A mutex and a condvar rather than an `mpsc` receiver behind a mutex:
/// then a job costs one futex wake (and the woken reader's wait), where the receiver's lock
/// handed from reader to reader cost two more per job (strace: 4.5 futex calls per lookup).
#[derive(Default)]
struct ReadQueue {
    jobs: Mutex<(VecDeque<ReadJob>, bool)>, // the jobs, and whether the store is gone
    ready: Condvar,
    threads: AtomicUsize, // started
}

impl ReadQueue {
    fn push(&self, job: ReadJob) -> std::result::Result<(), ReadJob> {
        let mut q = lock(&self.jobs);
        if q.1 {
            return Err(job);
        }
        q.0.push_back(job);
        drop(q);
        self.ready.notify_one();
        Ok(())
    }

    /// The next job, waiting for one; `None` once the store is gone and the queue is empty.
    fn pop(&self) -> Option<ReadJob> {
        let mut q = lock(&self.jobs);
        loop {
            if let Some(job) = q.0.pop_front() {
                return Some(job);
            }
            if q.1 {
                return None;
            }
            q = self.ready.wait(q).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    fn close(&self) {
        lock(&self.jobs).1 = true;
        self.ready.notify_all();
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        if let Some(Some(q)) = self.read.get() {
            q.close();
        }
    }
}

/// The error a job gets when the store's threads are gone (or never started).
pub(super) fn closed() -> BrainError {
    BrainError::Io(std::io::Error::other("the store's thread stopped"))
}

impl Lanes {
    /// Reader threads running (the count they will have before the first read).
    pub fn readers(&self) -> usize {
        match self.read.get() {
            Some(Some(q)) => q.threads.load(Ordering::Relaxed),
            Some(None) => 0,
            None => reader_count(),
        }
    }

    pub fn read(&self, brain: &Arc<Brain>, job: ReadJob) {
        match self.read.get_or_init(|| start_readers(Arc::downgrade(brain))) {
            Some(q) => {
                if let Err(job) = q.push(job) {
                    job(None);
                }
            }
            None => job(None),
        }
    }

    pub fn write(&self, brain: &Arc<Brain>, job: WriteJob) {
        match self.write.get_or_init(|| start_writer(Arc::downgrade(brain))) {
            Some(tx) => {
                if let Err(mpsc::SendError(job)) = tx.send(job) {
                    (job.done)(Err(closed()));
                }
            }
            None => (job.done)(Err(closed())),
        }
    }
}

/// One reader per core (2 to [`MAX_READERS`]): reads are CPU work, and more threads than cores
/// only take turns on them.
fn reader_count() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, MAX_READERS)
}

fn start_readers(brain: Weak<Brain>) -> Option<Arc<ReadQueue>> {
    let shared = Arc::new(ReadQueue::default());
    for i in 0..reader_count() {
        let (queue, brain) = (Arc::clone(&shared), brain.clone());
        let spawned = std::thread::Builder::new().name(format!("brain-read-{i}")).spawn(move || {
            while let Some(job) = queue.pop() {
                let b = brain.upgrade();
                caught("a read", || job(b.as_deref()));
            }
        });
        match spawned {
            Ok(_) => drop(shared.threads.fetch_add(1, Ordering::Relaxed)),
            Err(e) => crate::diag!("brain.db: could not start a reader thread: {e}"),
        }
    }
    (shared.threads.load(Ordering::Relaxed) > 0).then_some(shared)
}

fn start_writer(brain: Weak<Brain>) -> Option<Sender<WriteJob>> {
    let (tx, rx) = mpsc::channel::<WriteJob>();
    let spawned = std::thread::Builder::new().name("brain-write".into()).spawn(move || loop {
        let Ok(first) = rx.recv() else { return };
        // Whatever else is queued by now goes into the same transaction; a lone write doesn't
        // wait for company.
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let (ops, dones): (Vec<WriteOp>, Vec<_>) = group.into_iter().map(|j| (j.op, j.done)).unzip();
        let results = brain.upgrade().and_then(|b| {
            let out = caught("a group of writes", || b.write_all(&ops));
            if out.is_none() {
                b.abandon_transaction();
            }
            out
        });
        match results {
            Some(results) => dones.into_iter().zip(results).for_each(|(done, r)| done(r)),
            None => dones.into_iter().for_each(|done| done(Err(closed()))),
        }
    });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            crate::diag!("brain.db: could not start the writer thread: {e}");
            None
        }
    }
}

/// Runs `f`, reporting a panic instead of losing the thread (the job's callback, dropped uncalled,
/// answers its caller: see `Answer` in src/extension.rs and the oneshot in [`Brain::read`]).
fn caught<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(panic) => {
            let why = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            crate::diag!("brain.db: {what} panicked: {why}");
            None
        }
    }
}
