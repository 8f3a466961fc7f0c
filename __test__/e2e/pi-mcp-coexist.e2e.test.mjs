// End to end: pi 1.6.0's own MCP client beside the bridge (pi on Node 22, the REAL MemPalace 3.11.0).
//   1  stdio: pi's user-level mcp.json runs MemPalace under the name "memory" (the name says nothing;
//      the launch command does), exposure "direct" so its tools are declared to the model. The
//      bridge reads the palace through a read-only twin of that entry (one stderr line): the first
//      request offers each palace tool once, as mcp__memory__*, and carries the wake-up; the model
//      writes a diary entry and a drawer through pi's own tools, and recall (MEMPALACE_RECALL=on)
//      brings that drawer back through the twin on a prompt about it. A /proc watch (cmdline, /proc/locks) never sees
//      two writing servers on the palace: pi's is the one without --read-only, the twin holds no lock.
//   2  the same with pi's default exposure (codemode): only pi's `codemode` tool is declared;
//   3  HTTP: pi's mcp.json and MEMPALACE_REMOTE_URL name the same `mempalace serve`. The bridge
//      offers no tools (pi does) and keeps the wake-up: the first request carries it; no stdio
//      server is started.
// Figures (tools offered, bytes of the `tools` array) are printed as `[pi-mcp figures]`.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startPi, ready, processesWith } from './pi-rpc.mjs';
import { toolsOf, measure, hasWakeup, textOf } from './tools-budget.suite.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { stdioEnv, startHttp, mempalaceRoot, toolsDir } from '../helpers/palace.mjs';

const dir = tempDir('dotty-e2e-pimcp-');
const figures = {};
let mock;
let pi;
let http;

/** pi 1.6 with `servers` as its user-level mcp.json and `env` for the bridge. */
function start(name, servers, env) {
  const home = path.join(dir, name);
  fs.mkdirSync(path.join(home, '.pi', 'agent'), { recursive: true });
  fs.writeFileSync(path.join(home, '.pi', 'agent', 'mcp.json'), JSON.stringify({ mcpServers: servers }, null, 2));
  return startPi({ target: '1.6.0', modelBaseUrl: mock.baseUrl, home, env: { DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', ...env }, args: ['--no-builtin-tools'], timeoutMs: 60_000 });
}

/** Waits until pi's `/mcp` says `server` is connected (its direct tools are then declared), then prompts once. */
async function firstRequest(p, server) {
  await ready(p, 60_000);
  for (;;) {
    const from = p.events.length;
    await p.send({ type: 'prompt', message: '/mcp' });
    const note = await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'notify' && e.message.startsWith(`${server}: `), { from, what: `/mcp on ${server}`, ms: 60_000 });
    if (/^\S+: connected/.test(note.message)) break;
    expect(note.message).toMatch(/connecting|starting/); // not failed
    await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'notify' && e.message.includes(server) && e.message !== note.message, { from: p.events.length, what: 'a change of the server', ms: 5_000 }).catch(() => {});
  }
  const from = mock.requests.length;
  mock.enqueue({ text: 'ok' });
  expect((await p.prompt('hello', { ms: 60_000 })).text).toBe('ok');
  return mock.requests[from].body;
}

/** The argv of process `pid` (empty once it is gone). */
function argvOf(pid) {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean); } catch { return []; }
}

/** The PIDs holding a flock (MemPalace's palace lock is one), from /proc/locks. */
function flockHolders() {
  const pids = new Set();
  for (const line of fs.readFileSync('/proc/locks', 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/); // "1: FLOCK ADVISORY WRITE <pid> <dev:inode> 0 EOF"
    if (f[1] === 'FLOCK') pids.add(Number(f[4]));
  }
  return pids;
}

/** Samples /proc every 25 ms until stopped: the MemPalace servers on `palace`, the writers among them (no --read-only), and which hold a flock. */
function watchWriters(palace) {
  const seen = { samples: 0, servers: 0, writers: 0, readOnly: 0, holders: 0, readOnlyHolding: 0 };
  const tick = () => {
    const servers = processesWith('mempalace-mcp', palace).map((pid) => ({ pid, argv: argvOf(pid) })).filter((s) => s.argv.length);
    const locked = flockHolders();
    const writers = servers.filter((s) => !s.argv.includes('--read-only'));
    const readOnly = servers.filter((s) => s.argv.includes('--read-only'));
    seen.samples += 1;
    seen.servers = Math.max(seen.servers, servers.length);
    seen.writers = Math.max(seen.writers, writers.length);
    seen.readOnly = Math.max(seen.readOnly, readOnly.length);
    seen.holders = Math.max(seen.holders, servers.filter((s) => locked.has(s.pid)).length);
    seen.readOnlyHolding = Math.max(seen.readOnlyHolding, readOnly.filter((s) => locked.has(s.pid)).length);
  };
  const timer = setInterval(tick, 25);
  return { stop: () => { clearInterval(timer); tick(); return seen; } };
}

/** No tool offered twice, none by the bridge (bare `mempalace_*`), the palace's through pi as `mcp__<server>__*`. */
function expectOnce(names, server) {
  expect(new Set(names).size).toBe(names.length);
  expect(names.filter((n) => n.startsWith('mempalace_'))).toEqual([]);
  const viaPi = names.filter((n) => n.startsWith(`mcp__${server}__mempalace_`));
  expect(viaPi).toHaveLength(47);
  expect(new Set(viaPi.map((n) => n.slice(`mcp__${server}__`.length))).size).toBe(47);
}

