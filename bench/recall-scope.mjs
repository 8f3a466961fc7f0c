#!/usr/bin/env node
// Benchmark (not a test): recall under MEMPALACE_SCOPE=project against global scope (issue 36), on
// the labelled set of bench/recall.mjs (bench/recall/set.json: 300 drawers of real application
// descriptions, 160 prompts with a known relevant drawer, 100 with none) split into two projects of
// one palace: the drawers alternate between the wings `alpha_app` and `beta_service` (their texts
// share the vocabulary of application descriptions), and each prompt is asked in the project of its
// drawer (the prompts with none alternate). Each prompt is the first of a resumed session in that
// project's folder, through the addon's own session_start and before_agent_start handlers, with the
// shipped recall settings. Per scope: hit (the labelled drawer injected), drawers of the other
// project injected, unrelated prompts with a message, the time the prompt was held.
//
//   node bench/recall-scope.mjs
//
// Needs the built addon and `bash scripts/mempalace/install.sh`. Prints a markdown table on stdout.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode } from '../__test__/helpers/run-node.mjs';
import { stdioEnv } from '../__test__/helpers/palace.mjs';
import { fileDrawers, RUN_PROMPT } from './lib/recall-child.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const set = JSON.parse(fs.readFileSync(path.join(here, 'recall/set.json'), 'utf8'));
const log = (...a) => console.error('[recall-scope bench]', ...a);
const WINGS = ['alpha_app', 'beta_service'];
const wingOf = new Map(set.drawers.map((d, i) => [d.key, WINGS[i % 2]]));
const projects = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-recall-scope-'));
const folder = { alpha_app: path.join(projects, 'alpha-app'), beta_service: path.join(projects, 'Beta Service') };
Object.values(folder).forEach((d) => fs.mkdirSync(d, { recursive: true }));
const prompts = set.prompts.map((p, i) => ({ ...p, wing: p.drawer ? wingOf.get(p.drawer) : WINGS[i % 2] }));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-recall-scope-palace-'));
const env = (extra) => ({ ...stdioEnv(dir), DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', ...extra });

log(`filing ${set.drawers.length} drawers into ${WINGS.join(' and ')} (${dir})`);
const drawers = set.drawers.map((d) => ({ key: d.key, wing: wingOf.get(d.key), room: d.room, text: d.text }));
const ids = await fileDrawers(dir, drawers, env({ MEMPALACE_RECALL: 'off' }), 'recall-scope-bench');

async function pass(scope) {
  const file = path.join(dir, 'prompts.json');
  fs.writeFileSync(file, JSON.stringify(prompts.map((p) => ({ ...p, cwd: folder[p.wing] }))));
  const r = await runNode(
    `const prompts = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(file)}, 'utf8'));
     ${RUN_PROMPT}
     await native.palaceTools();
     const out = [];
     for (const p of prompts) {
       native.sessionStart('resume', true, [], p.cwd, true);
       const t0 = performance.now();
       const m = await run(p.prompt);
       const lines = m ? m.content.split('\\n').slice(1).map((l) => l.match(/^- (\\S+) \\(/)).filter(Boolean).map((x) => ({ id: x[1] })) : [];
       out.push({ drawer: p.drawer, wing: p.wing, ms: performance.now() - t0, lines });
     }
     await native.sessionShutdown('quit');
     return out;`,
    env({ MEMPALACE_RECALL: 'on', ...(scope === 'project' ? { MEMPALACE_SCOPE: 'project' } : {}) }),
    { timeoutMs: 3600_000 },
  );
  if (r.error) throw new Error(`${r.error}\n${r.stderr.slice(-2000)}`);
  // A line names the drawer's id, which names its wing (MemPalace's drawer_<wing>_<room>_<hash>).
  for (const row of r.result) for (const l of row.lines) l.wing = WINGS.find((w) => l.id.startsWith(`drawer_${w}_`)) ?? '?';
  return r.result;
}

const pc = (x) => `${(100 * x).toFixed(1)} %`;
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
console.log(`# Recall by scope: ${set.drawers.length} drawers in two projects of one palace (${WINGS.join(', ')}), ${prompts.filter((p) => p.drawer).length} prompts with a relevant drawer, ${prompts.filter((p) => !p.drawer).length} with none; the shipped recall settings\n`);
console.log('| scope | hit | drawers of the other project injected | prompts that got one | unrelated prompts with a message | held p50 | p99 |');
console.log('|---|---|---|---|---|---|---|');
for (const scope of ['global', 'project']) {
  log(`${scope} scope`);
  const rows = await pass(scope);
  const pos = rows.filter((r) => r.drawer);
  const other = rows.flatMap((r) => r.lines.filter((l) => l.wing !== r.wing));
  const withOther = rows.filter((r) => r.lines.some((l) => l.wing !== r.wing));
  const hit = pos.filter((r) => r.lines.some((l) => l.id === ids[r.drawer])).length / pos.length;
  const neg = rows.filter((r) => !r.drawer);
  const ms = rows.map((r) => r.ms);
  console.log(`| ${scope} | ${pc(hit)} | ${other.length} | ${withOther.length} of ${rows.length} | ${pc(neg.filter((r) => r.lines.length).length / neg.length)} | ${pct(ms, 0.5).toFixed(0)} ms | ${pct(ms, 0.99).toFixed(0)} ms |`);
}
fs.rmSync(dir, { recursive: true, force: true });
fs.rmSync(projects, { recursive: true, force: true });
