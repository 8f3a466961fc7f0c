#!/usr/bin/env node
// Benchmark (not a test): what dotty-pi-ext costs inside the real pi 0.74.0.
//  1. startup: spawn → first RPC `get_state` response, without and with the extension, interleaved;
//  2. per turn: a plain text turn vs a turn with one e2e_noop (pure JS) tool call vs one with a
//     memory_lookup (native) tool call, against an instant mock model, interleaved, one warm pi.
// Usage: node bench/startup.mjs [--runs 9] [--turns 30]     Prints a markdown table.
// bench/run.mjs (figure 6) imports it: `startupRows({ quick, rounds })` → rows of its table.
import os from 'node:os';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMockModel } from '../__test__/e2e/mock-model.mjs';
import { startPi, ready, root } from '../__test__/e2e/pi-rpc.mjs';
import { startHome } from '../__test__/e2e/home.mjs';

const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? Number(process.argv[i + 1]) : dflt; };
const NOOP_EXT = path.join(root, '__test__/e2e/fixtures/noop-tool');

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => `${x.toFixed(1)} ms`;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
/** CPU time (user + system) `pid` has used so far, in ms (Linux /proc; resolution 1/CLK_TCK s). */
function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

/** Runs both measurements in the real pi: → {startup: {with, without}: [{wall, cpu}], turns: {plain, noop, memory_lookup}: [ms]}. */
export async function measure({ runs = 9, turns: TURNS = 30 } = {}) {
  const RUNS = runs;
  const mock = await startMockModel();
  const home = await startHome({ brainRows: [{ content: 'The lighthouse is painted red and white' }] });
  async function startupOnce(extensions) {
    const pi = await startPi({ modelBaseUrl: mock.baseUrl, extensions, env: home.env, timeoutMs: 30_000 });
    try {
      const res = await ready(pi);
      return { wall: res.__t - pi.spawnedAt, cpu: cpuMs(pi.pid) };
    } finally {
      const exit = await pi.close();
      if (exit.code !== 0) throw new Error(`pi exited ${JSON.stringify(exit)}: ${pi.stderr}`);
    }
  }

  // without: bare pi; noop: pi with a one-tool pure-JS extension (what loading any extension costs
  // in pi: its jiti loader); with: pi with dotty-pi-ext.
  const startup = { without: [], noop: [], with: [] };
  const exts = { without: [], noop: [NOOP_EXT], with: [root] };
  await startupOnce([root]); // warm the OS file cache once, not measured
  await startupOnce([NOOP_EXT]);
  for (let i = 0; i < RUNS; i++) {
    // alternate which goes first so drift (thermal, cache) hits both sides equally
    const order = [['without', 'noop', 'with'], ['with', 'without', 'noop'], ['noop', 'with', 'without']][i % 3];
    for (const k of order) startup[k].push(await startupOnce(exts[k]));
  }

  const pi = await startPi({ modelBaseUrl: mock.baseUrl, extensions: [root, NOOP_EXT], env: home.env });
  await ready(pi);
  const kinds = {
    plain: () => mock.enqueue({ text: 'Hello there.' }),
    noop: () => mock.enqueue({ toolCalls: [{ name: 'e2e_noop', arguments: { query: 'lighthouse' } }] }, { text: 'Done.' }),
    memory_lookup: () => mock.enqueue({ toolCalls: [{ name: 'memory_lookup', arguments: { query: 'lighthouse' } }] }, { text: 'Red and white.' }),
  };
  const turns = { plain: [], noop: [], memory_lookup: [] };
  const names = Object.keys(kinds);
  for (let i = 0; i < TURNS + 3; i++) {
    for (let j = 0; j < names.length; j++) {
      const k = names[(i + j) % names.length];
      kinds[k]();
      const t0 = performance.now();
      const t = await pi.prompt(`turn ${i} ${k}`);
      const dt = t.agentEnd.__t - t0;
      if (i >= 3) turns[k].push(dt); // first rounds warm up the JIT and the brain.db connections
    }
  }
  const exit = await pi.close();
  // The palace's footer status (`setStatus`, key `mempalace`) is expected; any other UI request
  // (a dialog) would mean a turn waited on one.
  const dialogs = pi.uiRequests.filter((r) => !(r.method === 'setStatus' && r.statusKey === 'mempalace'));
  if (exit.code !== 0 || dialogs.length) throw new Error(`pi exited ${JSON.stringify(exit)}, ui requests ${JSON.stringify(dialogs).slice(0, 500)}`);
  await Promise.all([mock.close(), home.close()]);
  return { startup, turns, runs: RUNS, turnCount: TURNS };
}

