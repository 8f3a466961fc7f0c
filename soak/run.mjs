#!/usr/bin/env node
// `npm run soak`: the long run under hostile neighbours (docs/soak.md). Not part of `npm test`:
// its verdict includes timing (event-loop stalls), which only means something on a quiet machine.
//
//   node soak/run.mjs [--quick] [--brain-only | --palace-only]
//
// Knobs: SOAK_* environment variables, listed in docs/soak.md. --quick divides the counts by 10.
// Exits 1 when an invariant fails, after printing every figure.
import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { makeBrain, root, tempDir } from '../__test__/helpers/brain.mjs';
import { procs, rssSlope, turnAnswer, turnRetried } from './common.mjs';

const require = createRequire(import.meta.url);
const here = path.join(root, 'soak');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const num = (name, dflt) => {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : Number(v);
};
const scale = (n) => (quick ? Math.max(1, Math.round(n / 10)) : n);
const BUSY_TIMEOUT_MS = 5000; // the store's busy_timeout (docs/voice-tools.md, "How the file is used")
const cfg = {
  seed: num('SOAK_SEED', crypto.randomInt(2 ** 31)),
  remembers: scale(num('SOAK_REMEMBERS', 10000)),
  turns: scale(num('SOAK_TURNS', 2000)),
  concurrency: num('SOAK_CONCURRENCY', 8),
  oldRows: num('SOAK_OLD_ROWS', 3000),
  maxHoldMs: num('SOAK_MAX_HOLD_MS', 4000),
  palaceCalls: scale(num('SOAK_PALACE_CALLS', 2000)),
  faults: quick ? Math.min(5, num('SOAK_FAULTS', 20)) : num('SOAK_FAULTS', 20),
  palaceConcurrency: num('SOAK_PALACE_CONCURRENCY', 4),
  timeoutMs: num('SOAK_MCP_TIMEOUT_MS', 3000),
  initTimeoutMs: num('SOAK_MCP_INIT_TIMEOUT_MS', 10000),
  backoffMs: num('SOAK_MCP_BACKOFF_MS', 200),
  stallMaxMs: num('SOAK_STALL_MAX_MS', 20),
  rssSlopeMax: num('SOAK_RSS_SLOPE_MAX', 2),
  rssGrowthMax: num('SOAK_RSS_GROWTH_MAX', 4),
  faultKinds: (process.env.SOAK_FAULT_KINDS || 'kill-server,stop-server,stall,pause-server,kill-wrapper,stop-respawn').split(','),
};
const runId = `${Date.now().toString(36)}${cfg.seed.toString(36)}`;
const failures = [];
const table = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  return ok;
};
const row = (half, figure, value, verdict = '') => table.push([half, figure, String(value), verdict]);
const okMark = (ok) => (ok ? 'ok' : 'FAIL');

