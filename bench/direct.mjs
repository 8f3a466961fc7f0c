#!/usr/bin/env node
// Benchmark (not a test): the one-shot wall time of production's direct calls (docs/voice-tools.md,
// "Direct calls"): production's own script, byte for byte with the folder substituted, run as its
// voice client runs it (`node --experimental-strip-types --input-type=module -e <script>`, the
// arguments on stdin as Python's json.dumps writes them), spawn to exit, for remember,
// memory_lookup (1k-row brain.db from bench/gen-brain.mjs, a scratch copy) and think_hard (an
// instant fake thinker on port 0), on glibc Node 25.9 (production's version) and on the musl Node
// 24 of scripts/musl/node.sh when this checkout has it. The `floor` rows take the calls apart (see
// below). Runs interleave (each round runs
// every case once) so every row saw the same moments of a noisy machine.
// Usage: node bench/direct.mjs [--runs 20]     Prints a markdown table on stdout (progress on stderr).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBrain, QUERIES, root } from './gen-brain.mjs';
import { startService, json } from '../__test__/helpers/services.mjs';
import { directRuntimes, productionScript, pyDumps, runDirect } from '../__test__/helpers/runtimes.mjs';

const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? Number(process.argv[i + 1]) : dflt; };
const RUNS = arg('runs', 20);
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))]; };
const s = (x) => `${(x / 1000).toFixed(3)} s`;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-bench-direct-'));
const db = path.join(work, 'brain.db');
fs.copyFileSync(ensureBrain(1000), db);
const thinker = await startService({ 'POST /v1/chat/completions': (req, res) => json(res, 200, { choices: [{ message: { content: 'Because of Rayleigh scattering.' } }] }) });
const env = { PATH: process.env.PATH, HOME: work, DOTTY_BRAIN_DB: db, VOICE_THINKER_URL: `${thinker.url}/v1/chat/completions` };

// The floors under every row: Node with production's flags and an empty script; the same importing
// an empty .ts module (Node's type stripping, which production's TS pays too); and that module
// loading native.js (the addon's dlopen, and nothing called).
fs.writeFileSync(path.join(work, 'package.json'), '{"type": "module"}\n');
fs.writeFileSync(path.join(work, 'empty.ts'), 'export const answer: string = "";\n');
fs.writeFileSync(path.join(work, 'load.ts'), `import { createRequire } from "node:module";\nexport const native: unknown = createRequire(import.meta.url)(${JSON.stringify(path.join(root, 'native.js'))});\n`);
const floor = (file) => `import "${path.join(work, file)}";process.stdout.write(JSON.stringify({result: ""}));`;

const runtimes = directRuntimes().filter((r) => r.name.includes('25.9') || r.name.startsWith('musl'));
const cases = [
  { name: 'floor: node, empty script (same flags)', script: () => 'process.stdout.write(JSON.stringify({result: ""}));', stdin: () => '' },
  { name: 'floor: + an empty .ts module', script: () => floor('empty.ts'), stdin: () => '' },
  { name: 'floor: + that module loading native.js', script: () => floor('load.ts'), stdin: () => '' },
  { name: 'remember', script: () => productionScript('remember', root), stdin: (i) => pyDumps({ fact: `bench fact number ${i}` }) },
  { name: 'memory_lookup (1k rows)', script: () => productionScript('memory_lookup', root), stdin: (i) => pyDumps({ query: QUERIES[i % QUERIES.length] }) },
  { name: 'think_hard (instant fake thinker)', script: () => productionScript('think_hard', root), stdin: () => pyDumps({ question: 'Why is the sky blue?' }) },
];

const times = new Map();
try {
  const live = runtimes.filter((r) => r.bin);
  for (const rt of live) for (const c of cases) await runDirect(rt.bin, c.script(), c.stdin(0), { env }); // warm the page cache
  for (let i = 0; i < RUNS; i++) {
    for (const rt of live) {
      for (const c of cases) {
        const r = await runDirect(rt.bin, c.script(), c.stdin(i), { env });
        if (r.code !== 0 || !/^\{"result":/.test(r.stdout)) throw new Error(`${rt.name} ${c.name}: exit ${r.code} ${r.stdout} ${r.stderr}`);
        const key = `${rt.name}\t${c.name}`;
        times.set(key, [...(times.get(key) ?? []), r.wallMs]);
      }
    }
    process.stderr.write(`round ${i + 1}/${RUNS}\n`);
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown cpu';
  console.log(`One-shot wall time, spawn to exit, ${RUNS} runs each (${os.cpus().length} × ${cpu}, Node ${process.version} orchestrating):\n`);
  console.log('| runtime | call | p50 | p90 | min | production (its TS, its container) |');
  console.log('|---|---|---|---|---|---|');
  for (const [key, xs] of times) {
    const [rt, call] = key.split('\t');
    const prod = call.startsWith('floor') ? '' : '0.2–0.55 s';
    console.log(`| ${rt} | ${call} | ${s(pct(xs, 0.5))} | ${s(pct(xs, 0.9))} | ${s(Math.min(...xs))} | ${prod} |`);
  }
} finally {
  await thinker.close();
  fs.rmSync(work, { recursive: true, force: true });
}