/** Rows for bench/run.mjs's figure 6 table: [what, native, peer / context, target]. */
export async function startupRows({ quick = false, rounds } = {}) {
  const m = await measure({ runs: quick ? 5 : Math.max(9, 2 * (rounds ?? 7) + 1), turns: quick ? 10 : 30 });
  const wall = (k) => m.startup[k].map((x) => x.wall), cpu = (k) => m.startup[k].map((x) => x.cpu);
  const mw = median(wall('with')), mwo = median(wall('without')), mn0 = median(wall('noop'));
  const cw = median(cpu('with')), cwo = median(cpu('without')), cn0 = median(cpu('noop'));
  // per-run differences within one interleaved triple: the same moment of the machine for both
  const pair = (a, b, f) => median(m.startup[a].map((x, i) => x[f] - m.startup[b][i][f]));
  const mp = median(m.turns.plain), mn = median(m.turns.noop), mm = median(m.turns.memory_lookup);
  const sign = (x) => `${x >= 0 ? '+' : '−'}${ms(Math.abs(x))}`;
  return {
    rows: [
      [`pi 0.74.0 startup (spawn → first \`get_state\` reply), with dotty-pi-ext − bare pi; ${m.runs} runs each, interleaved`,
        `${sign(pair('with', 'without', 'wall'))} wall, ${sign(pair('with', 'without', 'cpu'))} CPU (medians ${ms(mw)} vs ${ms(mwo)} wall, ${ms(cw)} vs ${ms(cwo)} CPU)`,
        'bare pi', `≤ +30 ms ${pair('with', 'without', 'wall') <= 30 ? '✓' : '✗'}`],
      ['… of which pi loading any extension: a one-tool pure-JS extension (e2e_noop) − bare pi',
        `${sign(pair('noop', 'without', 'wall'))} wall, ${sign(pair('noop', 'without', 'cpu'))} CPU (median ${ms(mn0)} wall, ${ms(cn0)} CPU)`, 'pi\'s extension loader, not dotty-pi-ext', ''],
      ['… and dotty-pi-ext itself: with dotty-pi-ext − with the pure-JS extension',
        `${sign(pair('with', 'noop', 'wall'))} wall, ${sign(pair('with', 'noop', 'cpu'))} CPU`, 'pure-JS extension', `≤ +30 ms ${pair('with', 'noop', 'wall') <= 30 ? '✓' : '✗'}`],
      [`per turn, prompt → \`agent_end\`, instant mock model: one memory_lookup (native) call vs one e2e_noop (pure JS tool) call; ${m.turnCount} turns each`,
        `${ms(mm)} (${sign(mm - mp)} over a plain turn ${ms(mp)})`, `JS tool: ${ms(mn)} (${sign(mn - mp)}); native − JS: ${sign(mm - mn)}`, ''],
    ],
    raw: m,
  };
}

function printMarkdown(m) {
  const wall = (k) => m.startup[k].map((x) => x.wall), cpu = (k) => m.startup[k].map((x) => x.cpu);
  const mw = median(wall('with')), mwo = median(wall('without'));
  const cw = median(cpu('with')), cwo = median(cpu('without'));
  const mp = median(m.turns.plain), mn = median(m.turns.noop), mm = median(m.turns.memory_lookup);
  console.log(`## dotty-pi-ext in pi 0.74.0 — ${os.cpus().length} × ${os.cpus()[0].model.trim()}, Node ${process.version}\n`);
  console.log(`### Startup: spawn → first \`get_state\` response (${m.runs} runs each, interleaved)\n`);
  console.log('| | wall median | wall min | wall max | CPU median (user+sys) |\n|---|---|---|---|---|');
  console.log(`| pi without the extension | ${ms(mwo)} | ${ms(Math.min(...wall('without')))} | ${ms(Math.max(...wall('without')))} | ${ms(cwo)} |`);
  console.log(`| pi with dotty-pi-ext | ${ms(mw)} | ${ms(Math.min(...wall('with')))} | ${ms(Math.max(...wall('with')))} | ${ms(cw)} |`);
  console.log(`| **ratio with / without** | **${(mw / mwo).toFixed(3)}** (${mw >= mwo ? '+' : '−'}${ms(Math.abs(mw - mwo))}) | | | **${(cw / cwo).toFixed(3)}** (${cw >= cwo ? '+' : '−'}${ms(Math.abs(cw - cwo))}) |\n`);
  console.log('CPU time is less sensitive than wall time to other load on a shared machine.\n');
  console.log(`### Per turn: prompt sent → \`agent_end\`, instant mock model (${m.turnCount} turns each, interleaved, after 3 warm-up rounds)\n`);
  console.log('| turn | median | p90 | Δ vs plain |\n|---|---|---|---|');
  console.log(`| plain text | ${ms(mp)} | ${ms(pct(m.turns.plain, 0.9))} | — |`);
  console.log(`| one e2e_noop call (pure JS tool) | ${ms(mn)} | ${ms(pct(m.turns.noop, 0.9))} | +${ms(mn - mp)} |`);
  console.log(`| one memory_lookup call (native) | ${ms(mm)} | ${ms(pct(m.turns.memory_lookup, 0.9))} | +${ms(mm - mp)} |`);
  console.log(`\nNative tool cost over a JS tool round trip (median memory_lookup − median noop): ${ms(mm - mn)}.`);
  console.log('Every turn also writes its conversation row to brain.db after agent_end (off the JS thread).');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  printMarkdown(await measure({ runs: arg('runs', 9), turns: arg('turns', 30) }));
}