/** Forks `script` with an IPC channel; resolves with its one message, its stderr and its exit code. */
function runChild(script, args, env) {
  const child = fork(script, args, { env, execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
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

/** Starts a rival process; resolves once it runs, with a stop() that resolves with its report. */
function startRival(args, opts) {
  const child = fork(path.join(here, 'rival.cjs'), args, { env: { ...process.env, SOAK_RIVAL_OPTS: JSON.stringify(opts) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let report;
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const stop = async () => {
    child.send('stop');
    const code = await exited;
    if (code !== 0 || !report) throw new Error(`rival ${args.join(' ')} exited ${code} without a report`);
    return report;
  };
  return new Promise((resolve, reject) => {
    child.on('message', (m) => {
      if (m === 'started') resolve({ stop });
      else report = m;
    });
    exited.then((code) => reject(new Error(`rival ${args.join(' ')} exited ${code} at start`)));
  });
}

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

/**
 * File descriptors and threads of the pi-like process at the start of the load, after warm-up
 * (brain.db's connections open in the background at load), at the end, and after 11 s idle
 * (tokio's blocking pool keeps idle threads 10 s): the last must be back within two of warm-up.
 */
function handlesRow(half, m) {
  const { before: b, warm: w, after: a, settled: s } = m.handles;
  const ok = s.fds <= w.fds + 2 && s.threads <= w.threads + 2;
  const names = (h) => Object.entries(h.names).map(([k, v]) => `${k} x${v}`).join(', ');
  row(half, 'open fds / threads: start, warm-up, end, 11 s idle', `${b.fds}, ${w.fds}, ${a.fds}, ${s.fds} / ${b.threads}, ${w.threads}, ${a.threads}, ${s.threads}`, okMark(check(ok, `${half}: fds ${w.fds} -> ${s.fds}, threads ${w.threads} -> ${s.threads} from warm-up to 11 s idle`)));
  console.log(`${half}: threads after warm-up: ${names(w)}; at the end: ${names(a)}; 11 s later: ${names(s)}`);
}

function printStalls(half, m, t0) {
  for (const s of m.stalls) console.log(`${half}: event loop stalled ${s.gapMs} ms at +${s.at - t0} ms (main thread on a CPU ${s.cpuMs} ms, runnable but waiting for a CPU ${s.runqueueMs} ms)`);
  for (const g of m.gcs) console.log(`${half}: GC pause ${g.ms} ms at +${g.at - t0} ms`);
}

/**
 * The event loop's worst stall, judged without the time the machine gave the thread no CPU: on a
 * shared machine a runnable thread can wait tens of ms for a core, which says nothing about the
 * extension. The raw figure is printed beside it, and on a quiet machine the two are the same.
 */
function stallRow(half, m) {
  row(half, 'event loop: max / p99 / mean (raw)', `${fmt(m.loopMaxMs)} / ${fmt(m.loopP99Ms)} / ${fmt(m.loopMeanMs, 2)} ms`);
  row(half, `event loop: longest stall not waiting for a CPU (${m.stalls.length} stalls > ${cfg.stallMaxMs} ms)`, `${m.ownStallMaxMs} ms`, okMark(check(m.ownStallMaxMs <= cfg.stallMaxMs, `${half}: event loop stalled ${m.ownStallMaxMs} ms on its own (raw max ${fmt(m.loopMaxMs)} ms)`)));
}

/**
 * Memory after warm-up. Judged on what can leak: the RSS outside V8's heap (the addon, SQLite,
 * tokio: where the extension's own memory lives), by its least-squares slope when the window is
 * at least 2 minutes long (<= SOAK_RSS_SLOPE_MAX MB/min) and by its fitted growth over a shorter
 * one (<= SOAK_RSS_GROWTH_MAX MB: SQLite's page cache, 2 MB a connection, fills over the first
 * tens of thousands of rows, and seconds of that read as MB/min would be noise); and the
 * JS heap retained after a forced full GC at the end of warm-up and at the end (<= 1 MB more).
 * The raw RSS slope is printed too: it also holds V8's lazily grown heap, garbage included.
 */
function memoryRows(half, m) {
  // Warm-up ends a second after the forced GC at a quarter of the calls: that GC shrinks V8's
  // heap, which would read as a step in RSS minus the heap if samples before it were fitted.
  const fromS = m.retained[0] ? Math.max(2, m.retained[0].at + 1) : undefined;
  const raw = rssSlope(m.rss, { fromS });
  const off = rssSlope(m.rss, { col: 3, fromS });
  const windowS = m.rss.length ? m.rss[m.rss.length - 1][0] - off.fromS : 0;
  const growthMb = (off.slopeMbPerMin * windowS) / 60;
  const ok = windowS >= 120 ? !(off.slopeMbPerMin > cfg.rssSlopeMax) : !(growthMb > cfg.rssGrowthMax);
  row(half, `RSS after warm-up (${fmt(raw.fromS, 0)} s), raw: slope`, `${fmt(raw.slopeMbPerMin, 2)} MB/min (${fmt(raw.startMb)} -> ${fmt(raw.endMb)} MB, max ${fmt(raw.maxMb)})`);
  // --quick runs last seconds, all of it warm-up (allocator arenas of new threads, the page cache):
  // its memory figures are printed, not judged.
  row(half, `RSS outside the V8 heap: slope; fitted growth over ${fmt(windowS, 0)} s`, `${fmt(off.slopeMbPerMin, 2)} MB/min; ${fmt(growthMb, 2)} MB (${fmt(off.startMb)} -> ${fmt(off.endMb)} MB)`, quick ? 'not judged (--quick)' : okMark(check(ok, `${half}: native memory grew after warm-up: ${fmt(off.slopeMbPerMin, 2)} MB/min, ${fmt(growthMb, 2)} MB over ${fmt(windowS, 0)} s`)));
  const [w, e] = m.retained;
  const heapGrowth = e && w ? e.heapMb - w.heapMb : NaN;
  row(half, `JS heap retained after a full GC: warm-up (${fmt(w?.at, 0)} s) -> end`, `${fmt(w?.heapMb, 2)} -> ${fmt(e?.heapMb, 2)} MB`, okMark(check(heapGrowth <= 1, `${half}: JS heap retained grew ${fmt(heapGrowth, 2)} MB`)));
}

async function brainHalf() {
  const dir = tempDir('dotty-soak-brain-');
  const file = path.join(dir, 'brain.db');
  // Rows that exist before the soak, from an older time: the only ones the ZeroClaw-like process
  // deletes or rewrites, so every row the extension writes stays countable.
  const old = Array.from({ length: cfg.oldRows }, (_, i) => ({ id: `old-${i}`, key: `old-${i}`, content: `an old memory number ${i} about the garden`, category: 'daily', namespace: 'default', ts: '2025-06-01T10:00:00.000Z' }));
  makeBrain(file, old);
  const cutoff = new Date().toISOString();
  const rivals = await Promise.all([
    startRival(['writer', file, 'a', '--locker'], { maxHoldMs: cfg.maxHoldMs }),
    startRival(['writer', file, 'b'], {}),
    startRival(['zeroclaw', file, cutoff], {}),
  ]);
  const opts = { runId, remembers: cfg.remembers, turns: cfg.turns, concurrency: cfg.concurrency, turnBaseTs: Date.now() };
  const env = { PATH: process.env.PATH, HOME: path.join(dir, 'home'), DOTTY_BRAIN_DB: file, MEMPALACE_BRIDGE: '0', SOAK_BRAIN_OPTS: JSON.stringify(opts) };
  const pi = await runChild(path.join(here, 'pi-brain.mjs'), [], env);
  const [locker, writerB, zeroclaw] = await Promise.all(rivals.map((r) => r.stop()));
  if (pi.code !== 0 || !pi.message) {
    check(false, `brain: the pi-like process exited ${pi.code ?? pi.signal} without figures`);
    process.stderr.write(pi.stderr);
    return;
  }
  const m = pi.message;

  // The file, read in this process: it never loads the addon, so better-sqlite3 is the only SQLite here.
  const Database = require('better-sqlite3');
  const db = new Database(file, { readonly: true });
  const integrity = db.pragma('integrity_check', { simple: true });
  const ours = db.prepare("SELECT content, category, namespace, importance FROM memories WHERE content LIKE ? OR content LIKE ?").all(`soak fact ${runId} #%`, `user: soak turn ${runId} #%`);
  const rivalIds = new Set(db.prepare("SELECT id FROM memories WHERE id LIKE 'rival-%'").all().map((r) => r.id));
  const oldLeft = db.prepare("SELECT count(*) AS n FROM memories WHERE id LIKE 'old-%'").get().n;
  const total = db.prepare('SELECT count(*) AS n FROM memories').get().n;
  db.close();
  // FTS consistency needs a write connection ('integrity-check' is issued as an INSERT).
  const walMb = fs.statSync(`${file}-wal`, { throwIfNoEntry: false })?.size / 1048576 || 0;
  const dbMb = fs.statSync(file).size / 1048576;
  const rw = new Database(file);
  let ftsOk = 'ok';
  try { rw.prepare("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')").run(); } catch (e) { ftsOk = e.message; }
  rw.close();

  const facts = new Map(), turnsSeen = new Map();
  let badShape = 0;
  for (const r of ours) {
    let mm;
    if ((mm = /^soak fact \S+ #(\d+)$/.exec(r.content))) {
      facts.set(Number(mm[1]), (facts.get(Number(mm[1])) ?? 0) + 1);
      if (r.category !== 'core' || r.namespace !== 'voice' || r.importance !== 0.7) badShape++;
    } else if ((mm = /^user: soak turn \S+ #(\d+) \| assistant: (.*)$/.exec(r.content))) {
      const i = Number(mm[1]);
      turnsSeen.set(i, (turnsSeen.get(i) ?? 0) + 1);
      if (mm[2] !== turnAnswer(i) || r.category !== 'conversation' || r.namespace !== 'voice' || r.importance !== 0.3) badShape++;
    } else badShape++;
  }
  const failedSeq = new Set(m.failures.map((f) => f.i));
  let missing = 0, dup = 0, ghost = 0;
  for (let i = 0; i < cfg.remembers; i++) {
    const n = facts.get(i) ?? 0;
    if (failedSeq.has(i)) { if (n > 0) ghost++; } else if (n === 0) missing++;
    if (n > 1) dup++;
  }
  let turnMissing = 0, turnDup = 0;
  for (let i = 0; i < m.turnsFired; i++) {
    const n = turnsSeen.get(i) ?? 0;
    if (n === 0) turnMissing++;
    if (n > 1) turnDup++;
  }
  // The log's own word that a row was given up on (after its busy retries, or any other error).
  const gaveUp = pi.stderr.match(/^.*turn log: not written.*$/gm) ?? [];
  const causes = pi.stderr.split('\n').filter((l) => /remember/.test(l));
  const busyRetries = (pi.stderr.match(/turn log: brain\.db busy/g) ?? []).length;

  // A `(remember failed)` is explained only by another process's lock outlasting the busy timeout:
  // the store said it was locked/busy, and the call waited at least the busy timeout.
  const explained = m.failures.map((f) => {
    const overlapping = locker.holds.filter(([a, b]) => a < f.to && b > f.to - BUSY_TIMEOUT_MS - 1000);
    const heldMs = overlapping.reduce((s, [a, b]) => s + Math.min(b, f.to) - Math.max(a, f.to - BUSY_TIMEOUT_MS - 1000), 0);
    const waited = f.to - f.from;
    return { ...f, waited, heldMs, holds: overlapping.map(([a, b]) => b - a), ok: f.text === '(remember failed)' && waited >= BUSY_TIMEOUT_MS && overlapping.length > 0 };
  });
  const unexplained = explained.filter((e) => !e.ok);
  const rivalWritten = [...locker.ids, ...writerB.ids];
  const rivalLost = rivalWritten.filter((id) => !rivalIds.has(id)).length;
  const maxHold = Math.max(0, ...locker.holds.map(([a, b]) => b - a));

  row('brain', 'remember calls / (remembered)', `${cfg.remembers} / ${m.remembered}`);
  row('brain', 'turn logs fired / rows written (stats)', `${m.turnsFired} / ${m.stats.turnRowsWritten}`);
  row('brain', 'wall time: calls / shutdown drain', `${fmt(m.loadMs / 1000)} s / ${m.drainMs} ms`);
  row('brain', 'remember rows missing / duplicated', `${missing} / ${dup}`, okMark(check(missing === 0 && dup === 0, `brain: ${missing} remembered facts missing, ${dup} duplicated`)));
  row('brain', '(remember failed) with a row anyway', ghost, okMark(check(ghost === 0, `brain: ${ghost} facts reported failed were written`)));
  let retried = 0;
  for (let i = 0; i < m.turnsFired; i++) if (turnRetried(i)) retried++;
  row('brain', 'turns ended twice (retry) / rows rewritten (stats)', `${retried} / ${m.stats.turnRowsRewritten}`, okMark(check(m.stats.turnRowsRewritten === retried, `brain: ${retried} retried turns, ${m.stats.turnRowsRewritten} rows rewritten`)));
  row('brain', 'turn rows missing / duplicated', `${turnMissing} / ${turnDup}`, okMark(check(turnDup === 0 && turnMissing === gaveUp.length && m.stats.turnRowsWritten === m.turnsFired - turnMissing, `brain: turn rows missing ${turnMissing} (gave up: ${gaveUp.length}), duplicated ${turnDup}, stats ${m.stats.turnRowsWritten}`)));
  row('brain', 'rows of wrong shape', badShape, okMark(check(badShape === 0, `brain: ${badShape} rows of the wrong shape`)));
  row('brain', '(remember failed): total / explained by lock > busy timeout', `${m.failures.length} / ${m.failures.length - unexplained.length}`, okMark(check(unexplained.length === 0, `brain: ${unexplained.length} unexplained (remember failed)`)));
  row('brain', 'turn log: busy retries / gave up', `${busyRetries} / ${gaveUp.length}`);
  row('brain', 'integrity_check / FTS integrity-check', `${integrity} / ${ftsOk}`, okMark(check(integrity === 'ok' && ftsOk === 'ok', `brain: integrity ${integrity}, fts ${ftsOk}`)));
  row('brain', 'rival rows written / lost', `${rivalWritten.length} / ${rivalLost}`, okMark(check(rivalLost === 0, `brain: ${rivalLost} rival rows lost`)));
  row('brain', 'rival busy errors (a, b, zeroclaw)', `${locker.busy}, ${writerB.busy}, ${zeroclaw.busy}`);
  row('brain', 'rival other errors', [...locker.errors, ...writerB.errors, ...zeroclaw.errors].length, okMark(check([...locker.errors, ...writerB.errors, ...zeroclaw.errors].length === 0, `brain: rival errors ${[...locker.errors, ...writerB.errors, ...zeroclaw.errors].join('; ')}`)));
  row('brain', 'lock holds by rival a: count / longest', `${locker.holds.length} / ${maxHold} ms`);
  row('brain', 'zeroclaw: old rows deleted / updated; old left', `${zeroclaw.deletes} / ${zeroclaw.updates}; ${oldLeft}`, okMark(check(oldLeft + zeroclaw.deletes === cfg.oldRows, `brain: old rows ${oldLeft} + deleted ${zeroclaw.deletes} != ${cfg.oldRows}`)));
  row('brain', 'rows in brain.db at the end; file / WAL size', `${total}; ${fmt(dbMb)} / ${fmt(walMb)} MB`);
  stallRow('brain', m);
  handlesRow('brain', m);
  row('brain', 'agent_end handler: longest', `${fmt(m.turnHandlerMaxMs, 2)} ms`);
  memoryRows('brain', m);
  printStalls('brain', m, m.t0);
  for (const e of explained) {
    console.log(`(remember failed) #${e.i}: waited ${e.waited} ms; rival a's holds overlapping its last ${BUSY_TIMEOUT_MS + 1000} ms: ${e.holds.join(', ') || 'none'} ms (${e.heldMs} ms of that window) -> ${e.ok ? 'explained' : 'UNEXPLAINED'}`);
  }
  for (const l of [...new Set(causes)].slice(0, 10)) console.log(`stderr: ${l}`);
  for (const l of gaveUp.slice(0, 10)) console.log(`stderr: ${l}`);
  if (!failures.some((f) => f.startsWith('brain'))) fs.rmSync(dir, { recursive: true, force: true });
  else console.log(`brain.db kept for inspection: ${file}`);
}

async function palaceHalf() {
  const dir = tempDir('dotty-soak-palace-');
  const mark = `DOTTY_SOAK_RUN=${runId}`;
  const boundMs = cfg.timeoutMs + cfg.initTimeoutMs + cfg.backoffMs * 7 + 2000;
  const opts = { runId, seed: cfg.seed, calls: cfg.palaceCalls, faults: cfg.faults, kinds: cfg.faultKinds, concurrency: cfg.palaceConcurrency, timeoutMs: cfg.timeoutMs, boundMs };
  const env = {
    PATH: process.env.PATH,
    HOME: path.join(dir, 'home'),
    PI_CODING_AGENT_DIR: path.join(dir, 'agent'),
    DOTTY_VOICE_TOOLS: '0',
    MEMPALACE_BRIDGE: '1',
    MEMPALACE_FEED: '0',
    MEMPALACE_MCP_BIN: 'sh',
    MEMPALACE_MCP_ARGS: path.join(root, '__test__/fixtures/wrapped_mcp_server.sh'),
    MEMPALACE_MCP_TIMEOUT_MS: String(cfg.timeoutMs),
    MEMPALACE_MCP_INIT_TIMEOUT_MS: String(cfg.initTimeoutMs),
    MEMPALACE_MCP_RESPAWN_BACKOFF_MS: String(cfg.backoffMs),
    // Marks every process the bridge starts (they inherit it): what is left after the run is an orphan.
    DOTTY_SOAK_RUN: runId,
    SOAK_PALACE_OPTS: JSON.stringify(opts),
  };
  // Watched from outside meanwhile: the palace is single-writer, so two servers of this run must
  // never be alive at once (an old one still running when a new one starts).
  let maxServers = 0, overlaps = [];
  const watch = setInterval(() => {
    const servers = procs(mark).filter((p) => p.marked && p.state !== 'Z' && /python/.test(p.comm));
    if (servers.length > 1) overlaps.push(servers.map((p) => `${p.pid}/${p.pgid}/${p.state}`).join(' '));
    maxServers = Math.max(maxServers, servers.length);
  }, 100);
  const pi = await runChild(path.join(here, 'pi-palace.mjs'), [], env);
  clearInterval(watch);
  // After the pi-like process is gone: nothing it started may remain (zombies included: their
  // parent, if alive, failed to reap them).
  let left = [];
  for (let i = 0; i < 20; i++) {
    left = procs(mark).filter((p) => p.marked);
    if (left.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (pi.code !== 0 || !pi.message) {
    check(false, `palace: the pi-like process exited ${pi.code ?? pi.signal} without figures`);
    process.stderr.write(pi.stderr);
    return;
  }
  const m = pi.message;
  const outcomes = m.outcomes;
  const hung = (outcomes.HUNG ?? 0) + m.unsettled;
  const wrong = outcomes['WRONG-REPLY'] ?? 0;
  const lat = m.latency.slice().sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((lat.length * p) / 100))];
  const late = m.latency.filter((ms) => ms > boundMs).length;
  const overTimeout = m.latency.filter((ms) => ms > cfg.timeoutMs + 1000).length;
  const kinds = {};
  for (const f of m.faults) kinds[f.kind] = `${(kinds[f.kind] ?? '0/0').split('/').map(Number).map((n, j) => n + (j === 0 ? 1 : f.done ? 1 : 0)).join('/')}`;
  const errorKinds = m.errors;
  const end = m.end;

  row('palace', 'calls: outcomes', Object.entries(outcomes).map(([k, v]) => `${k} ${v}`).join(', '));
  row('palace', 'wall time', `${fmt(m.runMs / 1000)} s`);
  row('palace', 'faults injected (kind: tried/done)', Object.entries(kinds).map(([k, v]) => `${k} ${v}`).join(', '), okMark(check(m.faults.filter((f) => f.done).length >= Math.ceil(cfg.faults * 0.75), `palace: only ${m.faults.filter((f) => f.done).length} of ${m.faults.length} faults landed`)));
  row('palace', 'calls hung (no answer within 2x bound) / pending at the end', `${hung} / ${end.pendingBeforeShutdown.length}`, okMark(check(hung === 0 && end.pendingBeforeShutdown.length === 0, `palace: ${hung} calls hung, ${end.pendingBeforeShutdown.length} pending`)));
  row('palace', `calls settled later than the bound (${boundMs} ms)`, late, okMark(check(late === 0, `palace: ${late} calls later than ${boundMs} ms`)));
  row('palace', `calls longer than the timeout + 1 s (${cfg.timeoutMs + 1000} ms)`, overTimeout);
  row('palace', 'latency p50 / p99 / max', `${pct(50)} / ${pct(99)} / ${lat[lat.length - 1]} ms`);
  row('palace', 'replies for another call', wrong, okMark(check(wrong === 0, `palace: ${wrong} calls got another call's reply`)));
  row('palace', 'spawns / respawns', `${end.stats.mcpSpawns} / ${end.stats.mcpRespawns}`);
  row('palace', 'bridge at the end: connected / final call / status', `${end.stats.palaceConnected} / ${end.finalCall} / ${end.status}`, okMark(check(end.stats.palaceConnected && end.finalCall === 'ok', `palace: bridge not healthy at the end (${end.finalCall}, ${end.status})`)));
  row('palace', 'calls in flight after shutdown', end.afterShutdown.callsInFlight, okMark(check(end.afterShutdown.callsInFlight === 0, 'palace: calls in flight after shutdown')));
  row('palace', 'servers alive at once: most seen (polled every 100 ms)', maxServers, okMark(check(maxServers <= 1, `palace: ${maxServers} servers alive at once: ${overlaps.slice(0, 3).join('; ')}`)));
  row('palace', 'processes left after exit (orphans)', left.length ? left.map((p) => `${p.pid} ${p.comm} ${p.state}`).join(', ') : 0, okMark(check(left.length === 0, `palace: ${left.length} processes left`)));
  stallRow('palace', m);
  handlesRow('palace', m);
  memoryRows('palace', m);
  for (const [k, v] of Object.entries(errorKinds)) console.log(`palace error x${v}: ${k}`);
  for (const c of m.odd) console.log(`palace call #${c.k}: ${c.hung ? 'hung' : `answered another call's text: ${c.got}`}`);
  const t0 = m.t0;
  for (const f of m.faults) console.log(`fault at call ${f.atCall} (+${f.at - t0} ms): ${f.kind}${f.skipped ? ` skipped (${f.skipped})` : ''}${f.outcome ? ` -> ${f.outcome} in ${f.ms} ms` : ''}`);
  printStalls('palace', m, t0);
  if (!failures.some((f) => f.startsWith('palace'))) fs.rmSync(dir, { recursive: true, force: true });
  const stderrLines = pi.stderr.split('\n').filter(Boolean);
  console.log(`palace pi-like stderr: ${stderrLines.length} lines; first: ${stderrLines.slice(0, 5).join(' | ')}`);
}

async function main() {
  const t0 = Date.now();
  console.log(`soak ${runId}: seed ${cfg.seed}, ${JSON.stringify(cfg)}`);
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}, ${fmt(os.totalmem() / 2 ** 30)} GiB, load ${os.loadavg().map((x) => fmt(x, 2)).join(' ')}, node ${process.version}`);
  if (!argv.includes('--palace-only')) await brainHalf();
  if (!argv.includes('--brain-only')) await palaceHalf();
  const w = [0, 1, 2].map((j) => Math.max(...table.map((r) => r[j].length)));
  console.log('');
  for (const r of table) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2].padEnd(w[2])}  ${r[3]}`);
  console.log(`\nsoak ${runId} took ${fmt((Date.now() - t0) / 1000)} s; load now ${os.loadavg().map((x) => fmt(x, 2)).join(' ')}`);
  if (failures.length) {
    console.log(`\nFAILED (${failures.length}):\n- ${failures.join('\n- ')}`);
    process.exitCode = 1;
  } else console.log('\nall invariants hold');
}

main().catch((e) => {
  console.error(e.stack);
  process.exitCode = 1;
});
