#!/usr/bin/env node
// Where one tool call's time goes (issue 38): a lone memory_lookup (or remember) from JS, stage by
// stage, beside the peer's synchronous call and SQLite's own statement.
//
//   node bench/stages.mjs [--n 3000] [--rounds 3] [--native path/to/native.js] [brain.db]
//
// Native: the addon stamps CLOCK_MONOTONIC at each stage of a call once `traceStages(true)`
// (src/stages.rs: arguments converted, job queued, picked by a store thread, answered, JS thread
// woken, settle callback entered, promise settled); this script stamps the same clock
// (process.hrtime) before the call, when `callTool` returns and when the `await` resumes. Each
// stage is the median over the calls of its own difference. One call in flight, a loop turn
// between calls (as figure 1). Peer (a child process of its own: two SQLite libraries never share
// one): bench/peers/sqlite-tools.cjs, its whole call and the contract's statement alone. pi's own
// wrapper around `execute` is measured here as the part that runs per call: `validateToolArguments`
// (pi-ai) on the tool's schema, and load.js's `execute` over `callTool`.
// Rounds alternate native and peer; the table gives the median of the rounds' medians.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ensureBrain, QUERIES } from './gen-brain.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const require = createRequire(import.meta.url);
const argv = process.argv.slice(2);
const value = (name, dflt) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv.splice(i, 2)[1] : dflt; };
const role = value('role', 'main');
const n = Number(value('n', 3000));
const rounds = Number(value('rounds', 3));
const nativePath = path.resolve(value('native', path.join(root, 'native.js')));
const db = path.resolve(argv[0] ?? ensureBrain(1e3));

const now = () => Number(process.hrtime.bigint()); // ns, CLOCK_MONOTONIC (as src/stages.rs)
const tick = () => new Promise((r) => setImmediate(r));
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[s.length >> 1] : NaN; };
const scratch = (file) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-stages-'));
  fs.copyFileSync(file, path.join(dir, 'brain.db'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'brain.db');
};
const argsOf = (tool, i) => (tool === 'remember' ? { fact: `Ada's note number ${i}: she wants pancakes on ${['Monday', 'Friday'][i % 2]}` } : { query: QUERIES[i % QUERIES.length] });

// ------------------------------------------------------------------------------------------ children
async function nativeSide(tool) {
  process.env.MEMPALACE_BRIDGE = '0';
  process.env.HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-stages-home-'));
  process.env.DOTTY_BRAIN_DB = tool === 'remember' ? scratch(db) : db;
  const native = require(nativePath);
  native.init();
  native.traceStages(true);
  let id = 1;
  for (let i = 0; i < 200; i++) await native.callTool(tool, argsOf(tool, i), id++);
  const names = ['args', 'checks', 'return', 'hop', 'query', 'answer', 'wake', 'convert', 'resume', 'total', 'jsReturn'];
  const d = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < n; i++) {
    const t0 = now();
    const p = native.callTool(tool, argsOf(tool, i), id++);
    const t1 = now();
    await p;
    const t2 = now();
    const [converted, queued, picked, answered, woken, settling, settled] = native.callStages();
    d.args.push(converted - t0); // napi entry and argument conversion
    d.checks.push(queued - converted); // the checks on the JS thread and the job queued
    d.jsReturn.push(t1 - queued); // the promise back to JS
    d.hop.push(picked - queued); // the hop to a store thread
    d.query.push(answered - picked); // SQLite and the reply text
    d.answer.push(woken - answered); // the answer queued, the JS thread woken
    d.wake.push(settling - woken); // until the JS thread runs the settle callback
    d.convert.push(settled - settling); // the reply object made, the promise settled
    d.resume.push(t2 - settled); // until the await resumes
    d.total.push(t2 - t0);
    await tick();
  }
  // The per-call part of pi's wrapper around execute: its argument validation, and load.js's execute.
  const { validateToolArguments } = await import(pathToPiAi());
  const { piTool } = require(path.join(root, 'load.js'));
  const desc = new native.ToolRegistry().newVoiceTools().find((t) => t.name === tool);
  const piT = piTool(native, desc);
  const validate = [], execute = [];
  for (let i = 0; i < n; i++) {
    const call = { type: 'toolCall', id: `c${i}`, name: tool, arguments: argsOf(tool, i) };
    const a = now();
    validateToolArguments(piT, call);
    validate.push(now() - a);
  }
  for (let i = 0; i < n; i++) {
    const a = now();
    await piT.execute(`c${i}`, argsOf(tool, i), undefined);
    execute.push(now() - a);
    await tick();
  }
  const out = Object.fromEntries(Object.entries(d).map(([k, v]) => [k, med(v) / 1000]));
  out.piValidate = med(validate) / 1000;
  out.piExecute = med(execute) / 1000;
  return out;
}

