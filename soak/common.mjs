// Shared by the soak's processes. What a pi-like process measures about itself: the JavaScript event loop's worst stall
// (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and its RSS, sampled every second.
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

/** The soak's folder. */
export const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * Forks `script` with an IPC channel; resolves with its one message, its stderr and its exit code.
 * `SOAK_NODE_ARGS` (space-separated) adds node options to the pi-like processes, for profiling:
 * `--cpu-prof --cpu-prof-dir=DIR`, `--trace-gc`, `--perf-basic-prof` (docs/soak.md).
 */
export function runChild(script, args, env) {
  const extra = (process.env.SOAK_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = fork(script, args, { env, execArgv: ['--expose-gc', ...extra], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
  let stderr = '';
  let message;
  child.stderr.on('data', (d) => (stderr += d));
  child.on('message', (m) => (message = m));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    // 'close', not 'exit': stderr is read to its end.
    child.on('close', (code, signal) => resolve({ message, stderr, code, signal, pid: child.pid }));
  });
}

export function startMonitor({ sampleMs = 1000, stallMs = 20 } = {}) {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const t0 = Date.now();
  // The /proc reading and the faults' signals run on a worker thread (soak/proc-worker.mjs), not on
  // this process's JavaScript thread, which is what the stall figures judge. Started before the
  // first count of threads and fds, so that its own thread and fds are in every count.
  // Its heap is not in this thread's V8 figures: it reports it, and the RSS outside the V8 heaps
  // leaves it out too (a small young generation keeps it from growing lazily meanwhile).
  // Its heap size comes through shared memory, not a message: the JS thread blocked on the worker's
  // MessagePort mutex when the worker, preempted, held it (node::worker::MessagePort::OnMessage ->
  // uv_mutex_lock, up to 10 ms on a loaded machine; docs/soak.md). Messages are left for the rare
  // requests: a stall's split, the faults, the pid notes.
  const heapShared = new BigInt64Array(new SharedArrayBuffer(8));
  const worker = new Worker(new URL('./proc-worker.mjs', import.meta.url), { workerData: { pid: process.pid, heapShared }, resourceLimits: { maxYoungGenerationSizeMb: 1 } });
  worker.unref();
  let nextId = 0;
  const waiting = new Map();
  let isReady;
  let up = false;
  const workerHeap = () => Number(Atomics.load(heapShared, 0));
  const ready = new Promise((r) => (isReady = r));
  worker.on('message', ({ id, result, error, ready: started }) => {
    if (started) {
      // Stalls are judged from here on: the worker's start is the harness's (and can't be split).
      up = true;
      last = mono();
      loop.reset();
      return isReady();
    }
    const w = waiting.get(id);
    waiting.delete(id);
    if (error) w.reject(new Error(`proc-worker: ${error}`));
    else w.resolve(result);
  });
  /** Runs `op` on the worker (proc-worker.mjs's `ops`). */
  const proc = (op, args = {}) => new Promise((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, op, ...args });
  });
  const handles = () => {
    const tasks = fs.readdirSync('/proc/self/task');
    const names = {};
    for (const t of tasks) {
      const n = fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim();
      names[n] = (names[n] ?? 0) + 1;
    }
    return { fds: fs.readdirSync('/proc/self/fd').length, threads: tasks.length, names };
  };
  const before = handles();
  const rss = [];
  // [seconds, RSS, V8 heap used, RSS outside V8's heap] in MB: the last is where native memory
  // (the addon, SQLite, tokio) shows, apart from the JavaScript objects of the harness itself.
  // V8's share is the physical memory its heap holds (not heapTotal: V8 keeps pages it no longer
  // counts, and RSS minus heapTotal would climb each time the heap shrinks).
  const sample = () => {
    const u = process.memoryUsage();
    const v8Mb = v8.getHeapStatistics().total_physical_size;
    rss.push([(Date.now() - t0) / 1000, u.rss / 1048576, u.heapUsed / 1048576, (u.rss - v8Mb - workerHeap()) / 1048576]);
  };
  // The histogram says how long the worst stall was; this says when each one happened and why:
  // the main thread's schedstat (ns on a CPU, ns runnable but waiting for one) over the stall,
  // sampled by the worker, splits it into time the thread ran or blocked (the process's own doing)
  // and time the machine gave it no CPU (a shared, loaded machine). GC pauses are listed beside them.
  // All this thread does per tick is read the clock.
  const stalls = [];
  const splits = [];
  const gcs = [];
  const mono = () => Number(process.hrtime.bigint()) / 1e6; // ms, CLOCK_MONOTONIC, as the worker's
  let last = mono();
  const tick = setInterval(() => {
    const now = mono();
    const gap = now - last - 5;
    if (up && gap > stallMs) {
      // `mono`: its start on CLOCK_MONOTONIC (s), to find it in a kernel trace (`perf record -k CLOCK_MONOTONIC`).
      const s = { at: Date.now(), gapMs: Math.round(gap), mono: last / 1000 };
      stalls.push(s);
      splits.push(proc('split', { from: last, to: now }).then(({ cpuMs, runqueueMs }) => {
        // No samples around it (can't happen once the worker runs): all of it counts as our own.
        s.cpuMs = Number.isFinite(cpuMs) ? Math.round(cpuMs) : 0;
        s.runqueueMs = Number.isFinite(runqueueMs) ? Math.round(runqueueMs) : 0;
        s.ownMs = Math.round(gap - s.runqueueMs);
      }));
    }
    last = now;
  }, 5);
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (e.duration > 5) gcs.push({ at: Math.round(performance.timeOrigin + e.startTime), ms: Math.round(e.duration), kind: e.detail?.kind });
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  loop.enable();
  sample();
  const timer = setInterval(sample, sampleMs);
  let maxBeforeReset = 0;
  let warm;
  const forced = [];
  const retained = [];
  return {
    /**
     * Open fds and threads once the process has been idle for `idleMs`: tokio's blocking pool
     * keeps an idle thread for 10 s, so a count taken right after the load says how busy it was,
     * and only one taken after that long says whether something leaked.
     */
    async settled(idleMs = 11_000) {
      await new Promise((r) => setTimeout(r, idleMs));
      return handles();
    },
    /**
     * What the JS heap really holds at this point: a forced full GC (the process runs with
     * --expose-gc), then heapUsed. V8 grows its heap lazily, so heapUsed and RSS sampled between
     * GCs climb with garbage for a while; only the retained size says whether objects leak. The
     * forced pause is the soak's own: it is kept out of the stall figures.
     */
    retained(label, { baseline = true } = {}) {
      maxBeforeReset = Math.max(maxBeforeReset, loop.max);
      const a = performance.timeOrigin + performance.now();
      globalThis.gc();
      globalThis.gc();
      const u = process.memoryUsage();
      retained.push({ label, at: (Date.now() - t0) / 1000, heapMb: u.heapUsed / 1048576, rssMb: u.rss / 1048576 });
      // The baseline of fds and threads too: brain.db's connections open in the background at load.
      // (The palace half takes it with baseline() instead, once the bridge is connected.)
      if (baseline && !warm) warm = handles();
      forced.push([a, performance.timeOrigin + performance.now()]);
      loop.reset();
      last = mono();
    },
    /**
     * The baseline of fds and threads, taken now (once), with `state` noted beside it: for a count
     * that depends on a state of the process (the palace's server pipes exist only while the bridge
     * is connected), the count after idle is compared with one taken in the same state.
     */
    baseline(state) {
      if (!warm) warm = { ...handles(), ...state };
    },
    /** Whether the baseline has been taken. */
    get baselined() {
      return warm !== undefined;
    },
    /** Runs `op` on the /proc worker (soak/proc-worker.mjs): the faults and pid notes of pi-palace.mjs. */
    proc,
    /** Resolves once the worker samples (await it before the load: a stall before that can't be split). */
    ready,
    /** Stops sampling; resolves with the figures (ms, MB, seconds). */
    async stop() {
      clearInterval(timer);
      clearInterval(tick);
      gcObserver.disconnect();
      sample();
      loop.disable();
      await Promise.all(splits);
      return {
        loopMaxMs: Math.max(maxBeforeReset, loop.max) / 1e6,
        loopP99Ms: loop.percentile(99) / 1e6,
        loopMeanMs: loop.mean / 1e6,
        // The longest stall that was not the machine withholding a CPU (0 when none passed stallMs).
        ownStallMaxMs: Math.max(0, ...episodes(stalls).map((x) => x.ownMs)),
        rss,
        stalls: episodes(stalls),
        gcs: gcs.filter((g) => !forced.some(([a, b]) => g.at >= a - 1 && g.at <= b + 1)),
        retained,
        // Open file descriptors and threads at the start, after warm-up and at the end: a pipe or
        // a thread leaked per call or per respawn shows here long before it shows in RSS.
        handles: { before, warm, after: handles() },
      };
    },
  };
}

