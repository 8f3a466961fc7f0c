// A container without a CA bundle (distroless, a `-slim` image without ca-certificates, a trimmed
// Alpine): the home services are plain http:// and need no certificate, so every voice tool answers;
// doctor says which store of roots https:// would use (Mozilla's, compiled in); a shared palace over
// https:// signed by a CA of its own, named in SSL_CERT_FILE, verifies, and a self-signed one still
// fails with its one line. Each case a process of its own in a private mount namespace where /etc/ssl
// (and /etc/pki) are empty (helpers/no-ca-store.mjs). On glibc here, and in the musl Node by
// scripts/musl-check.sh (vitest.musl.config.mjs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { json } from './helpers/services.mjs';
import { runNode } from './helpers/run-node.mjs';
import { withoutCaStore } from './helpers/no-ca-store.mjs';
import { makeCerts, makeSelfSigned, startFixtureHttp, startFront } from './helpers/mcp-fixture.mjs';
import { startHome } from './e2e/home.mjs';

const bare = () => withoutCaStore();

/** `dotty-pi-ext doctor --json` without a CA store, in `env` alone: its checks by name. */
async function doctor(env) {
  const [cmd, ...args] = [...bare(), process.execPath, path.join(root, 'bin/dotty-pi-ext.js'), 'doctor', '--json'];
  const out = await new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env: { PATH: process.env.PATH, HOME: tempDir('dotty-no-ca-doctor-'), MEMPALACE_BRIDGE: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  expect(out.stdout, out.stderr).toMatch(/^\{/);
  return Object.fromEntries(JSON.parse(out.stdout).checks.map((c) => [c.name, c]));
}
const cleanup = [];
afterAll(() => Promise.all(cleanup.map((f) => f())));

/** What the process sees in /etc/ssl: nothing, in the namespace. */
const etcSsl = `require('fs').existsSync('/etc/ssl') ? require('fs').readdirSync('/etc/ssl') : null`;
/** The addon files the process mapped. */
const mapped = `[...new Set(require('fs').readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.slice(l.indexOf('/'))).filter((f) => /dotty-pi-ext[^/]*\\.node$/.test(f)).map((f) => require('path').basename(f)))]`;
/** The addon of this run's libc (the musl suite sets DOTTY_EXPECT_LIBC=musl). */
const addon = `dotty-pi-ext.linux-x64-${process.env.DOTTY_EXPECT_LIBC === 'musl' ? 'musl' : 'gnu'}.node`;

describe('no CA certificates on the system', () => {
  let home;
  beforeAll(async () => {
    home = await startHome({ brainRows: [
      { content: 'The lighthouse is painted red and white', namespace: 'voice' },
      { content: 'Alice has a cat called Miso', namespace: 'person:alice', importance: 0.9 },
    ] });
    home.llama.route('GET /v1/models', (_q, res) => json(res, 200, { object: 'list', data: [{ id: 'qwen3.6:27b-think' }] }));
    cleanup.push(() => home.close());
  });

  it('every voice tool answers over plain http:// as with a store', async () => {
    const calls = [
      ['memory_lookup', { query: 'lighthouse' }, 'The lighthouse is painted red and white'],
      ['recall_person', { name: 'Alice' }, 'Alice has a cat called Miso'],
      ['remember', { fact: 'The garden has three apple trees' }, '(remembered)'],
      ['remember_person', { name: 'Bob', fact: 'Bob builds model trains' }, '(remembered about Bob)'],
      ['think_hard', { question: 'Why is the sky blue?' }, 'Rayleigh scattering.'],
      ['play_song', { name: 'twinkle' }, 'playing twinkle_twinkle'],
      ['take_photo', {}, 'A child holding a red balloon.'],
    ];
    const r = await runNode(
      `const replies = [];
       for (const [name, params] of ${JSON.stringify(calls.map(([n, p]) => [n, p]))}) replies.push(await ext.text(name, params));
       return { replies, etcSsl: ${etcSsl}, mapped: ${mapped} };`,
      { ...home.env, HOME: tempDir('dotty-no-ca-home-') },
      { prefix: bare() },
    );
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.result.etcSsl, 'the namespace hides the CA store').toEqual([]);
    expect(r.result.mapped, "the addon of this run's libc").toEqual([addon]);
    expect(r.result.replies).toEqual(calls.map(([, , reply]) => reply));
    expect(r.stderr).not.toMatch(/HTTP client setup failed|CA certificates/);
    // The services were really asked (nothing answered from a failure path).
    expect(home.behaviour.requests.map((q) => q.path).sort()).toEqual(['/api/voice/person_review_status', '/api/voice/take_photo']);
    expect(home.llama.requests.map((q) => q.path)).toEqual(['/v1/chat/completions']);
    expect(home.xiaozhi.requests.map((q) => q.path)).toEqual(['/xiaozhi/admin/songs', '/xiaozhi/admin/play-asset']);
  });

  it('doctor says the bundled store is in use, and how many roots it has; the services are reached', async () => {
    const checks = await doctor({ ...home.env, MEMPALACE_BRIDGE: '0' });
    expect(checks['tls roots'].status).toBe('ok');
    expect(checks['tls roots'].detail).toMatch(/^bundled \(Mozilla's, compiled in\): \d{3} roots; the system has no CA certificates$/);
    for (const name of ['dotty-behaviour', 'llama-swap', 'xiaozhi admin']) expect(checks[name], `${name}: ${JSON.stringify(checks[name])}`).toMatchObject({ status: 'ok' });
  });
});

describe('a shared palace over https://, no CA certificates on the system', () => {
  const token = 'no-ca-token-' + 'k'.repeat(20);
  let dir, certs, env;
  const remote = async (tls) => {
    const srv = await startFixtureHttp(['--token', token, '--store', path.join(dir, 'store.txt'), '--session']);
    cleanup.push(() => srv.proc.kill());
    const front = await startFront(srv.port, { tls });
    cleanup.push(() => front.close());
    return front.url;
  };
  const writeAndRead = `
    const tools = await native.palaceTools();
    let wrote, err;
    try { wrote = (await native.callTool('store', { text: 'over the wire' }, null)).text; } catch (e) { err = e.message; }
    return { tools: tools.map((t) => t.name), wrote, err: err ?? null, etcSsl: ${etcSsl} };`;
  beforeAll(() => {
    dir = tempDir('dotty-no-ca-palace-');
    certs = makeCerts(dir);
    env = { MEMPALACE_BRIDGE: '1', PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir, DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', MEMPALACE_REMOTE_TOKEN: token, MEMPALACE_MCP_MAX_RESPAWNS: '0' };
  });

  it('signed by a CA of its own named in SSL_CERT_FILE: verified, the handshake, a write and the token go over TLS', async () => {
    const url = await remote({ key: fs.readFileSync(certs.key), cert: fs.readFileSync(certs.cert) });
    const r = await runNode(writeAndRead, { ...env, MEMPALACE_REMOTE_URL: url, SSL_CERT_FILE: certs.ca }, { prefix: bare() });
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.result.etcSsl).toEqual([]);
    expect(r.result).toMatchObject({ wrote: 'stored', err: null });
    expect(r.result.tools).toContain('store');
    expect(fs.readFileSync(path.join(dir, 'store.txt'), 'utf8')).toBe('over the wire\n');
    expect(r.stderr).not.toContain(token);
  });

  it("doctor names SSL_CERT_FILE's store and its one root; a file that isn't there trusts nothing, and says so", async () => {
    const named = await doctor({ SSL_CERT_FILE: certs.ca });
    expect(named['tls roots']).toMatchObject({ status: 'ok', detail: `SSL_CERT_FILE=${certs.ca}: 1 root` });
    const missing = path.join(dir, 'no-such-ca.pem');
    const none = await doctor({ SSL_CERT_FILE: missing });
    expect(none['tls roots'].status).toBe('fail');
    const said = none['tls roots'].detail;
    expect(said.startsWith(`SSL_CERT_FILE=${missing}: no usable certificate, so nothing over https:// is trusted (http:// needs none)`), said).toBe(true);
  });

  it("SSL_CERT_FILE naming no certificate: nothing is trusted, never another store; stderr says why once", async () => {
    const url = await remote({ key: fs.readFileSync(certs.key), cert: fs.readFileSync(certs.cert) });
    const missing = path.join(dir, 'no-such-ca.pem');
    const r = await runNode(writeAndRead, { ...env, MEMPALACE_REMOTE_URL: url, SSL_CERT_FILE: missing }, { prefix: bare() });
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.result.tools).toEqual([]);
    expect(r.result.err).toMatch(/MemPalace's TLS certificate is not trusted: .*invalid peer certificate: UnknownIssuer/);
    const lines = r.stderr.split('\n').filter((l) => l.trim());
    expect(lines.filter((l) => l.includes('TLS: ')), r.stderr).toEqual([`[dotty-pi-ext] TLS: SSL_CERT_FILE=${missing}: no usable certificate, so nothing over https:// is trusted (http:// needs none) (failed to read PEM from file: No such file or directory (os error 2) at '${missing}')`]);
    expect(r.stderr).not.toContain(token);
  });

  it('self-signed: refused (the bundled roots vouch for nothing here), in one stderr line, the token unsaid', async () => {
    const self = makeSelfSigned(dir);
    const url = await remote({ key: fs.readFileSync(self.key), cert: fs.readFileSync(self.cert) });
    const r = await runNode(writeAndRead, { ...env, MEMPALACE_REMOTE_URL: url }, { prefix: bare() });
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.result.tools).toEqual([]);
    const why = /MemPalace's TLS certificate is not trusted: cannot reach https:\/\/127\.0\.0\.1:\d+\/mcp: invalid peer certificate: UnknownIssuer/;
    expect(r.result.err).toMatch(why);
    const lines = r.stderr.split('\n').filter((l) => l.trim());
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(why);
    for (const text of [r.result.err, r.stderr]) expect(text).not.toContain(token);
  });
});
