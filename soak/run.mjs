#!/usr/bin/env node
// `npm run soak`: the long run under hostile neighbours (docs/soak.md). Not part of `npm test`:
// its verdict includes timing (event-loop stalls), which only means something on a quiet machine.
//
//   node soak/run.mjs [--quick] [--brain-only | --palace-only]
//
// Knobs: SOAK_* environment variables, listed in docs/soak.md. --quick divides the counts by 10.
// Exits 1 when an invariant fails, after printing every figure.
import crypto from 'node:crypto';
import os from 'node:os';
import { brainHalf } from './brain-half.mjs';
import { palaceHalf } from './palace-half.mjs';
import { fmt, verdict } from './verdict.mjs';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const num = (name, dflt) => {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : Number(v);
};
const scale = (n) => (quick ? Math.max(1, Math.round(n / 10)) : n);
const cfg = {
  seed: num('SOAK_SEED', crypto.randomInt(2 ** 31)),
  remembers: scale(num('SOAK_REMEMBERS', 10000)),
  turns: scale(num('SOAK_TURNS', 2000)),
  // The brain half's load lasts at least this long (its counts are a floor too): at full speed the
  // counts take a second or two, and the native-RSS window after warm-up needs samples (one a second).
  brainMinSeconds: quick ? num('SOAK_BRAIN_MIN_SECONDS', 30) / 10 : num('SOAK_BRAIN_MIN_SECONDS', 30),
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

async function main() {
  const t0 = Date.now();
  console.log(`soak ${runId}: seed ${cfg.seed}, ${JSON.stringify(cfg)}`);
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}, ${fmt(os.totalmem() / 2 ** 30)} GiB, load ${os.loadavg().map((x) => fmt(x, 2)).join(' ')}, node ${process.version}`);
  const v = verdict(cfg, { quick });
  if (!argv.includes('--palace-only')) await brainHalf(cfg, runId, v);
  if (!argv.includes('--brain-only')) await palaceHalf(cfg, runId, v);
  const failures = v.print();
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
