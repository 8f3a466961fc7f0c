#!/usr/bin/env node
// The fault matrix (docs/fault-matrix.md): every fault the MemPalace bridge and the voice tools are
// built to survive, each injected into a real process or socket while the package runs in a
// pi-like process of its own (index.js loaded into the recording fake pi of __test__/helpers), with
//   - the time to a clear failure: from the call that meets the fault to its reply or error;
//   - the time to recovery: from the fault's end to the first call that works again (and how:
//     the next call, or the user's `/mempalace reconnect`);
//   - what the user (the model) saw, shortened;
//   - data lost: every write is either stored exactly once or reported failed to the user.
// A row whose call went through the fault (a respawn and retry) has no failure time: its recovery
// is that call's time.
//
//   node scripts/fault-matrix.mjs            # prints the table and writes docs/fault-matrix.md
//   node scripts/fault-matrix.mjs --only stdio   # rows whose area or fault contains "stdio" (not written)
//
// Needs the built addon (native.js) and python3 (the MCP fault fixture). Takes about two minutes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addRows, holdWriteLock, makeBrain, readRows, root, tempDir } from '../__test__/helpers/brain.mjs';
import { bigBody, json, redirect, stall, startService } from '../__test__/helpers/services.mjs';
import { fixture, startFixtureHttp } from '../__test__/helpers/mcp-fixture.mjs';

const self = fileURLToPath(import.meta.url);
const TOKEN = 'matrix-token-' + 'q'.repeat(16);
// Short timeouts so the matrix runs in minutes (documented variables, docs/configuration.md); the
// respawn budget and its backoff keep their defaults (2 respawns, 1 s then 2 s): a server restarted
// within them is caught by the call itself.
const MCP_ENV = { MEMPALACE_MCP_TIMEOUT_MS: '2000', MEMPALACE_MCP_INIT_TIMEOUT_MS: '2000' };
const VOICE_ENV = { DOTTY_BEHAVIOUR_TIMEOUT_MS: '1000' };

// ---------------------------------------------------------------- the child (runs the package)

const elapsed = (t0) => Math.round(performance.now() - t0);

/** One tool call, timed: {ok, seen, ms}. A thrown error is what pi shows the model. */
async function timedCall(native, name, args) {
  const t0 = performance.now();
  try {
    return { ok: true, seen: (await native.callTool(name, args, null)).text, ms: elapsed(t0) };
  } catch (e) {
    return { ok: false, seen: String(e.message), ms: elapsed(t0) };
  }
}

/** Resolves once process `pid` has exited (gone, or a zombie nobody reaped yet). */
async function exited(pid) {
  const state = () => { try { const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); return s.slice(s.lastIndexOf(')') + 2)[0]; } catch { return 'gone'; } };
  while (!['gone', 'Z', 'X'].includes(state())) await new Promise((r) => setTimeout(r, 10));
}

/**
 * A palace row: a baseline write (unless the fault is there from the start), the fault, a write
 * into it, the fault's end, writes until one works (a `/mempalace reconnect` when the bridge says
 * it gave up, as the user would).
 */
async function palaceChild({ native, ask }, row) {
  if (!row.atStart) {
    if ((await native.palaceTools()).length === 0) return { error: 'no palace tools before the fault' };
    const base = await timedCall(native, 'store', { text: 'row-0' });
    if (!base.ok) return { error: `baseline write failed: ${base.seen}` };
    if (row.idleExit === 'child') await exited(native.stats().mcpChildPid);
    else await ask('fault');
  }
  const first = await timedCall(native, 'store', { text: 'row-1' });
  await ask('heal');
  const t1 = performance.now();
  let how = 'next call', second;
  for (let i = 0; i < 6; i++) {
    second = await timedCall(native, 'store', { text: 'row-2' });
    if (second.ok) break;
    // What the user would do: the error or pi's footer says the bridge is down (a latched 401
    // says so on the footer and stderr only).
    if (how === 'next call' && (/mempalace reconnect/.test(second.seen) || /down|gave up/i.test(native.palaceStatus() ?? ''))) {
      how = '/mempalace reconnect';
      await native.palaceCommand('reconnect');
    }
  }
  const recoverMs = elapsed(t1);
  await native.sessionShutdown('quit');
  return { first, second, how, recoverMs };
}

