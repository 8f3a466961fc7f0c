// End to end: MEMPALACE_SCOPE=project (issue 36) in the real pi 1.6.0 on Node 22 (RPC mode, the
// mock model) against the REAL MemPalace 3.11.0 over stdio. One pi agent dir and one palace, two
// projects, `alpha-app` and `Beta Service`, as on a developer's machine:
//   1  a session in each project: each one's drawers land in its own wing (alpha_app,
//      beta_service: the wings MemPalace's own hooks file those folders' transcripts into), and the
//      wake-up names the wing;
//   2  recall in Beta Service for what was said in alpha-app brings none of alpha's drawers; the
//      same prompt in alpha-app brings its own;
//   3  a trusted project's `.pi/mempalace.json` names the wing (pi's --approve); untrusted
//      (--no-approve) it is ignored;
//   4  global scope (the default) still files into wing_conversations.
import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { piSuiteHooks } from './suite-hooks.mjs';
import { startPi, ready, root } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { mempalaceRoot, stdioEnv } from '../helpers/palace.mjs';

const dir = tempDir('dotty-e2e-scope-');
const home = path.join(dir, 'pi-home');
const dev = path.join(dir, 'dev');
const ALPHA = path.join(dev, 'alpha-app');
const BETA = path.join(dev, 'Beta Service');
const PLAIN = path.join(dev, 'plain-project');
const ALPHA_PHRASE = 'the tangerine submarine hums beneath quartz harbour';
const BETA_PHRASE = 'seventeen velvet lanterns orbit the basalt observatory';
const GLOBAL_PHRASE = 'a marzipan glacier drifts past cobalt windmills';
const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
const palace = bridgeEnv.MEMPALACE_PALACE;
const ENV = {
  ...bridgeEnv,
  DOTTY_VOICE_TOOLS: '0',
  MEMPALACE_SCOPE: 'project',
  MEMPALACE_FEED_PREPARE_TIMEOUT_MS: '60000',
  MEMPALACE_FEED_MINE_TIMEOUT_MS: '60000',
};
const WAKEUP_HEAD = '[MemPalace wake-up]';
const RECALL_HEAD = '[MemPalace recall]';
const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join(''));
const users = (body, head) => body.messages.filter((m) => m.role === 'user' && textOf(m).startsWith(head)).map(textOf);
const timings = {};

let pi;
const hooks = piSuiteHooks({ dir, project: dev, currentPi: () => pi, report: () => `[scope.e2e timings] ${JSON.stringify(timings)}` });

const start = async (cwd, env = {}, args = []) => {
  fs.mkdirSync(cwd, { recursive: true });
  pi = await startPi({
    target: '1.6.0', modelBaseUrl: hooks.mock.baseUrl, env: { ...ENV, ...env }, cwd, home,
    session: true, sessionDir: 'default', args, timeoutMs: 60_000,
  });
  await ready(pi, 60_000);
  return pi;
};

/** Sends `message` (the model answers `reply`) → the body of the model request it caused. */
const ask = async (message, reply = 'OK.') => {
  const n0 = hooks.mock.requests.length;
  hooks.mock.enqueue({ text: reply });
  await pi.prompt(message);
  return hooks.mock.requests[n0].body;
};

/** pi closed (stdin end): the shutdown feed ran; its time in ms. */
const closeFed = async () => {
  const t0 = performance.now();
  const exit = await pi.close(130_000);
  expect(exit).toEqual({ code: 0, signal: null });
  expect(pi.stderr).not.toMatch(/feed .*failed/i);
  return Math.round(performance.now() - t0);
};

