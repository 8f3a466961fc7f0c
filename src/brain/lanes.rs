//! The store's own threads: a crew of readers and a crew of writers, one member of each per core,
//! each crew taking jobs off one queue. A reader runs one read; a writer takes the write seat and
//! commits whatever writes are queued in one transaction ([`Brain::write_all`]).
//!
//! Why threads of our own rather than tokio's blocking pool: a call then costs one wake-up to get
//! here and one (the caller's callback) to get back, where `spawn_blocking` from a tokio task cost
//! JS → tokio worker → blocking thread → tokio worker → JS, about 60 µs and 8 futex calls per
//! lookup on the bench machine (bench/README.md).
//!
//! Why one member per core, each kept on its core: a wake-up that crosses cores is what a call
//! from JS mostly pays for. On the bench VM a hand-off to a thread on another (idle) core and back
//! costs ~50–60 µs more than the work, to a thread on the caller's own core ~10 µs: the caller is
//! about to wait anyway, so the woken thread simply runs in its place (bench/handoff.rs). A job therefore wakes
//! the idle member that lives on the caller's core, or failing that any idle member; members on the
//! other cores are what lets calls in flight run side by side. Members are kept on their cores only
//! where there is one for every core the process may use (2 to [`MAX_READERS`] cores: the Pi, the
//! bench machine); on a bigger machine they float as before.
//!
//! The threads start on first use and end when the [`Brain`] is dropped; they hold only a weak
//! reference to it.

use super::{Brain, BrainError, Result, WriteOp, MAX_GROUP, MAX_READERS};
use crate::sync::lock;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

/// A read: gets the store, or `None` when it is gone, and returns the delivery of its answer,
/// which the reader runs once it has marked itself as finishing (see [`Crew::push`]).
pub(super) type ReadJob = Box<dyn FnOnce(Option<&Brain>) -> Deliver + Send>;
pub(super) type Deliver = Box<dyn FnOnce() + Send>;

/// A write and where its result goes (called on a writer thread after COMMIT).
pub(super) struct WriteJob {
    pub op: WriteOp,
    pub done: Box<dyn FnOnce(Result<String>) + Send>,
}

/// The crews; `None` inside when no thread could be started.
#[derive(Default)]
pub(super) struct Lanes {
    read: OnceLock<Option<Arc<Crew<ReadJob>>>>,
    write: OnceLock<Option<Arc<Crew<WriteJob>>>>,
}

/// No core: a member that floats.
const ANY_CPU: usize = usize::MAX;

/// Threads taking jobs off one queue. A mutex and a condvar per member: a job costs one futex
/// wake of the member chosen for it (and that member's wait).
struct Crew<J> {
    state: Mutex<CrewState<J>>,
    members: Vec<Member>,
}

struct CrewState<J> {
    jobs: VecDeque<J>,
    idle: u64,      // bit i: member i is waiting for work and nobody has woken it yet
    finishing: u64, // bit i: member i is answering its last job and will look at the queue next
    closed: bool,
    alive: u64, // bit i: member i's thread started
}

struct Member {
    wake: Condvar,
    cpu: AtomicUsize, // the core it is kept on, or ANY_CPU
}

impl<J> Crew<J> {
    fn new(cpus: &[usize]) -> Self {
        Crew {
            state: Mutex::new(CrewState { jobs: VecDeque::new(), idle: 0, finishing: 0, closed: false, alive: 0 }),
            members: cpus.iter().map(|&cpu| Member { wake: Condvar::new(), cpu: AtomicUsize::new(cpu) }).collect(),
        }
    }

    /// Queues `job` for the member on the caller's core when it is idle (woken) or answering its
    /// last job (it looks at the queue next: no wake-up at all), else for any idle member; when
    /// none is, the first to finish takes it.
    ///
    /// Why "answering" counts: a member wakes the JS thread on its own core to settle a promise,
    /// and the JS thread, running in its place, usually calls again before the member got back to
    /// its queue. Waking another member then would cost a hop across cores every call.
    fn push(&self, job: J) -> std::result::Result<(), J> {
        let here = current_cpu();
        let mut s = lock(&self.state);
        if s.closed {
            return Err(job);
        }
        s.jobs.push_back(job);
        match choose(s.idle, s.finishing, self.members.iter().map(|m| m.cpu.load(Ordering::Relaxed)), here) {
            Choice::Wake(i) => {
                s.idle &= !(1 << i);
                drop(s);
                self.members[i].wake.notify_one();
            }
            Choice::Claim(i) => s.finishing &= !(1 << i),
            Choice::Nobody => {}
        }
        Ok(())
    }