/** A voice row: `tool` before, into and after the fault; `turn`: a conversation row too. */
async function voiceChild({ pi, native, ask }, row) {
  const args = (n) => (row.tool === 'remember' ? { fact: `fact-${n}` } : { name: 'Kid', fact: `fact-${n}` });
  await ask('fault');
  const first = await timedCall(native, row.tool, args(1));
  if (row.turn) await pi.emit('agent_end', { messages: [{ role: 'user', content: 'turn-1', timestamp: 1 }, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }] });
  await ask('heal');
  const t1 = performance.now();
  let second;
  for (let i = 0; i < 6; i++) {
    second = await timedCall(native, row.tool, args(2));
    if (second.seen === row.healthy) break;
  }
  second.ok = second.seen === row.healthy;
  const recoverMs = elapsed(t1);
  await native.flushTurnLog();
  return { first: { ...first, ok: first.seen === row.healthy }, second, how: 'next call', recoverMs };
}

async function childMain(id) {
  const { loadExtension, native: loadNative } = await import('../__test__/helpers/fake-pi.mjs');
  const row = ROWS.find((r) => r.id === id);
  const pi = loadExtension();
  const native = loadNative();
  const ask = (what) => new Promise((resolve) => { process.once('message', resolve); process.send({ ask: what }); });
  let result;
  try {
    result = await (row.area === 'voice tools' ? voiceChild : palaceChild)({ pi, native, ask }, row);
  } catch (e) {
    result = { error: String(e && e.stack || e) };
  }
  process.send({ result }, () => process.exit(0));
}

// ---------------------------------------------------------------- the parent (injects the faults)

/**
 * The fixture over HTTP on `ctx.port` (any port the first time); `supervise`: started again when it
 * exits. `ctx.starting` is the start in progress (a heal waits for it rather than start a second).
 */
function startHttpFixture(ctx, { supervise = false, idleExitMs = 0 } = {}) {
  const args = ['--session', '--token', TOKEN, '--store', ctx.store, '--fault-file', ctx.faultFile, '--port', String(ctx.port ?? 0)];
  if (idleExitMs) args.push('--idle-exit-ms', String(idleExitMs));
  ctx.starting = startFixtureHttp(args).then((srv) => {
    Object.assign(ctx, { server: srv.proc, serverExit: srv.exited, port: srv.port });
    // Started again as it was, but staying up: one idle exit per row.
    srv.exited.then(() => { if (supervise && !ctx.closing) startHttpFixture(ctx, { supervise }); });
  });
  return ctx.starting;
}

const setFault = (ctx, what) => fs.writeFileSync(ctx.faultFile, what);
const clearFault = (ctx) => fs.rmSync(ctx.faultFile, { force: true });

/** A palace row over stdio: the bridge spawns the fixture itself. */
function stdio(fault, label, { fault: content = fault, atStart = false, idleExitMs = 0, env = {} } = {}) {
  return {
    id: `stdio-${fault}`, area: 'bridge, stdio', fault: label, atStart, idleExit: idleExitMs ? 'child' : undefined,
    async setup(ctx) {
      if (atStart) setFault(ctx, content);
      const extra = idleExitMs ? ` --idle-exit-ms ${idleExitMs}` : '';
      return { MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: `${fixture} --store ${ctx.store} --fault-file ${ctx.faultFile}${extra}`, ...env };
    },
    inject: (ctx) => setFault(ctx, content),
    heal: (ctx) => clearFault(ctx),
  };
}

/** A palace row over HTTP (Streamable HTTP with sessions and a bearer token). */
function http(fault, label, { fault: content = fault, atStart = false, supervise = false, idleExitMs = 0, env = {} } = {}) {
  return {
    id: `http-${fault}`, area: 'bridge, HTTP', fault: label, atStart,
    async setup(ctx) {
      if (atStart) setFault(ctx, content);
      await startHttpFixture(ctx, { supervise, idleExitMs });
      return { MEMPALACE_REMOTE_URL: `http://127.0.0.1:${ctx.port}/mcp`, MEMPALACE_REMOTE_TOKEN: TOKEN, ...env };
    },
    // An idle exit: the server leaves by itself (the call then meets a closed port); else the fault file.
    inject: (ctx) => (idleExitMs ? ctx.serverExit : setFault(ctx, content)),
    // A server that left comes back where it was (as its supervisor would start it again).
    heal: async (ctx) => {
      clearFault(ctx);
      await ctx.starting;
      if (ctx.server.exitCode !== null || ctx.server.signalCode) await startHttpFixture(ctx, { supervise });
    },
  };
}

