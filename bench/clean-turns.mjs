#!/usr/bin/env node
// Issue 18: how long `dotty-pi-ext clean-turns` takes on a big polluted brain.db, and what it cleans.
//
//   node bench/clean-turns.mjs [--rows 100k] [--polluted 0.6]
//
// Generates (bench/gen-brain.mjs, cached) the file of `--rows` rows where the `--polluted` share of
// the conversation rows is stored as the old turn logger did, copies it to a scratch file, and runs
// the real command line on it, `node bin/dotty-pi-ext.js clean-turns` with DOTTY_BRAIN_DB pointing
// at the copy: a dry run, a run with `--backup none`, the same again (idempotent: cleans 0), and a
// run with the default backup (`VACUUM INTO` beside the file) on a fresh copy. Prints one markdown
// table. Not a test: it never fails on a number (it says so when a count is off).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBrain, label, parseRows, dataDir } from './gen-brain.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const argv = process.argv.slice(2);
const value = (name, dflt) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : dflt; };
const n = parseRows(value('rows', '100k'));
const polluted = Number(value('polluted', '0.6'));

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const stats = (file, clean) => JSON.parse(execFileSync(process.execPath, [path.join(here, 'lib/brain-stats.cjs')], { input: JSON.stringify({ file, clean }) }).toString());
const progress = (s) => process.stderr.write(`\r\x1b[K${s}`);

/** A scratch copy of `from` (its WAL is checkpointed: the main file is the whole database). */
function scratch(from, tag) {
  const to = path.join(dataDir, `scratch-clean-turns-${tag}-${process.pid}.db`);
  for (const s of ['', '-wal', '-shm']) fs.rmSync(to + s, { force: true });
  fs.copyFileSync(from, to);
  return to;
}
const removeDb = (f) => { for (const s of ['', '-wal', '-shm']) fs.rmSync(f + s, { force: true }); };

/** Runs the command line on `file`; → {seconds, out, code, counts, load}. */
function cleanTurns(file, args) {
  const loadBefore = load();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [path.join(root, 'bin/dotty-pi-ext.js'), 'clean-turns', ...args], {
    env: { PATH: process.env.PATH, HOME: os.tmpdir(), DOTTY_BRAIN_DB: file, MEMPALACE_BRIDGE: '0' },
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  const seconds = (performance.now() - t0) / 1000;
  const out = r.stdout + r.stderr;
  const m = /scanned (\d+) conversation rows: (?:cleaned (\d+), skipped (\d+) \(changed by another writer meanwhile\), unchanged (\d+)|(\d+) would be cleaned, (\d+) unchanged)/.exec(out);
  const counts = m ? { scanned: +m[1], cleaned: +(m[2] ?? m[5]), skipped: m[3] == null ? 0 : +m[3], unchanged: +(m[4] ?? m[6]) } : null;
  const backup = (/^backup: (\S+) \(0600/m.exec(out) ?? [])[1];
  return { seconds, out, code: r.status, counts, load: loadBefore, backup };
}

progress(`brain.db with ${label(n)} rows, ${polluted * 100} % of the conversation rows polluted`);
const cleanFile = ensureBrain(n);
const pollutedFile = ensureBrain(n, { polluted });
progress('');

const work = scratch(pollutedFile, 'a');
const before = stats(work, cleanFile);
const sizeMiB = fs.statSync(work).size / 2 ** 20;

progress('clean-turns --dry-run');
const dry = cleanTurns(work, ['--dry-run']);
progress('clean-turns --backup none');
const first = cleanTurns(work, ['--backup', 'none']);
progress('clean-turns --backup none (again)');
const second = cleanTurns(work, ['--backup', 'none']);
const after = stats(work, cleanFile);

const work2 = scratch(pollutedFile, 'b');
progress('clean-turns (default backup)');
const withBackup = cleanTurns(work2, []);
const backupMiB = withBackup.backup && fs.existsSync(withBackup.backup) ? fs.statSync(withBackup.backup).size / 2 ** 20 : NaN;
progress('');

const cpu = (fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) ?? [])[1];
let nproc = String(os.availableParallelism?.() ?? os.cpus().length);
try { nproc = execFileSync('nproc').toString().trim(); } catch {}
console.log(`## clean-turns on a polluted brain.db (bench/clean-turns.mjs)\n`);
console.log(`- machine: ${nproc} cores (nproc), ${cpu}; Node ${process.version}; ${os.platform()} ${os.release()}`);
console.log(`- file: ${path.relative(root, pollutedFile)} (${sizeMiB.toFixed(1)} MiB), a scratch copy per run; started ${new Date().toISOString()}`);
console.log(`- rows ${before.rows}, conversation rows ${before.conversation} (rows starting \`user: \`: ${before.userRows}), polluted ${before.differFromClean} (${(100 * before.differFromClean / before.conversation).toFixed(1)} % of the conversation rows; ${before.cutInMarker} of them still end in a cut marker after the read side's cleaning, which only clean-turns repairs)`);
console.log(`- FTS phrase "HARD CONSTRAINTS" matches ${before.hardConstraintsHits} rows before, ${after.hardConstraintsHits} after; FTS integrity-check after: ${after.ftsIntegrity}; rows differing from the clean file after: ${after.differFromClean} (expected: only the rows whose words the generator lengthened for the cut-in-marker case, about 1 polluted row in 10, which keep those long words)\n`);

const row = (what, r) => {
  const c = r.counts;
  const note = r.code !== 0 ? `⚠ exit ${r.code}: ${r.out.trim().split('\n').at(-1)}` : !c ? '⚠ counts not found in the output' : '';
  return `| ${what} | ${c ? c.scanned : 'n/a'} | ${c ? c.cleaned : 'n/a'} | ${c ? c.skipped : 'n/a'} | ${c ? c.unchanged : 'n/a'} | ${r.seconds.toFixed(2)} s | ${r.load} | ${note} |`;
};
console.log('| run | scanned | cleaned | skipped (changed meanwhile) | unchanged | wall time | load average before (1/5/15 min) | notes |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
console.log(row('`clean-turns --dry-run` (would clean; writes nothing)', dry));
console.log(row('`clean-turns --backup none`', first));
console.log(row('`clean-turns --backup none`, again (idempotent)', second));
console.log(row(`\`clean-turns\` with the default backup (VACUUM INTO, ${Number.isNaN(backupMiB) ? 'n/a' : `${backupMiB.toFixed(1)} MiB`}), fresh copy`, withBackup));
const expected = before.differFromClean;
const checks = [
  first.counts?.cleaned === expected ? `cleaned = polluted (${expected}) ✓` : `⚠ cleaned ${first.counts?.cleaned} ≠ polluted ${expected}`,
  dry.counts?.cleaned === expected ? 'dry run counted the same ✓' : `⚠ dry run counted ${dry.counts?.cleaned}`,
  second.counts?.cleaned === 0 ? 'second run cleaned 0 ✓' : `⚠ second run cleaned ${second.counts?.cleaned}`,
  after.hardConstraintsHits === 0 ? 'no FTS match for "HARD CONSTRAINTS" afterwards ✓' : `⚠ ${after.hardConstraintsHits} FTS matches for "HARD CONSTRAINTS" afterwards`,
];
console.log(`\n${checks.join('; ')}. Wall time includes starting Node and loading the addon (about 0.1 s).`);

removeDb(work);
removeDb(work2);
if (withBackup.backup) fs.rmSync(withBackup.backup, { force: true });
