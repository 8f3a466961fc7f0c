//! What a hand-off to another thread and back costs, on this machine, by where the two threads run.
//!
//!   cargo bench --no-default-features --bench handoff -- [--n N] [--work US]
//!
//! A "caller" thread (standing in for Node's JS thread) queues a job through a mutex and a condvar,
//! as the store's worker pools do (src/brain/lanes.rs), then sleeps in `epoll_wait` on an eventfd, as
//! libuv does; the worker spins for `--work` µs (a lookup at 1k rows is ~45 µs) and writes the
//! eventfd. Per case: the round trip's p50 / p90 / p99 and its overhead over the work (p50 − work),
//! and how often the caller changed cores. Cases:
//! - `floating`: two workers on no core in particular, taking turns (the worker pools before they were kept
//!   on cores; the scheduler puts a woken thread on an idle core);
//! - `same core`: one worker and the caller both kept on core 0;
//! - `per core`: one worker kept on each core, the caller floating; each job goes to the worker on
//!   the core the caller runs on (`sched_getcpu`), as the worker pools do now.
//!
//! Linux only (it is what the addon ships for). Not a test: it prints a table and never fails.

#![allow(clippy::expect_used, reason = "a benchmark: a failure ends the run, with its message")]

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Case {
    Floating,
    SameCore,
    PerCore,
}

fn keep_on(cpu: usize) {
    // SAFETY: an empty cpu_set_t with one bit set; 0 = the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn spin(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

fn migrations() -> u64 {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    std::fs::read_to_string(format!("/proc/self/task/{tid}/sched"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("se.nr_migrations"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

type Queue = Arc<(Mutex<u32>, Condvar)>;

fn run(case: Case, n: usize, work: u64) -> (Vec<u64>, u64) {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).min(2);
    // SAFETY: plain syscalls on integers; the fds live until the process ends (one run per case).
    let (efd, ep) = unsafe { (libc::eventfd(0, libc::EFD_NONBLOCK), libc::epoll_create1(0)) };
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 1 };
    // SAFETY: `ev` is a live epoll_event, which epoll_ctl only reads.
    unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, efd, &mut ev) };
    let queues: Vec<Queue> = (0..cores).map(|_| Arc::new((Mutex::new(0), Condvar::new()))).collect();
    for (i, q) in queues.iter().enumerate() {
        let q = q.clone();
        std::thread::spawn(move || {
            match case {
                Case::PerCore => keep_on(i),
                Case::SameCore => keep_on(0),
                Case::Floating => {}
            }
            loop {
                let mut jobs = q.0.lock().expect("the queue");
                while *jobs == 0 {
                    jobs = q.1.wait(jobs).expect("the queue");
                }
                *jobs -= 1;
                drop(jobs);
                spin(work);
                let one: u64 = 1;
                // SAFETY: writes the 8 bytes of `one`, a live u64, to the eventfd.
                unsafe { libc::write(efd, &one as *const u64 as *const _, 8) };
            }
        });
    }
    if case == Case::SameCore {
        keep_on(0);
    }
    std::thread::sleep(Duration::from_millis(50));
    let m0 = migrations();
    let mut lat = Vec::with_capacity(n);
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
    for k in 0..n {
        spin(10); // the caller's own turn between calls
        let t = Instant::now();
        let to = match case {
            // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
            Case::PerCore => unsafe { libc::sched_getcpu() }.max(0) as usize % cores,
            Case::SameCore => 0,
            Case::Floating => k % cores,
        };
        *queues[to].0.lock().expect("the queue") += 1;
        queues[to].1.notify_one();
        // SAFETY: `events` is a live array of 4 epoll_events, and 4 says so.
        while unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 4, -1) } <= 0 {}
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into `v`, a live u64.
        unsafe { libc::read(efd, &mut v as *mut u64 as *mut _, 8) };
        lat.push(t.elapsed().as_micros() as u64);
    }
    let moved = migrations() - m0;
    lat.sort_unstable();
    (lat, moved)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str, dflt: u64| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(dflt)
    };
    let (n, work) = (value("--n", 3000) as usize, value("--work", 45));
    println!("| case | p50 | p90 | p99 | overhead over {work} µs of work (p50) | caller changed cores |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, case) in [("floating", Case::Floating), ("same core", Case::SameCore), ("per core", Case::PerCore)] {
        // Each case in a child process: a thread kept on a core stays kept.
        if let Some(only) = args.iter().position(|a| a == "--case").and_then(|i| args.get(i + 1)) {
            if only != name {
                continue;
            }
            let (lat, moved) = run(case, n, work);
            let p = |q: usize| lat[(lat.len() * q / 100).min(lat.len() - 1)];
            println!(
                "| {name} | {} µs | {} µs | {} µs | {} µs | {moved} of {n} calls |",
                p(50),
                p(90),
                p(99),
                p(50) as i64 - work as i64
            );
            return;
        }
        let out = std::process::Command::new(&args[0])
            .args(["--n", &n.to_string(), "--work", &work.to_string(), "--case", name])
            .output()
            .expect("run a case");
        let text = String::from_utf8_lossy(&out.stdout);
        print!(
            "{}",
            text.lines().filter(|l| l.starts_with(&format!("| {name} "))).map(|l| format!("{l}\n")).collect::<String>()
        );
    }
}