/** A voice-tool row against a fake dotty-behaviour whose review route misbehaves. */
function behaviourFault(id, label, handler) {
  return {
    id: `voice-${id}`, area: 'voice tools', fault: label, tool: 'remember_person', healthy: '(remembered about Kid)',
    async setup(ctx) {
      ctx.db = makeBrain(path.join(ctx.dir, 'brain.db'));
      ctx.elsewhere = await startService({ 'GET /api/voice/person_review_status': (req, res) => json(res, 200, { needs_review: false }) });
      ctx.service = await startService({ 'GET /api/voice/person_review_status': approve });
      return { DOTTY_BRAIN_DB: ctx.db, DOTTY_BEHAVIOUR_URL: ctx.service.url };
    },
    inject: async (ctx) => {
      if (handler === 'down') return ctx.service.close();
      ctx.service.route('GET /api/voice/person_review_status', handler(ctx));
    },
    heal: async (ctx) => {
      if (handler === 'down') ctx.service = await startService({ 'GET /api/voice/person_review_status': approve }, { port: ctx.service.port });
      else ctx.service.route('GET /api/voice/person_review_status', approve);
    },
    teardown: async (ctx) => { await ctx.service.close().catch(() => {}); await ctx.elsewhere.close(); },
  };
}
const approve = (req, res) => json(res, 200, { person_id: 'Kid', needs_review: false });

const ROWS = [
  stdio('stall', 'stall (a call never answered)'),
  stdio('crash', 'crash mid-call'),
  stdio('garbage', 'garbage line instead of the reply'),
  stdio('big', 'oversize message (16 MiB line)'),
  stdio('slow-init', 'slow handshake (5 s, over the 2 s bound)', { fault: 'slow-init 5000', atStart: true }),
  stdio('idle-exit', 'server idle exit', { idleExitMs: 1500 }),
  stdio('flood', 'ping flood (never reads stdin)', { atStart: true }),
  http('stall', 'stall (a call never answered)'),
  http('crash', 'crash mid-call (restarted by its supervisor)', { supervise: true }),
  http('garbage', 'garbage body instead of the reply'),
  http('big', 'oversize message (16 MiB body)'),
  http('slow-init', 'slow handshake (5 s, over the 2 s bound)', { fault: 'slow-init 5000', atStart: true }),
  http('401', '401 (token refused)', { atStart: true }),
  http('503', '5xx (503 on every request)'),
  http('expire', 'session expiry (404 on the session)'),
  http('idle-exit', 'server idle exit (down until restarted)', { idleExitMs: 1500 }),
  http('idle-exit-supervised', 'server idle exit (restarted by its supervisor)', { idleExitMs: 1500, supervise: true }),
  http('flood', 'ping flood (an SSE reply of endless pings)'),
  behaviourFault('down', 'service down (connection refused)', 'down'),
  behaviourFault('stall', 'stall (no answer)', () => stall),
  behaviourFault('5xx', '5xx (503)', () => (req, res) => json(res, 503, { error: 'busy' })),
  behaviourFault('garbage', 'garbage JSON', () => (req, res) => json(res, 200, 'not json {{{')),
  behaviourFault('big', 'oversize body (50 MB)', () => bigBody('{"needs_review": false, "pad": "', 50 << 20, '"}', { length: true })),
  behaviourFault('redirect', 'redirect (307 elsewhere)', (ctx) => redirect(307, ctx.elsewhere.url + '/api/voice/person_review_status')),
  {
    id: 'voice-locked', area: 'voice tools', fault: 'locked database (another writer holds it 7 s)', tool: 'remember', healthy: '(remembered)', turn: true,
    async setup(ctx) { ctx.db = makeBrain(path.join(ctx.dir, 'brain.db')); return { DOTTY_BRAIN_DB: ctx.db }; },
    inject: async (ctx) => { ctx.lock = await holdWriteLock(ctx.db, 7000); },
    heal: (ctx) => ctx.lock.done,
  },
  {
    id: 'voice-replaced', area: 'voice tools', fault: 'replaced database (a backup renamed over it)', tool: 'remember', healthy: '(remembered)', turn: true,
    async setup(ctx) { ctx.db = makeBrain(path.join(ctx.dir, 'brain.db')); return { DOTTY_BRAIN_DB: ctx.db }; },
    inject: (ctx) => { const backup = makeBrain(path.join(ctx.dir, 'backup.db')); addRows(backup, [{ content: 'restored row' }]); fs.renameSync(backup, ctx.db); },
    heal: () => {},
  },
];

