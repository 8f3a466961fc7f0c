// End to end: "saved before pi forgets" (issue 36) in the real pi 1.6.0 on Node 22 (RPC mode, the
// mock model) against the REAL MemPalace 3.11.0 over stdio, under MEMPALACE_SCOPE=project:
//   1  RPC `compact` (pi's session_before_compact): the turns since the last feed (the 10-minute
//      debounce kept turn 2 out) are in the palace, in the project's wing, while pi still runs; the
//      compaction's own model request does not wait for the feed;
//   2  MEMPALACE_CHECKPOINT_TURNS=2: after four prompts the project's diary wing (wing_<slug>, as
//      MemPalace's hooks name it) holds checkpoints of what they said, redacted, and the model got
//      exactly one request per prompt (the bridge composed them: no model turn).
import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { piSuiteHooks } from './suite-hooks.mjs';
import { startPi, ready, pollUntil } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { mempalaceRoot, stdioEnv } from '../helpers/palace.mjs';
import { feedEnded } from './feed-ended.mjs';

const dir = tempDir('dotty-e2e-saved-');
const home = path.join(dir, 'pi-home');
const project = path.join(dir, 'dev', 'gamma-app');
const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
const palace = bridgeEnv.MEMPALACE_PALACE;
const ENV = {
  ...bridgeEnv,
  DOTTY_VOICE_TOOLS: '0',
  MEMPALACE_SCOPE: 'project',
  MEMPALACE_FEED_DEBOUNCE_MS: '600000',
  MEMPALACE_FEED_PREPARE_TIMEOUT_MS: '60000',
  MEMPALACE_FEED_MINE_TIMEOUT_MS: '60000',
};
const FIRST = 'an amber tortoise guards the lighthouse ledger';
const SECOND = 'nine porcelain kites circle the saffron reservoir';
const timings = {};

let pi;
const hooks = piSuiteHooks({ dir, project, currentPi: () => pi, report: () => `[saved.e2e timings] ${JSON.stringify(timings)}` });


/** `mempalace search <query> --wing <wing>` on the palace: its drawer lines. */
function search(query, wing) {
  const r = spawnSync(path.join(mempalaceRoot, 'venv/bin/mempalace'), ['--palace', palace, 'search', query, '--wing', wing], {
    env: { ...process.env, HOME: path.join(mempalaceRoot, 'home'), MEMPALACE_CONFIG_DIR: path.join(mempalaceRoot, 'cfg'), HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', MEMPALACE_HUB_FORWARD: '0' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const out = r.stdout + r.stderr;
  return out.split('\n').map((l) => l.trim()).filter((l) => l && !/^(=+|-+|Results for:|No results found for:|\[\d+\]|Source:|Match:)/.test(l)).join('\n');
}

describe('pi 1.6.0: saved before pi forgets, with the real MemPalace 3.11.0', () => {
  it('RPC compact feeds the turns since the last feed at once, while pi runs; the compaction does not wait for it', async () => {
    fs.mkdirSync(project, { recursive: true });
    // Keep almost nothing recent, so two short turns are something to compact.
    fs.mkdirSync(path.join(home, '.pi', 'agent'), { recursive: true });
    fs.writeFileSync(path.join(home, '.pi', 'agent', 'settings.json'), JSON.stringify({ compaction: { keepRecentTokens: 1 } }));
    pi = await startPi({ target: '1.6.0', modelBaseUrl: hooks.mock.baseUrl, env: ENV, cwd: project, home, session: true, sessionDir: 'default', timeoutMs: 60_000 });
    await ready(pi, 60_000);
    hooks.mock.enqueue({ text: `Noted: ${FIRST}.` });
    await pi.prompt(`Please remember: ${FIRST}.`);
    await feedEnded(pi.agentDir, 'settled', { detail: () => pi?.stderr }); // the first settled feed always counts
    hooks.mock.enqueue({ text: `Noted: ${SECOND}.` });
    await pi.prompt(`Please remember: ${SECOND}.`); // inside the debounce: not fed

    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: '## Goal\nRemember two phrases.\n## Progress\nBoth noted.' });
    const t0 = performance.now();
    const ended = feedEnded(pi.agentDir, 'compact', { detail: () => pi?.stderr });
    const res = await pi.send({ type: 'compact' }, 60_000);
    expect(res.success, JSON.stringify(res)).toBe(true);
    timings.compactResponseMs = Math.round(performance.now() - t0);
    timings.summaryRequestMs = Math.round(hooks.mock.requests[n0].receivedAt - t0);
    const outcome = await ended;
    timings.compactFeedMs = Math.round(performance.now() - t0);
    expect(outcome.reason).toBe('compact');
    // The compaction went on at once: its summary request came before the feed had ended.
    expect(timings.summaryRequestMs).toBeLessThan(timings.compactFeedMs);
    expect(pi.alive).toBe(true);
    expect(search(SECOND, 'gamma_app'), 'turn 2, mined at compaction while pi runs').toContain(SECOND);
    expect(pi.stderr).not.toMatch(/feed .*failed/i);
    expect((await pi.close(60_000)).code).toBe(0);
  }, 240_000);

  it('MEMPALACE_CHECKPOINT_TURNS=2: after four prompts the diary wing holds what they said, redacted; one model request per prompt', async () => {
    const delta = path.join(dir, 'dev', 'delta-app');
    fs.mkdirSync(delta, { recursive: true });
    const token = 'ghp_4Fq9ZkT2mX8vR1pL6sW3yN0bC5hJ7dA2eG9u';
    const prompts = [
      'checkpoint one: the walnut compass points east',
      'checkpoint two: the cedar kettle sings at dawn',
      `checkpoint three: deploy with ${token} tonight`,
      'checkpoint four: the granite owl counts stars',
    ];
    pi = await startPi({ target: '1.6.0', modelBaseUrl: hooks.mock.baseUrl, env: { ...ENV, MEMPALACE_CHECKPOINT_TURNS: '2', MEMPALACE_FEED: '0' }, cwd: delta, home, session: true, sessionDir: 'default', timeoutMs: 60_000 });
    await ready(pi, 60_000);
    const n0 = hooks.mock.requests.length;
    for (const p of prompts) {
      hooks.mock.enqueue({ text: 'OK.' });
      await pi.prompt(p);
    }
    expect(hooks.mock.requests.length - n0, 'one model request per prompt: no model turn for a checkpoint').toBe(4);
    const t0 = performance.now();
    const diary = await pollUntil(() => {
      const found = search('granite owl counts stars walnut compass', 'wing_delta_app');
      return found.includes('granite owl') && found.includes('walnut compass') && found;
    }, 'both checkpoints in wing_delta_app', 90_000, 500);
    timings.checkpointsFoundMs = Math.round(performance.now() - t0);
    expect(diary).toContain('CHECKPOINT:');
    expect(diary).toContain('msgs:2|recent:checkpoint one: the walnut compass points east|checkpoint two: the cedar kettle sings at dawn');
    expect(diary).toContain('checkpoint three: deploy with [REDACTED:github-pat] tonight|checkpoint four: the granite owl counts stars');
    expect(diary).not.toContain(token);
    expect(hooks.mock.requests.length - n0).toBe(4);
    expect((await pi.close(60_000)).code).toBe(0);
  }, 240_000);
});