    /// Member `i` is about to answer its job and will then look at the queue.
    fn finishing(&self, i: usize) {
        lock(&self.state).finishing |= 1 << i;
    }

    /// Waits until there is work for member `i`; `false` once the crew is closed and drained.
    fn wait_for_work(&self, i: usize) -> bool {
        let mut s = lock(&self.state);
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
            s = self.members[i].wake.wait(s).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Up to `max` of the queued jobs, oldest first (none when another member took them).
    fn take(&self, max: usize) -> Vec<J> {
        let mut s = lock(&self.state);
        let n = max.min(s.jobs.len());
        s.jobs.drain(..n).collect()
    }

    fn spare(&self) -> usize {
        let s = lock(&self.state);
        (s.idle | s.finishing).count_ones() as usize
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        for m in &self.members {
            m.wake.notify_all();
        }
    }

    /// Starts one thread per member running `work(crew, i)`; `None` when none could start.
    fn start(
        self: Arc<Self>,
        name: &str,
        work: impl Fn(&Crew<J>, usize) + Send + Sync + Clone + 'static,
    ) -> Option<Arc<Self>>
    where
        J: Send + 'static,
    {
        for i in 0..self.members.len() {
            let (crew, work) = (Arc::clone(&self), work.clone());
            let spawned = std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || {
                let cpu = &crew.members[i].cpu;
                if cpu.load(Ordering::Relaxed) != ANY_CPU && !keep_on_cpu(cpu.load(Ordering::Relaxed)) {
                    cpu.store(ANY_CPU, Ordering::Relaxed);
                }
                short_slice();
                work(&crew, i)
            });
            match spawned {
                Ok(_) => lock(&self.state).alive |= 1 << i,
                Err(e) => crate::diag!("brain.db: could not start a {name} thread: {e}"),
            }
        }
        let any = lock(&self.state).alive != 0;
        any.then_some(self)
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        if let Some(Some(c)) = self.read.get() {
            c.close();
        }
        if let Some(Some(c)) = self.write.get() {
            c.close();
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
    pub fn spare_readers(&self) -> usize {
        match self.read.get() {
            Some(Some(c)) => c.spare(),
            Some(None) => 0,
            None => placement().len(),
        }
    }

    pub fn read(&self, brain: &Arc<Brain>, job: ReadJob) {
        match self.read.get_or_init(|| start_readers(Arc::downgrade(brain))) {
            Some(crew) => {
                if let Err(job) = crew.push(job) {
                    job(None)();
                }
            }
            None => job(None)(),
        }
    }

    pub fn write(&self, brain: &Arc<Brain>, job: WriteJob) {
        match self.write.get_or_init(|| start_writers(Arc::downgrade(brain))) {
            Some(crew) => {
                if let Err(job) = crew.push(job) {
                    (job.done)(Err(closed()));
                }
            }
            None => (job.done)(Err(closed())),
        }
    }
}

/// Who takes a job just queued.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Choice {
    /// Member i, idle: wake it.
    Wake(usize),
    /// Member i, answering its last job on the caller's core: it takes the job next, unwoken.
    Claim(usize),
    /// Every member is busy: the first to finish takes it.
    Nobody,
}

/// [`Choice`] for a job queued from core `here`, given which members are idle and which are
/// finishing (bit i) and the core each is kept on: the member on the caller's core if it is idle
/// or finishing, else the first idle member.
pub(super) fn choose(idle: u64, finishing: u64, cpus: impl Iterator<Item = usize>, here: usize) -> Choice {
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

/// One member per core (2 to [`MAX_READERS`]): reads are CPU work, and more threads than cores
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

fn start_readers(brain: Weak<Brain>) -> Option<Arc<Crew<ReadJob>>> {
    Arc::new(Crew::new(&placement())).start("brain-read", move |crew: &Crew<ReadJob>, i| {
        while crew.wait_for_work(i) {
            for job in crew.take(1) {
                let b = brain.upgrade();
                if let Some(deliver) = caught("a read", || job(b.as_deref())) {
                    drop(b);
                    crew.finishing(i);
                    caught("an answer", deliver);
                }
            }
        }
    })
}

fn start_writers(brain: Weak<Brain>) -> Option<Arc<Crew<WriteJob>>> {
    // Held from taking a group off the queue until its COMMIT returned: one writer at a time, and
    // groups commit in the order their writes were queued.
    let seat = Arc::new(Mutex::new(()));
    Arc::new(Crew::new(&placement())).start("brain-write", move |crew: &Crew<WriteJob>, i| {
        while crew.wait_for_work(i) {
            // Whatever is queued once the seat is ours goes into one transaction (a lone write
            // doesn't wait for company); another writer may have taken it all meanwhile.
            let held = lock(&seat);
            let group = crew.take(MAX_GROUP);
            if group.is_empty() {
                continue;
            }
            let (ops, dones): (Vec<WriteOp>, Vec<_>) = group.into_iter().map(|j| (j.op, j.done)).unzip();
            let results = brain.upgrade().and_then(|b| {
                let out = caught("a group of writes", || b.write_all(&ops));
                if out.is_none() {
                    b.abandon_transaction();
                }
                out
            });
            drop(held);
            crew.finishing(i);
            match results {
                Some(results) => dones.into_iter().zip(results).for_each(|(done, r)| done(r)),
                None => dones.into_iter().for_each(|done| done(Err(closed()))),
            }
        }
    })
}

/// The core the calling thread runs on, or [`ANY_CPU`] where that can't be known.
fn current_cpu() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: no arguments; glibc answers from rseq or the vDSO (tens of nanoseconds).
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 {
            return cpu as usize;
        }
    }
    ANY_CPU
}

