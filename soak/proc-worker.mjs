// The soak's measuring and fault work inside a pi-like process, on a worker thread of its own so
// that none of it runs on the JavaScript thread the verdict judges (docs/soak.md, "What held the
// JS thread"): reading `/proc` (a scan of every process is a few ms, more on a busy machine, and
// its strings are garbage for the main heap's collector) and the signals of the faults.
//
// - It samples the main thread's schedstat (ns on a CPU, ns runnable but waiting for one) every
//   2 ms into a fixed ring (about 16 s), so a stall the main thread saw can be split afterwards.
// - It answers requests posted by startMonitor() (common.mjs): `{id, op, ...}` -> `{id, result}`.
import fs from 'node:fs';
import v8 from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { procs } from './common.mjs';

const { pid, heapShared } = workerData;
const now = () => Number(process.hrtime.bigint()) / 1e6; // ms, CLOCK_MONOTONIC: the same clock in every thread

// The ring: [ms, cpu ns, wait ns] per sample. Fixed size: the worker's memory must not grow with the run.
const RING = 8192;
const ring = new Float64Array(RING * 3);
let n = 0;
const schedPath = `/proc/self/task/${pid}/schedstat`;
const sample = () => {
  try {
    const [cpu, wait] = fs.readFileSync(schedPath, 'utf8').split(' ').map(Number);
    const i = (n % RING) * 3;
    ring[i] = now();
    ring[i + 1] = cpu;
    ring[i + 2] = wait;
    n++;
  } catch {
    // the process is going away
  }
};
sample();
setInterval(sample, 2);
// This heap's size, for the main thread's native-memory figure (RSS minus the V8 heaps): in shared
// memory, so that no message (and no MessagePort mutex the main thread could wait on) is involved.
const heap = () => Atomics.store(heapShared, 0, BigInt(v8.getHeapStatistics().total_physical_size));
setInterval(heap, 500);

/**
 * The main thread's CPU and run-queue time over [from, to] (ms, now()'s clock): from the last
 * sample at or before `from` to the first at or after `to` (so a stall is never under-counted).
 */
function split(from, to) {
  sample();
  let a, b;
  for (let k = Math.max(0, n - RING); k < n; k++) {
    const i = (k % RING) * 3;
    if (ring[i] <= from) a = i;
    if (ring[i] >= to && b === undefined) b = i;
  }
  if (a === undefined || b === undefined) return { cpuMs: NaN, runqueueMs: NaN };
  return { cpuMs: (ring[b + 1] - ring[a + 1]) / 1e6, runqueueMs: (ring[b + 2] - ring[a + 2]) / 1e6 };
}

// This process's children, whichever of its threads started them (the bridge spawns from tokio's).
const ourChildren = () => {
  const out = [];
  for (const t of fs.readdirSync('/proc/self/task')) {
    try {
      out.push(...fs.readFileSync(`/proc/self/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      // thread gone
    }
  }
  return out;
};
// The processes of a process group other than its leader (the bridge starts the wrapper as the
// leader of a group of its own): found through /proc, as they outlive a killed wrapper.
const groupMembers = (pgid) => procs().filter((p) => p.pgid === pgid && p.pid !== pgid).map((p) => p.pid);
const signal = (p, sig) => {
  try {
    process.kill(p, sig);
    return true;
  } catch {
    return false;
  }
};
const seenPids = new Set();
const note = (sh) => {
  if (sh) {
    seenPids.add(sh);
    groupMembers(sh).forEach((p) => seenPids.add(p));
  }
};

/**
 * The first step of a fault on the server behind wrapper `sh` (soak/pi-palace.mjs lists the
 * kinds): returns once the signal is sent, so the fault lands before the call it is drawn for.
 * `pause-server` and `stop-respawn` are finished by `resume` and `stopNext`.
 */
function fault({ kind, sh }) {
  note(sh);
  const server = sh ? groupMembers(sh)[0] : undefined;
  const f = { sh, server, done: false };
  if (!server) return { ...f, skipped: 'no server running (respawn under way)' };
  if (kind === 'probe') return f; // only whether a server runs (the `stall` fault is a tool call, made by the main thread)
  if (kind === 'kill-server') f.done = signal(server, 'SIGKILL');
  else if (kind === 'kill-wrapper') f.done = signal(sh, 'SIGKILL'); // the server lives on in the group
  else if (kind === 'stop-server') f.done = signal(server, 'SIGSTOP'); // the bridge's timeout must recover it
  else if (kind === 'pause-server') f.done = signal(server, 'SIGSTOP'); // SIGCONT after half the timeout (`resume`)
  else if (kind === 'stop-respawn') f.done = signal(server, 'SIGKILL'); // then `stopNext`
  return f;
}

/**
 * A server that hangs while it starts: stops the successor of wrapper `sh` as soon as it exists,
 * before or during its handshake (the init timeout must recover it). Returns its pid, or undefined.
 */
async function stopNext({ sh }) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const next = ourChildren().filter((p) => p !== sh).flatMap((p) => groupMembers(p))[0];
    if (next) {
      signal(next, 'SIGSTOP');
      return next;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  return undefined;
}

const ops = {
  split: ({ from, to }) => split(from, to),
  note: ({ sh }) => note(sh),
  seen: () => [...seenPids],
  fault,
  stopNext,
  resume: ({ pid: p }) => signal(p, 'SIGCONT'),
};

heap();
parentPort.postMessage({ ready: true });
parentPort.on('message', async ({ id, op, ...args }) => {
  let result, error;
  try {
    result = await ops[op](args);
  } catch (e) {
    error = String(e?.stack ?? e);
  }
  parentPort.postMessage({ id, result, error });
});