/** Data lost, from what was stored against what the user was told. */
function lost(row, ctx, r) {
  const stored = row.area === 'voice tools'
    ? readRows(ctx.db).map((x) => (x.content.startsWith('user: turn-1') ? 'turn-1' : x.content))
    : (fs.existsSync(ctx.store) ? fs.readFileSync(ctx.store, 'utf8').split('\n').filter(Boolean) : []);
  const n = (t) => stored.filter((s) => s === t).length;
  const [w1, w2] = row.area === 'voice tools' ? ['fact-1', 'fact-2'] : ['row-1', 'row-2'];
  const problems = [];
  if (!r.second?.ok) problems.push('never recovered');
  if (n(w2) !== (r.second?.ok ? 1 : 0)) problems.push(`the write after it stored ${n(w2)}×`);
  if (row.area === 'voice tools') {
    // A voice tool always answers: a fact held for review or refused is an honest answer, so the
    // fact must be stored unless the reply says it was not.
    const honestRefusal = /couldn't|failed|not saved|try again/i.test(r.first.seen);
    if (n(w1) !== 1 && !honestRefusal) problems.push(`the write into the fault stored ${n(w1)}× after "${r.first.seen}"`);
    if (row.turn && n('turn-1') !== 1) problems.push(`the conversation row stored ${n('turn-1')}×`);
    if (row.id === 'voice-replaced' && n('restored row') !== 1) problems.push('the restored file lost its row');
  } else {
    if (!row.atStart && n('row-0') !== 1) problems.push(`the write before it stored ${n('row-0')}×`);
    if (r.first.ok && n(w1) !== 1) problems.push(`answered, stored ${n(w1)}×`);
    if (!r.first.ok && n(w1) > 1) problems.push(`reported failed, stored ${n(w1)}×`);
  }
  if (problems.length) return 'LOST: ' + problems.join('; ');
  if (r.first.ok) return 'none';
  if (row.area === 'voice tools' && n(w1) === 1) return 'none (held for review, as the reply says)';
  return n(w1) ? 'none (stored, though reported failed)' : 'none (reported failed)';
}

async function runRow(row) {
  const ctx = { dir: tempDir('dotty-fault-') };
  ctx.store = path.join(ctx.dir, 'store.txt');
  ctx.faultFile = path.join(ctx.dir, 'fault');
  const env = {
    PATH: process.env.PATH, HOME: ctx.dir, PI_CODING_AGENT_DIR: path.join(ctx.dir, 'agent'), MEMPALACE_FEED: '0',
    ...(row.area === 'voice tools' ? { MEMPALACE_BRIDGE: '0', ...VOICE_ENV } : { MEMPALACE_BRIDGE: '1', DOTTY_VOICE_TOOLS: '0', ...MCP_ENV }),
    ...(await row.setup(ctx)),
  };
  const child = spawn(process.execPath, [self, '--child', row.id], { env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const result = await new Promise((resolve) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); resolve({ error: 'the row did not finish in 90 s' }); }, 90_000);
    child.on('message', async (m) => {
      if (m.ask) {
        await (m.ask === 'fault' ? row.inject(ctx) : row.heal(ctx));
        child.send({ done: m.ask });
      } else if (m.result) { clearTimeout(timer); resolve(m.result); }
    });
    child.on('exit', (code) => { clearTimeout(timer); resolve({ error: `the row's process exited (${code}): ${stderr.slice(-400)}` }); });
  });
  ctx.closing = true;
  ctx.server?.kill('SIGKILL');
  await row.teardown?.(ctx);
  if (result.error) return { row, error: result.error };
  const leaked = [TOKEN].some((t) => stderr.includes(t) || JSON.stringify(result).includes(t));
  return { row, ...result, lost: lost(row, ctx, result) + (leaked ? '; TOKEN LEAKED' : '') };
}

