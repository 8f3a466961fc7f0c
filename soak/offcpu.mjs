#!/usr/bin/env node
// What the JS thread of a pi-like process did during each stall a soak run printed, from a kernel
// trace of the run (docs/soak.md, "What held the JS thread"): each time it went off a CPU in the
// stall, for how long, in which state (R: preempted; S: asleep; D: in the kernel uninterruptibly)
// and on which kernel stack, and which thread of the process woke it; then, over the whole run,
// its sleeps outside the event loop's epoll wait by stack, and its futex sleeps by waking thread
// (a lock or a condition it waited on, and whose).
//
//   perf record -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup -g -o run.data \
//     -- node soak/run.mjs --palace-only > run.log
//   node soak/offcpu.mjs run.data run.log [minMs=1]
//
// The trace follows the soak's processes only (no -a: a system-wide one of a shared machine takes
// minutes to read): a thread's switch-outs and the wakeups its own process makes are in it, but a
// switch-in or a wakeup made from another process (a timer interrupt, another process's task on
// that CPU) is not, so a sleep's end is the thread's next switch-out minus its run time as perf
// saw it, and the run-queue share is the soak's own schedstat split, printed with each stall.
// The stall lines carry their start on CLOCK_MONOTONIC, the clock `-k CLOCK_MONOTONIC` stamps the
// trace with. The pi-like processes are found in the trace as those with tokio-rt-worker threads.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const [data, log, minArg = '1'] = process.argv.slice(2);
const minMs = Number(minArg);
const text = execFileSync('perf', ['sched', 'timehist', '-i', data, '--state', '-w', '-g'], { maxBuffer: 2 ** 31, stdio: ['ignore', 'pipe', 'ignore'] }).toString();

// Lines: `time [cpu] comm[tid/pid] wait sch run state stack` (a switch-out) or `time [cpu] comm[tid/pid] awakened: comm[tid/pid]`.
const sw = new Map(); // tid -> [{ out, wait, sch, run, state, stack }]
const wakes = new Map(); // woken tid -> [{ t, by }]
const pidOf = new Map();
const name = new Map();
const task = /^(.*)\[(\d+)(?:\/(\d+))?\]$/;
for (const line of text.split('\n')) {
  const f = line.trim().split(/\s+/);
  if (f.length < 4 || !/^\d+\.\d+$/.test(f[0])) continue;
  const m = task.exec(f[2]);
  if (!m) continue;
  const tid = Number(m[2]);
  pidOf.set(tid, Number(m[3] ?? m[2]));
  name.set(tid, m[1]);
  if (f[3] === 'awakened:') {
    const w = task.exec(f[4] ?? '');
    if (!w) continue;
    const woken = Number(w[2]);
    if (!wakes.has(woken)) wakes.set(woken, []);
    wakes.get(woken).push({ t: Number(f[0]), by: tid });
    continue;
  }
  if (f.length < 7) continue;
  if (!sw.has(tid)) sw.set(tid, []);
  sw.get(tid).push({ out: Number(f[0]), wait: Number(f[3]), sch: Number(f[4]), run: Number(f[5]), state: f[6], stack: f.slice(7).join(' ').split(' <- ').slice(0, 4).join(' <- ') });
}
const piPids = new Set([...name].filter(([, n]) => n === 'tokio-rt-worker').map(([tid]) => pidOf.get(tid)));

/** The main thread's times off a CPU: from a switch-out to the next switch-in. */
function offCpu(pid) {
  const s = sw.get(pid) ?? [];
  const out = [];
  for (let i = 1; i < s.length; i++) {
    const from = s[i - 1].out;
    const to = s[i].out - s[i].run / 1000;
    const state = s[i - 1].state;
    const w = (wakes.get(pid) ?? []).filter((x) => x.t >= from && x.t <= to + 1e-6).pop();
    const waker = w && state !== 'R' ? { tid: w.by, comm: name.get(w.by) } : undefined;
    out.push({ from, to, ms: (to - from) * 1000, state, stack: s[i - 1].stack, waker });
  }
  return out;
}
const off = new Map([...piPids].map((p) => [p, offCpu(p)]));

