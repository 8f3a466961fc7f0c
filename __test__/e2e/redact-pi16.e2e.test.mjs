// End to end: nothing secret is fed to the palace, in the real pi 1.6.0 (Node 22, RPC mode, the mock
// model, pi's own bash tool) against the REAL MemPalace 3.11.0 over stdio. The model runs `cat .env;
// echo $MY_SERVICE_TOKEN` in the project (a GitHub token, a database URL with its password, and the
// value of MY_SERVICE_TOKEN, which pi's environment holds), then its reply repeats the token and the
// service token bare. Closing pi feeds the session (built-in exporter). Afterwards: no value in any
// file under the test's folder but pi's own session file (palace, chroma.sqlite3, hallways, staging,
// state), nor in `mempalace search`; the markers are in the palace; pi's session file still holds
// what pi wrote; last-outcome.json has the counts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startPi, ready, root } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { mempalaceCli, stdioEnv } from '../helpers/palace.mjs';
import { filesUnder, holding, samples } from '../helpers/redact.mjs';

const value = (kind) => samples.find((s) => s.kind === kind).value;
const GITHUB = value('github-pat');
const DB_PASSWORD = value('url-password');
const SERVICE = value('env:MY_SERVICE_TOKEN');
const SECRETS = { 'github-pat': GITHUB, 'url-password': DB_PASSWORD, 'env:MY_SERVICE_TOKEN': SERVICE };

const dir = tempDir('dotty-e2e-redact-');
const home = path.join(dir, 'pi-home');
const project = path.join(dir, 'project');
const agentDir = path.join(home, '.pi', 'agent');
const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
const ENV = {
  ...bridgeEnv,
  DOTTY_VOICE_TOOLS: '0',
  MEMPALACE_FEED_BIN: '/nonexistent/exporter',
  MEMPALACE_FEED_PREPARE_TIMEOUT_MS: '60000',
  MEMPALACE_FEED_MINE_TIMEOUT_MS: '40000',
  MEMPALACE_CONFIG_DIR: path.join(dir, 'mempalace-cfg'),
  MY_SERVICE_TOKEN: SERVICE,
};
const REPLY = `Your .env holds the deploy token ${GITHUB}, and the service token ${SERVICE} is set too; rotate both.`;