// One line, cut; the fixture's port (a new one each run) as PORT.
const short = (s, n = 110) => {
  const one = String(s).replace(/\s+/g, ' ').replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT').replaceAll('|', '\\|').trim();
  return one.length > n ? one.slice(0, n - 1) + '…' : one;
};

function tableOf(results) {
  const lines = [
    '| area | fault | time to a clear failure (ms) | time to recovery (ms) | what the user saw | data lost |',
    '|---|---|---:|---|---|---|',
  ];
  for (const r of results) {
    if (r.error) { lines.push(`| ${r.row.area} | ${r.row.fault} | — | — | ROW FAILED: ${short(r.error)} | ? |`); continue; }
    const failure = r.first.ok ? '— (answered)' : String(r.first.ms);
    const recovery = r.first.ok ? `${r.first.ms} (the call itself)` : r.second.ok ? `${r.recoverMs} (${r.how})` : 'never';
    lines.push(`| ${r.row.area} | ${r.row.fault} | ${failure} | ${recovery} | ${short(r.first.seen)} | ${r.lost} |`);
  }
  return lines.join('\n');
}

function machine() {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${os.availableParallelism()} CPUs (${cpu.trim()}), Linux ${os.release()}, Node ${process.version}`;
}

async function main() {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null;
  const rows = ROWS.filter((r) => !only || r.id.includes(only) || r.area.includes(only));
  const t0 = performance.now();
  const load = os.loadavg()[0].toFixed(1); // a shared machine: the timings are under this load
  const results = [];
  for (const row of rows) {
    const r = await runRow(row);
    results.push(r);
    process.stderr.write(`${row.area} / ${row.fault}: ${r.error ? 'ROW FAILED' : r.lost}\n`);
  }
  const table = tableOf(results);
  const took = ((performance.now() - t0) / 1000).toFixed(0);
  const doc = `# Fault matrix

Generated by \`node scripts/fault-matrix.mjs\` (\`npm run faults\`) on ${new Date().toISOString().slice(0, 10)}, on ${machine()} (load average ${load} at the start), in ${took} s. Don't edit: run it again.

Each row injects one fault into a real process or socket while the package runs in a pi-like
process of its own (\`index.js\` loaded into a recording fake pi): the MCP fault fixture
(\`__test__/fixtures/fault_mcp_server.py\`) spawned by the bridge over stdio, or serving Streamable
HTTP with sessions and a bearer token; a fake dotty-behaviour on a local port; brain.db locked by
another process or replaced on disk. Bounds set for the run (the respawn budget and backoff are the
defaults: 2 respawns, after 1 s then 2 s): ${Object.entries({ ...MCP_ENV, ...VOICE_ENV }).map(([k, v]) => `\`${k}=${v}\``).join(', ')}.

- **time to a clear failure**: from the call that meets the fault to its error or reply. "— (answered)": the call went through the fault (a respawn and retry, a re-initialized session) and answered.
- **time to recovery**: from the fault's end to the first call that works, and what brought it back: the next call, or the user's \`/mempalace reconnect\` once the bridge gave up (its respawn budget spent, or a refused token).
- **what the user saw**: the error or reply of the call that met the fault (what pi shows the model).
- **data lost**: the palace rows write through the fixture's \`store\` tool into a file; the voice rows write facts (and a conversation row) to brain.db. "none" means every write the user was told succeeded is stored exactly once, and every other one was reported failed.

${table}
`;
  process.stdout.write(table + '\n');
  if (!only) {
    fs.writeFileSync(path.join(root, 'docs/fault-matrix.md'), doc);
    process.stderr.write(`wrote docs/fault-matrix.md (${took} s)\n`);
  }
  if (results.some((r) => r.error || r.lost.includes('LOST') || r.lost.includes('LEAKED'))) process.exitCode = 1;
}

if (process.argv[2] === '--child') await childMain(process.argv[3]);
else await main();