/**
 * Stalls a tick or two apart merged into one: the kernel updates a thread's schedstat when it is
 * switched, not when it is read, so a stall's CPU and run-queue time can be booked to the tick
 * after it. Summed over the episode they are right.
 */
function episodes(stalls) {
  const out = [];
  for (const x of stalls) {
    const prev = out[out.length - 1];
    if (prev && x.at - x.gapMs - prev.at <= 15) {
      prev.at = x.at;
      prev.gapMs += x.gapMs;
      prev.cpuMs += x.cpuMs;
      prev.runqueueMs += x.runqueueMs;
      prev.ownMs = Math.max(0, prev.gapMs - prev.runqueueMs);
    } else out.push({ ...x, ownMs: Math.max(0, x.ownMs) });
  }
  return out;
}

/**
 * Least-squares slope of RSS over time after warm-up, in MB per minute. Warm-up is the first
 * `warmFraction` of the run (at least `minWarmS` seconds), or ends at `fromS`: allocator pools,
 * SQLite's page cache and V8's heap grow there by design.
 */
export function rssSlope(samples, { warmFraction = 0.25, minWarmS = 2, col = 1, fromS: from } = {}) {
  const rss = samples.map((x) => [x[0], x[col]]);
  if (rss.length < 2) return { slopeMbPerMin: NaN, samples: rss.length, fromS: NaN };
  const end = rss[rss.length - 1][0];
  const fromS = from ?? Math.max(minWarmS, end * warmFraction);
  const pts = rss.filter(([t]) => t >= fromS);
  if (pts.length < 3) return { slopeMbPerMin: NaN, samples: pts.length, fromS };
  const n = pts.length;
  const mt = pts.reduce((s, [t]) => s + t, 0) / n;
  const mr = pts.reduce((s, [, r]) => s + r, 0) / n;
  const cov = pts.reduce((s, [t, r]) => s + (t - mt) * (r - mr), 0);
  const vt = pts.reduce((s, [t]) => s + (t - mt) ** 2, 0);
  return {
    slopeMbPerMin: (cov / vt) * 60,
    samples: n,
    fromS,
    startMb: pts[0][1],
    endMb: pts[n - 1][1],
    maxMb: Math.max(...rss.map(([, r]) => r)),
  };
}

