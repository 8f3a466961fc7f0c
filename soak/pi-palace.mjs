// The palace half's pi-like process: loads the package through index.js into a fake pi with the
// bridge on, its server being the fault fixture behind a shell wrapper (so the server is a
// grandchild, as with a real wrapper script), and makes `calls` tool calls through the registered
// tools' execute(), `concurrency` at a time. At random calls it SIGKILLs, SIGSTOPs or stalls the
// server. Each call must settle within `boundMs`; every reply must be its own call's. Forked by
// soak/run.mjs, which checks for orphans after this process has gone; figures go back over IPC.
import crypto from 'node:crypto';
import { loadExtension, native } from '../__test__/helpers/fake-pi.mjs';
import { pool, startMonitor } from './common.mjs';

const o = JSON.parse(process.env.SOAK_PALACE_OPTS);
const FIXTURE_TOOLS = 6; // echo big env sleep fail pid
const KINDS = o.kinds;

// Seeded draws (a hash of the seed and a counter): a failing run repeats with the same SOAK_SEED.
function prng(seed) {
  let n = 0;
  return () => crypto.createHash('sha256').update(`${seed}:${n++}`).digest().readUInt32BE(0) / 2 ** 32;
}

async function main() {
  const rand = prng(o.seed);
  const pi = loadExtension();
  await pi.waitForTools(FIXTURE_TOOLS, 60_000);
  await pi.emit('session_start', { reason: 'startup' });
  // Fault moments: distinct call indices, away from the first and last calls (the end must show
  // the bridge recovered by itself), at least `o.calls / (faults * 2)` calls apart.
  const gap = Math.floor(o.calls / (o.faults * 2));
  const faultAt = new Map();
  const span = o.calls - 2 * gap;
  for (let f = 0; f < o.faults; f++) {
    const slot = Math.floor(gap + (span / o.faults) * f + rand() * (span / o.faults - gap));
    faultAt.set(slot, KINDS[Math.floor(rand() * KINDS.length)]);
  }
  // The /proc lookups and the signals run on the monitor's worker thread (soak/proc-worker.mjs):
  // this thread, whose stalls are judged, only asks for them.
  let mon;
  const notePids = () => mon.proc('note', { sh: native().stats().mcpChildPid });
  const faults = [];
  // Resolves with `done`, a promise of the fault's end, once the fault has landed: the call it is
  // drawn for waits for that, as when the signals were sent from this thread.
  const inject = async (kind, atCall) => {
    const f = { kind, atCall, at: Date.now(), done: false };
    faults.push(f);
    const sh = native().stats().mcpChildPid;
    Object.assign(f, await mon.proc('fault', { kind: kind === 'stall' ? 'probe' : kind, sh }));
    if (f.skipped) return { done: Promise.resolve() };
    if (kind === 'pause-server') {
      // Stopped for half the timeout: calls are late, none should fail.
      return { done: new Promise((r) => setTimeout(r, o.timeoutMs / 2)).then(() => mon.proc('resume', { pid: f.server })) };
    }
    if (kind === 'stop-respawn') {
      return { done: mon.proc('stopNext', { sh }).then((next) => { f.stopped = next; if (!next) f.done = false; }) };
    }
    if (kind !== 'stall') return { done: Promise.resolve() };
    // A tool call that outlasts the timeout: the single-threaded server stalls every call behind it.
    const t0 = Date.now();
    const done = pi.run('sleep', { ms: o.timeoutMs * 3 }).then(() => { f.outcome = 'answered'; }, (e) => { f.outcome = e.code ?? e.message; })
      .then(() => { f.done = true; f.ms = Date.now() - t0; });
    return { done };
  };

  // Per-call figures in preallocated typed arrays, details only for calls that did not answer:
  // the harness must not grow with the call count, or its own objects would read as a leak in RSS.
  const latency = new Uint32Array(o.calls);
  const settled = new Uint8Array(o.calls);
  const outcomes = {};
  const errors = {};
  const odd = []; // wrong replies and hung calls (each is a failure): at most 100 kept
  const pending = new Set();
  const injections = [];
  mon = startMonitor();
  await mon.ready;
  const t0 = Date.now();
  const count = (map, key) => { map[key] = (map[key] ?? 0) + 1; };
  await pool(o.calls, o.concurrency, async (k) => {
    if (k === Math.floor(o.calls / 4)) mon.retained('warm-up', { baseline: false });
    // The fd baseline is taken while the bridge is connected (the server's pipes open): warm-up can
    // land in a respawn, when they are not, and the count after idle is taken connected.
    if (k >= Math.floor(o.calls / 4) && !mon.baselined && native().stats().palaceConnected) mon.baseline({ connected: true });
    if (faultAt.has(k)) injections.push((await inject(faultAt.get(k), k)).done);
    if (k % 100 === 0) notePids();
    const text = `call #${k} of ${o.runId}`;
    const from = Date.now();
    pending.add(k);
    // A call that outlives twice its bound is recorded as hung and no longer awaited (it stays in
    // `pending` unless it settles later).
    let timer;
    const hung = new Promise((r) => {
      timer = setTimeout(() => { count(outcomes, 'HUNG'); if (odd.length < 100) odd.push({ k, hung: true }); r(); }, o.boundMs * 2);
    });
    const call = pi.run('echo', { text }).then(
      (r) => {
        const got = JSON.parse(r.content[0].text).text;
        count(outcomes, got === text ? 'ok' : 'WRONG-REPLY');
        if (got !== text && odd.length < 100) odd.push({ k, got });
      },
      (e) => { count(outcomes, `err:${e.code ?? 'none'}`); count(errors, String(e.message).replace(/\d+/g, 'N').slice(0, 160)); },
    ).finally(() => { latency[k] = Date.now() - from; settled[k] = 1; pending.delete(k); clearTimeout(timer); });
    await Promise.race([call, hung]);
  });
  await Promise.all(injections);
  const runMs = Date.now() - t0;
  // The end: the bridge is back by itself, answering, with no call left.
  await notePids();
  const end = { stats: native().stats(), status: native().palaceStatus() };
  try { end.finalCall = JSON.parse(await pi.text('echo', { text: 'final' })).text === 'final' ? 'ok' : 'wrong'; } catch (e) { end.finalCall = `err:${e.code}: ${e.message}`; }
  end.pendingBeforeShutdown = [...pending];
  // Never connected from warm-up to here (can't happen in a healthy run): the baseline is the end's.
  if (!mon.baselined) mon.baseline({ connected: native().stats().palaceConnected });
  const figures = await mon.stop();
  mon.retained('end'); // after stop(): its forced GC is outside the figures, and lands in figures.retained
  figures.handles.settled = { ...(await mon.settled()), connected: native().stats().palaceConnected };
  await pi.emit('session_shutdown', { reason: 'quit' });
  end.afterShutdown = native().stats();
  process.send({ t0, latency: [...latency], unsettled: o.calls - settled.reduce((a, b) => a + b, 0), outcomes, errors, odd, faults, end, runMs, seenPids: await mon.proc('seen'), ...figures }, () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`pi-palace: ${e.stack}\n`);
  process.exit(1);
});
