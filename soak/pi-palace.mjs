// The palace half's pi-like process: loads the package through index.js into a fake pi with the
// bridge on, its server being the fault fixture behind a shell wrapper (so the server is a
// grandchild, as with a real wrapper script), and makes `calls` tool calls through the registered
// tools' execute(), `concurrency` at a time. At random calls it SIGKILLs, SIGSTOPs or stalls the
// server. Each call must settle within `boundMs`; every reply must be its own call's. Forked by
// soak/run.mjs, which checks for orphans after this process has gone; figures go back over IPC.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { loadExtension, native } from '../__test__/helpers/fake-pi.mjs';
import { pool, procs, startMonitor } from './common.mjs';

const o = JSON.parse(process.env.SOAK_PALACE_OPTS);
const FIXTURE_TOOLS = 6; // echo big env sleep fail pid
const KINDS = o.kinds;

// Seeded draws (a hash of the seed and a counter): a failing run repeats with the same SOAK_SEED.
function prng(seed) {
  let n = 0;
  return () => crypto.createHash('sha256').update(`${seed}:${n++}`).digest().readUInt32BE(0) / 2 ** 32;
}

// This process's children, whichever of its threads started them (the bridge spawns from tokio's).
const ourChildren = () => {
  const out = [];
  for (const t of fs.readdirSync('/proc/self/task')) {
    try { out.push(...fs.readFileSync(`/proc/self/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)); } catch { /* thread gone */ }
  }
  return out;
};

// The processes of a process group other than its leader (the bridge starts the wrapper as the
// leader of a group of its own): found through /proc, as they outlive a killed wrapper.
const groupMembers = (pgid) => procs().filter((p) => p.pgid === pgid && p.pid !== pgid).map((p) => p.pid);
const signal = (pid, sig) => {
  try { process.kill(pid, sig); return true; } catch { return false; }
};

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
  const seenPids = new Set();
  const notePids = () => {
    const sh = native().stats().mcpChildPid;
    if (sh) { seenPids.add(sh); groupMembers(sh).forEach((p) => seenPids.add(p)); }
  };
  const faults = [];
  const inject = async (kind, atCall) => {
    notePids();
    const sh = native().stats().mcpChildPid;
    const server = sh ? groupMembers(sh)[0] : undefined;
    const f = { kind, atCall, at: Date.now(), sh, server, done: false };
    faults.push(f);
    if (!server) { f.skipped = 'no server running (respawn under way)'; return; }
    if (kind === 'kill-server') f.done = signal(server, 'SIGKILL');
    else if (kind === 'kill-wrapper') f.done = signal(sh, 'SIGKILL'); // the server lives on in the group
    else if (kind === 'stop-server') f.done = signal(server, 'SIGSTOP'); // the bridge's timeout must recover it
    else if (kind === 'pause-server') {
      // Stopped for half the timeout: calls are late, none should fail.
      f.done = signal(server, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, o.timeoutMs / 2));
      signal(server, 'SIGCONT');
    } else if (kind === 'stop-respawn') {
      // A server that hangs while it starts: kill this one, then stop its successor as soon as it
      // exists, before or during its handshake. The init timeout must recover it.
      f.done = signal(server, 'SIGKILL');
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const next = ourChildren().filter((p) => p !== sh).flatMap((p) => groupMembers(p))[0];
        if (next) { f.stopped = next; signal(next, 'SIGSTOP'); break; }
        await new Promise((r) => setTimeout(r, 2));
      }
      if (!f.stopped) f.done = false;
    } else if (kind === 'stall') {
      // A tool call that outlasts the timeout: the single-threaded server stalls every call behind it.
      const t0 = Date.now();
      try { await pi.run('sleep', { ms: o.timeoutMs * 3 }); f.outcome = 'answered'; } catch (e) { f.outcome = e.code ?? e.message; }
      f.done = true;
      f.ms = Date.now() - t0;
    }
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
  const mon = startMonitor();
  const t0 = Date.now();
  const count = (map, key) => { map[key] = (map[key] ?? 0) + 1; };
  await pool(o.calls, o.concurrency, async (k) => {
    if (k === Math.floor(o.calls / 4)) mon.retained('warm-up');
    if (faultAt.has(k)) injections.push(inject(faultAt.get(k), k));
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
  notePids();
  const end = { stats: native().stats(), status: native().palaceStatus() };
  try { end.finalCall = JSON.parse(await pi.text('echo', { text: 'final' })).text === 'final' ? 'ok' : 'wrong'; } catch (e) { end.finalCall = `err:${e.code}: ${e.message}`; }
  end.pendingBeforeShutdown = [...pending];
  const figures = mon.stop();
  mon.retained('end'); // after stop(): its forced GC is outside the figures, and lands in figures.retained
  figures.handles.settled = await mon.settled();
  await pi.emit('session_shutdown', { reason: 'quit' });
  end.afterShutdown = native().stats();
  process.send({ t0, latency: [...latency], unsettled: o.calls - settled.reduce((a, b) => a + b, 0), outcomes, errors, odd, faults, end, runMs, seenPids: [...seenPids], ...figures }, () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`pi-palace: ${e.stack}\n`);
  process.exit(1);
});