function pathToPiAi() {
  return path.join(root, 'node_modules/@mariozechner/pi-ai/dist/index.js'); // pi 0.74's own (hoisted)
}

async function peerSide(tool) {
  const { createSqliteTools } = require(path.join(here, 'peers/sqlite-tools.cjs'));
  const t = createSqliteTools(tool === 'remember' ? scratch(db) : db);
  for (let i = 0; i < 200; i++) await t.callTool(tool, argsOf(tool, i));
  const total = [], sql = [];
  for (let i = 0; i < n; i++) {
    const a = now();
    await t.callTool(tool, argsOf(tool, i));
    total.push(now() - a);
    await tick();
  }
  if (tool === 'memory_lookup') {
    const st = t.db.prepare(`SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
     WHERE memories_fts MATCH ? AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT 5`).pluck();
    for (let i = 0; i < n; i++) {
      const q = `"${QUERIES[i % QUERIES.length].replace(/"/g, '""')}"`;
      const a = now();
      st.all(q);
      sql.push(now() - a);
    }
  }
  return { total: med(total) / 1000, sql: sql.length ? med(sql) / 1000 : NaN };
}

if (role !== 'main') {
  const [side, tool] = role.split(':');
  const r = side === 'native' ? await nativeSide(tool) : await peerSide(tool);
  process.stdout.write(`@@STAGES@@${JSON.stringify(r)}\n`);
  process.exit(0);
}

// ------------------------------------------------------------------------------------------ main
function child(side, tool) {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--role', `${side}:${tool}`, '--n', String(n), '--native', nativePath, db], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  const m = r.stdout.match(/@@STAGES@@(.*)\n/);
  if (!m) throw new Error(`${side} ${tool}: ${r.stderr.slice(-2000)}`);
  return JSON.parse(m[1]);
}
const us = (x) => (Number.isNaN(x) ? 'n/a' : `${x.toFixed(1)} µs`);
console.log(`## One call's stages (${n} calls × ${rounds} rounds, ${path.basename(db)}; load average at start ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ${new Date().toISOString()})\n`);
for (const tool of ['memory_lookup', 'remember']) {
  const res = { native: [], peer: [] };
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 ? ['peer', 'native'] : ['native', 'peer']) res[side].push(child(side, tool));
  }
  const N = (k) => med(res.native.map((x) => x[k])), P = (k) => med(res.peer.map((x) => x[k]));
  const rows = [
    ['pi: `validateToolArguments` (pi-ai) on the tool\'s schema', 'JS', N('piValidate'), 'the same for production\'s tool'],
    ['napi entry and argument conversion (name, params → Rust)', 'JS', N('args'), ''],
    ['checks, the job queued for a store thread (a futex wake)', 'JS', N('checks'), ''],
    ['the promise back to JS', 'JS', N('jsReturn'), ''],
    ['hop: the store thread wakes and takes the job', 'store thread', N('hop'), ''],
    [tool === 'memory_lookup' ? 'the query and the reply text (SQLite)' : 'the INSERT, its commit and the reply text (SQLite)', 'store thread', N('query'), tool === 'memory_lookup' ? `peer's statement alone: ${us(P('sql'))}` : ''],
    ['the answer queued, the JS thread woken (threadsafe function)', 'store thread', N('answer'), ''],
    ['wake-up: until the JS thread runs the settle callback', 'JS (waking)', N('wake'), ''],
    ['the reply object made, the promise settled', 'JS', N('convert'), ''],
    ['until the `await` resumes (microtask)', 'JS', N('resume'), ''],
    ['**whole call from JS** (p50)', '', N('total'), `peer's whole call: ${us(P('total'))} (ratio ${(N('total') / P('total')).toFixed(2)}×)`],
    ['load.js `execute` around `callTool` (p50, whole)', 'JS', N('piExecute'), ''],
  ];
  console.log(`### ${tool}\n\n| stage | thread | native p50 | beside it |\n| --- | --- | --- | --- |`);
  for (const [what, thread, v, note] of rows) console.log(`| ${what} | ${thread} | ${us(v)} | ${note} |`);
  console.log('\nStages are medians of per-call differences, so they need not add up to the whole call\'s median.\n');
}
