// End to end: pi 1.6.0's own MCP client beside the bridge (pi on Node 22, the REAL MemPalace 3.11.0).
//   1  stdio: pi's user-level mcp.json runs MemPalace under the name "memory" (the name says nothing;
//      the launch command does), exposure "direct" so its tools are declared to the model. The
//      bridge steps aside (one stderr line): the first request offers each palace tool once, as
//      mcp__memory__*, and one MemPalace process runs against the palace.
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
import { toolsOf, measure, hasWakeup } from './tools-budget.suite.mjs';
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

describe.sequential('pi 1.6 runs MemPalace in its own MCP as well', () => {
  it('stdio: the bridge steps aside; each tool once, one MemPalace process on the palace', async () => {
    const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
    const palace = bridgeEnv.MEMPALACE_PALACE;
    pi = await start('stdio', {
      memory: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: palace, MEMPALACE_ROOT: mempalaceRoot }, exposure: 'direct' },
    }, bridgeEnv);
    const body = await firstRequest(pi, 'memory');
    expectOnce(toolsOf(body), 'memory');
    expect(hasWakeup(body)).toBe(false);
    expect(pi.stderr).toMatch(/mempalace: pi's MCP runs a MemPalace server 'memory' \(.*mcp\.json\); the bridge steps aside/);
    expect(processesWith('mempalace-mcp', palace)).toHaveLength(1);
    figures.stdio = measure(body);
    expect(await pi.close()).toMatchObject({ code: 0 });
  });

  it("stdio with pi's default exposure (codemode): the first request declares only pi's codemode tool", async () => {
    const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(path.join(dir, 'codemode'));
    pi = await start('codemode', {
      memory: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: bridgeEnv.MEMPALACE_PALACE, MEMPALACE_ROOT: mempalaceRoot } },
    }, bridgeEnv);
    const body = await firstRequest(pi, 'memory');
    expect(toolsOf(body)).toEqual(['codemode']);
    expect(processesWith('mempalace-mcp', bridgeEnv.MEMPALACE_PALACE)).toHaveLength(1);
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
