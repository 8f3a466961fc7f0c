#!/usr/bin/env node
// Benchmark (not a test): how long the extension holds pi's JS thread when a prompt starts, i.e.
// the synchronous part of its first before_agent_start handler (registering palace tools that
// came back since the last prompt, the footer, pi 1.x's prompt section, the native call up to its
// promise). The wait for the wake-up or recall is not on the thread and is not counted here.
//
//   node bench/prompt-hold.mjs [--prompts 2000]
//
// Two rows, each a pi-like process of its own loaded with index.js into the tests' fake pi: the
// real MemPalace 3.11.0 over stdio with its 47 tools registered, and a palace that is down (its
// command fails). Each prompt starts a resumed session's run (no wake-up). Prints a markdown table
// on stdout. Needs the built addon (`npm run build`) and `bash scripts/mempalace/install.sh`.
import path from 'node:path';
import { tempDir, root } from '../__test__/helpers/brain.mjs';
import { stdioEnv } from '../__test__/helpers/palace.mjs';
import { runWithFakePi } from '../__test__/helpers/palace.mjs';

const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] : dflt; };
const N = Number(arg('prompts', '2000'));

const body = `
  try { await native.palaceTools(); } catch {}
  const [start] = pi.handlers.get('before_agent_start');
  native.sessionStart('resume', true, []);
  const us = [];
  for (let i = 0; i < ${N}; i++) {
    const t0 = process.hrtime.bigint();
    const p = start({ type: 'before_agent_start', prompt: 'what did we decide about the backups?', messageType: 'user', systemPrompt: '' }, {});
    us.push(Number(process.hrtime.bigint() - t0) / 1e3);
    await p;
  }
  const tools = [...pi.tools.keys()].filter((n) => n.startsWith('mempalace_')).length;
  await native.sessionShutdown('quit');
  return { us, tools };`;

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const rows = [];
for (const [label, env] of [
  ['palace connected (real MemPalace, stdio)', (dir) => stdioEnv(dir)],
  ['palace down (its command fails)', (dir) => ({ ...stdioEnv(dir), MEMPALACE_MCP_BIN: 'false', MEMPALACE_MCP_ARGS: '' })],
]) {
  const dir = tempDir('dotty-bench-hold-');
  const r = await runWithFakePi(body, { ...env(dir), DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0' }, { timeoutMs: 300_000 });
  if (r.error || !r.result) throw new Error(`${label}: ${r.error ?? r.stderr}`);
  const { us, tools } = r.result;
  rows.push(`| ${label} | ${tools} | ${us.length} | ${pct(us, 0.5).toFixed(0)} | ${pct(us, 0.99).toFixed(0)} | ${Math.max(...us).toFixed(0)} |`);
  console.error(`[prompt-hold] ${label}: done`);
}
console.log(`\nThe JS thread held per prompt by the first before_agent_start handler (${path.relative(process.cwd(), root) || '.'}; Node ${process.versions.node}):\n`);
console.log('| palace | palace tools in pi | prompts | p50 µs | p99 µs | max µs |');
console.log('|---|---|---|---|---|---|');
console.log(rows.join('\n'));