const stalls = [];
for (const line of fs.readFileSync(log, 'utf8').split('\n')) {
  const m = /^(\w+): event loop stalled (\d+) ms .*on a CPU (\d+) ms, runnable but waiting for a CPU (\d+) ms; from ([\d.]+) s on CLOCK_MONOTONIC/.exec(line);
  if (m) stalls.push({ half: m[1], gap: Number(m[2]), cpu: Number(m[3]), rq: Number(m[4]), from: Number(m[5]) });
}
const f1 = (x) => x.toFixed(1);
console.log(`pi-like processes in the trace: ${[...piPids].join(', ')}; ${stalls.length} stalls in the log`);
for (const st of stalls) {
  const a = st.from - 0.006, b = st.from + (st.gap + 10) / 1000;
  for (const [pid, list] of off) {
    const inWin = list.filter((o) => o.to > a && o.from < b);
    if (!inWin.length && !(sw.get(pid) ?? []).some((x) => x.out > a && x.out < b)) continue;
    console.log(`\n${st.half} stall ${st.gap} ms from ${st.from.toFixed(3)} (soak: cpu ${st.cpu}, run queue ${st.rq}, own ${Math.max(0, st.gap - st.rq)}) -> pid ${pid}: off a CPU ${inWin.length} times`);
    for (const o of inWin) {
      if (o.ms < minMs) continue;
      const wk = o.waker ? `; woken by ${o.waker.comm}[${o.waker.tid}]` : o.state === 'R' ? '' : '; woken from outside the process (a timer, a timeout)';
      console.log(`  +${f1((o.from - st.from) * 1000)} ms: ${f1(o.ms)} ms off, ${o.state === 'R' ? 'preempted' : o.state}: ${o.stack}${wk}`);
    }
  }
}
// The whole run: the main thread's blocked sleeps outside its event loop's epoll wait, by stack.
for (const [pid, list] of off) {
  const by = new Map();
  for (const o of list) {
    if (o.state === 'R' || /epoll_wait/.test(o.stack)) continue;
    const k = `${o.state} ${o.stack}`;
    const e = by.get(k) ?? { n: 0, ms: 0, max: 0 };
    e.n++; e.ms += o.ms; e.max = Math.max(e.max, o.ms);
    by.set(k, e);
  }
  console.log(`\npid ${pid}: the main thread's sleeps outside epoll, by kernel stack (count, ms in all, longest):`);
  for (const [k, e] of [...by].sort((x, y) => y[1].ms - x[1].ms).slice(0, 8)) console.log(`  ${e.n} x, ${f1(e.ms)} ms, longest ${f1(e.max)} ms: ${k}`);
}
for (const [pid, list] of off) {
  const longest = list.filter((o) => o.state !== 'R' && !/epoll_wait/.test(o.stack)).sort((x, y) => y.ms - x.ms).slice(0, 6);
  console.log(`\npid ${pid}: its longest sleeps outside epoll:`);
  for (const o of longest) {
    const wk = o.waker ? `woken by ${o.waker.comm}[${o.waker.tid}]` : 'woken from outside the process (a timer, a timeout)';
    console.log(`  at ${o.from.toFixed(3)}: ${o.state} ${f1(o.ms)} ms: ${o.stack}; ${wk}`);
  }
}
// Which threads woke the main thread from its futex sleeps (a lock or a condition it waited on), by thread.
for (const [pid, list] of off) {
  const by = new Map();
  for (const o of list) {
    if (o.state === 'R' || !/futex/.test(o.stack)) continue;
    const k = o.waker ? `${o.waker.comm}[${o.waker.tid}]` : '(from outside the process: a timeout)';
    const e = by.get(k) ?? { n: 0, ms: 0, max: 0 };
    e.n++; e.ms += o.ms; e.max = Math.max(e.max, o.ms);
    by.set(k, e);
  }
  const events = new Map();
  for (const [tid, s] of sw) if (pidOf.get(tid) === pid) events.set(tid, s.length);
  console.log(`\npid ${pid}: the main thread's futex sleeps by the thread that woke it (count, ms in all, longest); threads' switch counts: ${[...events].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([t, n]) => `${name.get(t)}[${t}] ${n}`).join(', ')}`);
  for (const [k, e] of [...by].sort((x, y) => y[1].ms - x[1].ms).slice(0, 8)) console.log(`  ${k}: ${e.n} x, ${f1(e.ms)} ms, longest ${f1(e.max)} ms`);
}
