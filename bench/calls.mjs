#!/usr/bin/env node
// Sequential memory_lookup calls from JS on one addon build, for A/B comparisons between builds
// (bench/README.md, issue 14 change 7): p50/p90, the JS thread's CPU per call and how often it
// changed cores, and the store's reader threads' core changes.
//
//   node bench/calls.mjs [--native path/to/native.js] [--n 3000] [--queries English,reply] brain.db
//
// `--queries` replaces the 20-query mix (comma-separated), e.g. words that only the voice provider's
// scaffolding holds, so that every row a lookup returns from a polluted file needs cleaning (issue 18).
//
// The same loop as figure 1 without its instruments (a loop turn between calls, 20-query mix).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { QUERIES } from './gen-brain.mjs';

const argv = process.argv.slice(2);
const value = (name, dflt) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv.splice(i, 2)[1] : dflt; };
const nativePath = path.resolve(value('native', path.join(path.dirname(fileURLToPath(import.meta.url)), '../native.js')));
const n = Number(value('n', 3000));
const queries = value('queries', null)?.split(',') ?? QUERIES;
const [db] = argv;
if (!db) { console.error('usage: node bench/calls.mjs [--native native.js] [--n N] brain.db'); process.exit(2); }
process.env.DOTTY_BRAIN_DB = path.resolve(db);
process.env.MEMPALACE_BRIDGE = '0';
const native = createRequire(import.meta.url)(nativePath);
native.init();

const tick = () => new Promise((r) => setImmediate(r));
const jsCpuUs = () => Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e3;
const migrations = (tid) => Number((fs.readFileSync(`/proc/self/task/${tid}/sched`, 'utf8').match(/se\.nr_migrations\s+:\s+(\d+)/) || [])[1] ?? NaN);
const readers = () => fs.readdirSync('/proc/self/task').filter((t) => fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').startsWith('brain-read'));

let id = 1;
for (let i = 0; i < 200; i++) await native.callTool('memory_lookup', { query: queries[i % queries.length] }, id++);
const m0 = migrations(process.pid), r0 = readers().map(migrations), c0 = jsCpuUs();
const lat = [];
for (let i = 0; i < n; i++) {
  const a = performance.now();
  await native.callTool('memory_lookup', { query: queries[i % queries.length] }, id++);
  lat.push(performance.now() - a);
  await tick();
}
const cpu = (jsCpuUs() - c0) / n;
lat.sort((a, b) => a - b);
const us = (q) => `${(lat[Math.min(lat.length - 1, Math.floor(lat.length * q))] * 1000).toFixed(0)} µs`;
const r1 = readers().map(migrations);
console.log(`${n} lookups: p50 ${us(0.5)}, p90 ${us(0.9)}; JS-thread CPU ${cpu.toFixed(1)} µs per call; the JS thread changed cores ${migrations(process.pid) - m0} times, the readers ${r1.reduce((a, b, i) => a + b - (r0[i] ?? 0), 0)}`);
