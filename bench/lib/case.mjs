// One benchmark case in a process of its own: `node bench/lib/case.mjs <json>` with
// {case, side, ...options}; prints one line `@@RESULT@@<json>` on stdout.
//
// side = "native": the addon (native.js / index.js), the only SQLite in this process.
// side = "peer":   the yardstick in bench/peers/ (better-sqlite3, fetch), the only SQLite here.
// side = "none":   neither (the RSS baseline).
// Two SQLite libraries never share a process (see __test__/helpers/sqlite-child.cjs).
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { QUERIES } from '../gen-brain.mjs';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const opts = JSON.parse(process.argv[2]);
// Never touch a real ~/.pi: the addon's default brain.db path lives under HOME.
process.env.HOME = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-bench-home-'));
process.on('exit', () => fs.rmSync(process.env.HOME, { recursive: true, force: true }));
const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: pct(s, 50), p99: pct(s, 99), max: s[s.length - 1], mean: s.reduce((a, b) => a + b, 0) / s.length, n: s.length };
};

/** A tool caller for this side: `call(name, params)` → Promise<text>. */
async function tools(side, dbFile) {
  if (side === 'native') {
    if (dbFile) process.env.DOTTY_BRAIN_DB = dbFile;
    const native = require(path.join(root, 'native.js'));
    native.init();
    let id = 1;
    return { native, call: async (name, params) => (await native.callTool(name, params, id++)).text, stats: () => native.stats(), flush: () => native.flushTurnLog() };
  }
  if (side === 'peer') {
    if (opts.http) {
      const { createHttpTools } = await import('../peers/http-tools.mjs');
      const t = createHttpTools({ behaviourUrl: process.env.DOTTY_BEHAVIOUR_URL, thinkerUrl: process.env.VOICE_THINKER_URL });
      return { call: async (name, params) => (await t.callTool(name, params)).text, stats: () => ({}), flush: async () => {} };
    }
    const { createSqliteTools } = require('../peers/sqlite-tools.cjs');
    const t = createSqliteTools(dbFile);
    return { peer: t, call: async (name, params) => (await t.callTool(name, params)).text, stats: () => ({}), flush: async () => {} };
  }
  return { call: async () => '', stats: () => ({}), flush: async () => {} };
}

/** Copies a cached brain.db to a scratch directory (for the cases that write). */
function scratchCopy(file) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-bench-'));
  const dst = path.join(dir, 'brain.db');
  fs.copyFileSync(file, dst);
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dst;
}

