#!/usr/bin/env node
// Benchmark (not a test): per-prompt recall (issue 37) on long real conversations, LoCoMo (Maharana
// et al., ACL 2024), against MemPalace's own search, with the REAL MemPalace 3.11.0.
//
//   git clone https://github.com/snap-research/locomo /tmp/locomo   # or any copy of it
//   node bench/recall-locomo.mjs --locomo /tmp/locomo/data/locomo10.zip [--convs 26,41] [--passes quality,default,sweep]
//
// `--locomo`: the fetched data (locomo10.zip, the folder it unpacks to, or a locomo10.json); it is
// never copied into the repository. Conversation 30 is kept aside for acceptance and is measured
// only when `--convs` names it. Per conversation, one fresh palace (cached under bench/data/ by the
// content hash of its session files): each LoCoMo session written as a pi session file (the first
// speaker the user, the other the assistant) and fed by the package's own `dotty-pi-ext feed`, the
// drawers a user would get. Then every question is asked as the first prompt of a session, through
// the addon's own before_agent_start handlers (bench/lib/recall-child.mjs), in three passes:
//   quality: MEMPALACE_RECALL_BUDGET_MS=5000 (only quality is judged), and beside each prompt
//            MemPalace's own mempalace_search {query: <the whole question>, limit: 5}: the baseline;
//   default: the shipped settings (500 ms budget): hit rate, bytes and how long the prompt was held;
//   sweep: MEMPALACE_RECALL_MIN_SCORE=0, no cap, budget 5 s: every drawer
//            the search found within NEAR_BEST of its best, with its score, so that other
//            thresholds can be applied afterwards with the product's rules (select.rs; the cap of
//            2,000 bytes filled as compose() in drawers.rs does). Scores are read as the message
//            prints them (two decimals).
// A hit: the recall message (or, for the baseline, one of the five drawers) holds the whole text of
// one of the question's evidence turns, both normalized (bench/lib/locomo.mjs). Prints markdown on
// stdout; progress on stderr; raw rows in bench/data/recall-locomo-last-run.json.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runNode } from '../__test__/helpers/run-node.mjs';
import { stdioEnv } from '../__test__/helpers/palace.mjs';
import { RUN_PROMPT } from './lib/recall-child.mjs';
import { CATEGORIES, readLocomo, sessionFile, evidenceTexts, holdsEvidence } from './lib/locomo.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] : dflt; };
const where = arg('locomo');
if (!where) {
  console.error('usage: node bench/recall-locomo.mjs --locomo <locomo10.zip | its folder | locomo10.json> [--convs 26,41] [--passes quality,default,sweep]');
  process.exit(2);
}
const HOLD_OUT = 'conv-30';
const all = readLocomo(where);
const picked = arg('convs')?.split(',').map((c) => (c.startsWith('conv-') ? c : `conv-${c}`));
const convs = all.filter((c) => (picked ? picked.includes(c.id) : c.id !== HOLD_OUT));
const PASSES = arg('passes', 'quality,default,sweep').split(',').filter((p) => p && p !== 'none');
const log = (...a) => console.error('[locomo bench]', ...a);

const env = (dir, extra) => ({
  ...stdioEnv(dir),
  MEMPALACE_CONFIG_DIR: path.join(dir, 'mempalace-cfg'),
  MEMPALACE_FEED_BIN: '/nonexistent/exporter',
  MEMPALACE_FEED_MINE_TIMEOUT_MS: '3600000',
  MEMPALACE_FEED_PREPARE_TIMEOUT_MS: '3600000',
  MEMPALACE_MCP_TIMEOUT_MS: '3600000',
  DOTTY_VOICE_TOOLS: '0',
  TOKENIZERS_PARALLELISM: 'false',
  ...extra,
});

/** `node bin/dotty-pi-ext.js feed` in `dir`'s agent folder. */
function feed(dir) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(here, '../bin/dotty-pi-ext.js'), 'feed'], { env: { PATH: process.env.PATH, ...env(dir, {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`feed exit ${code}: ${out.slice(-2000)}`))));
  });
}

/** The palace of `conv`, fed once and cached: → its folder. */
async function palace(conv) {
  const files = conv.sessions.map((_, i) => [`session_${String(i + 1).padStart(2, '0')}.jsonl`, sessionFile(conv, i)]);
  const tag = crypto.createHash('sha256').update(JSON.stringify(files)).digest('hex').slice(0, 12);
  const dir = path.join(here, 'data', `locomo-${conv.id}-${tag}`);
  const done = path.join(dir, 'fed.txt');
  if (fs.existsSync(done)) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  const sessions = path.join(dir, 'agent', 'sessions', `--work-${conv.id}--`);
  fs.mkdirSync(sessions, { recursive: true });
  for (const [name, text] of files) fs.writeFileSync(path.join(sessions, name), text);
  const t0 = performance.now();
  log(`${conv.id}: feeding ${files.length} sessions (${conv.sessions.flat().length} turns) into ${dir}`);
  const said = await feed(dir);
  fs.writeFileSync(done, said);
  log(`${conv.id}: fed in ${((performance.now() - t0) / 1000).toFixed(0)} s: ${said.trim().split('\n').at(-1)}`);
  return dir;
}