let mock, pi, exit;
beforeAll(async () => {
  mock = await startMockModel();
  fs.mkdirSync(project, { recursive: true });
  fs.writeFileSync(path.join(project, '.env'), `DEPLOY_TOKEN=${GITHUB}\nDATABASE_URL=postgres://app:${DB_PASSWORD}@db.internal:5432/app\nLOG_LEVEL=info\n`);
}, 30_000);
afterAll(async () => {
  if (pi?.alive) await pi.close(5_000);
  await mock?.close();
  if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** Resolves with last-outcome.json once `done(outcome)` holds (a change under the agent dir is the event). */
function lastOutcome(done, ms = 90_000) {
  const file = path.join(agentDir, 'mempalace-feed', 'last-outcome.json');
  const read = () => { try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return null; } };
  return new Promise((resolve, reject) => {
    const watcher = fs.watch(agentDir, { recursive: true }, () => { if (done(read())) finish(); });
    const timer = setTimeout(() => { watcher.close(); reject(new Error(`last outcome after ${ms} ms: ${JSON.stringify(read())}`)); }, ms);
    const finish = () => { clearTimeout(timer); watcher.close(); resolve(read()); };
    if (done(read())) finish();
  });
}

/** Every file under `d` but pi's session files and the project's .env, as [path, bytes]. */
const written = (d) => filesUnder(d, (f) => !f.startsWith(path.join(agentDir, 'sessions') + path.sep) && f !== path.join(project, '.env'));

describe('a secret the bash tool printed and the model repeated is not fed (pi 1.6.0)', () => {
  it('runs the turn: bash prints the .env and the token, the reply repeats them', async () => {
    pi = await startPi({ target: '1.6.0', modelBaseUrl: mock.baseUrl, extensions: [root], env: ENV, session: true, sessionDir: 'default', home, cwd: project, timeoutMs: 60_000 });
    await ready(pi, 60_000);
    mock.enqueue({ toolCalls: [{ name: 'bash', arguments: { command: 'cat .env; echo "service: $MY_SERVICE_TOKEN"' } }] });
    mock.enqueue({ text: REPLY });
    const turn = await pi.prompt('What is in my .env? Something fails to deploy.', { ms: 90_000 });
    expect(turn.text).toBe(REPLY);
    // pi's bash really printed the values (what the model saw).
    const toolResult = mock.requests.at(-1).body.messages.find((m) => m.role === 'tool');
    const printed = typeof toolResult.content === 'string' ? toolResult.content : toolResult.content.map((c) => c.text).join('');
    for (const v of Object.values(SECRETS)) expect(printed).toContain(v);
    // pi 1.6 emits agent_settled: the mid-session feed of this turn runs now; once it is done, a
    // second turn grows the session, so the feed on close has it to stage again.
    expect((await lastOutcome((o) => o?.reason === 'settled')).outcome).toBe('fed');
    mock.enqueue({ text: 'Nothing else stands out.' });
    await pi.prompt('Anything else?', { ms: 60_000 });
    exit = await pi.close(120_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(pi.stderr).not.toMatch(/feed .*failed/i);
  }, 200_000);

  it('no value is in the palace, the staged copy or any other file the feed wrote; the markers are', () => {
    const all = written(dir);
    const names = all.map(([f]) => path.relative(dir, f));
    expect(names).toContain(path.join('palace-root', 'palace', 'chroma.sqlite3'));
    expect(names.some((n) => n.includes(path.join('mempalace-feed', 'staging')))).toBe(true);
    for (const [kind, v] of Object.entries(SECRETS)) {
      expect(holding(all, v, dir), kind).toEqual([]);
    }
    const chroma = fs.readFileSync(path.join(bridgeEnv.MEMPALACE_PALACE, 'chroma.sqlite3')).toString('latin1');
    expect(chroma).toContain('Your .env holds the deploy token [REDACTED:github-pat], and the service token [REDACTED:env:MY_SERVICE_TOKEN] is set too');
    const found = mempalaceCli(['search', 'deploy token service rotate'], bridgeEnv.MEMPALACE_PALACE);
    expect(found).toContain('[REDACTED:github-pat]');
    for (const v of Object.values(SECRETS)) expect(found).not.toContain(v);
  });

  it("pi's session file keeps what pi wrote; the staged copy has its lines, redacted; the counts are in last-outcome.json", () => {
    const sessions = fs.readdirSync(path.join(agentDir, 'sessions'), { recursive: true }).filter((f) => f.endsWith('.jsonl'));
    expect(sessions).toHaveLength(1);
    const own = fs.readFileSync(path.join(agentDir, 'sessions', sessions[0]), 'utf8');
    for (const v of Object.values(SECRETS)) expect(own).toContain(v);
    const staged = fs.readFileSync(path.join(agentDir, 'mempalace-feed', 'staging', sessions[0]), 'utf8');
    expect(staged.split('\n').length).toBe(own.split('\n').length);
    for (const l of staged.trimEnd().split('\n')) JSON.parse(l);
    const outcome = JSON.parse(fs.readFileSync(path.join(agentDir, 'mempalace-feed', 'last-outcome.json'), 'utf8'));
    expect(outcome.outcome).toBe('fed');
    expect(outcome.reason).toBe('quit');
    // The token: in the .env line bash printed (tool result) and in the reply; the service token:
    // in the command's output and the reply; the password: in the tool result only.
    expect(outcome.redacted['github-pat']).toBeGreaterThanOrEqual(2);
    expect(outcome.redacted['env:MY_SERVICE_TOKEN']).toBeGreaterThanOrEqual(2);
    expect(outcome.redacted['url-password']).toBeGreaterThanOrEqual(1);
  });
});
