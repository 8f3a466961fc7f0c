// The brain.db half of the soak (docs/soak.md): rival writers, a lock holder and a ZeroClaw-like
// process around a pi-like process that remembers and logs turns; then every row is counted.
import { fork } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { makeBrain, tempDir } from '../__test__/helpers/brain.mjs';
import { here, runChild, turnAnswer, turnRetried } from './common.mjs';
import { fmt } from './verdict.mjs';

const require = createRequire(import.meta.url);
const BUSY_TIMEOUT_MS = 5000; // the store's busy_timeout (docs/voice-tools.md, "How the file is used")

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

/** Runs the half; its figures and checks go to `v` (verdict.mjs). */
export async function brainHalf(cfg, runId, v) {
  const { check, row, okMark } = v;
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
  const opts = { runId, remembers: cfg.remembers, turns: cfg.turns, concurrency: cfg.concurrency, turnBaseTs: Date.now(), minSeconds: cfg.brainMinSeconds };
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
  // Every fact and turn the process made, however many the minimum duration made it run (the
  // counts are a floor); a row for a fact or turn it never made is a row of another run's or a bug.
  const made = m.remembersMade;
  let missing = 0, dup = 0, ghost = 0;
  const stray = [...facts.keys()].filter((i) => i >= made).length + [...turnsSeen.keys()].filter((i) => i >= m.turnsFired).length;
  for (let i = 0; i < made; i++) {
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

  row('brain', 'remember calls / (remembered)', `${made} / ${m.remembered}`);
  row('brain', 'turn logs fired / rows written (stats)', `${m.turnsFired} / ${m.stats.turnRowsWritten}`);
  row('brain', `wall time: calls (at least ${cfg.brainMinSeconds} s) / shutdown drain`, `${fmt(m.loadMs / 1000)} s / ${m.drainMs} ms`);
  row('brain', `counts reached (${cfg.remembers} remember calls, ${cfg.turns} turns) / rows for calls never made`, `${made >= cfg.remembers && m.turnsFired >= cfg.turns ? 'yes' : 'no'} / ${stray}`, okMark(check(made >= cfg.remembers && m.turnsFired >= cfg.turns && stray === 0, `brain: ${made} remember calls and ${m.turnsFired} turns made (floor ${cfg.remembers}, ${cfg.turns}); ${stray} rows for calls never made`)));
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
  v.stallRow('brain', m);
  v.handlesRow('brain', m);
  row('brain', 'agent_end handler: longest', `${fmt(m.turnHandlerMaxMs, 2)} ms`);
  v.memoryRows('brain', m);
  v.printStalls('brain', m, m.t0);
  for (const e of explained) {
    console.log(`(remember failed) #${e.i}: waited ${e.waited} ms; rival a's holds overlapping its last ${BUSY_TIMEOUT_MS + 1000} ms: ${e.holds.join(', ') || 'none'} ms (${e.heldMs} ms of that window) -> ${e.ok ? 'explained' : 'UNEXPLAINED'}`);
  }
  for (const l of [...new Set(causes)].slice(0, 10)) console.log(`stderr: ${l}`);
  for (const l of gaveUp.slice(0, 10)) console.log(`stderr: ${l}`);
  if (!v.failed('brain')) fs.rmSync(dir, { recursive: true, force: true });
  else console.log(`brain.db kept for inspection: ${file}`);
}