/** Every question of `conv` as the first prompt of a resumed session; with `baseline`, MemPalace's
 *  own search with the whole question first. → [{q, ms, message, baseline: [drawer text]}]. */
async function pass(dir, conv, extra, baseline) {
  const questions = path.join(dir, 'questions.json');
  fs.writeFileSync(questions, JSON.stringify(conv.qa.map((q) => q.question)));
  const r = await runNode(
    `${RUN_PROMPT}
     const questions = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(questions)}, 'utf8'));
     await native.palaceTools();
     // The warm-up search after the handshake: wait for it as pi's first prompt would not.
     await native.callTool('mempalace_search', { query: 'warm up', limit: 1 }, null);
     const out = [];
     for (const question of questions) {
       let found = null;
       if (${baseline}) {
         const reply = await native.callTool('mempalace_search', { query: question.slice(0, 250), limit: 5 }, null);
         try { found = JSON.parse(reply.content?.[0]?.text ?? '{}').results?.map((x) => x.text) ?? []; } catch { found = []; }
       }
       native.sessionStart('resume', true);
       const t0 = performance.now();
       const m = await run(question);
       out.push({ ms: performance.now() - t0, message: m?.content ?? '', baseline: found });
     }
     const status = await native.palaceCommand('status');
     await native.sessionShutdown('quit');
     return { out, status };`,
    env(dir, { MEMPALACE_FEED: '0', MEMPALACE_RECALL: 'on', ...extra }),
    { timeoutMs: 3600_000 },
  );
  if (r.error) throw new Error(`${r.error}\n${r.stderr.slice(-2000)}`);
  return r.result;
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const pc = (n, d) => (d ? `${((100 * n) / d).toFixed(1)} %` : '–');

// The product's rules for the sweep, read from their one owner rather than copied.
const selectRs = fs.readFileSync(path.join(here, '../src/palace/context/recall/select.rs'), 'utf8');
const NEAR_BEST = Number(selectRs.match(/const NEAR_BEST: f64 = ([0-9.]+);/)[1]);
const BELOW_GATE = Number(selectRs.match(/const BELOW_GATE: f64 = ([0-9.]+);/)[1]);
const SWEEP = [0.35, 0.38, 0.4, 0.42, 0.43, 0.44, 0.45, 0.47, 0.5];
/** A sweep pass's message: its header and its drawers' lines ({lead, score, text}). */
function sweepLines(message) {
  const [header = '', ...lines] = message.split('\n');
  return { header, lines: lines.map((l) => l.match(/^(- \S+ \((?:[^)]*, )?([0-9.]+)\): )(.*)$/)).filter(Boolean).map((m) => ({ lead: `\n${m[1]}`, score: Number(m[2]), text: m[3] })) };
}
/** What a threshold of `t` and a cap of `max` bytes would inject of a sweep's drawers: nothing
 *  unless the best reaches t, then those down to t − BELOW_GATE (all are within NEAR_BEST of the
 *  best), whole while they fit, the first cut to fit. */
function injectAt({ header, lines }, t, max = 2000) {
  if (!lines.length) return '';
  const best = Math.max(...lines.map((l) => l.score));
  if (best < t) return '';
  let out = header, n = 0;
  for (const l of lines.filter((x) => x.score >= Math.max(t - BELOW_GATE, best - NEAR_BEST))) {
    const room = max - Buffer.byteLength(out) - Buffer.byteLength(l.lead);
    let text = l.text;
    if (Buffer.byteLength(text) > room) {
      if (n || room < 40) continue;
      text = Buffer.from(text).subarray(0, room - 3).toString('utf8').replace(/\uFFFD$/, '') + '…';
    }
    out += l.lead + text;
    n += 1;
  }
  return n ? out : '';
}

