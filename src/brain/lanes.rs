//! The store's own threads: a pool of readers and a pool of writers ([`Workers`]), one worker of
//! each per core, each pool taking jobs off one queue. A reader runs one read; a writer waits for its
//! turn to write (one writer at a time) and commits whatever writes are queued in one transaction
//! ([`Brain::write_all`]).
//!
//! Why threads of our own rather than tokio's blocking pool: a call then costs one wake-up to get
//! here and one (the caller's callback) to get back, where `spawn_blocking` from a tokio task cost
//! JS → tokio worker → blocking thread → tokio worker → JS, about 60 µs and 8 futex calls per
//! lookup on the bench machine (bench/README.md).
//!
//! Why one worker per core, each kept on its core: a wake-up that crosses cores is what a call
//! from JS mostly pays for. On the bench VM a hand-off to a thread on another (idle) core and back
//! costs ~50–60 µs more than the work, to a thread on the caller's own core ~10 µs: the caller is
//! about to wait anyway, so the woken thread simply runs in its place (bench/handoff.rs). A job therefore wakes
//! the idle worker that lives on the caller's core, or failing that any idle worker; workers on the
//! other cores are what lets calls in flight run side by side. Workers are kept on their cores only
//! where there is one for every core the process may use (2 to [`MAX_READERS`] cores: the Pi, the
//! bench machine); on a bigger machine they float as before.
//!
//! The threads start on first use and end when the [`Brain`] is dropped; they hold only a weak
//! reference to it.

use super::affinity::{allowed_cpus, current_cpu, keep_on_cpu, short_slice};
use super::write::MAX_GROUP;
use super::{Brain, BrainError, Result, WriteOp, MAX_READERS};
use crate::sync::lock;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

/// A read: gets the store, or `None` when it is gone, and returns the delivery of its answer,
/// which the reader runs once it has marked itself as finishing (see [`Workers::push`]).
pub(super) type ReadJob = Box<dyn FnOnce(Option<&Brain>) -> Deliver + Send>;
pub(super) type Deliver = Box<dyn FnOnce() + Send>;

/// A write and where its result goes (called on a writer thread after COMMIT).
pub(super) struct WriteJob {
    pub op: WriteOp,
    pub done: Box<dyn FnOnce(Result<String>) + Send>,
}

/// The readers and the writers, each started on first use; `None` inside when no thread of the pool
/// could be started.
#[derive(Default)]
pub(super) struct Lanes {
    read: OnceLock<Option<Arc<Workers<ReadJob>>>>,
    write: OnceLock<Option<Arc<Workers<WriteJob>>>>,
}

/// No core: a worker that floats (or a caller whose core is unknown).
const ANY_CPU: usize = usize::MAX;

/// A pool of threads (its workers) taking jobs of type `J` off one queue. A mutex and a condvar
/// per worker: a job costs one futex wake of the worker chosen for it (and that worker's wait).
struct Workers<J> {
    queue: Mutex<Queue<J>>,
    workers: Vec<Worker>,
}

/// The jobs waiting, and which workers are free to take one (bit i is worker i).
struct Queue<J> {
    jobs: VecDeque<J>,
    idle: u64,      // bit i: worker i is waiting for work and nobody has woken it yet
    finishing: u64, // bit i: worker i is answering its last job and will look at the queue next
    closed: bool,
    alive: u64, // bit i: worker i's thread started
}

/// One thread of a [`Workers`] pool: how to wake it, and the core it is kept on.
struct Worker {
    wake: Condvar,
    cpu: AtomicUsize, // the core it is kept on, or ANY_CPU
}

impl<J> Workers<J> {
    fn new(cpus: &[usize]) -> Self {
        Workers {
            queue: Mutex::new(Queue { jobs: VecDeque::new(), idle: 0, finishing: 0, closed: false, alive: 0 }),
            workers: cpus.iter().map(|&cpu| Worker { wake: Condvar::new(), cpu: AtomicUsize::new(cpu) }).collect(),
        }
    }

    /// Queues `job` for the worker on the caller's core when it is idle (woken) or answering its
    /// last job (it looks at the queue next: no wake-up at all), else for any idle worker; when
    /// none is, the first to finish takes it.
    ///
    /// Why "answering" counts: a worker wakes the JS thread on its own core to settle a promise,
    /// and the JS thread, running in its place, usually calls again before the worker got back to
    /// its queue. Waking another worker then would cost a hop across cores every call.
    fn push(&self, job: J) -> std::result::Result<(), J> {
        let here = current_cpu().unwrap_or(ANY_CPU);
        let mut s = lock(&self.queue);
        if s.closed {
            return Err(job);
        }
        s.jobs.push_back(job);
        match choose(s.idle, s.finishing, self.workers.iter().map(|w| w.cpu.load(Ordering::Relaxed)), here) {
            Choice::Wake(i) => {
                s.idle &= !(1 << i);
                drop(s);
                self.workers[i].wake.notify_one();
            }
            Choice::Claim(i) => s.finishing &= !(1 << i),
            Choice::Nobody => {}
        }
        Ok(())
    }

