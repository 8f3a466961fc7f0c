#!/usr/bin/env node
// memory_lookup or remember calls from JS on one addon build, for A/B comparisons between builds
// (bench/README.md, issue 14 change 7, issue 38's bisect): p50/p90, the JS thread's CPU per call and
// how often it changed cores, and the store's reader threads' core changes.
//
//   node bench/calls.mjs [--native path/to/native.js] [--n 3000] [--queries English,reply] brain.db
//   node bench/calls.mjs --tool remember [--conc 8] [--n 2000] brain.db   (on a scratch copy of brain.db)
//
// `--queries` replaces the 20-query mix (comma-separated), e.g. words that only the voice provider's
// scaffolding holds, so that every row a lookup returns from a polluted file needs cleaning (issue 18).
// `--conc N` keeps N calls in flight (N async workers, as figure 2) and adds calls/s.
//
// The same loop as figure 1 without its instruments (a loop turn between calls, 20-query mix).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { QUERIES } from './gen-brain.mjs';

const argv = process.argv.slice(2);
const value = (name, dflt) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv.splice(i, 2)[1] : dflt; };
const nativePath = path.resolve(value('native', path.join(path.dirname(fileURLToPath(import.meta.url)), '../native.js')));
const tool = value('tool', 'memory_lookup');
const n = Number(value('n', tool === 'remember' ? 2000 : 3000));
const conc = Number(value('conc', 1));
const queries = value('queries', null)?.split(',') ?? QUERIES;
const [db] = argv;
if (!db) { console.error('usage: node bench/calls.mjs [--native native.js] [--tool memory_lookup|remember] [--conc N] [--n N] brain.db'); process.exit(2); }
let file = path.resolve(db);
if (tool === 'remember') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-calls-'));
  file = path.join(dir, 'brain.db');
  fs.copyFileSync(db, file);
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
}
process.env.DOTTY_BRAIN_DB = file;
process.env.MEMPALACE_BRIDGE = '0';
const native = createRequire(import.meta.url)(nativePath);
native.init();

const tick = () => new Promise((r) => setImmediate(r));
const jsCpuUs = () => Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e3;
const migrations = (tid) => Number((fs.readFileSync(`/proc/self/task/${tid}/sched`, 'utf8').match(/se\.nr_migrations\s+:\s+(\d+)/) || [])[1] ?? NaN);
const readers = () => fs.readdirSync('/proc/self/task').filter((t) => fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').startsWith('brain-read'));
const args = (i) => (tool === 'remember' ? { fact: `Ada's note number ${i}: she wants pancakes on ${['Monday', 'Friday'][i % 2]}` } : { query: queries[i % queries.length] });

let id = 1;
for (let i = 0; i < 200; i++) await native.callTool(tool, args(i), id++);
const m0 = migrations(process.pid), r0 = readers().map(migrations), c0 = jsCpuUs();
const lat = [];
let next = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: conc }, async () => {
  while (next < n) {
    const i = next++;
    const a = performance.now();
    await native.callTool(tool, args(i), id++);
    lat.push(performance.now() - a);
    if (conc === 1) await tick();
  }
}));
const wall = performance.now() - t0;
const cpu = (jsCpuUs() - c0) / n;
lat.sort((a, b) => a - b);
const us = (q) => `${(lat[Math.min(lat.length - 1, Math.floor(lat.length * q))] * 1000).toFixed(0)} µs`;
const r1 = readers().map(migrations);
const rate = conc > 1 ? `, ${(n / (wall / 1000)).toFixed(0)} calls/s with ${conc} in flight` : '';
console.log(`${n} ${tool === 'remember' ? 'remembers' : 'lookups'}: p50 ${us(0.5)}, p90 ${us(0.9)}${rate}; JS-thread CPU ${cpu.toFixed(1)} µs per call; the JS thread changed cores ${migrations(process.pid) - m0} times, the readers ${r1.reduce((a, b, i) => a + b - (r0[i] ?? 0), 0)}`);