/** `mempalace search <query>` on the palace (pi closed: the palace is free), limited to `wing` if given. */
function search(query, wing) {
  const r = spawnSync(path.join(mempalaceRoot, 'venv/bin/mempalace'), ['--palace', palace, 'search', query, ...(wing ? ['--wing', wing] : [])], {
    env: { ...process.env, HOME: path.join(mempalaceRoot, 'home'), MEMPALACE_CONFIG_DIR: path.join(mempalaceRoot, 'cfg'), HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', MEMPALACE_HUB_FORWARD: '0' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return r.stdout + r.stderr;
}
/** The quoted drawer lines of a search answer (the header echoes the query: not evidence). */
const drawerLines = (out) => out.split('\n').map((l) => l.trim()).filter((l) => l && !/^(=+|-+|Results for:|No results found for:|\[\d+\]|Source:|Match:)/.test(l));
/** The wings a search answer's results are in (its `[n] <wing> / <room>` lines). */
const wingsOf = (out) => [...out.matchAll(/^\s*\[\d+\] (\S+) \//gm)].map((m) => m[1]);

describe('pi 1.6.0: MEMPALACE_SCOPE=project with the real MemPalace 3.11.0', () => {
  it('each project\'s session is filed into its own wing, and the wake-up names it', async () => {
    await start(ALPHA);
    const body = await ask(`Please remember: ${ALPHA_PHRASE}.`, `Noted: ${ALPHA_PHRASE}.`);
    const [wake] = users(body, WAKEUP_HEAD);
    expect(wake).toContain('This session files into the wing "alpha_app"');
    timings.alphaCloseMs = await closeFed();

    await start(BETA);
    const beta = await ask(`Please remember: ${BETA_PHRASE}.`, `Noted: ${BETA_PHRASE}.`);
    expect(users(beta, WAKEUP_HEAD)[0]).toContain('This session files into the wing "beta_service"');
    timings.betaCloseMs = await closeFed();

    const alphaHits = search(ALPHA_PHRASE);
    expect(drawerLines(search(ALPHA_PHRASE, 'alpha_app')).join('\n')).toContain(ALPHA_PHRASE);
    expect(drawerLines(search(BETA_PHRASE, 'beta_service')).join('\n')).toContain(BETA_PHRASE);
    expect(drawerLines(search(ALPHA_PHRASE, 'beta_service')).join('\n')).not.toContain(ALPHA_PHRASE);
    expect(drawerLines(search(BETA_PHRASE, 'alpha_app')).join('\n')).not.toContain(BETA_PHRASE);
    expect(wingsOf(alphaHits)).not.toContain('wing_conversations');
  }, 300_000);

  it("recall in Beta Service brings none of alpha-app's drawers; in alpha-app it brings them", async () => {
    const recallEnv = { MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '30000', MEMPALACE_RECALL_MIN_SCORE: '0.05', MEMPALACE_FEED: '0' };
    await start(BETA, recallEnv);
    const inBeta = await ask(`What about the tangerine submarine beneath quartz harbour?`);
    expect(users(inBeta, RECALL_HEAD).join('\n')).not.toContain(ALPHA_PHRASE);
    await pi.close();

    await start(ALPHA, recallEnv);
    const inAlpha = await ask(`What about the tangerine submarine beneath quartz harbour?`);
    const recalled = users(inAlpha, RECALL_HEAD).join('\n');
    expect(recalled, 'the positive control: the same prompt in its own project').toContain('tangerine submarine');
    expect(recalled).not.toContain(BETA_PHRASE);
    await pi.close();
  }, 300_000);

  it('a trusted project file names the wing; an untrusted one is ignored', async () => {
    fs.mkdirSync(path.join(ALPHA, '.pi'), { recursive: true });
    fs.writeFileSync(path.join(ALPHA, '.pi', 'mempalace.json'), JSON.stringify({ wing: 'alpha_shared' }));
    const off = { MEMPALACE_FEED: '0' };
    await start(ALPHA, off, ['--approve']);
    expect(users(await ask('hello'), WAKEUP_HEAD)[0]).toContain('This session files into the wing "alpha_shared"');
    await pi.close();
    await start(ALPHA, off, ['--no-approve']);
    expect(users(await ask('hello'), WAKEUP_HEAD)[0]).toContain('This session files into the wing "alpha_app"');
    expect(pi.stderr).toContain('.pi/mempalace.json ignored: pi does not trust this project');
    await pi.close();
    fs.rmSync(path.join(ALPHA, '.pi'), { recursive: true, force: true });
  }, 180_000);

  it('global scope (the default) still files into wing_conversations', async () => {
    await start(PLAIN, { MEMPALACE_SCOPE: '' });
    const body = await ask(`Please remember: ${GLOBAL_PHRASE}.`, `Noted: ${GLOBAL_PHRASE}.`);
    expect(users(body, WAKEUP_HEAD)[0]).not.toContain('This session files into the wing');
    timings.globalCloseMs = await closeFed();
    expect(drawerLines(search(GLOBAL_PHRASE, 'wing_conversations')).join('\n')).toContain(GLOBAL_PHRASE);
    expect(drawerLines(search(GLOBAL_PHRASE, 'plain_project')).join('\n')).not.toContain(GLOBAL_PHRASE);
  }, 300_000);
});
