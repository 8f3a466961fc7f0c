// End to end: the tool budget (MEMPALACE_EXPOSURE, MEMPALACE_DIRECT_TOOLS, MEMPALACE_TOOLS) and the
// palace's status in the real pi (0.74.0 by tools-budget.e2e.test.mjs, 1.6.0 on Node 22 by
// tools-budget-pi16.e2e.test.mjs; RPC mode, the mock model recording request bodies) against the
// REAL MemPalace 3.11.0 over stdio.
//   1  a first start primes the tool cache (47 tools); /mempalace status says the exposure;
//   2  default: on pi 1.6 (tool exposure) the FIRST model request declares only pi's `codemode`
//      tool (the palace's 47 are deferred, reached through it; the system prompt says how); on
//      pi 0.74 (none) all 47 palace tools;
//   3  MEMPALACE_EXPOSURE=direct: all 47 (on 0.74 byte for byte the default's);
//   4  pi 1.6: deferred declares only `tool_search`; MEMPALACE_DIRECT_TOOLS=mempalace_search,
//      mempalace_diary_write declares those two beside `codemode`; pi 0.74: codemode asked for falls
//      back to direct with one stderr line;
//   5  MEMPALACE_TOOLS=mempalace_search,mempalace_diary_* (direct): the first request offers those 3,
//      and the wake-up (mempalace_status + diary_read, neither offered) is still in it.
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

/** The text of a request's system prompt (its system messages). */
export const systemText = (body) => body.messages.filter((m) => m.role === 'system' || m.role === 'developer').map(textOf).join('\n');

/** Whether the pi of `target` has tool exposure in its extension API (pi 0.99 and later). */
export const hasExposure = (target) => !target.startsWith('0.');

