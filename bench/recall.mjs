#!/usr/bin/env node
// Benchmark (not a test): per-prompt recall (MEMPALACE_RECALL=on, issue 29) against the REAL
// MemPalace 3.11.0 over stdio, on the labelled set bench/recall/set.json (see make-set.py: 300
// drawers of real application descriptions, 160 prompts with a known relevant drawer, 100 with none).
//
//   node bench/recall.mjs [--sizes 300,10000] [--runs 1]
//
// For each palace size (300: the labelled drawers; 10000: the same plus 9,700 filler drawers from
// bench/recall/filler.txt.gz), built once and cached under bench/data/, two passes, each prompt as
// the first prompt of a resumed session (no wake-up, nothing recalled before), through the addon's
// own before_agent_start handlers in the order pi runs them:
//   1. sweep: MEMPALACE_RECALL_MIN_SCORE=0 with a large budget and cap, so every hit of the search
//      is shown with its score; the thresholds are then applied to those scores;
//   2. default: the shipped settings (budget 500 ms, cap 2000 B, the default threshold): what
//      users get, measured as it is, bytes and the time the prompt was held included.
// Prints markdown tables on stdout; progress on stderr. Needs the built addon (`npm run build`)
// and `bash scripts/mempalace/install.sh`.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runNode } from '../__test__/helpers/run-node.mjs';
import { spawnSync } from 'node:child_process';
import { mempalaceRoot, stdioEnv } from '../__test__/helpers/palace.mjs';
import { fileDrawers, RUN_PROMPT } from './lib/recall-child.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] : dflt; };
const SIZES = arg('sizes', '300,10000').split(',').map(Number);
const THRESHOLDS = [0.2, 0.25, 0.3, 0.35, 0.4, 0.42, 0.43, 0.44, 0.45, 0.5, 0.55, 0.6];
// The product's rules, read from their one owner rather than copied: the relative cut, the floor
// under the gate and the default threshold (the gate).
const selectRs = fs.readFileSync(path.join(here, '../src/palace/context/recall/select.rs'), 'utf8');
const NEAR_BEST = Number(selectRs.match(/const NEAR_BEST: f64 = ([0-9.]+);/)[1]);
const BELOW_GATE = Number(selectRs.match(/const BELOW_GATE: f64 = ([0-9.]+);/)[1]);
const envRs = fs.readFileSync(path.join(here, '../src/env/table.rs'), 'utf8');
const DEFAULT_MIN = Number(envRs.match(/"MEMPALACE_RECALL_MIN_SCORE"[\s\S]*?Text\("([0-9.]+)"\)/)[1]);
const set = JSON.parse(fs.readFileSync(path.join(here, 'recall/set.json'), 'utf8'));
const filler = zlib.gunzipSync(fs.readFileSync(path.join(here, 'recall/filler.txt.gz'))).toString('utf8').split('\n').filter(Boolean);
const log = (...a) => console.error('[recall bench]', ...a);

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const pc = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '–');

// The child's common part: pi's runner for before_agent_start (in order, one message each) and the
// recall message's lines ("- <drawer id> (<wing>/<room>, <score>): <text>").
const prelude = `${RUN_PROMPT}
  const lines = (m) => (m ? m.content.split('\\n').slice(1).map((l) => {
    const x = l.match(/^- (\\S+) \\((?:[^)]*, )?([0-9.]+)\\): /);
    return x && { id: x[1], score: Number(x[2]) };
  }).filter(Boolean) : []);
`;