    /// Worker `i` is about to answer its job and will then look at the queue.
    fn finishing(&self, i: usize) {
        lock(&self.queue).finishing |= 1 << i;
    }

    /// Waits until there is work for worker `i`; `false` once the pool is closed and drained.
    fn wait_for_work(&self, i: usize) -> bool {
        let mut s = lock(&self.queue);
        loop {
            s.idle &= !(1 << i);
            s.finishing &= !(1 << i);
            if !s.jobs.is_empty() {
                return true;
            }
            if s.closed {
                return false;
            }
            s.idle |= 1 << i;
            s = self.workers[i].wake.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Up to `max` of the queued jobs, oldest first (none when another worker took them).
    fn take(&self, max: usize) -> Vec<J> {
        let mut s = lock(&self.queue);
        let n = max.min(s.jobs.len());
        s.jobs.drain(..n).collect()
    }

    /// Workers idle or answering their last job.
    fn spare(&self) -> usize {
        let s = lock(&self.queue);
        (s.idle | s.finishing).count_ones() as usize
    }

    /// No more jobs: the workers finish what is queued and end.
    fn close(&self) {
        lock(&self.queue).closed = true;
        for w in &self.workers {
            w.wake.notify_all();
        }
    }

    /// Starts one thread per worker running `work(pool, i)`; `None` when none could start.
    fn start(
        self: Arc<Self>,
        name: &str,
        work: impl Fn(&Workers<J>, usize) + Send + Sync + Clone + 'static,
    ) -> Option<Arc<Self>>
    where
        J: Send + 'static,
    {
        for i in 0..self.workers.len() {
            let (pool, work) = (Arc::clone(&self), work.clone());
            let spawned = std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || {
                let cpu = &pool.workers[i].cpu;
                if cpu.load(Ordering::Relaxed) != ANY_CPU && !keep_on_cpu(cpu.load(Ordering::Relaxed)) {
                    cpu.store(ANY_CPU, Ordering::Relaxed);
                }
                short_slice();
                work(&pool, i)
            });
            match spawned {
                Ok(_) => lock(&self.queue).alive |= 1 << i,
                Err(e) => crate::diag!("brain.db: could not start a {name} thread: {e}"),
            }
        }
        let any = lock(&self.queue).alive != 0;
        any.then_some(self)
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        if let Some(Some(readers)) = self.read.get() {
            readers.close();
        }
        if let Some(Some(writers)) = self.write.get() {
            writers.close();
        }
    }
}

/// The error a job gets when the store's threads are gone (or never started).
pub(super) fn closed() -> BrainError {
    BrainError::Io(std::io::Error::other("the store's thread stopped"))
}

impl Lanes {
    /// Readers free to take a part of a lookup now: idle, or answering their last job (all of
    /// them before the first read). A lookup is split over these only, so that lookups in flight
    /// together don't each pay for a split (see `Brain::submit_lookup`).
    pub(crate) fn spare_readers(&self) -> usize {
        match self.read.get() {
            Some(Some(readers)) => readers.spare(),
            Some(None) => 0,
            None => placement().len(),
        }
    }

    /// Queues a read for the readers (started on first use); without them, the read runs at once
    /// without the store (it answers that the store's threads are gone).
    pub(super) fn read(&self, brain: &Arc<Brain>, job: ReadJob) {
        match self.read.get_or_init(|| start_readers(Arc::downgrade(brain))) {
            Some(readers) => {
                if let Err(job) = readers.push(job) {
                    job(None)();
                }
            }
            None => job(None)(),
        }
    }

    /// Queues a write for the writers (started on first use); without them, it fails at once.
    pub(super) fn write(&self, brain: &Arc<Brain>, job: WriteJob) {
        match self.write.get_or_init(|| start_writers(Arc::downgrade(brain))) {
            Some(writers) => {
                if let Err(job) = writers.push(job) {
                    (job.done)(Err(closed()));
                }
            }
            None => (job.done)(Err(closed())),
        }
    }
}

/// Who takes a job just queued.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    /// Worker i, idle: wake it.
    Wake(usize),
    /// Worker i, answering its last job on the caller's core: it takes the job next, unwoken.
    Claim(usize),
    /// Every worker is busy: the first to finish takes it.
    Nobody,
}