export function toolsBudgetSuite(target) {
  const exposure = hasExposure(target);
  const dir = tempDir('dotty-e2e-budget-');
  const home = path.join(dir, 'pi-home');
  const project = path.join(dir, 'project');
  const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
  const ENV = { ...bridgeEnv, DOTTY_VOICE_TOOLS: '0', MEMPALACE_AGENT_NAME: 'budget-agent', MEMPALACE_FEED: '0' };
  const cacheFile = path.join(home, '.pi', 'agent', 'mempalace-tools-cache.json');
  const figures = {};

  let pi;
  const start = (env = {}, args = ['--no-builtin-tools']) => startPi({ target, modelBaseUrl: hooks.mock.baseUrl, env: { ...ENV, ...env }, session: true, home, cwd: project, args, timeoutMs: 60_000 });
  const statuses = (p) => p.uiRequests.filter((r) => r.method === 'setStatus' && r.statusKey === 'mempalace').map((r) => r.statusText);

  /** One prompt in a fresh pi; the first request body it sends. */
  async function firstRequest(p, { palace = true } = {}) {
    await ready(p, 60_000);
    // The palace tools are registered from the cache at load; the footer says when the palace is up.
    if (palace) await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'setStatus' && /^MemPalace: ready · \d+/.test(e.statusText ?? ''), { what: 'the connected status', ms: 60_000 });
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
      expect(note.message.split('\n').at(-1)).toBe(exposure
        ? "exposure: codemode through pi's `codemode` tool, 0 of 47 tools direct (MEMPALACE_EXPOSURE=unset, MEMPALACE_DIRECT_TOOLS=none)"
        : 'exposure: direct, 47 of 47 tools direct (MEMPALACE_EXPOSURE=unset, MEMPALACE_DIRECT_TOOLS=none)');
      expect(await pi.close()).toMatchObject({ code: 0 });
    });

    let defaultTools;
    it(exposure ? 'default (codemode): the first request declares only pi\'s codemode tool, the system prompt names the palace' : 'default (no exposure in this pi): the first request offers all 47 palace tools', async () => {
      pi = await start();
      const body = await firstRequest(pi);
      defaultTools = JSON.stringify(body.tools);
      figures.default = measure(body);
      if (exposure) {
        expect(toolsOf(body)).toEqual(['codemode']);
        expect(figures.default.bytes).toBeLessThanOrEqual(2_500);
        expect(systemText(body)).toMatch(/<mempalace>\nMemPalace, your long-term memory palace: 47 tools \(namespace `mempalace`/);
        expect(hasWakeup(body)).toBe(true);
      } else {
        expect(toolsOf(body)).toHaveLength(47);
        expect(systemText(body)).not.toContain('<mempalace>');
      }
      expect(pi.stderr).not.toMatch(/MEMPALACE_EXPOSURE/);
      // Every status request was answered `cancelled` by the harness and the turn ran regardless.
      expect(statuses(pi).length).toBeGreaterThan(0);
      expect(await pi.close()).toMatchObject({ code: 0 });
    });

    it('MEMPALACE_EXPOSURE=direct: the first request offers all 47 palace tools', async () => {
      pi = await start({ MEMPALACE_EXPOSURE: 'direct' });
      const body = await firstRequest(pi);
      expect(toolsOf(body)).toHaveLength(47);
      figures.all = measure(body);
      // Without exposure in pi the default is today's: the same tools array, byte for byte.
      if (!exposure) expect(JSON.stringify(body.tools)).toBe(defaultTools);
      expect(systemText(body)).not.toContain('<mempalace>');
      expect(await pi.close()).toMatchObject({ code: 0 });
    });

    if (exposure) {
      it('MEMPALACE_EXPOSURE=deferred: the first request declares only pi\'s tool_search', async () => {
        pi = await start({ MEMPALACE_EXPOSURE: 'deferred' });
        const body = await firstRequest(pi);
        expect(toolsOf(body)).toEqual(['tool_search']);
        expect(systemText(body)).toMatch(/not declared to you; load the ones you need with `tool_search`/);
        figures.deferred = measure(body);
        expect(await pi.close()).toMatchObject({ code: 0 });
      });

      it("beside the voice tools and pi's own tools the palace costs at most 2,500 bytes of the first request's tools", async () => {
        pi = await start({ DOTTY_VOICE_TOOLS: '1', MEMPALACE_BRIDGE: '0' }, []);
        const without = await firstRequest(pi, { palace: false });
        expect(await pi.close()).toMatchObject({ code: 0 });
        pi = await start({ DOTTY_VOICE_TOOLS: '1' }, []);
        const withPalace = await firstRequest(pi);
        expect(toolsOf(withPalace)).toEqual([...toolsOf(without), 'codemode'].sort());
        figures.ownTools = measure(without);
        figures.ownToolsAndPalace = measure(withPalace);
        figures.palaceShare = figures.ownToolsAndPalace.bytes - figures.ownTools.bytes;
        expect(figures.palaceShare).toBeLessThanOrEqual(2_500);
        expect(await pi.close()).toMatchObject({ code: 0 });
      });

      it('MEMPALACE_DIRECT_TOOLS=mempalace_search,mempalace_diary_write,mempalace_nope: those two beside codemode, the typo said once', async () => {
        pi = await start({ MEMPALACE_DIRECT_TOOLS: 'mempalace_search,mempalace_diary_write,mempalace_nope' });
        const body = await firstRequest(pi);
        expect(toolsOf(body)).toEqual(['codemode', 'mempalace_diary_write', 'mempalace_search']);
        expect(pi.stderr.match(/MEMPALACE_DIRECT_TOOLS entry "mempalace_nope" matches none of the palace's 47 tools; it declares nothing directly/g)).toHaveLength(1);
        expect(systemText(body)).toMatch(/: 45 tools \(namespace `mempalace`/);
        figures.twoDirect = measure(body);
        expect(await pi.close()).toMatchObject({ code: 0 });
      });
    } else {
      it('MEMPALACE_EXPOSURE=codemode falls back to direct with one stderr line', async () => {
        pi = await start({ MEMPALACE_EXPOSURE: 'codemode' });
        const body = await firstRequest(pi);
        expect(JSON.stringify(body.tools)).toBe(defaultTools);
        expect(pi.stderr.match(/MEMPALACE_EXPOSURE=codemode needs tool exposure in pi's extension API.*declared directly/g)).toHaveLength(1);
        expect(await pi.close()).toMatchObject({ code: 0 });
      });
    }

    it(`MEMPALACE_TOOLS=${SMALL} (direct): the first request offers 3 tools, still with the wake-up`, async () => {
      pi = await start({ MEMPALACE_TOOLS: SMALL, MEMPALACE_EXPOSURE: 'direct' });
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