const env = (dir, extra) => ({ ...stdioEnv(dir), DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', MEMPALACE_RECALL: 'on', ...extra });

/** Builds (or reuses) the palace of `size` drawers; → {dir, ids: {set key → drawer id}}. The
 *  labelled drawers are filed over MCP with mempalace_add_drawer, through the addon; the filler in
 *  batches by recall/fill.py (MemPalace's own collection and id recipe), with no server open. */
async function palace(size) {
  const extra = filler.slice(0, size - set.drawers.length);
  const tag = crypto.createHash('sha256').update(JSON.stringify([set.drawers, extra])).digest('hex').slice(0, 12);
  const dir = path.join(here, 'data', `recall-${size}-${tag}`);
  const done = path.join(dir, 'ids.json');
  if (fs.existsSync(done)) return { dir, ids: JSON.parse(fs.readFileSync(done, 'utf8')) };
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  log(`building a palace of ${size} drawers in ${dir}`);
  const ids = await fileDrawers(dir, set.drawers, env(dir, { MEMPALACE_RECALL: 'off' }), 'recall-bench');
  if (extra.length) {
    const e = env(dir, {});
    const fill = spawnSync(path.join(mempalaceRoot, 'venv/bin/python'), [path.join(here, 'recall/fill.py'), 'wing_packages', 'synopses'], {
      input: extra.join('\n'),
      env: { PATH: process.env.PATH, HOME: path.join(mempalaceRoot, 'home'), MEMPALACE_CONFIG_DIR: path.join(mempalaceRoot, 'cfg'), MEMPALACE_PALACE: e.MEMPALACE_PALACE, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' },
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    // Its last stdout line is the collection's count (long drawers are filed as several chunks).
    if (fill.status !== 0 || !(Number(fill.stdout.trim().split('\n').at(-1)) >= size)) throw new Error(`fill.py: exit ${fill.status}, ${fill.stdout}`);
  }
  fs.writeFileSync(done, JSON.stringify(ids));
  log(`built in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return { dir, ids };
}

/** Runs every prompt as the first of a resumed session; → [{kind, drawer, ms, lines, bytes}]. */
async function pass(dir, extra) {
  const r = await runNode(
    `${prelude}
     const prompts = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(path.join(here, 'recall/set.json'))}, 'utf8')).prompts;
     // The search is warmed after the handshake; wait for it as pi's first prompt would not.
     await native.palaceTools();
     const out = [];
     for (const p of prompts) {
       native.sessionStart('resume', true);
       const t0 = performance.now();
       const m = await run(p.prompt);
       out.push({ kind: p.kind, drawer: p.drawer, ms: performance.now() - t0, lines: lines(m), bytes: m ? Buffer.byteLength(m.content) : 0 });
     }
     const status = await native.palaceCommand('status');
     await native.sessionShutdown('quit');
     return { out, status };`,
    env(dir, extra),
    { timeoutMs: 3600_000 },
  );
  if (r.error) throw new Error(`${r.error}\n${r.stderr.slice(-2000)}`);
  return r.result;
}

/** Quality at `t` from the scored lines: what a threshold of `t` would inject. At MIN_SCORE=0 the
 *  message already holds every drawer within NEAR_BEST of the best one (picked() in
 *  src/palace/context/recall/select.rs), which are the candidates at any threshold: the rule is
 *  applied again here (nothing unless the best reaches t; then down to t - BELOW_GATE). */
function quality(rows, ids, t) {
  const pos = rows.filter((r) => r.drawer), neg = rows.filter((r) => !r.drawer);
  const kept = (r) => {
    const best = Math.max(...r.lines.map((l) => l.score));
    return best < t ? [] : r.lines.filter((l) => l.score >= Math.max(t - BELOW_GATE, best - NEAR_BEST));
  };
  const hit = (r) => kept(r).some((l) => l.id === ids[r.drawer]);
  const injectedPos = pos.flatMap(kept);
  const labelled = pos.filter(hit).length;
  return {
    t,
    hit: labelled / pos.length,
    top1: pos.filter((r) => kept(r)[0]?.id === ids[r.drawer]).length / Math.max(1, pos.filter((r) => kept(r).length).length),
    precision: labelled / Math.max(1, injectedPos.length),
    drawers: injectedPos.length / pos.length,
    negInjected: neg.filter((r) => kept(r).length).length / neg.length,
    negDrawers: neg.flatMap(kept).length / neg.length,
  };
}

const rowsOut = [];
for (const size of SIZES) {
  const { dir, ids } = await palace(size);
  log(`size ${size}: sweep pass`);
  const sweep = await pass(dir, { MEMPALACE_RECALL_MIN_SCORE: '0', MEMPALACE_RECALL_BUDGET_MS: '30000', MEMPALACE_RECALL_MAX_BYTES: '100000' });
  log(`size ${size}: default pass`);
  const dflt = await pass(dir, {});
  rowsOut.push({ size, sweep: sweep.out, dflt: dflt.out, status: dflt.status, ids });
}
fs.writeFileSync(path.join(here, 'data', 'recall-last-run.json'), JSON.stringify(rowsOut));

console.log(`# Recall on the labelled set (${set.drawers.length} drawers; ${set.prompts.filter((p) => p.drawer).length} prompts with a relevant drawer, ${set.prompts.filter((p) => !p.drawer).length} with none)\n`);
console.log(`Hit: the labelled drawer is injected. Precision: injected drawers that are the labelled one, over all injected on prompts with one (a lower bound: another injected drawer may be relevant too). Top-1: the first injected drawer is the labelled one, over prompts that got any. Unrelated: prompts with no relevant drawer that got a message.\n`);
for (const { size, sweep, dflt, status, ids } of rowsOut) {
  console.log(`## ${size} drawers: threshold sweep (scores from the search; budget 30 s, no cap; when the best drawer reaches MIN_SCORE, those within ${NEAR_BEST} of it and no lower than MIN_SCORE − ${BELOW_GATE})\n`);
  console.log('| MIN_SCORE | hit | precision | top-1 | drawers / prompt | unrelated with a message | drawers / unrelated prompt |');
  console.log('|---|---|---|---|---|---|---|');
  for (const t of THRESHOLDS) {
    const q = quality(sweep, ids, t);
    console.log(`| ${f2(t)} | ${pc(q.hit)} | ${pc(q.precision)} | ${pc(q.top1)} | ${f2(q.drawers)} | ${pc(q.negInjected)} | ${f2(q.negDrawers)} |`);
  }
  const ms = sweep.map((r) => r.ms);
  console.log(`\nSearch time with no budget (before_agent_start to the recall handler's answer): p50 ${ms.length ? pct(ms, 0.5).toFixed(0) : '–'} ms, p99 ${pct(ms, 0.99).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms.\n`);
  for (const kind of ['summary', 'keywords']) {
    const q = quality(sweep.filter((r) => r.kind === kind), ids, DEFAULT_MIN);
    console.log(`- ${kind} prompts only, at the default threshold: hit ${pc(q.hit)}, precision ${pc(q.precision)}`);
  }
  const held = dflt.map((r) => r.ms);
  const q = quality(dflt, ids, 0);
  const withMsg = dflt.filter((r) => r.bytes);
  console.log(`\n## ${size} drawers: the shipped defaults, as users get them\n`);
  console.log('| hit | precision | unrelated with a message | bytes / prompt (all) | bytes / message | prompt held p50 | p99 | max | budget |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  console.log(`| ${pc(q.hit)} | ${pc(q.precision)} | ${pc(q.negInjected)} | ${mean(dflt.map((r) => r.bytes)).toFixed(0)} | ${mean(withMsg.map((r) => r.bytes)).toFixed(0)} | ${pct(held, 0.5).toFixed(0)} ms | ${pct(held, 0.99).toFixed(0)} ms | ${Math.max(...held).toFixed(0)} ms | 500 ms |`);
  console.log(`\n\`/mempalace status\` after the default pass: ${(status ?? '').split('\n').find((l) => /recall/i.test(l)) ?? '(no recall line)'}\n`);
}