/** Starts bench/lib/writer.cjs on `file`; resolves once it writes. `stop()` → rows it wrote. */
async function otherWriter(file, mode = 'loop') {
  const p = spawn(process.execPath, [path.join(here, 'writer.cjs'), file, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  await new Promise((resolve, reject) => {
    p.stderr.on('data', (d) => String(d).includes('STARTED') && resolve());
    p.on('exit', (code) => reject(new Error(`writer exited ${code}`)));
  });
  const t0 = performance.now();
  return {
    async stop() {
      const ms = performance.now() - t0;
      const done = new Promise((r) => p.on('close', r));
      p.kill('SIGTERM');
      await done;
      return { rows: Number(out), perSec: Number(out) / (ms / 1000) };
    },
  };
}

/** CPU time the JS (main) thread has spent on a core, in ms (Linux schedstat, nanosecond resolution). */
const jsCpuMs = () => {
  try { return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6; } catch { return NaN; }
};

const queries = (n) => Array.from({ length: n }, (_, i) => QUERIES[i % QUERIES.length]);

/** The MCP server of figure 5 as {command, args, env, tool, argsOf(i)}. */
function mcpServer(server, palace, { copy = true } = {}) {
  if (server === 'trivial') {
    return { command: process.execPath, args: [path.join(root, 'bench/peers/trivial-mcp-server.mjs')], env: {}, tool: 'echo', argsOf: (i) => ({ text: `ping ${i}` }) };
  }
  const mempalaceRoot = process.env.MEMPALACE_ROOT; // set by run.mjs (HOME is a temp dir here)
  // A palace of its own per process (MemPalace writes next to it): a copy of the seeded one.
  let parent = palace;
  if (copy) {
    parent = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-bench-palace-'));
    fs.cpSync(palace, parent, { recursive: true });
    process.on('exit', () => fs.rmSync(parent, { recursive: true, force: true }));
  }
  return {
    command: 'bash', args: [path.join(root, 'scripts/mempalace/start-stdio.sh')],
    env: { MEMPALACE_PALACE: path.join(parent, 'palace'), MEMPALACE_ROOT: mempalaceRoot },
    tool: 'mempalace_status', argsOf: () => ({}),
  };
}

const cases = {
  /** Figure 1: sequential lookups, latency per call, and how busy the JS thread was meanwhile. */
  async lookup({ side, db, n, warmup = 40 }) {
    const t = await tools(side, db);
    const replies = [];
    for (const q of queries(Math.max(warmup, QUERIES.length))) replies.push(await t.call('memory_lookup', { query: q }));
    const lat = [], all = [];
    const eld = monitorEventLoopDelay({ resolution: 1 });
    eld.enable();
    const elu0 = performance.eventLoopUtilization();
    const cpu0 = jsCpuMs();
    const t0 = performance.now();
    for (const q of queries(n)) {
      const a = performance.now();
      all.push(await t.call('memory_lookup', { query: q }));
      lat.push(performance.now() - a);
      await tick(); // let the loop turn between calls, as it does between pi's tool calls
    }
    const wall = performance.now() - t0;
    const jsCpu = jsCpuMs() - cpu0;
    const elu = performance.eventLoopUtilization(elu0);
    eld.disable();
    return {
      ...summary(lat), wallMs: wall, jsCpuPerCallMs: jsCpu / n,
      jsBusyPerCallMs: elu.active / n, jsBusyFraction: elu.utilization,
      eldP99Ms: eld.percentile(99) / 1e6, eldMaxMs: eld.max / 1e6,
      replies: replies.slice(0, QUERIES.length), allReplies: all, stats: t.stats(),
    };
  },

  /** Figure 8: the floor of a native call from JS: an empty async export (`noop()`, napi-rs's
   * tokio path) and memory_lookup with an empty query (answered at once, through the promise the
   * store's calls settle: the direct path's own cost, no SQLite). */
  async floor({ db, n }) {
    const t = await tools('native', db);
    const time = async (f) => {
      for (let i = 0; i < 200; i++) await f();
      const lat = [];
      for (let i = 0; i < n; i++) { const a = performance.now(); await f(); lat.push(performance.now() - a); await tick(); }
      return summary(lat);
    };
    const noop = await time(() => t.native.noop());
    const empty = await time(() => t.call('memory_lookup', { query: '' }));
    return { noop, empty };
  },

  /** Figure 2: `total` lookups with `conc` in flight at a time (peer: they can't overlap). */
  async throughput({ side, db, conc, total }) {
    const t = await tools(side, db);
    for (const q of queries(QUERIES.length * 2)) await t.call('memory_lookup', { query: q });
    const qs = queries(total);
    let next = 0;
    const eld = monitorEventLoopDelay({ resolution: 1 });
    eld.enable();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: conc }, async () => {
      while (next < qs.length) await t.call('memory_lookup', { query: qs[next++] });
    }));
    const wall = performance.now() - t0;
    eld.disable();
    return { perSec: total / (wall / 1000), wallMs: wall, eldMaxMs: eld.max / 1e6, stats: t.stats() };
  },

  /** Figure 2: remember throughput (8 in flight), optionally while another process writes. */
  async remember({ side, db, total, conc = 8, writer }) {
    const file = scratchCopy(db);
    process.env.DOTTY_BRAIN_DB = file;
    const t = await tools(side, file);
    for (let i = 0; i < 10; i++) await t.call('remember', { fact: `warm-up fact ${i}` });
    const w = writer ? await otherWriter(file, writer) : null;
    let next = 0;
    const replies = new Map();
    const lat = [];
    const eld = monitorEventLoopDelay({ resolution: 1 });
    eld.enable();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: conc }, async () => {
      while (next < total) {
        const i = next++;
        const a = performance.now();
        const r = await t.call('remember', { fact: `Ada's note number ${i}: she wants pancakes on ${['Monday', 'Friday'][i % 2]}` });
        lat.push(performance.now() - a);
        replies.set(r, (replies.get(r) ?? 0) + 1);
        if (conc === 1) await tick(); // one after another, a loop turn between them as in figure 1
      }
    }));
    const wall = performance.now() - t0;
    eld.disable();
    const other = w ? await w.stop() : null;
    // Rows landed, counted by another process (never two SQLite libraries in one process).
    const landed = Number(execFileSync(process.execPath, ['-e', `const D = require(${JSON.stringify(path.join(root, 'node_modules/better-sqlite3'))}); const d = new D(process.argv[1], { readonly: true }); process.stdout.write(String(d.prepare("SELECT count(*) AS n FROM memories WHERE content LIKE 'Ada''s note number %'").get().n))`, file]));
    const { p50, p99 } = summary(lat);
    return { perSec: total / (wall / 1000), wallMs: wall, p50, p99, eldMaxMs: eld.max / 1e6, otherPerSec: other?.perSec, replies: Object.fromEntries(replies), landed, stats: t.stats() };
  },

  /** Figure 3: how long pi's agent_end handler takes to return, per turn. */
  async turnlog({ side, db, n, writer, big }) {
    const file = scratchCopy(db);
    process.env.DOTTY_BRAIN_DB = file;
    const { fakePi } = await import('../../__test__/helpers/fake-pi.mjs');
    const pi = fakePi();
    let t;
    if (side === 'native') {
      require(path.join(root, 'index.js'))(pi); // the real entry: its own agent_end handler
      t = { flush: () => require(path.join(root, 'native.js')).flushTurnLog(), stats: () => require(path.join(root, 'native.js')).stats() };
    } else {
      const { createSqliteTools } = require('../peers/sqlite-tools.cjs');
      const peer = createSqliteTools(file);
      pi.on('agent_end', (event) => { peer.logTurn(event?.messages ?? []); });
      t = { flush: async () => {}, stats: () => ({}) };
    }
    const [handler] = pi.handlers.get('agent_end');
    await sleep(100); // the native store opens in the background at init
    const w = writer ? await otherWriter(file, writer) : null;
    const lat = [];
    const ts0 = Date.now();
    for (let i = 0; i < n; i++) {
      const event = { type: 'agent_end', messages: turnMessages(i, ts0 + i, big) };
      const a = performance.now();
      await handler(event, {});
      lat.push(performance.now() - a);
      await sleep(2); // turns are seconds apart in reality; give the queued write a moment
    }
    const f0 = performance.now();
    await t.flush();
    const drainMs = performance.now() - f0;
    if (w) await w.stop();
    return { ...summary(lat), drainMs, stats: t.stats() };
  },

  /** Figure 4: sequential HTTP tool calls against the instant fakes. */
  async http({ side, tool, n, db }) {
    const t = await tools(side, db);
    const params = tool === 'think_hard' ? { question: 'How far away is the Moon?' } : {};
    const first = await t.call(tool, params);
    for (let i = 0; i < 30; i++) await t.call(tool, params);
    const lat = [];
    const elu0 = performance.eventLoopUtilization();
    const cpu0 = jsCpuMs();
    for (let i = 0; i < n; i++) {
      const a = performance.now();
      await t.call(tool, params);
      lat.push(performance.now() - a);
      await tick();
    }
    const jsCpu = jsCpuMs() - cpu0;
    const elu = performance.eventLoopUtilization(elu0);
    return { ...summary(lat), jsBusyPerCallMs: elu.active / n, jsCpuPerCallMs: jsCpu / n, reply: first };
  },

  /**
   * Figure 5: MCP round trip and handshake, the native bridge vs the SDK client, same server command
   * and environment. `server`: "trivial" (bench/peers/trivial-mcp-server.mjs, tool `echo`) or
   * "mempalace" (the REAL MemPalace server via start-stdio.sh, tool `mempalace_status`, on a copy of
   * the seeded palace `palace`). Handshake = spawn → initialize/initialized → tools/list, timed from
   * `native.init()` to `palaceTools()` resolving (native) or from the transport's spawn to
   * `listTools()` (SDK), in a fresh process either way.
   */
  async mcp({ side, n, server = 'trivial', palace, warmup = 30 }) {
    const s = mcpServer(server, palace);
    const lat = [];
    let handshakeMs, call, close, toolCount, first;
    if (side === 'native') {
      Object.assign(process.env, s.env, {
        MEMPALACE_BRIDGE: '1', MEMPALACE_MCP_BIN: s.command, MEMPALACE_MCP_ARGS: s.args.join(' '),
        PI_CODING_AGENT_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-bench-agent-')), // empty tool cache
        DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0',
      });
      const native = require(path.join(root, 'native.js'));
      const t0 = performance.now();
      native.init();
      const tools = await native.palaceTools();
      handshakeMs = performance.now() - t0;
      toolCount = tools.length;
      call = async (name, args) => (await native.callTool(name, args, null)).text;
      close = () => native.sessionShutdown('quit');
    } else {
      const { connectSdk } = await import('../peers/mcp-sdk.mjs');
      const c = await connectSdk({ command: s.command, args: s.args, env: { ...process.env, ...s.env } });
      handshakeMs = c.handshakeMs;
      toolCount = c.tools.length;
      call = c.call;
      close = c.close;
    }
    first = await call(s.tool, s.argsOf(0));
    for (let i = 0; i < warmup; i++) await call(s.tool, s.argsOf(i));
    const cpu0 = jsCpuMs();
    for (let i = 0; i < n; i++) {
      const a = performance.now();
      await call(s.tool, s.argsOf(i));
      lat.push(performance.now() - a);
    }
    const jsCpu = jsCpuMs() - cpu0;
    await close();
    return { ...summary(lat), handshakeMs, toolCount, jsCpuPerCallMs: jsCpu / n, reply: first.slice(0, 2000) };
  },

  /** Figure 5 setup: fills a new palace with a few drawers and a diary entry (SDK client, real server). */
  async palaceSeed({ palace }) {
    const s = mcpServer('mempalace', palace, { copy: false });
    const { connectSdk } = await import('../peers/mcp-sdk.mjs');
    const c = await connectSdk({ command: s.command, args: s.args, env: { ...process.env, ...s.env } });
    const out = [];
    for (let i = 0; i < 12; i++) {
      out.push(await c.call('mempalace_add_drawer', { wing: 'dotty', room: ['family', 'meals', 'robot'][i % 3], content: `Day ${i}: Ada had pancakes and talked about dinosaurs; Dotty remembered her friend number ${i}.` }));
    }
    out.push(await c.call('mempalace_diary_write', { agent_name: 'dotty', entry: 'SESSION:2026-11-29|bench.seed|★', topic: 'bench' }));
    const status = await c.call('mempalace_status', {});
    await c.close();
    return { status: status.slice(0, 2000), writes: out.map((x) => x.slice(0, 200)) };
  },

  /** Figure 6 (memory half): RSS after `calls` lookups, with and without the extension. */
  async rss({ side, db, calls }) {
    const base = process.memoryUsage().rss;
    const { fakePi } = await import('../../__test__/helpers/fake-pi.mjs');
    const pi = fakePi();
    let call = async () => '';
    if (side === 'native') {
      // The same brain.db as the peer's (until issue 38's second pass the native side ran on the
      // empty default file under the temp HOME, which made its RSS look smaller than it is).
      process.env.DOTTY_BRAIN_DB = db;
      require(path.join(root, 'index.js'))(pi);
      call = (name, params) => pi.text(name, params);
    } else if (side === 'peer') {
      const { createSqliteTools } = require('../peers/sqlite-tools.cjs');
      const peer = createSqliteTools(db);
      call = async (name, params) => (await peer.callTool(name, params)).text;
    }
    const qs = queries(calls);
    // What the calls answered, so that run.mjs can check both sides did the same work: a digest of
    // every reply, and how many replies found nothing.
    const digest = crypto.createHash('sha256');
    let empty = 0;
    for (let i = 0; i < calls; i++) {
      const text = i % 10 === 9 ? await call('recall_person', { name: 'Ada' }) : await call('memory_lookup', { query: qs[i] });
      digest.update(`${text}\0`);
      if (/^\((no memories found|nothing remembered)/.test(text)) empty++;
    }
    for (let i = 0; i < 3; i++) { global.gc?.(); await sleep(50); }
    const m = process.memoryUsage();
    return { rssMB: m.rss / 2 ** 20, startRssMB: base / 2 ** 20, heapUsedMB: m.heapUsed / 2 ** 20, externalMB: m.external / 2 ** 20, replies: digest.digest('hex'), emptyReplies: empty };
  },
};

