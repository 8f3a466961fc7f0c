// `npm test`: the whole suite. Builds the addon if needed (the host's, and linux-x64-musl), then runs
// the Rust core's tests (`cargo test`, no Node), the vitest contract tests, the voice contract tests
// again in a real musl Node (scripts/musl-check.sh x64), and the end-to-end tests in the real pi
// (including pi 0.74 on Node 25.9 and on the musl Node).
// Ends with one summary line, "N passed, N failed".
import { spawnSync } from 'node:child_process';
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

function run(name, cmd, args, parse) {
  process.stderr.write(`\n=== ${name}: ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 1 << 30 });
  process.stdout.write(r.stdout ?? '');
  const counts = parse(r.stdout ?? '');
  passed += counts.passed;
  failed += counts.failed;
  if (r.status !== 0 || counts.failed > 0 || counts.passed === 0) failures.push(`${name} (exit ${r.status}, ${counts.passed} passed, ${counts.failed} failed)`);
}

const cargoCounts = (out) => {
  const c = { passed: 0, failed: 0 };
  for (const m of out.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) { c.passed += +m[1]; c.failed += +m[2]; }
  return c;
};
function vitestRun(name, config, cmd = ['npx', 'vitest', 'run', '-c', config]) {
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vitest-')), 'report.json');
  run(name, cmd[0], [...cmd.slice(1), '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], () => {
    try {
      const j = JSON.parse(fs.readFileSync(report, 'utf8'));
      return { passed: j.numPassedTests, failed: j.numFailedTests + (j.numTotalTestSuites > 0 && j.success === false && j.numFailedTests === 0 ? 1 : 0) };
    } catch {
      return { passed: 0, failed: 1 };
    }
  });
}

run('rust core', 'cargo', ['test', '--no-default-features'], cargoCounts);
run('fuzz corpus replay', 'cargo', ['test', '--manifest-path', 'fuzz/Cargo.toml'], cargoCounts);
vitestRun('contract tests', 'vitest.config.mjs');
if (muslHere) vitestRun('voice contract tests on musl (Node 24, linux-x64-musl)', 'vitest.musl.config.mjs', ['bash', 'scripts/musl-check.sh', 'x64']);
if (fs.existsSync(path.join(root, 'vitest.e2e.config.mjs'))) vitestRun('end-to-end tests', 'vitest.e2e.config.mjs');

process.stdout.write(`\n${failures.length ? 'FAILED: ' + failures.join('; ') : 'all suites green'}\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failures.length ? 1 : 0);
