// What the bridge promises beyond a single fault (docs/mempalace-bridge.md, docs/configuration.md),
// each case a pi-like process of its own against the fault fixture: a server that keeps crashing
// and answering keeps coming back; a shared palace (the REAL `mempalace serve`) restarted by its
// owner is picked up again without /mempalace reconnect (MEMPALACE_MCP_RETRY_MS), a stdio palace
// that kept dying is tried again by itself and fed again once it starts, and a wrong
// token or an untrusted certificate is never tried again; MEMPALACE_EXT_DEBUG decides whether the server's stderr reaches
// pi's; a remote palace over https with a CA of its own, trusted through SSL_CERT_FILE; the warning
// for a token over plain http:// to another host.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers/brain.mjs';
import { fixture, makeCerts, nonLoopbackAddress, startFixtureHttp, startFront } from './helpers/mcp-fixture.mjs';
import { runNode } from './helpers/run-node.mjs';
import * as palace from './helpers/palace.mjs';
import { httpCommand, startHttp } from './helpers/palace.mjs';

const referenceToolCount = palace.referenceTools.tools.length;

const cleanup = [];
afterAll(() => Promise.all(cleanup.map((f) => f())));

const base = (dir) => ({ MEMPALACE_BRIDGE: '1', PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir, DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0' });
const stdioEnv = (dir, args = '', extra = {}) => ({ ...base(dir), MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: `${fixture} ${args}`.trim(), MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10', ...extra });

/**
 * The real stdio server on `dir`'s palace behind a command that fails while `broken` exists (a
 * palace on a disk not yet mounted): {env, broken, wrapper}; `wrapper` is the MEMPALACE_MCP_ARGS.
 */
function notYetMounted(dir) {
  const env = palace.stdioEnv(dir);
  const broken = path.join(dir, 'broken');
  const wrapper = path.join(dir, 'mempalace-when-mounted.sh');
  fs.writeFileSync(broken, '');
  fs.writeFileSync(wrapper, `[ -e ${JSON.stringify(broken)} ] && exit 3\nexec bash ${JSON.stringify(path.join(palace.toolsDir, 'start-stdio.sh'))} "$@"\n`);
  return { env, broken, wrapper };
}

/** A fixture over HTTP behind a front (see startFront); closed after the file. */
async function remote(args, front) {
  const srv = await startFixtureHttp(args);
  cleanup.push(() => srv.proc.kill());
  const f = await startFront(srv.port, front);
  cleanup.push(() => f.close());
  return f.url;
}

// Writes through the palace and reads them back: {tools, wrote, err}.
const writeAndRead = `
  const tools = await native.palaceTools();
  let wrote, err;
  try { wrote = (await native.callTool('store', { text: 'over the wire' }, null)).text; } catch (e) { err = e.message; }
  return { tools: tools.map((t) => t.name), wrote, err: err ?? null };`;

describe('the respawn budget', () => {
  it('resets after a successful call: a server that crashes, answers, crashes, answers… keeps coming back with MEMPALACE_MCP_MAX_RESPAWNS=2', async () => {
    const dir = tempDir('dotty-palace-flaky-');
    const faultFile = path.join(dir, 'fault');
    const store = path.join(dir, 'store.txt');
    // Each round: the next call crashes the server (a one-shot fault), the call after it respawns
    // the server and answers. Six crashes: three times the budget.
    const r = await runNode(
      `await native.palaceTools();
       const rounds = [];
       for (let i = 0; i < 6; i++) {
         require('fs').writeFileSync(${JSON.stringify(faultFile)}, 'crash');
         let crashed; try { await native.callTool('store', { text: 'lost-' + i }, null); } catch (e) { crashed = e.message; }
         let answered, err; try { answered = (await native.callTool('store', { text: 'kept-' + i }, null)).text; } catch (e) { err = e.message; }
         rounds.push({ crashed, answered, err: err ?? null });
       }
       return { rounds, stats: native.stats() };`,
      stdioEnv(dir, `--fault-file ${faultFile} --store ${store}`, { MEMPALACE_MCP_MAX_RESPAWNS: '2' }),
      { timeoutMs: 60_000 },
    );
    expect(r.error).toBeUndefined();
    for (const round of r.result.rounds) {
      expect(round.crashed).toMatch(/MemPalace crashed: the server exited/);
      expect(round).toMatchObject({ answered: 'stored', err: null });
    }
    expect(r.result.stats).toMatchObject({ mcpSpawns: 7, palaceConnected: true });
    // Only the answered writes are stored (a crashed call is not replayed behind the user's back).
    expect(fs.readFileSync(store, 'utf8').trim().split('\n')).toEqual([0, 1, 2, 3, 4, 5].map((i) => `kept-${i}`));
  });
});

/**
 * A real `mempalace serve` over HTTP with a token, and the command that starts it again on the same
 * port (the OS chose it for the first start), the same palace and token, writing its PID to
 * `pidFile`; both processes are killed at cleanup.
 */
function restartableServer(name) {
  const dir = tempDir(`dotty-palace-${name}-`);
  const token = `${name}-token-` + name[0].repeat(16);
  const srv = startHttp(dir, token);
  const pidFile = path.join(dir, 'restarted.pid');
  cleanup.push(async () => {
    for (const pid of [srv.pid, Number(fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8'))]) {
      try { if (pid) process.kill(pid, 'SIGKILL'); } catch {}
    }
  });
  return { dir, token, srv, pidFile, restart: httpCommand(dir, token, new URL(srv.url).port) };
}

describe('a bridge that always comes back (MEMPALACE_MCP_RETRY_MS)', () => {
  it('picks up the real `mempalace serve` over HTTP again after its owner killed it and started it on the same port: no reconnect', async () => {
    const { dir, token, srv, pidFile, restart } = restartableServer('restart');
    const status = `(await native.palaceCommand('status')).split('\\n')[0]`;
    const r = await runNode(
      `const { execFileSync } = require('node:child_process');
       const tools = await native.palaceTools();
       const before = (await native.callTool('mempalace_diary_write', { agent_name: 'back', entry: 'before.restart|ok' }, null)).text;
       process.kill(${srv.pid}, 'SIGKILL');
       // Calls during the outage fail; the respawn budget is spent and the bridge is down.
       const outage = [];
       for (let i = 0; i < 10 && !/MemPalace is down/.test(outage.at(-1) ?? ''); i++) {
         try { await native.callTool('mempalace_status', {}, null); outage.push('answered'); } catch (e) { outage.push(e.message); }
       }
       const down = { stats: native.stats(), footer: native.palaceStatus(), status: ${status} };
       const t0 = performance.now();
       let quick; try { await native.callTool('mempalace_status', {}, null); } catch (e) { quick = e.message; }
       const quickMs = performance.now() - t0;
       const out = execFileSync(${JSON.stringify(restart.file)}, ${JSON.stringify(restart.args)}, { env: ${JSON.stringify(restart.env)}, encoding: 'utf8', timeout: 60000 });
       require('fs').writeFileSync(${JSON.stringify(pidFile)}, out.match(/PID=(\\d+)/)[1]);
       // The server answers again; the next try is due in palaceNextTryMs: the first call after
       // that makes it, or waits for the background one under way, which may have begun just
       // before the server listened and then fails: the call after it makes it.
       let read; const missed = [];
       while (read === undefined && missed.length < 3) {
         await new Promise((resolve) => setTimeout(resolve, native.stats().palaceNextTryMs ?? 0));
         try { read = (await native.callTool('mempalace_diary_read', { agent_name: 'back' }, null)).text; } catch (e) { missed.push(e.message); }
       }
       const write = (await native.callTool('mempalace_diary_write', { agent_name: 'back', entry: 'after.restart|ok' }, null)).text;
       return { tools: tools.length, before, outage, down, quick, quickMs, missed, read, write, stats: native.stats(), footer: native.palaceStatus(), status: ${status} };`,
      { ...base(dir), MEMPALACE_REMOTE_URL: srv.url, MEMPALACE_REMOTE_TOKEN: token, MEMPALACE_MCP_RETRY_MS: '300', MEMPALACE_MCP_MAX_RESPAWNS: '1', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10' },
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.tools).toBe(47);
    expect(r.result.before).toContain('"success": true');
    expect(r.result.outage.at(-1)).toMatch(/^MemPalace is down: gave up after 1 respawns \(last error: .*cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp.*\); next try (in \d+ s|now), or `\/mempalace reconnect` now$/);
    expect(r.result.down.stats).toMatchObject({ palaceConnected: false, palaceDown: true });
    expect(r.result.down.stats.palaceNextTryMs).toBeLessThanOrEqual(300);
    expect(r.result.down.footer).toMatch(/^MemPalace: down, next try (in 1 s|now)$/);
    expect(r.result.down.status).toMatch(/^MemPalace is down: gave up after 1 respawns .*; next try (in 1 s|now), or `\/mempalace reconnect` now$/);
    expect(r.result.quick).toMatch(/MemPalace is down/);
    expect(r.result.quickMs).toBeLessThan(1000); // at once: the next try is not due (a bound for a loaded machine)
    // Back, with no reconnect: the palace tools work (the entry written before the restart is read back),
    // at the latest on the call after a try that began before the server listened.
    expect(r.result.missed.length, r.result.missed.join('\n')).toBeLessThanOrEqual(1);
    expect(r.result.read).toContain('before.restart');
    expect(r.result.write).toContain('"success": true');
    expect(r.result.stats).toMatchObject({ palaceConnected: true, palaceDown: false });
    expect(r.result.stats).not.toHaveProperty('palaceNextTryMs'); // no try scheduled: up
    expect(r.result.footer).toBe('MemPalace: ready · 47 tools');
    expect(r.result.status).toBe('MemPalace: ready · 47 tools');
    // One line for the give-up, saying when it tries again; none per failed try.
    const lines = r.stderr.split('\n').filter((l) => /mempalace/i.test(l));
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/MemPalace is down: gave up after 1 respawns .*; next try in 1 s, or `\/mempalace reconnect` now \(until then palace tools fail and transcripts are not fed\)/);
    expect(r.stderr).not.toContain(token);
  });

  it('is back at once when the real `mempalace serve` over HTTP answers /healthz again: a call made while down probes it (one per 2 s), long before the slow schedule', async () => {
    const { dir, token, srv, pidFile, restart } = restartableServer('back');
    const r = await runNode(
      `const { execFileSync } = require('node:child_process');
       await native.palaceTools();
       process.kill(${srv.pid}, 'SIGKILL');
       for (let i = 0; i < 10 && !native.stats().palaceDown; i++) { try { await native.callTool('mempalace_status', {}, null); } catch {} }
       const down = native.stats();
       const out = execFileSync(${JSON.stringify(restart.file)}, ${JSON.stringify(restart.args)}, { env: ${JSON.stringify(restart.env)}, encoding: 'utf8', timeout: 60000 });
       require('fs').writeFileSync(${JSON.stringify(pidFile)}, out.match(/PID=(\\d+)/)[1]);
       // Calls every 100 ms: the first ones fail at once (down); one of them probes /healthz, which
       // answers, and the bridge connects again in the background.
       const t0 = performance.now();
       let calls = 0, failedFast = 0, back = null;
       while (performance.now() - t0 < 20000) {
         calls++;
         const c0 = performance.now();
         try { back = (await native.callTool('mempalace_status', {}, null)).text; break; } catch (e) { if (performance.now() - c0 < 100) failedFast++; }
         await new Promise((r) => setTimeout(r, 100));
       }
       return { down, backMs: Math.round(performance.now() - t0), calls, failedFast, back, stats: native.stats() };`,
      { ...base(dir), MEMPALACE_REMOTE_URL: srv.url, MEMPALACE_REMOTE_TOKEN: token, MEMPALACE_MCP_RETRY_MS: '600000', MEMPALACE_MCP_MAX_RESPAWNS: '0', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10' },
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.down).toMatchObject({ palaceConnected: false, palaceDown: true });
    expect(r.result.down.palaceNextTryMs).toBeGreaterThan(500_000); // the slow schedule: 10 min away
    expect(typeof r.result.back, `not back within 20 s (${r.result.calls} calls)`).toBe('string');
    expect(r.result.backMs).toBeLessThan(20_000);
    expect(r.result.failedFast).toBe(r.result.calls - 1); // each failed call failed at once
    expect(r.result.stats).toMatchObject({ palaceConnected: true, palaceDown: false });
    console.log(`[palace-recovery] back ${r.result.backMs} ms after the restart, ${r.result.calls} calls`);
  }, 150_000);

  it('feeds again by itself once a stdio palace that kept dying starts: the background try brings it back, no call needed', async () => {
    const dir = tempDir('dotty-palace-feed-back-');
    const { env, broken, wrapper } = notYetMounted(dir);
    palace.writeSession(path.join(env.PI_CODING_AGENT_DIR, 'sessions', '--work--', 's1.jsonl'), [['user', 'our tortoise Quentin hibernates in the cellar'], ['assistant', 'Quentin sounds cosy']]);
    const r = await runNode(
      `const fs = require('node:fs');
       let start; try { await native.palaceTools(); } catch (e) { start = e.message; }
       const down = { stats: native.stats(), feed: await native.feedOnce() };
       fs.unlinkSync(${JSON.stringify(broken)});
       // Nothing calls the palace now: the client's own next try (in palaceNextTryMs) brings it back.
       const t0 = Date.now();
       while (!native.stats().palaceConnected && Date.now() - t0 < 20000) await new Promise((r) => setTimeout(r, 50));
       const feed = await native.feedOnce();
       const found = (await native.callTool('mempalace_search', { query: 'tortoise Quentin hibernates' }, null)).text;
       await native.sessionShutdown('quit');
       return { start, down, feed, found, stats: native.stats() };`,
      { ...env, MEMPALACE_MCP_ARGS: wrapper, MEMPALACE_FEED: '1', DOTTY_VOICE_TOOLS: '0', MEMPALACE_MCP_RETRY_MS: '300', MEMPALACE_MCP_MAX_RESPAWNS: '1', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10' },
      { timeoutMs: 120_000 },
    );
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.result.down.stats).toMatchObject({ palaceConnected: false, palaceDown: true });
    expect(r.result.down.feed.ok).toBe(false);
    expect(r.result.down.feed.text).toMatch(/^skipped: the palace can't be reached/);
    expect(r.result.stats.mcpSpawns).toBeGreaterThanOrEqual(3); // the start, its respawn, the try that worked
    expect(r.result.feed.ok, r.result.feed.text).toBe(true);
    expect(r.result.found).toContain('Quentin hibernates in the cellar');
  }, 150_000);

  it('a palace that was down at the first prompt and came back on its own: the next prompt gets the wake-up and pi gets its tools', async () => {
    const dir = tempDir('dotty-palace-late-wakeup-');
    const { env, broken, wrapper } = notYetMounted(dir);
    const r = await runNode(
      `const fs = require('node:fs');
       // pi's before_agent_start, as pi runs it: each handler in order, their messages kept.
       const run = async (prompt) => {
         const messages = [];
         for (const h of handlers.get('before_agent_start') ?? []) {
           const r = await h({ type: 'before_agent_start', prompt, messageType: 'user', systemPrompt: '' }, {});
           if (r?.message) messages.push(r.message.customType);
         }
         return { messages, tools: [...tools.keys()].filter((n) => n.startsWith('mempalace_')).length };
       };
       for (const h of handlers.get('session_start')) await h({ type: 'session_start', reason: 'startup' }, {});
       const down = await run('what did we decide about the backups?');
       fs.unlinkSync(${JSON.stringify(broken)});
       // Nothing calls the palace now: the client's own next try (in palaceNextTryMs) brings it back.
       const t0 = Date.now();
       while (!native.stats().palaceConnected && Date.now() - t0 < 20000) await new Promise((r) => setTimeout(r, 50));
       const back = await run('and the offsite copy?');
       const later = await run('thanks');
       await native.sessionShutdown('quit');
       return { down, back, later };`,
      { ...env, MEMPALACE_MCP_ARGS: wrapper, DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', MEMPALACE_MCP_RETRY_MS: '300', MEMPALACE_MCP_MAX_RESPAWNS: '1', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10' },
      { timeoutMs: 120_000 },
    );
    expect(r.error, r.stderr).toBeUndefined();
    // Down: no wake-up and no palace tools (no cache: the palace never listed them here).
    expect(r.result.down).toEqual({ messages: [], tools: 0 });
    // Back: the owed wake-up, once, and all the palace's tools, registered before the run.
    expect(r.result.back.messages).toEqual(['mempalace-wakeup']);
    expect(r.result.back.tools).toBe(referenceToolCount);
    expect(r.result.later).toEqual({ messages: [], tools: referenceToolCount });
  }, 150_000);

  it('stays down after a wrong token: one stderr line, and the server sees nothing after its first refusal', async () => {
    const dir = tempDir('dotty-palace-wrong-token-');
    const log = path.join(dir, 'requests.jsonl');
    const srv = await startFixtureHttp(['--token', 'the-right-token', '--log', log]);
    cleanup.push(() => srv.proc.kill());
    const r = await runNode(
      `const tools = await native.palaceTools();
       const errs = [];
       for (let i = 0; i < 3; i++) { try { await native.callTool('store', { text: 'x' }, null); } catch (e) { errs.push(e.message); } }
       // Past a few retry periods (300 ms, 600 ms): nothing is to happen, so there is no event to await.
       await new Promise((resolve) => setTimeout(resolve, 1500));
       try { await native.callTool('store', { text: 'y' }, null); } catch (e) { errs.push(e.message); }
       return { tools: tools.length, errs, stats: native.stats(), footer: native.palaceStatus(), status: (await native.palaceCommand('status')).split('\\n')[0] };`,
      { ...base(dir), MEMPALACE_REMOTE_URL: `http://127.0.0.1:${srv.port}/mcp`, MEMPALACE_REMOTE_TOKEN: 'a-wrong-token', MEMPALACE_MCP_RETRY_MS: '300', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10' },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.tools).toBe(0);
    expect(r.result.errs).toHaveLength(4);
    for (const e of r.result.errs) expect(e).toMatch(/unauthorized \(HTTP 401\)/);
    expect(r.result.stats).toMatchObject({ palaceDown: true, mcpSpawns: 1 });
    expect(r.result.stats).not.toHaveProperty('palaceNextTryMs'); // down for good: no try scheduled
    expect(r.result.footer).toBe('MemPalace: down (/mempalace)');
    expect(r.result.status).toMatch(/^MemPalace is down: unauthorized \(HTTP 401\)/);
    expect(r.result.status).not.toMatch(/next try/);
    const seen = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(seen).toHaveLength(1); // the initialize that was refused: no retry, no health check
    expect(seen[0].method).toBe('initialize');
    const lines = r.stderr.split('\n').filter((l) => l.trim());
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/unauthorized \(HTTP 401\)/);
  });
});

describe('MEMPALACE_EXT_DEBUG', () => {
  // The fixture writes "fixture stderr noise" lines to its stderr at start, before it answers.
  const run = (dir, extra) => runNode(
    `const tools = await native.palaceTools(); await native.sessionShutdown('quit'); return tools.length;`,
    stdioEnv(dir, '--stderr-flood 2000', extra),
  );

  it('=1 copies the server\'s stderr to pi\'s, each line prefixed "mempalace: "', async () => {
    const r = await run(tempDir('dotty-palace-debug-'), { MEMPALACE_EXT_DEBUG: '1' });
    expect(r.result).toBe(6);
    const copied = r.stderr.split('\n').filter((l) => l.includes('fixture stderr noise'));
    expect(copied.length).toBeGreaterThan(0);
    for (const line of copied) expect(line).toMatch(/^(\[dotty-pi-ext\] )?mempalace: fixture stderr noise/);
  });

  it('unset, the server\'s stderr is drained and pi\'s stays silent', async () => {
    const r = await run(tempDir('dotty-palace-quiet-'), {});
    expect(r.result).toBe(6);
    expect(r.stderr).not.toContain('fixture stderr noise');
    expect(r.stderr.trim()).toBe('');
  });
});

describe('a remote palace over https with a CA of its own', () => {
  const token = 'tls-token-' + 'k'.repeat(20);

  it('is trusted through SSL_CERT_FILE: the handshake, a write and the token go over TLS', async () => {
    const dir = tempDir('dotty-palace-tls-');
    const certs = makeCerts(dir);
    const url = await remote(['--token', token, '--store', path.join(dir, 'store.txt'), '--session'], { tls: { key: fs.readFileSync(certs.key), cert: fs.readFileSync(certs.cert) } });
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const env = { ...base(dir), MEMPALACE_REMOTE_URL: url, MEMPALACE_REMOTE_TOKEN: token, MEMPALACE_MCP_MAX_RESPAWNS: '0' };

    const trusted = await runNode(writeAndRead, { ...env, SSL_CERT_FILE: certs.ca });
    expect(trusted.error).toBeUndefined();
    expect(trusted.result).toMatchObject({ wrote: 'stored', err: null });
    expect(trusted.result.tools).toContain('store');
    expect(fs.readFileSync(path.join(dir, 'store.txt'), 'utf8')).toBe('over the wire\n');

    // The same server without its CA: refused as a certificate nobody vouches for, token unsaid.
    const untrusted = await runNode(writeAndRead, env);
    expect(untrusted.error).toBeUndefined();
    expect(untrusted.result.tools).toEqual([]);
    expect(untrusted.result.err).toMatch(/cannot reach https:\/\/127\.0\.0\.1:\d+\/mcp: invalid peer certificate: UnknownIssuer/);
    for (const text of [untrusted.result.err, untrusted.stderr, trusted.stderr]) expect(text).not.toContain(token);

    // A certificate that fails verification is never tried again: no respawn, no later try.
    const fatal = await runNode(`${writeAndRead.replace(/return \{/, 'return { stats: native.stats(),')}`, { ...env, MEMPALACE_MCP_MAX_RESPAWNS: '2', MEMPALACE_MCP_RETRY_MS: '300' });
    expect(fatal.error).toBeUndefined();
    expect(fatal.result.err).toMatch(/TLS certificate is not trusted: cannot reach https:\/\/127\.0\.0\.1:\d+\/mcp: invalid peer certificate: UnknownIssuer/);
    expect(fatal.result.stats).toMatchObject({ mcpSpawns: 1, mcpRespawns: 0, palaceDown: true });
    expect(fatal.result.stats).not.toHaveProperty('palaceNextTryMs');
  });
});

describe('a token over plain http://', () => {
  const token = 'plain-token-' + 'w'.repeat(20);
  const warning = /warning: MEMPALACE_REMOTE_TOKEN is sent over plain http:\/\//;

  it('to a host that is not loopback: one warning on stderr, naming the host, never the token; the palace still works', async () => {
    const dir = tempDir('dotty-palace-plain-');
    const host = nonLoopbackAddress();
    const url = await remote(['--token', token, '--store', path.join(dir, 'store.txt')], { host });
    const r = await runNode(
      `${writeAndRead.replace(/return .*;\s*$/, '')}
       const again = (await native.callTool('store', { text: 'twice' }, null)).text;
       return { wrote, err: err ?? null, again };`,
      { ...base(dir), MEMPALACE_REMOTE_URL: url, MEMPALACE_REMOTE_TOKEN: token },
    );
    expect(r.error).toBeUndefined();
    expect(r.result).toMatchObject({ wrote: 'stored', again: 'stored', err: null });
    const lines = r.stderr.split('\n').filter((l) => warning.test(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(host);
    expect(r.stderr).not.toContain(token);
  });

  it('stays quiet for a loopback host, or without a token', async () => {
    const dir = tempDir('dotty-palace-plain-quiet-');
    const loopback = await remote(['--token', token, '--store', path.join(dir, 'a.txt')], {});
    const noToken = await remote(['--store', path.join(dir, 'b.txt')], { host: nonLoopbackAddress() });
    for (const env of [{ MEMPALACE_REMOTE_URL: loopback, MEMPALACE_REMOTE_TOKEN: token }, { MEMPALACE_REMOTE_URL: noToken }]) {
      const r = await runNode(writeAndRead, { ...base(dir), ...env });
      expect(r.result, JSON.stringify(env)).toMatchObject({ wrote: 'stored', err: null });
      expect(r.stderr).not.toMatch(warning);
    }
  });
});