/// [`Choice`] for a job queued from core `here`, given which workers are idle and which are
/// finishing (bit i) and the core each is kept on: the worker on the caller's core if it is idle
/// or finishing, else the first idle worker.
fn choose(idle: u64, finishing: u64, cpus: impl Iterator<Item = usize>, here: usize) -> Choice {
    let mut first_idle = None;
    for (i, cpu) in cpus.enumerate() {
        let bit = 1 << i;
        if cpu == here && here != ANY_CPU {
            if idle & bit != 0 {
                return Choice::Wake(i);
            }
            if finishing & bit != 0 {
                return Choice::Claim(i);
            }
        }
        if idle & bit != 0 && first_idle.is_none() {
            first_idle = Some(i);
        }
    }
    first_idle.map_or(Choice::Nobody, Choice::Wake)
}

/// One worker per core (2 to [`MAX_READERS`]): reads are CPU work, and more threads than cores
/// only take turns on them. Each is kept on its core when the process may use exactly that many.
fn placement() -> Vec<usize> {
    static PLACES: OnceLock<Vec<usize>> = OnceLock::new();
    PLACES
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            match allowed_cpus() {
                Some(cpus) if cpus.len() == cores && (2..=MAX_READERS).contains(&cores) => cpus,
                _ => vec![ANY_CPU; cores.clamp(2, MAX_READERS)],
            }
        })
        .clone()
}

/// The readers: each runs one read at a time and answers it.
fn start_readers(brain: Weak<Brain>) -> Option<Arc<Workers<ReadJob>>> {
    Arc::new(Workers::new(&placement())).start("brain-read", move |readers: &Workers<ReadJob>, i| {
        while readers.wait_for_work(i) {
            for job in readers.take(1) {
                crate::stages::mark(crate::stages::Stage::Picked);
                let b = brain.upgrade();
                let answered = caught("a read", || job(b.as_deref()));
                crate::stages::mark(crate::stages::Stage::Answered);
                if let Some(deliver) = answered {
                    drop(b);
                    readers.finishing(i);
                    caught("an answer", deliver);
                }
            }
        }
    })
}

/// The writers: each, in its turn, takes whatever writes are queued and commits them as one group.
fn start_writers(brain: Weak<Brain>) -> Option<Arc<Workers<WriteJob>>> {
    // The turn to write, held from taking a group off the queue until its COMMIT returned: one
    // writer at a time, and groups commit in the order their writes were queued.
    let write_turn = Arc::new(Mutex::new(()));
    Arc::new(Workers::new(&placement())).start("brain-write", move |writers: &Workers<WriteJob>, i| {
        while writers.wait_for_work(i) {
            // Whatever is queued once it is this writer's turn goes into one transaction (a lone
            // write doesn't wait for company); another writer may have taken it all meanwhile.
            let turn = lock(&write_turn);
            let group = writers.take(MAX_GROUP);
            if group.is_empty() {
                continue;
            }
            crate::stages::mark(crate::stages::Stage::Picked);
            let (ops, dones): (Vec<WriteOp>, Vec<_>) = group.into_iter().map(|j| (j.op, j.done)).unzip();
            let results = brain.upgrade().and_then(|b| {
                let out = caught("a group of writes", || b.write_all(&ops));
                if out.is_none() {
                    b.abandon_transaction();
                }
                out
            });
            drop(turn);
            crate::stages::mark(crate::stages::Stage::Answered);
            writers.finishing(i);
            match results {
                Some(results) => dones.into_iter().zip(results).for_each(|(done, r)| done(r)),
                None => dones.into_iter().for_each(|done| done(Err(closed()))),
            }
        }
    })
}

/// Runs `f`, reporting a panic instead of losing the thread (the job's callback, dropped uncalled,
/// answers its caller: see `CallInFlight` in src/extension/calls.rs and the oneshot in [`Brain::read`]).
fn caught<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            crate::diag!("brain.db: {what} panicked: {why}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{choose, Choice::*};

    #[test]
    fn a_job_goes_to_the_worker_on_the_callers_core_when_idle_or_finishing_else_the_first_idle_one() {
        const ANY: usize = usize::MAX;
        let cores = || [0, 1, 2, 3].into_iter();
        assert_eq!(choose(0b1111, 0, cores(), 2), Wake(2));
        assert_eq!(choose(0b1011, 0, cores(), 2), Wake(0), "the worker on core 2 is busy");
        assert_eq!(
            choose(0b1011, 0b0100, cores(), 2),
            Claim(2),
            "answering its last job: it takes this one next, unwoken"
        );
        assert_eq!(choose(0b0001, 0b0100, cores(), 1), Wake(0), "finishing elsewhere doesn't count");
        assert_eq!(choose(0b1000, 0, cores(), 0), Wake(3));
        assert_eq!(choose(0, 0b0010, cores(), 3), Nobody, "all busy: the first to finish takes it");
        assert_eq!(choose(0b11, 0, [ANY, ANY].into_iter(), ANY), Wake(0), "workers that float");
        assert_eq!(choose(0b10, 0b01, [ANY, ANY].into_iter(), 5), Wake(1));
    }
}
