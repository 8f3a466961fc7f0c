#!/usr/bin/env node
// Where figure 6's resident memory is (issue 38): the RSS case's calls (90% memory_lookup, 10%
// recall_person, the 20-query mix) in this process, then /proc/self/smaps summed by mapping (the
// addon's by permission), and the threads by name.
//
//   node --expose-gc bench/rss-smaps.mjs native|peer|none brain.db [calls] [--maps]
//
// `--maps` also prints every anonymous mapping and the addon's over 60 kB resident (a reader's
// page cache is its thread's malloc arena). Another build: NAPI_RS_NATIVE_LIBRARY_PATH=<.node>.
// Run it under `env -i PATH=$PATH` for figure 6's environment.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { QUERIES } from './gen-brain.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const maps = argv.includes('--maps');
const [side, db, callsArg] = argv.filter((a) => a !== '--maps');
if (!['native', 'peer', 'none'].includes(side) || !db) {
  console.error('usage: node --expose-gc bench/rss-smaps.mjs native|peer|none brain.db [calls] [--maps]');
  process.exit(2);
}
const calls = Number(callsArg ?? 1000);
process.env.HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-rss-smaps-'));
process.on('exit', () => fs.rmSync(process.env.HOME, { recursive: true, force: true }));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { fakePi } = await import('../__test__/helpers/fake-pi.mjs');
const pi = fakePi();
let call = async () => '';
if (side === 'native') {
  process.env.DOTTY_BRAIN_DB = path.resolve(db);
  require(path.join(root, 'index.js'))(pi);
  call = (name, params) => pi.text(name, params);
} else if (side === 'peer') {
  const peer = require('./peers/sqlite-tools.cjs').createSqliteTools(path.resolve(db));
  call = async (name, params) => (await peer.callTool(name, params)).text;
}
for (let i = 0; i < calls; i++) {
  if (i % 10 === 9) await call('recall_person', { name: 'Ada' });
  else await call('memory_lookup', { query: QUERIES[i % QUERIES.length] });
}
for (let i = 0; i < 3; i++) { global.gc?.(); await sleep(50); }
const rss = process.memoryUsage().rss;

const sums = {};
const list = [];
let cur = null;
for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
  const h = line.match(/^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/);
  if (h) {
    const name = h[4] || '[anon]';
    const key = /dotty-pi-ext/.test(name) ? `addon ${h[3]}`
      : /better_sqlite3\.node/.test(name) ? `better_sqlite3.node ${h[3]}`
      : name === process.execPath || /\/node$/.test(name) ? 'node binary'
      : name.startsWith('/') ? 'shared libraries and other files' : name;
    cur = { key, perm: h[3], kB: (parseInt(h[2], 16) - parseInt(h[1], 16)) / 1024, name };
    list.push(cur);
    continue;
  }
  const r = line.match(/^Rss:\s+(\d+) kB/);
  if (r && cur) { cur.rss = Number(r[1]); sums[cur.key] = (sums[cur.key] ?? 0) + cur.rss; }
}
const threads = {};
for (const t of fs.readdirSync('/proc/self/task')) {
  const name = fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim();
  threads[name] = (threads[name] ?? 0) + 1;
}
console.log(`${side}: RSS ${(rss / 2 ** 20).toFixed(2)} MB after ${calls} calls`);
for (const [k, v] of Object.entries(sums).sort((a, b) => b[1] - a[1])) if (v >= 100) console.log(`  ${k}: ${(v / 1024).toFixed(2)} MB`);
console.log(`  threads: ${Object.entries(threads).map(([k, v]) => `${k} ×${v}`).join(', ')}`);
if (maps) {
  for (const m of list) {
    if ((m.name === '[anon]' || m.key.startsWith('addon')) && m.rss > 60) console.log(`  ${m.key.padEnd(14)} ${m.perm} ${String(m.kB).padStart(7)} kB mapped, ${String(m.rss).padStart(6)} kB resident`);
  }
}