/** One agent run's new messages, as pi passes them to agent_end. `big`: a long coding-style run. */
function turnMessages(i, ts, big) {
  const msgs = [
    { role: 'user', content: [{ type: 'text', text: `Dotty, what did Ada have for lunch on day ${i}?` }], timestamp: ts },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'The user asks about a past meal; look it up in memory.' }, { type: 'toolCall', id: `t${i}`, name: 'memory_lookup', arguments: { query: 'Ada lunch' } }], timestamp: ts },
    { role: 'toolResult', toolCallId: `t${i}`, toolName: 'memory_lookup', content: [{ type: 'text', text: 'Ada likes pancakes and hates broccoli. | Ada is 7 years old and loves dinosaurs.' }], isError: false, timestamp: ts },
    { role: 'assistant', content: [{ type: 'text', text: `I think Ada had pancakes on day ${i} — she loves them! Want me to remember anything else?` }], timestamp: ts },
  ];
  if (big) {
    // A long run: 20 tool results of 20 KB each and one 300 KB image (base64), before the answer.
    const blob = 'x'.repeat(20_000);
    const image = 'iVBORw0KGgo'.repeat(30_000);
    const extra = [];
    for (let k = 0; k < 20; k++) {
      extra.push({ role: 'assistant', content: [{ type: 'toolCall', id: `b${i}-${k}`, name: 'read', arguments: { path: `/tmp/f${k}` } }], timestamp: ts });
      extra.push({ role: 'toolResult', toolCallId: `b${i}-${k}`, toolName: 'read', content: k === 0 ? [{ type: 'image', data: image, mimeType: 'image/png' }] : [{ type: 'text', text: blob }], isError: false, timestamp: ts });
    }
    msgs.splice(3, 0, ...extra);
  }
  return msgs;
}

const result = await cases[opts.case](opts);
// Exit once the line is written: stdout to a pipe is asynchronous, and an exit right after a write
// bigger than the pipe's buffer cuts it (seen with the 1,000 replies of a lookup case).
process.stdout.write('@@RESULT@@' + JSON.stringify(result) + '\n', () => process.exit(0));
