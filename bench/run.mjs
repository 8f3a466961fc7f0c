#!/usr/bin/env node
// dotty-pi-ext benchmarks: the native addon side by side with its peers (bench/peers/).
//
//   node bench/run.mjs [--quick] [--rounds N] [--only 1,2,3,4,5,6,7] [--sizes 1k,100k,1m] [--polluted 0.6]
//
// Prints one markdown table per figure. Not a test: it never fails on a number. Every case runs in
// a child process of its own (bench/lib/case.mjs), native and peer alternating round by round
// (ABBA...), and every figure is the median over the rounds; ratios are medians of the per-round
// native ÷ peer ratios, so that both sides of a ratio saw the same moment of a noisy machine.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ensureBrain, label, parseRows, QUERIES } from './gen-brain.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------- options
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const value = (name, dflt) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : dflt; };
const quick = flag('quick');
const P = quick
  ? { rounds: 3, lookups: { 1e3: 200, 1e5: 200, 1e6: 100 }, tpSize: 1e5, tpTotal: 400, concs: [1, 8, 64], remember: 300, turns: 100, http: 200, rss: 1000, mcp: 200, mcpPalace: 50 }
  : { rounds: 7, lookups: { 1e3: 1000, 1e5: 1000, 1e6: 300 }, tpSize: 1e5, tpTotal: 1000, concs: [1, 8, 64], remember: 2000, turns: 500, http: 1000, rss: 1000, mcp: 1000, mcpPalace: 300 };
P.rounds = Number(value('rounds', P.rounds));
const sizes = value('sizes', '1k,100k,1m').split(',').map(parseRows);
const only = new Set(value('only', '1,2,3,4,5,6,7,8').split(',').map(Number));
// Issue 18: the files of figures 1 and 2 with this share of their conversation rows stored as the
// old turn logger did (the voice provider's scaffolding inside; bench/gen-brain.mjs).
const polluted = Number(value('polluted', 0));

// ---------------------------------------------------------------------------------------------- helpers
const med = (xs) => { const s = xs.filter((x) => x != null && !Number.isNaN(x)).sort((a, b) => a - b); if (!s.length) return NaN; const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const fmt = (x, d = 2) => (x == null || Number.isNaN(x) ? 'n/a' : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(d));
const ms = (x) => (x == null || Number.isNaN(x) ? 'n/a' : x < 1 ? `${(x * 1000).toFixed(0)} µs` : `${fmt(x)} ms`);
const ratio = (x) => (x == null || Number.isNaN(x) ? 'n/a' : `${x.toFixed(2)}×`);
const check = (ok) => (ok == null ? '' : ok ? '✓' : '✗');
function table(title, head, rows, notes = []) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const out = [`### ${title}`, '', line(head), line(head.map(() => '---')), ...rows.map(line), ...(notes.length ? ['', ...notes] : []), ''];
  console.log(out.join('\n'));
}
const progress = (s) => process.stderr.write(`\r\x1b[K${s}`);

function runCase(opts, { env = {}, nodeArgs = [], timeoutMs = 600_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, path.join(here, 'lib/case.mjs'), JSON.stringify(opts)], {
      // NAPI_RS_NATIVE_LIBRARY_PATH (napi-rs's loader): another build of the addon for the native
      // side, for A/B runs between builds.
      env: { PATH: process.env.PATH, ...(process.env.NAPI_RS_NATIVE_LIBRARY_PATH ? { NAPI_RS_NATIVE_LIBRARY_PATH: process.env.NAPI_RS_NATIVE_LIBRARY_PATH } : {}), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '', err = '';
    // Decoded as one stream: a chunk boundary can fall inside a multi-byte character (an emoji of a
    // reply), which `out += buffer` would turn into U+FFFD on both sides of the cut.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const m = out.match(/@@RESULT@@(.*)\n/);
      if (!m) return reject(new Error(`case ${JSON.stringify(opts)} exited ${code}:\n${err.slice(-2000)}`));
      const r = JSON.parse(m[1]);
      r.stderrLines = err.split('\n').filter(Boolean).length;
      resolve(r);
    });
  });
}