const rows = [];
for (const conv of convs) {
  const dir = await palace(conv);
  const runs = {};
  if (!PASSES.length) continue;
  for (const p of PASSES) {
    log(`${conv.id}: ${p} pass (${conv.qa.length} questions)`);
    const extra = { quality: { MEMPALACE_RECALL_BUDGET_MS: '5000' }, default: {}, sweep: { MEMPALACE_RECALL_BUDGET_MS: '5000', MEMPALACE_RECALL_MIN_SCORE: '0', MEMPALACE_RECALL_MAX_BYTES: '100000' } }[p];
    runs[p] = await pass(dir, conv, extra, p === 'quality');
  }
  conv.qa.forEach((q, i) => {
    const evidence = evidenceTexts(conv, q);
    const row = { conv: conv.id, category: q.category, question: q.question, evidence };
    for (const p of PASSES) {
      const r = runs[p].out[i];
      if (p === 'sweep') {
        row.sweep = sweepLines(r.message);
        continue;
      }
      row[p] = { ms: r.ms, bytes: Buffer.byteLength(r.message), drawers: r.message.split('\n- ').length - 1, hit: holdsEvidence(r.message, evidence) };
      if (r.baseline) row.baseline = r.baseline.some((t) => holdsEvidence(t, evidence));
    }
    rows.push(row);
  });
  log(`${conv.id}: done; recall line: ${(runs[PASSES.at(-1)].status ?? '').split('\n').find((l) => /recall/i.test(l))}`);
}
fs.mkdirSync(path.join(here, 'data'), { recursive: true });
fs.writeFileSync(path.join(here, 'data', 'recall-locomo-last-run.json'), JSON.stringify(rows));

const answerable = rows.filter((r) => r.category !== 5 && r.evidence.length);
const adversarial = rows.filter((r) => r.category === 5);
console.log(`# Recall on LoCoMo (${convs.map((c) => c.id).join(', ')}): ${answerable.length} answerable questions, ${adversarial.length} adversarial\n`);
console.log('Hit: the recall message holds the whole text of an evidence turn (normalized); R@5: one of mempalace_search\'s five drawers for the whole question does.\n');
const MEASURED = PASSES.filter((p) => p !== 'sweep');
const cols = MEASURED.map((p) => (p === 'quality' ? 'recall, budget 5 s' : 'recall, default budget'));
console.log(`| category | questions | MemPalace R@5 (whole question) | ${cols.join(' | ')} |`);
console.log(`|---|---|---|${cols.map(() => '---|').join('')}`);
const line = (name, rs) => {
  const base = rs.filter((r) => r.baseline).length;
  const cells = MEASURED.map((p) => `${pc(rs.filter((r) => r[p].hit).length, rs.length)}${PASSES.includes('quality') ? ` (${(rs.filter((r) => r[p].hit).length / Math.max(1, base)).toFixed(2)} ×)` : ''}`);
  console.log(`| ${name} | ${rs.length} | ${PASSES.includes('quality') ? pc(base, rs.length) : '–'} | ${cells.join(' | ')} |`);
};
for (const c of [1, 2, 3, 4]) line(`${c} ${CATEGORIES[c]}`, answerable.filter((r) => r.category === c));
line('**all answerable**', answerable);
console.log('\n| pass | answerable with a message | adversarial with a message | drawers / message | bytes / message (mean, max) | prompt held p50 / p99 / max |');
console.log('|---|---|---|---|---|---|');
for (const p of MEASURED) {
  const msgs = rows.filter((r) => r[p].bytes);
  const held = rows.map((r) => r[p].ms);
  console.log(`| ${p} | ${pc(answerable.filter((r) => r[p].bytes).length, answerable.length)} | ${pc(adversarial.filter((r) => r[p].bytes).length, adversarial.length)} | ${mean(msgs.map((r) => r[p].drawers)).toFixed(2)} | ${mean(msgs.map((r) => r[p].bytes)).toFixed(0)}, ${Math.max(0, ...msgs.map((r) => r[p].bytes))} | ${pct(held, 0.5).toFixed(0)} / ${pct(held, 0.99).toFixed(0)} / ${Math.max(...held).toFixed(0)} ms |`);
}

if (PASSES.includes('sweep')) {
  console.log(`\n## Threshold sweep (MEMPALACE_RECALL_MIN_SCORE, the gate), from the sweep pass, at a cap of 2,000 bytes\n`);
  console.log('| MIN_SCORE | answerable: hit | × R@5 | answerable with a message | adversarial with a message | drawers / message |');
  console.log('|---|---|---|---|---|---|');
  const base = answerable.filter((r) => r.baseline).length;
  for (const t of SWEEP) {
    const m = (r) => injectAt(r.sweep, t);
    const hits = answerable.filter((r) => holdsEvidence(m(r), r.evidence)).length;
    const msgs = rows.map(m).filter(Boolean);
    const d = mean(msgs.map((x) => x.split('\n- ').length - 1));
    console.log(`| ${t.toFixed(2)} | ${pc(hits, answerable.length)} | ${base ? (hits / base).toFixed(2) : '–'} | ${pc(answerable.filter((r) => m(r)).length, answerable.length)} | ${pc(adversarial.filter((r) => m(r)).length, adversarial.length)} | ${d.toFixed(2)} |`);
  }
}
