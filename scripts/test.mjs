// `npm test`: the whole suite. Builds the addon if needed (the host's, and linux-x64-musl), then runs
// the Rust core's tests (`cargo test`, no Node), the vitest contract tests, the voice contract tests
// again in a real musl Node (scripts/musl-check.sh x64), and the end-to-end tests in the real pi
// (including pi 0.74 on Node 25.9 and on the musl Node).
// Ends with one summary line, "N passed, N failed".
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBuilt, ensureMuslBuilt, root } from './native-build.mjs';

/** The bridge's tests run against the real MemPalace: install it (idempotent, ~1 min the first time). */
function ensureMempalace() {
  const mpRoot = process.env.MEMPALACE_ROOT || path.join(os.homedir(), '.cache/mempalace-test');
  if (fs.existsSync(path.join(mpRoot, '.installed-3.11.0'))) return;
  const script = path.join(root, 'scripts/mempalace/install.sh');
  process.stderr.write(`installing the real MemPalace 3.11.0 for the bridge's tests (${script})...\n`);
  const r = spawnSync('bash', [script], { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) process.stderr.write('MemPalace install failed: the bridge tests will say what is missing\n');
}

// The musl suite runs on x64 Linux hosts (the musl Node here is x64; arm64 musl is CI's qemu smoke).
const muslHere = process.platform === 'linux' && process.arch === 'x64';
ensureBuilt();
if (muslHere) ensureMuslBuilt();
ensureMempalace();
let passed = 0, failed = 0;
const failures = [];
const whys = [];

/** Lines that say why a run failed when no test did (vitest's unhandled errors), for the summary. */
function unhandled(text) {
  const lines = text.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (/Unhandled (Error|Rejection)|unhandled errors? during the test run|originated in|Errors\s+\d+ errors?/.test(lines[i])) out.push(...lines.slice(i, i + 3));
  }
  return [...new Set(out)].slice(0, 40);
}

/** Runs one suite, its output shown as it comes (stdout: pi's and the tests'; stderr too) and kept. */
async function run(name, cmd, args, parse) {
  process.stderr.write(`\n=== ${name}: ${cmd} ${args.join(' ')}\n`);
  const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stdout.on('data', (d) => { out += d; process.stdout.write(d); });
  child.stderr.on('data', (d) => { err += d; process.stderr.write(d); });
  const status = await new Promise((resolve) => child.on('close', (code) => resolve(code)));
  const counts = parse(out);
  passed += counts.passed;
  failed += counts.failed;
  if (status !== 0 || counts.failed > 0 || counts.passed === 0) {
    failures.push(`${name} (exit ${status}, ${counts.passed} passed, ${counts.failed} failed)`);
    if (counts.failed === 0) {
      const why = unhandled(out + '\n' + err);
      // Nothing recognisable: the last lines it wrote to stderr.
      if (!why.length) why.push(...err.split('\n').filter((l) => l.trim()).slice(-5));
      whys.push(...why.map((l) => `  ${name}: ${l}`));
    }
  }
}

const cargoCounts = (out) => {
  const c = { passed: 0, failed: 0 };
  for (const m of out.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) { c.passed += +m[1]; c.failed += +m[2]; }
  return c;
};
function vitestRun(name, config, cmd = ['npx', 'vitest', 'run', '-c', config]) {
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vitest-')), 'report.json');
  return run(name, cmd[0], [...cmd.slice(1), '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], () => {
    try {
      const j = JSON.parse(fs.readFileSync(report, 'utf8'));
      return { passed: j.numPassedTests, failed: j.numFailedTests + (j.numTotalTestSuites > 0 && j.success === false && j.numFailedTests === 0 ? 1 : 0) };
    } catch {
      return { passed: 0, failed: 1 };
    }
  });
}

await run('rust core', 'cargo', ['test', '--no-default-features'], cargoCounts);
await run('fuzz corpus replay', 'cargo', ['test', '--manifest-path', 'fuzz/Cargo.toml'], cargoCounts);
await vitestRun('contract tests', 'vitest.config.mjs');
if (muslHere) await vitestRun('voice contract tests on musl (Node 24, linux-x64-musl)', 'vitest.musl.config.mjs', ['bash', 'scripts/musl-check.sh', 'x64']);
if (fs.existsSync(path.join(root, 'vitest.e2e.config.mjs'))) await vitestRun('end-to-end tests', 'vitest.e2e.config.mjs');

// A suite that failed with no failed test says why (an unhandled error) here, where a log's tail shows it.
if (whys.length) process.stdout.write(`\nwhy, where no test failed:\n${whys.join('\n')}\n`);
process.stdout.write(`\n${failures.length ? 'FAILED: ' + failures.join('; ') : 'all suites green'}\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failures.length ? 1 : 0);
