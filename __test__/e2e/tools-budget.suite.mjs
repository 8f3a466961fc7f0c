// End to end: the tool budget (MEMPALACE_TOOLS) and the palace's status in the real pi (0.74.0 by
// tools-budget.e2e.test.mjs, 1.6.0 on Node 22 by tools-budget-pi16.e2e.test.mjs; RPC mode, the mock
// model recording request bodies) against the REAL MemPalace 3.11.0 over stdio.
//   1  a first start primes the tool cache (47 tools);
//   2  default (all): the FIRST model request offers all 47 palace tools;
//   3  MEMPALACE_TOOLS=mempalace_search,mempalace_diary_*: the first request offers those 3, and the
//      wake-up (mempalace_status + diary_read, neither offered) is still in it.
// Measured: the bytes of the request's `tools` array (JSON), and ~tokens as bytes/4 (no tokenizer is
// installed). The footer status arrives as a fire-and-forget `extension_ui_request` (setStatus) that
// the harness answers `cancelled` like Dotty's client; no turn waits on it.
import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { piSuiteHooks } from './suite-hooks.mjs';
import { startPi, ready } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { stdioEnv } from '../helpers/palace.mjs';

export const SMALL = 'mempalace_search,mempalace_diary_*';
/** The names of the tools a model request offers, sorted. */
export const toolsOf = (body) => (body.tools ?? []).map((t) => t.function.name).sort();
/** The size of a request's `tools` array: count, JSON bytes, ~tokens as bytes/4 (no tokenizer installed). */
export const measure = (body) => { const bytes = Buffer.byteLength(JSON.stringify(body.tools ?? [])); return { tools: (body.tools ?? []).length, bytes, approxTokens: Math.round(bytes / 4) }; };
/** The text of a request message. */
export const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((b) => b.text ?? '').join(''));
/** Whether a request carries the bridge's wake-up. */
export const hasWakeup = (body) => body.messages.some((m) => m.role === 'user' && textOf(m).startsWith('[MemPalace wake-up]'));

export function toolsBudgetSuite(target) {
  const dir = tempDir('dotty-e2e-budget-');
  const home = path.join(dir, 'pi-home');
  const project = path.join(dir, 'project');
  const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
  const ENV = { ...bridgeEnv, DOTTY_VOICE_TOOLS: '0', MEMPALACE_AGENT_NAME: 'budget-agent', MEMPALACE_FEED: '0' };
  const cacheFile = path.join(home, '.pi', 'agent', 'mempalace-tools-cache.json');
  const figures = {};

  let pi;
  const start = (env = {}) => startPi({ target, modelBaseUrl: hooks.mock.baseUrl, env: { ...ENV, ...env }, session: true, home, cwd: project, args: ['--no-builtin-tools'], timeoutMs: 60_000 });
  const statuses = (p) => p.uiRequests.filter((r) => r.method === 'setStatus' && r.statusKey === 'mempalace').map((r) => r.statusText);

  /** One prompt in a fresh pi; the first request body it sends. */
  async function firstRequest(p) {
    await ready(p, 60_000);
    // The palace tools are registered from the cache at load; the footer says when the palace is up.
    await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'setStatus' && /^MemPalace: ready · \d+/.test(e.statusText ?? ''), { what: 'the connected status', ms: 60_000 });
    const from = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'ok' });
    const turn = await p.prompt('hello', { ms: 60_000 });
    expect(turn.text).toBe('ok');
    return hooks.mock.requests[from].body;
  }

  const hooks = piSuiteHooks({ dir, project, currentPi: () => pi, report: () => `[tools-budget figures pi ${target}] ${JSON.stringify(figures)}` });

  describe.sequential(`the tool budget in pi ${target} with the real MemPalace`, () => {
    it('a first start primes the tool cache; the footer goes from connecting to 47 tools; /mempalace status answers', async () => {
      pi = await start();
      await ready(pi, 60_000);
      await pi.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'setStatus' && e.statusText === 'MemPalace: ready · 47 tools', { what: 'the connected status', ms: 60_000 });
      expect(statuses(pi)).toContain('MemPalace: connecting…');
      expect(JSON.parse(fs.readFileSync(cacheFile, 'utf8')).tools).toHaveLength(47);
      // The command's answer is a notify (fire-and-forget too); the prompt is answered without a turn.
      const from = pi.events.length;
      const res = await pi.send({ type: 'prompt', message: '/mempalace status' });
      expect(res.success).toBe(true);
      const note = await pi.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'notify' && /transport: stdio/.test(e.message), { from, what: 'the status notify' });
      expect(note.message).toMatch(/^MemPalace: ready · 47 tools\ntransport: stdio .*\ntools: 47 offered to pi of 47 known \(MEMPALACE_TOOLS=all\)\nspawns: 1, respawns: 0/);
      expect(await pi.close()).toMatchObject({ code: 0 });
    });

    it('default: the first request offers all 47 palace tools', async () => {
      pi = await start();
      const body = await firstRequest(pi);
      expect(toolsOf(body)).toHaveLength(47);
      figures.all = measure(body);
      // Every status request was answered `cancelled` by the harness and the turn ran regardless.
      expect(statuses(pi).length).toBeGreaterThan(0);
      expect(await pi.close()).toMatchObject({ code: 0 });
    });

    it(`MEMPALACE_TOOLS=${SMALL}: the first request offers 3 tools, still with the wake-up`, async () => {
      pi = await start({ MEMPALACE_TOOLS: SMALL });
      const body = await firstRequest(pi);
      expect(toolsOf(body)).toEqual(['mempalace_diary_read', 'mempalace_diary_write', 'mempalace_search']);
      figures.small = measure(body);
      expect(hasWakeup(body)).toBe(true);
      expect(statuses(pi).at(-1)).toBe('MemPalace: ready · 3 of 47 tools');
      expect(figures.small.bytes).toBeLessThan(figures.all.bytes / 5);
      expect(await pi.close()).toMatchObject({ code: 0 });
    });
  });
}
