// The operator's command line as a real process: `node bin/dotty-pi-ext.js doctor|call|feed`, against
// a real brain.db, the real MemPalace and in-process fake services on port 0, healthy and with one
// part broken at a time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeBrain, readRows, root, schemaSql, tempDir } from './helpers/brain.mjs';
import { stdioEnv, toolsDir, writeSession } from './helpers/palace.mjs';
import { deadPort, json, startService } from './helpers/services.mjs';

const bin = path.join(root, 'bin/dotty-pi-ext.js');
const faultServer = path.join(root, '__test__/fixtures/fault_mcp_server.py');
const dir = tempDir('dotty-cli-');
const db = path.join(dir, 'brain.db');
const TOKEN = 'admin-t0ken';
let behaviour, thinker, xiaozhi, base;

/** Runs the CLI (asynchronously: the fake services live in this process) with exactly `env` (+ PATH). */
function cli(args, env, { cwd = root, timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, ...args], { cwd, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`timed out: ${args.join(' ')}\n${stderr}`)); }, timeoutMs);
    p.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }); });
  });
}

/** The report line of check `name` (status, padded name, detail). */
const line = (stdout, name) => stdout.split('\n').find((l) => new RegExp(`^(ok|warn|fail) +${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}  `).test(l));

function tree(d) {
  const out = [];
  const walk = (p) => { for (const e of fs.readdirSync(p, { withFileTypes: true })) { const f = path.join(p, e.name); const st = fs.statSync(f); out.push(`${f} ${st.size} ${st.mtimeMs}`); if (e.isDirectory()) walk(f); } };
  if (fs.existsSync(d)) walk(d);
  return out.sort();
}

beforeAll(async () => {
  makeBrain(db, [
    { content: 'Ada likes mint tea', category: 'core', namespace: 'voice' },
    { content: 'user: hi | assistant: hello', category: 'conversation', namespace: 'default' },
    { content: 'Ada is seven', namespace: 'person_pending:ada' },
    { content: 'Bob plays chess', namespace: 'person:bob' },
  ]);
  fs.chmodSync(db, 0o600);
  behaviour = await startService({
    'GET /api/voice/person_review_status': (req, res) => json(res, 200, { needs_review: false }),
    'GET /api/voice/take_photo': (req, res) => json(res, 200, { description: 'a cat on the sofa' }),
  });
  thinker = await startService({
    'GET /v1/models': (req, res) => json(res, 200, { object: 'list', data: [{ id: 'test-model' }] }),
    'POST /v1/chat/completions': (req, res) => json(res, 200, { choices: [{ message: { content: 'Because of Rayleigh scattering.' } }] }),
  });
  const authed = (fn) => (req, res, e) => (req.headers['x-admin-token'] === TOKEN ? fn(req, res, e) : json(res, 401, { error: 'unauthorized' }));
  xiaozhi = await startService({
    'GET /xiaozhi/admin/songs': authed((req, res) => json(res, 200, { files: ['Rain.mp3', 'Baby Shark.mp3'] })),
    'POST /xiaozhi/admin/play-asset': authed((req, res) => json(res, 200, { ok: true })),
  });
  base = {
    ...stdioEnv(dir),
    DOTTY_BRAIN_DB: db,
    DOTTY_BEHAVIOUR_URL: behaviour.url,
    VOICE_THINKER_URL: thinker.url + '/v1/chat/completions',
    VOICE_THINKER_MODEL: 'test-model',
    XIAOZHI_HOST: '127.0.0.1',
    XIAOZHI_HTTP_PORT: String(xiaozhi.port),
    DOTTY_ADMIN_TOKEN: TOKEN,
    MEMPALACE_FEED_BIN: '/nonexistent/exporter',
  };
}, 120_000);

afterAll(async () => {
  await behaviour?.close();
  await thinker?.close();
  await xiaozhi?.close();
});

