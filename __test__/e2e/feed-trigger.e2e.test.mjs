// End to end: the mid-session (debounced) transcript feed in the real pi 0.74.0 (RPC mode, the mock
// model), which has no `agent_settled` event: `agent_end`, through index.js, stands in for it. The
// palace is the MCP fault fixture over stdio (the feed needs a palace that is up, not a real one);
// the external exporter (MEMPALACE_FEED_BIN) records each run's arguments and stages nothing, so
// each feed is visible as one line: `--prepare --reason <trigger> --wing <wing>`.
//   turn 1 → a mid-session feed (reason `settled`); turn 2, inside the 10-minute debounce → none;
//   closing pi → the shutdown feed (reason `quit`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { PI_CLI, startPi, ready, root } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { fixture } from '../helpers/mcp-fixture.mjs';
import { feedEnded } from './feed-ended.mjs';

const dir = tempDir('dotty-e2e-feed-');
const runs = path.join(dir, 'exporter-runs.txt');
const exporter = path.join(dir, 'exporter.sh');
const ENV = {
  MEMPALACE_BRIDGE: '1', DOTTY_VOICE_TOOLS: '0',
  MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: fixture,
  MEMPALACE_FEED_BIN: exporter, MEMPALACE_FEED_DEBOUNCE_MS: '600000',
};
const feedLine = (reason) => `--prepare --reason ${reason} --wing wing_conversations`;

/** Resolves with the exporter's runs once `done(lines)` holds (a file change is the event). Bounded. */
function exporterRuns(done, ms = 30_000) {
  const read = () => (fs.existsSync(runs) ? fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean) : []);
  return new Promise((resolve, reject) => {
    const watcher = fs.watch(dir, () => { if (done(read())) finish(); });
    const timer = setTimeout(() => { watcher.close(); reject(new Error(`exporter runs after ${ms} ms: ${JSON.stringify(read())}`)); }, ms);
    const finish = () => { clearTimeout(timer); watcher.close(); resolve(read()); };
    if (done(read())) finish();
  });
}


let mock, pi;
beforeAll(async () => {
  mock = await startMockModel();
  fs.writeFileSync(exporter, `#!/bin/sh\necho "$@" >> '${runs}'\n`, { mode: 0o755 });
}, 30_000);
afterAll(async () => {
  if (pi?.alive) await pi.close(5_000);
  await mock?.close();
  if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
}, 30_000);

describe('the mid-session feed in pi 0.74.0 (no agent_settled)', () => {
  it('pi 0.74.0 has no agent_settled event: agent_end is what the bridge gets', () => {
    const dist = path.dirname(PI_CLI['0.74.0']);
    const sources = fs.readdirSync(dist, { recursive: true }).filter((f) => f.endsWith('.js')).map((f) => fs.readFileSync(path.join(dist, f), 'utf8'));
    expect(sources.some((s) => s.includes('agent_end'))).toBe(true);
    expect(sources.some((s) => s.includes('agent_settled'))).toBe(false);
  });

  it('the first turn feeds once through agent_end, the next turn inside the debounce does not, closing pi feeds again', async () => {
    pi = await startPi({ target: '0.74.0', modelBaseUrl: mock.baseUrl, extensions: [root], env: ENV, session: true, cwd: dir, args: ['--no-builtin-tools'], timeoutMs: 60_000 });
    await ready(pi, 60_000);
    mock.enqueue({ text: 'first answer' });
    expect((await pi.prompt('first turn', { ms: 60_000 })).text).toBe('first answer');
    expect(await exporterRuns((l) => l.length >= 1)).toEqual([feedLine('settled')]);
    // A shutdown that lands while a feed runs joins it (the contract): close pi once the turn-1 feed ended.
    await feedEnded(pi.agentDir, 'settled', { ms: 30_000, detail: () => pi?.stderr });

    mock.enqueue({ text: 'second answer' });
    expect((await pi.prompt('second turn', { ms: 60_000 })).text).toBe('second answer');
    // The debounced trigger of turn 2 is skipped at once; the shutdown feed is the next run.
    expect(await pi.close(60_000)).toMatchObject({ code: 0 });
    expect(await exporterRuns((l) => l.length >= 2)).toEqual([feedLine('settled'), feedLine('quit')]);
  });
});