/**
 * Runs `worker(i)` for i in [0, n) with at most `concurrency` in flight; or, when `n` is a function,
 * for i = 0, 1, ... as long as `n(i)` says to start the next one.
 */
export async function pool(n, concurrency, worker) {
  let next = 0;
  const go = typeof n === 'function' ? n : (i) => i < n;
  const lane = async () => {
    while (go(next)) await worker(next++);
  };
  await Promise.all(Array.from({ length: typeof n === 'function' ? concurrency : Math.min(concurrency, n) }, lane));
}

// The texts the brain half writes, each naming its sequence number so rows can be counted exactly.
export const factText = (run, i) => `soak fact ${run} #${i}`;
export const turnUser = (run, i) => `soak turn ${run} #${i}`;
/** Whether turn `i` ends twice (pi's automatic retry), the second time with another answer. */
export const turnRetried = (i) => i % 10 === 3;
/** The answer a turn's row must hold in the end: a retried turn's second one. */
export const turnAnswer = (i, retry = turnRetried(i)) => (retry ? `retried answer to turn #${i}` : `answer to turn #${i}`);

/** Every process now: pid, parent, process group, state, and whether its environment holds `marker`. */
export function procs(marker) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: the fields after the last ')' are fixed.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const p = { pid: Number(d), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state: rest[0], ppid: Number(rest[1]), pgid: Number(rest[2]) };
      if (marker) p.marked = fs.readFileSync(`/proc/${d}/environ`, 'latin1').split('\0').includes(marker);
      out.push(p);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}
