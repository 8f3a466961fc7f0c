//! The scheduler's calls the store's threads use: which core a thread runs on, which cores the
//! process may use, keeping a thread on one core, and asking for a short time slice. Linux only
//! (elsewhere each answers "unknown" or "refused"); every `unsafe` block of the store is here.

/// The core the calling thread runs on, `None` where that can't be known.
pub(super) fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getcpu takes no arguments and touches no memory of ours; glibc answers from
        // rseq or the vDSO (tens of nanoseconds).
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 {
            return Some(cpu as usize);
        }
    }
    None
}

/// The cores this process may run on, in order, when the system says.
pub(super) fn allowed_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is a plain bit array: all zeroes is a valid (empty) set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live cpu_set_t and the size passed is its own, so the kernel writes
        // within it; 0 is the calling thread.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == 0 {
            // SAFETY: CPU_ISSET only reads `set`, through a bounds-checked index (and `c` < CPU_SETSIZE).
            return Some((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect());
        }
    }
    None
}

/// Keeps the calling thread on `cpu`; `false` when the system refused (it then floats).
#[cfg(target_os = "linux")]
pub(super) fn keep_on_cpu(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is a plain bit array: all zeroes is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes inside `set` only, through a bounds-checked index (a `cpu` past
    // CPU_SETSIZE panics; ours come from `allowed_cpus`).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a live cpu_set_t and the size passed is its own, so the kernel reads within
    // it; 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// Keeps the calling thread on `cpu`: not where there is no `sched_setaffinity`.
#[cfg(not(target_os = "linux"))]
pub(super) fn keep_on_cpu(_cpu: usize) -> bool {
    false
}

/// Asks the scheduler for a short time slice (100 µs, Linux's least; the default is ~3 ms) for
/// the calling thread. Under EEVDF (Linux 6.12+) a shorter slice means an earlier deadline, not a
/// bigger share of the CPU: a store thread woken for a 50 µs lookup then runs it to the end
/// instead of being cut off by the JS thread it is about to wake, which otherwise ran on the same
/// core, found Node's threadsafe-function mutex still held by the store thread, slept on it and was
/// woken onto the other core (`perf sched timehist`, bench/README.md). Older kernels ignore it;
/// the thread keeps its nice value and any other policy it was given, and a refusal changes nothing.
pub(super) fn short_slice() {
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
        // SAFETY: sched_getscheduler, getpriority and sched_setattr on the calling thread (0), and
        // errno of the calling thread; the SCHED_ATTR_SIZE_VER0 struct passed lives across the
        // call, says its own size, and the kernel only reads it.
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