/// The cores this process may run on, in order, when the system says.
fn allowed_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == 0 {
            return Some((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect());
        }
    }
    None
}

/// Asks the scheduler for a short time slice (100 µs, Linux's least; the default is ~3 ms) for
/// the calling thread. Under EEVDF (Linux 6.12+) a shorter slice means an earlier deadline, not a
/// bigger share of the CPU: a store thread woken for a 50 µs lookup then runs it to the end
/// instead of being cut off by the JS thread it is about to wake, which otherwise ran on the same
/// core, found Node's threadsafe-function mutex still held by the store thread, slept on it and was
/// woken onto the other core (`perf sched timehist`, bench/README.md). Older kernels ignore it;
/// the thread keeps its nice value and any other policy it was given, and a refusal changes nothing.
fn short_slice() {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct SchedAttr {
            size: u32,
            policy: u32,
            flags: u64,
            nice: i32,
            priority: u32,
            runtime: u64, // for SCHED_OTHER since Linux 6.12: the slice, in ns
            deadline: u64,
            period: u64,
        }
        // SAFETY: getpriority and sched_setattr on the calling thread (0), with a SCHED_ATTR_SIZE_VER0
        // struct the kernel only reads.
        unsafe {
            if libc::sched_getscheduler(0) != libc::SCHED_OTHER {
                return; // the user chose another policy (batch, idle): keep it
            }
            *libc::__errno_location() = 0;
            let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
            if *libc::__errno_location() != 0 {
                return;
            }
            let attr = SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                policy: libc::SCHED_OTHER as u32,
                flags: 0,
                nice,
                priority: 0,
                runtime: 100_000,
                deadline: 0,
                period: 0,
            };
            libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
        }
    }
}

/// Keeps the calling thread on `cpu`; `false` when the system refused (it then floats).
#[cfg(target_os = "linux")]
fn keep_on_cpu(cpu: usize) -> bool {
    // SAFETY: as in `allowed_cpus`; 0 is the calling thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn keep_on_cpu(_cpu: usize) -> bool {
    false
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