/** Runs a case for each side, `rounds` times, alternating the order; → {native: [..], peer: [..]}. */
async function paired(name, opts, { sides = ['native', 'peer'], ...runOpts } = {}) {
  const res = Object.fromEntries(sides.map((s) => [s, []]));
  for (let r = 0; r < P.rounds; r++) {
    const order = r % 2 ? [...sides].reverse() : sides;
    for (const side of order) {
      progress(`${name}: round ${r + 1}/${P.rounds}, ${side}`);
      res[side].push(await runCase({ ...opts, side }, runOpts));
    }
  }
  progress('');
  return res;
}
/** Median of a field per side, and the median of per-round native ÷ peer ratios. */
function stat(res, field, a = 'native', b = 'peer') {
  const get = (side) => res[side].map((r) => (typeof field === 'function' ? field(r) : r[field]));
  const A = get(a), B = get(b);
  return { [a]: med(A), [b]: med(B), ratio: med(A.map((x, i) => x / B[i])) };
}

// ---------------------------------------------------------------------------------------------- machine
const cpu = (fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) ?? [])[1] ?? os.cpus()[0]?.model;
let nproc = String(os.availableParallelism?.() ?? os.cpus().length);
try { nproc = execFileSync('nproc').toString().trim(); } catch {}
const bsqlVersion = require(path.join(root, 'node_modules/better-sqlite3/package.json')).version;
const sdkVersion = require(path.join(root, 'node_modules/@modelcontextprotocol/sdk/package.json')).version;
console.log(`## dotty-pi-ext benchmarks${quick ? ' (--quick: fewer rounds and calls; indicative only)' : ''}\n`);
console.log(`- machine: ${nproc} cores (nproc), ${cpu}; Node ${process.version}; ${os.platform()} ${os.release()}; load average at start ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log(`- peers: better-sqlite3 ${bsqlVersion} (synchronous, JS thread), Node fetch, @modelcontextprotocol/sdk ${sdkVersion}`);
if (process.env.NAPI_RS_NATIVE_LIBRARY_PATH) console.log(`- native side: ${process.env.NAPI_RS_NATIVE_LIBRARY_PATH} (NAPI_RS_NATIVE_LIBRARY_PATH), not this checkout's build`);
console.log(`- ${P.rounds} rounds per case, native and peer alternating; medians over rounds; ratio = median of per-round native ÷ peer`);
if (polluted) console.log(`- brain.db files with ${Math.round(polluted * 100)} % of the conversation rows polluted as the old turn logger stored them (\`--polluted ${polluted}\`; the scratch 1k file of the write cases stays clean)`);
console.log(`- started ${new Date().toISOString()}\n`);

const brains = {};
for (const n of sizes) { progress(`brain.db with ${label(n)} rows`); brains[n] = ensureBrain(n, { polluted }); }
if (!brains[P.tpSize]) brains[P.tpSize] = ensureBrain(P.tpSize, { polluted });
const small = ensureBrain(1e3);
progress('');
const results = { params: P, sizes };

// ---------------------------------------------------------------------------------------------- figure 1
if (only.has(1) || only.has(7) || only.has(8)) {
  const rows = [], notes = [];
  results.fig1 = {};
  for (const n of sizes) {
    const res = await paired(`fig 1: lookup ${label(n)}`, { case: 'lookup', db: brains[n], n: P.lookups[n] ?? P.lookups[1e5] });
    results.fig1[n] = res;
    const p50 = stat(res, 'p50'), p99 = stat(res, 'p99'), cpu = stat(res, 'jsCpuPerCallMs'), frac = stat(res, 'jsBusyFraction'), eld = stat(res, 'eldMaxMs');
    rows.push([label(n), ms(p50.native), ms(p50.peer), ratio(p50.ratio), check(p50.ratio <= 1), ms(p99.native), ms(p99.peer), ratio(p99.ratio),
      ms(cpu.native), ms(cpu.peer), `${fmt(frac.native * 100, 0)}% / ${fmt(frac.peer * 100, 0)}%`, ms(eld.native), ms(eld.peer)]);
    const a = res.native[0].replies, b = res.peer[0].replies;
    const diff = a.map((x, i) => x !== b[i]).filter(Boolean).length;
    // Every reply of every round, native against the peer's same call (same query sequence).
    let compared = 0, differ = 0;
    const diffs = []; // the first few, kept in last-run.json (fig1diffs) to see why they differ
    res.native.forEach((r, k) => r.allReplies.forEach((x, i) => {
      compared++;
      if (x !== res.peer[k].allReplies[i]) { differ++; if (diffs.length < 5) diffs.push({ round: k, call: i, query: QUERIES[i % QUERIES.length], native: x, peer: res.peer[k].allReplies[i] }); }
    }));
    if (diffs.length) (results.fig1diffs ??= {})[n] = diffs;
    for (const r of [...res.native, ...res.peer]) delete r.allReplies; // kept out of last-run.json
    notes.push(`- ${label(n)}: replies to the ${QUERIES.length} queries ${diff ? `differ for ${diff} of them` : 'identical'} native vs peer; every timed reply compared: ${differ ? `⚠ ${differ} of ${compared} differ` : `${compared} of ${compared} byte-identical`}; native readers opened: ${res.native.map((r) => r.stats.brainReaderOpens).join(', ')}`);
  }
  if (only.has(1)) table(`Figure 1: memory_lookup latency and JS-thread blocking (${Object.values(P.lookups)[0]}–${P.lookups[1e6]} sequential lookups per round)`,
    ['rows', 'native p50', 'peer p50', 'p50 ÷', '≤1', 'native p99', 'peer p99', 'p99 ÷', 'JS-thread CPU per lookup, native', 'peer', 'event-loop utilization, native / peer', 'event-loop delay max, native', 'peer'],
    rows, ['JS-thread CPU = on-CPU time of the main thread (`/proc/self/task/<pid>/schedstat`) ÷ lookups, the direct measure of blocking; utilization = `performance.eventLoopUtilization()` (it also counts time the JS thread was runnable but preempted, so it overstates on a busy machine); delay = `monitorEventLoopDelay` (1 ms resolution) max while they ran. Lookups run one after another with a loop turn between them. Query mix: 20 realistic voice queries (names, foods, phrases, broad words, misses), cycled.', ...notes]);
}

// ---------------------------------------------------------------------------------------------- figure 2
if (only.has(2) || only.has(7)) {
  const rows = [];
  results.fig2 = { lookup: {}, remember: {} };
  for (const c of P.concs) {
    const res = await paired(`fig 2: ${c} concurrent lookups`, { case: 'throughput', db: brains[P.tpSize], conc: c, total: P.tpTotal });
    results.fig2.lookup[c] = res;
    const tp = stat(res, 'perSec'), eld = stat(res, 'eldMaxMs');
    rows.push([`memory_lookup ×${c} in flight (${label(P.tpSize)} rows)`, fmt(tp.native, 0), fmt(tp.peer, 0), ratio(tp.ratio), c >= 8 ? check(tp.ratio >= 1.8) : '', ms(eld.native), ms(eld.peer),
      `readers opened: ${med(res.native.map((r) => r.stats.brainReaderOpens))}`]);
  }
  for (const [what, writer, conc] of [['idle', null, 1], ['idle', null, 8], ['another process writing (1-row tx loop)', 'loop', 8]]) {
    const res = await paired(`fig 2: remember ×${conc}, ${what}`, { case: 'remember', db: small, total: conc === 1 ? P.remember / 2 : P.remember, conc, writer });
    results.fig2.remember[`${what} ×${conc}`] = res;
    const tp = stat(res, 'perSec'), eld = stat(res, 'eldMaxMs'), other = stat(res, 'otherPerSec');
    if (conc === 1) {
      // One at a time: the latency of one remember (issue 14: p50 ≤ the peer's).
      const p50 = stat(res, 'p50'), p99 = stat(res, 'p99');
      const bad = [...res.native, ...res.peer].filter((r) => Object.keys(r.replies).some((k) => k !== '(remembered)') || r.landed !== P.remember / 2).length;
      rows.push([`remember ×1 in flight, idle${bad ? ` (⚠ ${bad} runs failed or lost rows)` : ''}`, fmt(tp.native, 0), fmt(tp.peer, 0), ratio(tp.ratio), `p50 ≤1× ${check(p50.ratio <= 1)}`, ms(eld.native), ms(eld.peer),
        `p50 ${ms(p50.native)} vs ${ms(p50.peer)} (${ratio(p50.ratio)}), p99 ${ms(p99.native)} vs ${ms(p99.peer)} (${ratio(p99.ratio)}); rows landed: all ${P.remember / 2} per run`]);
      continue;
    }
    const bad = [...res.native, ...res.peer].filter((r) => Object.keys(r.replies).some((k) => k !== '(remembered)')).length;
    const short = [...res.native, ...res.peer].filter((r) => r.landed !== P.remember).length;
    const groups = med(res.native.map((r) => r.stats.brainWriteGroups));
    rows.push([`remember ×${conc} in flight, ${what}${bad ? ` (⚠ ${bad} runs had failures)` : ''}`, fmt(tp.native, 0), fmt(tp.peer, 0), ratio(tp.ratio), check(tp.ratio >= (writer ? 1.0 : 1.5)), ms(eld.native), ms(eld.peer),
      [writer ? `other writer rows/s: ${fmt(other.native, 0)} vs ${fmt(other.peer, 0)}` : '', short ? `⚠ ${short} runs landed fewer rows than acknowledged` : `rows landed: all ${P.remember} per run, both sides`, `native group commits per run: ${groups}`].filter(Boolean).join('; ')]);
  }
  if (only.has(2)) table('Figure 2: throughput (calls/s; the peer is synchronous, so its calls never overlap)',
    ['workload', 'native calls/s', 'peer calls/s', 'native ÷ peer', 'target (lookups ≥1.8×; remember ≥1.5× idle, ≥1.0× with a writer)', 'event-loop delay max, native', 'peer', 'notes'], rows,
    [`${P.tpTotal} lookups / ${P.remember} remembers per round; native = N async callTool workers (N in flight), peer = the same workers over the synchronous better-sqlite3 calls. remember runs on a scratch copy of the 1k file.`]);
}

// ---------------------------------------------------------------------------------------------- figure 3
if (only.has(3)) {
  const rows = [];
  results.fig3 = {};
  for (const [what, o] of [
    ['voice turn, idle brain.db', {}],
    ['voice turn, another process writing (1-row tx loop)', { writer: 'loop' }],
    ['voice turn, another process in 50 ms write transactions', { writer: 'bulk' }],
    ['long run (40 messages: 19×20 KB text + 330 KB image)', { big: true }],
  ]) {
    const res = await paired(`fig 3: ${what}`, { case: 'turnlog', db: small, n: P.turns, ...o });
    results.fig3[what] = res;
    const p50 = stat(res, 'p50'), p99 = stat(res, 'p99'), max = stat(res, 'max');
    const written = res.native.map((r) => r.stats.turnRowsWritten);
    rows.push([what, ms(p50.native), ms(p50.peer), ratio(p50.ratio), ms(p99.native), ms(p99.peer), ratio(p99.ratio), ms(max.native), ms(max.peer),
      `${ms(med(res.native.map((r) => r.drainMs)))}; rows ${written.every((w) => w === P.turns) ? 'all written' : `written ${written.join('/')} of ${P.turns}`}`]);
  }
  table('Figure 3: per-turn log, time until the agent_end handler returns',
    ['turn', 'native p50', 'peer p50', 'p50 ÷', 'native p99', 'peer p99', 'p99 ÷', 'native max', 'peer max', 'native: flushTurnLog after the last turn'], rows,
    [`${P.turns} turns per round, 2 ms apart, through index.js's real handler (native) and a synchronous INSERT in the handler (peer, as production TS). The native write itself happens later, off the JS thread.`]);
}

// ---------------------------------------------------------------------------------------------- figure 4
if (only.has(4)) {
  const svc = spawn(process.execPath, [path.join(here, 'lib/fake-services.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const { url } = await new Promise((resolve) => { let b = ''; svc.stdout.on('data', (d) => { b += d; if (b.includes('\n')) resolve(JSON.parse(b)); }); });
  const env = { DOTTY_BEHAVIOUR_URL: url, VOICE_THINKER_URL: `${url}/v1/chat/completions` };
  const rows = [];
  results.fig4 = {};
  for (const tool of ['take_photo', 'think_hard']) {
    const res = await paired(`fig 4: ${tool}`, { case: 'http', http: true, tool, n: P.http, db: small }, { env });
    results.fig4[tool] = res;
    const p50 = stat(res, 'p50'), p99 = stat(res, 'p99'), busy = stat(res, 'jsCpuPerCallMs');
    const same = res.native[0].reply === res.peer[0].reply;
    rows.push([tool + (same ? '' : ' (⚠ replies differ)'), ms(p50.native), ms(p50.peer), ratio(p50.ratio), ms(p99.native), ms(p99.peer), ratio(p99.ratio), ms(busy.native), ms(busy.peer)]);
  }
  svc.stdin.end();
  table('Figure 4: HTTP tool overhead against an instant fake service (separate process, loopback)',
    ['tool', 'native p50', 'fetch p50', 'p50 ÷', 'native p99', 'fetch p99', 'p99 ÷', 'JS-thread CPU per call, native', 'fetch'], rows,
    [`${P.http} sequential calls per round, keep-alive on both sides.`]);
}

// ---------------------------------------------------------------------------------------------- figure 5
if (only.has(5)) {
  const rows = [], notes = [];
  results.fig5 = {};
  // The REAL MemPalace 3.11.0 (scripts/mempalace/install.sh), on a palace seeded once with a
  // few drawers and a diary entry (cached under bench/data/, copied per process).
  const mempalaceRoot = process.env.MEMPALACE_ROOT || path.join(os.homedir(), '.cache/mempalace-test');
  const haveMempalace = fs.existsSync(path.join(mempalaceRoot, 'venv/bin/mempalace-mcp'));
  const palace = path.join(here, 'data/palace-v1');
  const env = { MEMPALACE_ROOT: mempalaceRoot };
  if (haveMempalace && !fs.existsSync(path.join(palace, 'palace/chroma.sqlite3'))) {
    progress('fig 5: seeding the MemPalace palace');
    fs.rmSync(palace, { recursive: true, force: true });
    fs.mkdirSync(palace, { recursive: true });
    await runCase({ case: 'palaceSeed', palace }, { env });
  }
  const servers = [['trivial', 'echo on bench/peers/trivial-mcp-server.mjs (SDK server, node)', P.mcp]];
  if (haveMempalace) servers.push(['mempalace', 'mempalace_status on the real MemPalace 3.11.0 server (stdio, python)', P.mcpPalace]);
  for (const [server, what, n] of servers) {
    const res = await paired(`fig 5: MCP ${server}`, { case: 'mcp', server, palace, n }, { env });
    results.fig5[server] = res;
    const p50 = stat(res, 'p50'), p99 = stat(res, 'p99'), hs = stat(res, 'handshakeMs'), cpu = stat(res, 'jsCpuPerCallMs');
    const same = res.native.every((r) => r.reply === res.peer[0].reply);
    rows.push([what + (same ? '' : ' (⚠ replies differ)'), ms(p50.native), ms(p50.peer), ratio(p50.ratio), check(p50.ratio <= 1), ms(p99.native), ms(p99.peer), ratio(p99.ratio),
      ms(cpu.native), ms(cpu.peer), ms(hs.native), ms(hs.peer), ratio(hs.ratio)]);
    notes.push(`- ${server}: ${n} sequential calls per round after 30 warm-up calls; tools listed: native ${res.native[0].toolCount}, SDK ${res.peer[0].toolCount}; replies ${same ? 'identical' : 'differ'} native vs SDK`);
  }
  if (!haveMempalace) rows.push(['mempalace_status on the real MemPalace server', 'n/a', `n/a (not installed under ${mempalaceRoot})`, '', '', '', '', '', '', '', '', '', '']);
  table('Figure 5: MCP round trip and handshake (native bridge vs @modelcontextprotocol/sdk client, same server command and environment)',
    ['call', 'native p50', 'SDK p50', 'p50 ÷', '≤1', 'native p99', 'SDK p99', 'p99 ÷', 'JS-thread CPU per call, native', 'SDK', 'native handshake', 'SDK handshake', 'handshake ÷'], rows,
    ['Handshake = spawn the server, initialize + initialized, tools/list, in a fresh process: native from `init()` until `palaceTools()` resolves (empty tool cache), SDK from the transport\'s spawn until `listTools()` returns. Round trip = `await native.callTool(name, args, null)` vs `await client.callTool(...)` text joined.', ...notes]);
}

// ---------------------------------------------------------------------------------------------- figure 6
if (only.has(6)) {
  const rows = [];
  const startup = path.join(here, 'startup.mjs');
  // Imported only when it exports the hook: as a plain CLI, importing it would run it.
  const hasHook = fs.existsSync(startup) && /export\s+(async\s+)?function\s+startupRows\b/.test(fs.readFileSync(startup, 'utf8'));
  const mod = hasHook ? await import(startup) : {};
  if (typeof mod.startupRows === 'function') {
    // bench/startup.mjs: `startupRows({ quick, rounds })` → {rows of this table, raw numbers}.
    progress('fig 6: pi startup and per-turn overhead in the real pi (bench/startup.mjs)');
    const r = await mod.startupRows({ quick, rounds: P.rounds });
    results.fig6startup = r.raw;
    rows.push(...r.rows);
    progress('');
  } else {
    rows.push(['pi startup, with − without the extension', 'n/a (bench/startup.mjs without startupRows())', '', '≤ +30 ms']);
  }
  const res = await paired('fig 6: RSS', { case: 'rss', db: brains[P.tpSize], calls: P.rss }, { sides: ['native', 'peer', 'none'], nodeArgs: ['--expose-gc'] });
  results.fig6 = res;
  const none = med(res.none.map((r) => r.rssMB));
  const d = (side) => med(res[side].map((r, i) => r.rssMB - res.none[i].rssMB));
  const rssRatio = med(res.native.map((r, i) => (r.rssMB - res.none[i].rssMB) / (res.peer[i].rssMB - res.none[i].rssMB)));
  rows.push([`RSS after ${P.rss} calls (${label(P.tpSize)} rows), with − without the extension`, `+${fmt(d('native'), 1)} MB`, `peer: +${fmt(d('peer'), 1)} MB (native ÷ peer ${ratio(rssRatio)}, issue 38: ≤ 0.5× ${check(rssRatio <= 0.5)})`, `≤ +15 MB ${check(d('native') <= 15)}`]);
  // Honesty: both sides answered the same calls on the same file with the same replies.
  const same = res.native.filter((r, i) => r.replies === res.peer[i].replies).length;
  const empties = [...res.native, ...res.peer].map((r) => r.emptyReplies);
  table('Figure 6: startup and resident memory', ['what', 'native', 'peer / context', 'target'], rows,
    [`RSS measured after gc in a process that loaded a fake pi and made the calls (90% memory_lookup, 10% recall_person) on the same brain.db; without the extension: ${fmt(none, 1)} MB. Replies identical native vs peer (digest of all ${P.rss}): ${same} of ${res.native.length} rounds ${check(same === res.native.length)}; replies that found nothing per process: ${[...new Set(empties)].join(', ')}.`]);
}

// ---------------------------------------------------------------------------------------------- figure 8
if (only.has(8)) {
  // The floor: the same SQL in a Rust loop (bench/floor.rs, no Node; it first proves the addon's
  // plan gives the contract's rows on every query), and the cost of a native call from JS.
  const rows = [], notes = [];
  progress('fig 8: cargo bench --bench floor (builds it the first time)');
  const files = sizes.map((n) => brains[n]);
  let floor = [];
  try {
    const out = execFileSync('cargo', ['bench', '--quiet', '--no-default-features', '--bench', 'floor', '--', '--json', '--n', String(quick ? 200 : 1000), ...files],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 }).toString();
    floor = JSON.parse(out.match(/@@FLOOR@@(.*)/)[1]);
  } catch (e) { notes.push(`- cargo bench --bench floor failed: ${String(e.message).split('\n')[0]}`); }
  results.fig8 = { floor };
  const js = await paired('fig 8: native call floor', { case: 'floor', db: small, n: quick ? 500 : 3000 }, { sides: ['native'] });
  results.fig8.js = js;
  const noop = med(js.native.map((r) => r.noop.p50)), empty = med(js.native.map((r) => r.empty.p50));
  sizes.forEach((n, i) => {
    const f = floor[i];
    if (!f) return;
    const lookup = results.fig1?.[n] ? stat(results.fig1[n], 'p50').native : NaN;
    const base = n >= 2e5 ? f.split : f.plan; // what a tool call runs at that size
    const over = lookup - base.p50Us / 1000;
    rows.push([label(n), ms(f.contract.p50Us / 1000), ms(f.contract16.p50Us / 1000), ms(f.plan.p50Us / 1000), ms(f.split.p50Us / 1000), ms(f.plan.p99Us / 1000), ms(f.split.p99Us / 1000),
      ms(lookup), Number.isNaN(over) ? 'n/a' : `${ms(over)} ${check(over <= 0.02)}`,
      f.differ ? `⚠ ${f.differ} of ${f.queries} differ` : `${f.queries} of ${f.queries} (${f.ties} tied pairs)`]);
  });
  rows.push(['—', '', '', '', '', '', '', `noop(): ${ms(noop)}; empty-query lookup: ${ms(empty)}`, '', '']);
  table('Figure 8: the floor (same SQL in a Rust loop, no Node) and the extension\'s overhead above it',
    ['rows', 'contract SQL, 2 MB cache p50', 'contract SQL, 16 MB cache p50', 'addon plan, one thread p50', 'addon plan as called (split ≥200k rows) p50', 'plan p99', 'as called p99', 'memory_lookup from JS p50 (figure 1)', 'overhead above the floor (≤ 20 µs)', 'plan rows = contract rows'], rows,
    ['Rust loop: `cargo bench --no-default-features --bench floor` (bench/floor.rs), one lookup after another over the same query mix, on the same files; "as called" is `Brain::submit_lookup`, timed from submit to callback (the store\'s own thread hops included). Overhead = figure 1\'s native p50 − the floor of what a tool call runs at that size. `noop()`: an empty async export (napi-rs\'s tokio path); empty-query lookup: answered at once through the promise a brain.db call settles (the direct path without SQLite).', ...notes]);
}

// ---------------------------------------------------------------------------------------------- figure 7
if (only.has(7)) {
  const rows = [];
  if (results.fig1) {
    const base = stat(results.fig1[sizes[0]], 'p50');
    for (const n of sizes) {
      const s = stat(results.fig1[n], 'p50');
      rows.push([`memory_lookup p50, ${label(n)} rows`, ms(s.native), `${fmt(s.native / base.native)}×`, ms(s.peer), `${fmt(s.peer / base.peer)}×`, ratio(s.ratio)]);
    }
  }
  if (results.fig2) {
    const base = stat(results.fig2.lookup[P.concs[0]], 'perSec');
    for (const c of P.concs) {
      const s = stat(results.fig2.lookup[c], 'perSec');
      rows.push([`lookup throughput, ${c} in flight (calls/s)`, fmt(s.native, 0), `${fmt(s.native / base.native)}×`, fmt(s.peer, 0), `${fmt(s.peer / base.peer)}×`, ratio(s.ratio)]);
    }
  }
  table('Figure 7: how each figure grows (relative to the smallest case)', ['figure', 'native', 'native growth', 'peer', 'peer growth', 'native ÷ peer'], rows);
}

fs.mkdirSync(path.join(here, 'data'), { recursive: true });
fs.writeFileSync(path.join(here, 'data/last-run.json'), JSON.stringify(results, null, 1));
console.log(`_finished ${new Date().toISOString()}; raw per-round results in bench/data/last-run.json_`);