describe('doctor', () => {
  it('a healthy setup: every line ok, exit 0, nothing written, no secret printed', async () => {
    const before = tree(dir);
    const r = await cli(['doctor'], base);
    expect(r.stdout, r.stderr).toMatch(/^ok: \d+ ok, 0 warnings, 0 failures$/m);
    expect(r.code).toBe(0);
    expect(line(r.stdout, 'brain.db schema')).toMatch(/^ok .*matches brain-schema.sql/);
    expect(line(r.stdout, 'brain.db journal')).toMatch(/ wal$/);
    expect(line(r.stdout, 'brain.db mode')).toMatch(/0600$/);
    expect(line(r.stdout, 'brain.db rows')).toMatch(/4; by category: core 3, conversation 1/);
    expect(line(r.stdout, 'brain.db pending')).toMatch(/1 facts waiting for review \(person_pending:ada 1\)/);
    expect(line(r.stdout, 'dotty-behaviour')).toMatch(/^ok .*HTTP 200 in \d+ ms: needs_review=false/);
    expect(line(r.stdout, 'llama-swap')).toMatch(/1 models, test-model among them/);
    expect(line(r.stdout, 'xiaozhi admin')).toMatch(/HTTP 200 in \d+ ms: 2 songs/);
    expect(line(r.stdout, 'palace handshake')).toMatch(/^ok .*\d+ ms, \d+ tools, server \S+ 3\.11\.0/);
    expect(line(r.stdout, 'env DOTTY_ADMIN_TOKEN')).toMatch(/set \(hidden\)$/);
    expect(line(r.stdout, 'env XIAOZHI_ADMIN_TIMEOUT_MS')).toMatch(/3000 \(default\)$/);
    expect(line(r.stdout, 'pi')).toMatch(/^ok .*pi-coding-agent 0\.7[34]\.\d/);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    expect(r.stdout).not.toContain('\x1b[');
    // The MemPalace server makes its own palace folder when it starts; doctor itself writes nothing.
    const ours = (t) => t.filter((f) => !f.startsWith(path.join(dir, 'palace-root')));
    expect(ours(tree(dir))).toEqual(ours(before));
    expect(fs.existsSync(path.join(base.PI_CODING_AGENT_DIR, 'mempalace-tools-cache.json'))).toBe(false);
  }, 90_000);

  it('--json: {status, exitCode, checks: [{name, status, detail, fix}]}', async () => {
    const r = await cli(['doctor', '--json'], { ...base, MEMPALACE_BRIDGE: '0' });
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(r.code).toBe(0);
    for (const c of j.checks) {
      expect(Object.keys(c).sort()).toEqual(['detail', 'fix', 'name', 'status']);
      expect(['ok', 'warn', 'fail']).toContain(c.status);
    }
    expect(j.checks.find((c) => c.name === 'palace')).toMatchObject({ status: 'ok', detail: 'bridge off (MEMPALACE_BRIDGE=0)', fix: null });
  });

  it('brain.db open in another process (WAL in use): read alongside it, the holder named, nothing written', async () => {
    const held = path.join(dir, 'held', 'brain.db');
    fs.mkdirSync(path.dirname(held));
    makeBrain(held, [{ content: 'x' }]);
    fs.chmodSync(held, 0o600);
    const holder = spawn(process.execPath, [path.join(root, '__test__/helpers/sqlite-child.cjs')], { stdio: ['pipe', 'pipe', 'pipe'] });
    holder.stdin.end(JSON.stringify({ op: 'hold-write-lock', file: held, ms: 8000 }));
    await new Promise((resolve, reject) => { holder.stderr.on('data', (d) => String(d).includes('LOCKED') && resolve()); holder.on('error', reject); });
    try {
      const before = tree(path.dirname(held));
      expect(before.some((f) => f.includes('brain.db-wal'))).toBe(true);
      const r = await cli(['doctor'], { ...base, MEMPALACE_BRIDGE: '0', DOTTY_BRAIN_DB: held });
      expect(line(r.stdout, 'brain.db holders')).toMatch(new RegExp(`^ok .*\\b${holder.pid} \\(node`));
      expect(line(r.stdout, 'brain.db schema')).toMatch(/^ok /);
      expect(line(r.stdout, 'brain.db rows')).toMatch(/^ok +brain.db rows +1;/);
      expect(r.code, r.stdout).toBe(0);
      expect(tree(path.dirname(held)).map((f) => f.split(' ')[0])).toEqual(before.map((f) => f.split(' ')[0]));
    } finally { holder.kill(); }
  });

  it('a missing brain.db fails with the fix, exit 2, and is not created', async () => {
    const missing = path.join(dir, 'nowhere', 'brain.db');
    const r = await cli(['doctor'], { ...base, MEMPALACE_BRIDGE: '0', DOTTY_BRAIN_DB: missing });
    expect(line(r.stdout, 'brain.db')).toMatch(/^fail .*nowhere\/brain.db does not exist \(DOTTY_BRAIN_DB is set/);
    expect(r.stdout).toMatch(/fix: point DOTTY_BRAIN_DB at Dotty's brain.db/);
    expect(r.code).toBe(2);
    expect(fs.existsSync(path.dirname(missing))).toBe(false);
  });

  it('a schema without the FTS table fails, exit 2', async () => {
    const noFts = path.join(dir, 'nofts.db');
    const schema = schemaSql.replace(/CREATE VIRTUAL TABLE[\s\S]*?END;\n(?=\nCREATE TABLE IF NOT EXISTS embedding_cache)/, '');
    expect(schema).not.toContain('memories_fts');
    execFileSync(process.execPath, [path.join(root, '__test__/helpers/sqlite-child.cjs')], { input: JSON.stringify({ op: 'create', file: noFts, schema, rows: [] }) });
    fs.chmodSync(noFts, 0o600);
    const r = await cli(['doctor'], { ...base, MEMPALACE_BRIDGE: '0', DOTTY_BRAIN_DB: noFts });
    expect(line(r.stdout, 'brain.db schema')).toMatch(/^fail .*missing table memories_fts/);
    expect(r.stdout).toMatch(/fix: the FTS index is missing/);
    expect(r.code).toBe(2);
  });

  it('a service that is down fails, exit 2', async () => {
    const r = await cli(['doctor'], { ...base, MEMPALACE_BRIDGE: '0', DOTTY_BEHAVIOUR_URL: `http://127.0.0.1:${await deadPort()}` });
    expect(line(r.stdout, 'dotty-behaviour')).toMatch(/^fail .*unreachable: Connection refused/);
    expect(r.stdout).toMatch(/fix: start dotty-behaviour or set DOTTY_BEHAVIOUR_URL/);
    expect(line(r.stdout, 'llama-swap')).toMatch(/^ok /);
    expect(r.code).toBe(2);
  });

  it('a wrong admin token: 401 says the token is wrong, exit 2', async () => {
    const r = await cli(['doctor'], { ...base, MEMPALACE_BRIDGE: '0', DOTTY_ADMIN_TOKEN: 'wrong' });
    expect(line(r.stdout, 'xiaozhi admin')).toMatch(/^fail .*HTTP 401 in \d+ ms: the token was refused/);
    expect(r.stdout).toMatch(/fix: set DOTTY_ADMIN_TOKEN to the admin token/);
    expect(r.stdout).not.toContain('wrong');
    expect(r.code).toBe(2);
  });

  it('a palace that stalls is reported within the timeout, exit 2', async () => {
    const t0 = Date.now();
    const r = await cli(['doctor'], { ...base, MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: `${faultServer} --slow-handshake 60000`, MEMPALACE_MCP_INIT_TIMEOUT_MS: '1500' });
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(line(r.stdout, 'palace handshake')).toMatch(/^fail .*no answer within 1500 ms: the palace stalls/);
    expect(r.code).toBe(2);
  });

  it('a stale tool cache warns, exit 1, and is left as it was', async () => {
    const agent = path.join(dir, 'stale-agent');
    fs.mkdirSync(agent, { recursive: true });
    const cache = path.join(agent, 'mempalace-tools-cache.json');
    const body = JSON.stringify({ format: 'dotty-pi-ext/mempalace-tools-cache', version: 1, key: `stdio:bash ${path.join(toolsDir, 'start-stdio.sh')}`, savedAtMs: Date.now() - 3 * 86_400_000, tools: [{ name: 'mempalace_gone', inputSchema: { type: 'object' } }] });
    fs.writeFileSync(cache, body);
    const r = await cli(['doctor'], { ...base, PI_CODING_AGENT_DIR: agent });
    expect(line(r.stdout, 'palace tool cache'), r.stdout).toMatch(/^warn .*1 tools, 3 days old, stale: differs from the server's \d+ tools/);
    expect(r.code).toBe(1);
    expect(fs.readFileSync(cache, 'utf8')).toBe(body);
  }, 90_000);

  it('--help', async () => {
    for (const cmd of ['doctor', 'call', 'feed']) {
      const r = await cli([cmd, '--help'], {});
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: dotty-pi-ext ${cmd}`));
    }
    expect((await cli(['--help'], {})).stdout).toMatch(/commands:/);
    expect((await cli(['nope'], {})).code).toBe(2);
  });
});

describe('call', () => {
  const callDb = path.join(dir, 'call-brain.db');
  let env;
  beforeAll(() => {
    makeBrain(callDb, [{ content: 'Ada likes mint tea' }, { content: 'Bob plays chess', namespace: 'person:bob' }]);
    env = { ...base, MEMPALACE_BRIDGE: '0', DOTTY_BRAIN_DB: callDb };
  });

  it.each([
    ['memory_lookup', { query: 'mint tea' }, 'Ada likes mint tea'],
    ['remember', { fact: 'the sky is blue' }, '(remembered)'],
    ['recall_person', { name: 'bob' }, 'Bob plays chess'],
    ['remember_person', { name: 'carol', fact: 'Carol sings' }, '(remembered about carol)'],
    ['think_hard', { question: 'why is the sky blue?' }, 'Because of Rayleigh scattering.'],
    ['take_photo', undefined, 'a cat on the sofa'],
    ['play_song', { name: 'rain' }, 'playing Rain'],
  ])('%s prints the reply', async (tool, args, reply) => {
    const r = await cli(['call', tool, ...(args ? [JSON.stringify(args)] : [])], env);
    expect(r.stdout, r.stderr).toBe(reply + '\n');
    expect(r.code).toBe(0);
  });

  it('remember wrote its row, as pi would', () => {
    expect(readRows(callDb).map((r) => r.content)).toContain('the sky is blue');
  });

  it('a palace tool prints its reply; a failing one exits 1 with the error', async () => {
    const ok = await cli(['call', 'mempalace_status'], base, { timeoutMs: 90_000 });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.length).toBeGreaterThan(2);
    const bad = await cli(['call', 'mempalace_no_such_tool', '{}'], base, { timeoutMs: 90_000 });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/dotty-pi-ext call mempalace_no_such_tool: .+/);
    expect(bad.stdout).toBe('');
  }, 180_000);

  it('arguments that are not JSON exit 1', async () => {
    const r = await cli(['call', 'remember', '{oops'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not JSON/);
  });
});

describe('feed', () => {
  it('--dry-run says what would be sent and writes nothing', async () => {
    const agent = path.join(dir, 'feed-agent');
    writeSession(path.join(agent, 'sessions', '--work--', 's1.jsonl'), [['user', 'hello'], ['assistant', 'hi there']]);
    const before = tree(dir);
    const r = await cli(['feed', '--dry-run'], { ...base, PI_CODING_AGENT_DIR: agent });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1 files, 1 pass the quality gate/);
    expect(r.stdout).toMatch(/would stage --work--\/s1.jsonl/);
    expect(r.stdout).toMatch(/would call mempalace_mine \(wing wing_conversations/);
    expect(r.stdout).toMatch(/dry run: nothing was written or sent/);
    expect(tree(dir)).toEqual(before);
  });

  it("pi's own MCP runs MemPalace over stdio: doctor, feed --dry-run and feed say pi writes and the bridge reads through a read-only twin, as pi's load does", async () => {
    const agent = path.join(dir, 'pi-mcp-twin-agent');
    fs.mkdirSync(agent, { recursive: true });
    fs.writeFileSync(path.join(agent, 'mcp.json'), JSON.stringify({ mcpServers: { memory: { command: '/nonexistent/mempalace-mcp', args: ['--palace', '/p'] } } }));
    const env = { ...base, PI_CODING_AGENT_DIR: agent, MEMPALACE_MCP_MAX_RESPAWNS: '0' };
    const writes = "pi's own MCP writes the palace; this bridge only reads it through a read-only twin, which can't mine";
    const doc = await cli(['doctor'], env);
    expect(line(doc.stdout, "pi's MCP"), doc.stdout).toContain(`pi's own MCP (mcp.json entry "memory", ${path.join(agent, 'mcp.json')}) writes; this bridge reads through a read-only twin (wake-up, recall)`);
    expect(line(doc.stdout, 'palace feed'), doc.stdout).toContain(`off (${writes})`);
    const plan = await cli(['feed', '--dry-run'], env);
    expect(plan.stdout).toBe(`feeding is off (${writes}): nothing would be sent\n`);
    const feed = await cli(['feed'], env);
    expect(feed.stdout, feed.stderr).toBe(`feeding is off (${writes})\n`);
    expect(fs.readdirSync(agent)).toEqual(['mcp.json']);
  }, 90_000);

  it("pi's own MCP runs MemPalace on another HTTP server: doctor, feed --dry-run and feed say the bridge stepped aside for that entry, as pi does", async () => {
    const agent = path.join(dir, 'pi-mcp-agent');
    fs.mkdirSync(agent, { recursive: true });
    fs.writeFileSync(path.join(agent, 'mcp.json'), JSON.stringify({ mcpServers: { memory: { url: 'http://127.0.0.1:9/mempalace' } } }));
    const env = { ...base, PI_CODING_AGENT_DIR: agent };
    const why = `pi's MCP runs the MemPalace server 'memory' of ${path.join(agent, 'mcp.json')}`;
    const doc = await cli(['doctor'], env);
    expect(line(doc.stdout, 'palace'), doc.stdout).toMatch(/^ok +palace +bridge off \(/);
    expect(line(doc.stdout, 'palace').endsWith(`  bridge off (${why})`), doc.stdout).toBe(true);
    expect(line(doc.stdout, "pi's MCP"), doc.stdout).toMatch(/pi's MCP runs a MemPalace server 'memory' .*the bridge steps aside \(an HTTP server that is not MEMPALACE_REMOTE_URL's/);
    const plan = await cli(['feed', '--dry-run'], env);
    expect(plan.stdout).toBe(`feeding is off (${why}): nothing would be sent\n`);
    const feed = await cli(['feed'], env);
    expect(feed.stdout, feed.stderr).toBe(`the MemPalace bridge is off (${why})\n`);
    expect(fs.readdirSync(agent)).toEqual(['mcp.json']);
  }, 90_000);

  it('feed runs the transcript feed once through the real palace and says what it sent', async () => {
    const agent = path.join(dir, 'feed-real-agent');
    writeSession(path.join(agent, 'sessions', '--work--', 's1.jsonl'), [['user', 'my cat is called Miso'], ['assistant', 'Miso is a lovely name']]);
    const env = { ...base, PI_CODING_AGENT_DIR: agent };
    const r = await cli(['feed'], env, { timeoutMs: 170_000 });
    expect(r.stdout, r.stderr).toMatch(/^fed \S*staging\S* to the palace: /);
    expect(r.code).toBe(0);
    const again = await cli(['feed'], env, { timeoutMs: 170_000 });
    expect(again.stdout, again.stderr).toBe('nothing to feed: no session changed since the last feed\n');
    expect(again.code).toBe(0);
    const doc = await cli(['doctor'], env, { timeoutMs: 60_000 });
    expect(line(doc.stdout, 'palace feed')).toMatch(/^ok .*last successful feed \d+ s ago \(1 sessions recorded\)/);
  }, 360_000);
});