beforeAll(async () => { mock = await startMockModel(); }, 30_000);

afterAll(async () => {
  if (pi?.alive) await pi.close(5_000);
  http?.stop();
  await mock?.close();
  console.log(`[pi-mcp figures] ${JSON.stringify(figures)}`);
  if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
}, 30_000);

const DRAWER = 'Our tortoise Quentin hibernates from November to March in a box in the cellar.';

describe.sequential('pi 1.6 runs MemPalace in its own MCP as well', () => {
  it("stdio: the bridge reads through a read-only twin; each tool once, the wake-up in the first request, never two writers on the palace", async () => {
    const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
    const palace = bridgeEnv.MEMPALACE_PALACE;
    const watch = watchWriters(palace);
    pi = await start('stdio', {
      memory: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: palace, MEMPALACE_ROOT: mempalaceRoot }, exposure: 'direct' },
    }, { ...bridgeEnv, MEMPALACE_AGENT_NAME: 'coexist-agent', MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '20000' });
    const body = await firstRequest(pi, 'memory');
    expectOnce(toolsOf(body), 'memory');
    expect(toolsOf(body).filter((n) => !n.startsWith('mcp__memory__'))).toEqual([]); // not even pi's codemode: the bridge offers nothing to reach
    expect(hasWakeup(body)).toBe(true);
    expect(pi.stderr).toMatch(/mempalace: pi's MCP server 'memory' \(.*mcp\.json\) writes the palace; the bridge reads it through a read-only twin \(`bash \S+start-stdio\.sh --read-only`\)/);
    expect(pi.stderr).not.toMatch(/steps aside|Peer MCP writer/);
    // The model writes through pi's own tool: pi's server takes the palace; the twin never does.
    const from = mock.requests.length;
    mock.enqueue(
      { toolCalls: [{ id: 'c_diary', name: 'mcp__memory__mempalace_diary_write', arguments: { agent_name: 'coexist-agent', entry: 'SESSION:e2e|wrote.through.pi|★★' } }] },
      { toolCalls: [{ id: 'c_drawer', name: 'mcp__memory__mempalace_add_drawer', arguments: { wing: 'wing_family', room: 'pets', content: DRAWER } }] },
      { text: 'written' },
    );
    expect((await pi.prompt('write your diary', { ms: 60_000 })).text).toBe('written');
    const result = JSON.stringify(mock.requests.slice(from).at(-1).body.messages.filter((m) => m.role === 'tool'));
    expect(result).toContain('success');
    expect(result).not.toMatch(/read-only|Peer MCP writer/);
    // Recall reads through the twin what pi's server wrote.
    const asked = mock.requests.length;
    mock.enqueue({ text: 'Quentin, in the cellar.' });
    await pi.prompt('Where does our tortoise Quentin hibernate?', { ms: 60_000 });
    const recalls = mock.requests[asked].body.messages.filter((m) => m.role === 'user' && textOf(m).startsWith('[MemPalace recall]')).map(textOf);
    expect(recalls.at(-1) ?? '').toContain(DRAWER);
    const servers = processesWith('mempalace-mcp', palace);
    expect(servers).toHaveLength(2);
    expect(servers.map((pid) => argvOf(pid).includes('--read-only')).sort()).toEqual([false, true]);
    figures.stdio = measure(body);
    expect(await pi.close()).toMatchObject({ code: 0 });
    const seen = watch.stop();
    expect(seen.samples).toBeGreaterThan(10);
    expect(seen).toMatchObject({ writers: 1, readOnly: 1, holders: 1, readOnlyHolding: 0 });
  });

  it("stdio with pi's default exposure (codemode): the first request declares only pi's codemode tool", async () => {
    const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(path.join(dir, 'codemode'));
    pi = await start('codemode', {
      memory: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: bridgeEnv.MEMPALACE_PALACE, MEMPALACE_ROOT: mempalaceRoot } },
    }, bridgeEnv);
    const body = await firstRequest(pi, 'memory');
    expect(toolsOf(body)).toEqual(['codemode']);
    expect(hasWakeup(body)).toBe(true);
    const servers = processesWith('mempalace-mcp', bridgeEnv.MEMPALACE_PALACE);
    expect(servers.filter((pid) => !argvOf(pid).includes('--read-only'))).toHaveLength(1);
    figures.codemode = measure(body);
    expect(await pi.close()).toMatchObject({ code: 0 });
  });

  it('HTTP: the same server for pi and the bridge; pi offers the tools, the bridge still wakes the model up', async () => {
    http = startHttp(dir, 'e2e-token');
    pi = await start('http', {
      palace: { url: http.url, headers: { Authorization: 'Bearer ${E2E_PALACE_TOKEN}' }, exposure: 'direct' },
    }, { MEMPALACE_BRIDGE: '1', MEMPALACE_REMOTE_URL: http.url, MEMPALACE_REMOTE_TOKEN: 'e2e-token', E2E_PALACE_TOKEN: 'e2e-token', MEMPALACE_AGENT_NAME: 'coexist-agent' });
    const body = await firstRequest(pi, 'palace');
    expectOnce(toolsOf(body), 'palace');
    expect(hasWakeup(body)).toBe(true);
    expect(pi.stderr).toMatch(/mempalace: pi's MCP server 'palace' \(.*\) is this palace; its tools come from pi as mcp__palace__\*/);
    expect(processesWith('mempalace-mcp', path.join(dir, 'http-root'))).toEqual([]);
    figures.http = measure(body);
    expect(await pi.close()).toMatchObject({ code: 0 });
  });
});
