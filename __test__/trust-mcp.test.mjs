// The MCP client's half of docs/trust.md, through index.js in a pi-like
// process of its own, against REAL hostile peers: the fault fixture flooding pings, sending 16/32 MiB
// lines, stalling behind a wrapper script, an HTTP origin that redirects elsewhere. Memory is the RSS
// of the process that runs the extension. Figures go to stderr (FIGURE lines).
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';

const fixture = path.join(root, '__test__/fixtures/fault_mcp_server.py');
const wrapper = path.join(root, '__test__/fixtures/wrapped_mcp_server.sh');
const MB = 1024 * 1024;

function stdioEnv(dir, args, extra = {}) {
  return {
    MEMPALACE_BRIDGE: '1', MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: `${fixture} ${args}`,
    MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10', PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir, DOTTY_VOICE_TOOLS: '0', ...extra,
  };
}

// Samples this process's RSS every 20 ms while the extension works (native work runs on its own
// threads, so the event loop is free); `rss.peak()` is the highest seen.
const rssProbe = `
  const rss = () => process.memoryUsage().rss;
  const probe = (() => { let peak = rss(); const t = setInterval(() => { peak = Math.max(peak, rss()); }, 20); return { peak: () => Math.max(peak, rss()), reset: () => { peak = rss(); }, stop: () => clearInterval(t) }; })();
  const settle = () => new Promise((r) => setTimeout(r, 300));`;

/** The pids whose process group is `pgid` and that are not zombies (from /proc). */
const groupScan = `
  const fs = require('fs');
  const liveInGroup = (pgid) => fs.readdirSync('/proc').filter((d) => /^\\d+$/.test(d)).filter((d) => {
    try { const s = fs.readFileSync('/proc/' + d + '/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return f[0] !== 'Z' && Number(f[2]) === pgid; } catch { return false; }
  }).map(Number);
  const alive = (pid) => { try { const s = fs.readFileSync('/proc/' + pid + '/stat', 'utf8'); return s.slice(s.lastIndexOf(')') + 2)[0] !== 'Z'; } catch { return false; } };`;

function figure(what, value) {
  process.stderr.write(`FIGURE ${what}: ${value}\n`);
}

const cleanup = [];
afterAll(() => cleanup.forEach((f) => f()));

describe('MCP client trust and limits', () => {
  it('a server that floods pings and never reads stdin is killed, counted against the respawn budget, and memory stays bounded', async () => {
    const dir = tempDir('dotty-mcp-flood-');
    const r = await runNode(
      `${rssProbe} ${groupScan}
       const base = rss(); const pids = new Set();
       const watch = setInterval(() => { const p = native.stats().mcpChildPid; if (p) pids.add(p); }, 5);
       const t0 = performance.now();
       const tools = await native.palaceTools();
       const downMs = performance.now() - t0;
       const t1 = performance.now();
       let err; try { await native.callTool('echo', {}, null); } catch (e) { err = e.message; }
       const failMs = performance.now() - t1;
       clearInterval(watch);
       const peak = probe.peak(); await settle(); probe.stop();
       return { base, peak, after: rss(), downMs, failMs, err, tools: tools.length, stats: native.stats(), leftAlive: [...pids].filter(alive) };`,
      stdioEnv(dir, '--ping-flood', { MEMPALACE_MCP_MAX_RESPAWNS: '1', MEMPALACE_MCP_INIT_TIMEOUT_MS: '4000' }),
      { timeoutMs: 30_000 },
    );
    expect(r.error).toBeUndefined();
    const { base, peak, after, downMs, failMs } = r.result;
    figure('ping flood: RSS growth MB (peak, after)', `${((peak - base) / MB).toFixed(0)}, ${((after - base) / MB).toFixed(0)}; down after ${downMs.toFixed(0)} ms`);
    expect(peak - base).toBeLessThan(256 * MB);
    expect(after - base).toBeLessThan(64 * MB);
    expect(r.result.tools).toBe(0);
    expect(r.result.stats.mcpSpawns).toBe(2); // the first start and MAX_RESPAWNS=1 respawn, each killed
    expect(r.result.stats.palaceConnected).toBe(false);
    expect(r.result.leftAlive).toEqual([]);
    expect(downMs).toBeLessThan(3000); // killed for flooding, not left to the 4 s init timeout
    expect(r.result.err).toMatch(/down: gave up after 1 respawns.*(more than 64|unanswered)/);
    expect(failMs).toBeLessThan(1000); // at once, not another 4 s handshake (a bound for a loaded machine)
    expect(r.stderr).toMatch(/more than 64 unanswered/);
  });

  it('a 16 MiB and a 32 MiB line fail their call at once with "larger than 4 MiB", without holding them in memory', async () => {
    const dir = tempDir('dotty-mcp-big-');
    const r = await runNode(
      `${rssProbe}
       await native.palaceTools();
       const out = [];
       for (const mib of [16, 32]) {
         await settle(); const base = rss(); probe.reset();
         const t0 = performance.now();
         let err; try { await native.callTool('big', { bytes: mib * 1024 * 1024 }, null); } catch (e) { err = e.message; }
         const ms = performance.now() - t0;
         const peak = probe.peak(); await settle();
         out.push({ mib, base, peak, after: rss(), ms, err });
       }
       const small = (await native.callTool('big', { bytes: 3 * 1024 * 1024 }, null)).text.length;
       probe.stop();
       return { out, small, stats: native.stats() };`,
      stdioEnv(dir, ''),
      { timeoutMs: 30_000 },
    );
    expect(r.error).toBeUndefined();
    for (const { mib, base, peak, after, ms, err } of r.result.out) {
      figure(`${mib} MiB line: RSS growth MB (peak, after), ms to fail`, `${((peak - base) / MB).toFixed(0)}, ${((after - base) / MB).toFixed(0)}, ${ms.toFixed(0)}`);
      expect(err).toMatch(/reply larger than 4 MiB/);
      expect(peak - base).toBeLessThan(256 * MB);
      expect(after - base).toBeLessThan(64 * MB);
      expect(ms).toBeLessThan(3000);
    }
    expect(r.result.small).toBe(3 * MB); // a reply under the cap still works, on the same server
    expect(r.result.stats.mcpSpawns).toBe(1);
  });

  it('a server behind a wrapper script that stalls is killed as a group: nothing of it is left when the next one starts', async () => {
    const dir = tempDir('dotty-mcp-wrapped-');
    const lock = path.join(dir, 'palace.lock'); // single-writer: the next server can't start while the old one lives
    const r = await runNode(
      `${groupScan}
       await native.palaceTools();
       const leader = native.stats().mcpChildPid;
       const server = Number((await native.callTool('pid', {}, null)).text);
       const before = liveInGroup(leader);
       let err; try { await native.callTool('sleep', { ms: 30000 }, null); } catch (e) { err = e.message; }
       let next, nextErr; try { next = Number((await native.callTool('pid', {}, null)).text); } catch (e) { nextErr = e.message; }
       const oldGroupLeft = liveInGroup(leader);
       const leader2 = native.stats().mcpChildPid;
       await native.sessionShutdown('quit');
       return { leader, server, before, err, next, nextErr, oldGroupLeft, serverAlive: alive(server), leftAtQuit: liveInGroup(leader2) };`,
      { ...stdioEnv(dir, ''), MEMPALACE_MCP_BIN: wrapper, MEMPALACE_MCP_ARGS: `--lock-file ${lock}`, MEMPALACE_MCP_TIMEOUT_MS: '800' },
      { timeoutMs: 30_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.server).not.toBe(r.result.leader); // the server really is a grandchild
    expect(r.result.before.sort()).toEqual([r.result.leader, r.result.server].sort());
    expect(r.result.err).toMatch(/timed out after 800 ms/);
    expect(r.result.nextErr).toBeUndefined();
    expect(r.result.next).not.toBe(r.result.server);
    expect(r.result.oldGroupLeft).toEqual([]);
    expect(r.result.serverAlive).toBe(false);
    expect(r.result.leftAtQuit).toEqual([]);
  });

  it('a call right after the server was SIGKILLed respawns it and answers (20 times)', async () => {
    const dir = tempDir('dotty-mcp-sigkill-');
    const r = await runNode(
      `await native.palaceTools();
       const out = [];
       for (let i = 0; i < 20; i++) {
         const pid = native.stats().mcpChildPid;
         if (!pid) { out.push({ err: 'no server running (the previous call failed)' }); await native.callTool('pid', {}, null).catch(() => {}); continue; }
         process.kill(pid, 'SIGKILL');
         try { out.push({ pid, got: Number((await native.callTool('pid', {}, null)).text) }); } catch (e) { out.push({ pid, err: e.message }); }
       }
       return out;`,
      stdioEnv(dir, ''),
      { timeoutMs: 60_000 },
    );
    expect(r.error).toBeUndefined();
    const failed = r.result.filter((x) => x.err);
    figure('SIGKILL then call: failures of 20', failed.length);
    expect(failed).toEqual([]);
    for (const { pid, got } of r.result) expect(got).not.toBe(pid);
  });

  it("the stdio server's environment has neither MEMPALACE_REMOTE_TOKEN nor DOTTY_ADMIN_TOKEN", async () => {
    const dir = tempDir('dotty-mcp-env-');
    const r = await runNode(
      `await native.palaceTools();
       const get = async (name) => JSON.parse((await native.callTool('env', { name }, null)).text);
       return { remote: await get('MEMPALACE_REMOTE_TOKEN'), admin: await get('DOTTY_ADMIN_TOKEN'), home: await get('HOME') };`,
      stdioEnv(dir, '', { MEMPALACE_REMOTE_TOKEN: 'remote-SECRET', DOTTY_ADMIN_TOKEN: 'admin-SECRET' }),
    );
    expect(r.error).toBeUndefined();
    expect(r.result).toEqual({ remote: null, admin: null, home: dir });
  });

  it('follows no HTTP redirect: a 307 to another origin fails the call and nothing reaches the other origin', async () => {
    const dir = tempDir('dotty-mcp-redirect-');
    // The other origin: a working MCP server that records what reaches it.
    const logB = path.join(dir, 'b.log');
    const b = spawn('python3', [fixture, '--http', '--log', logB], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.push(() => b.kill());
    const portB = await new Promise((resolve) => b.stdout.once('data', (d) => resolve(String(d).match(/PORT=(\d+)/)[1])));
    const seenA = [];
    const a = http.createServer((req, res) => {
      seenA.push(req.headers.authorization);
      req.resume();
      res.writeHead(307, { Location: `http://mallory:loc-PASSWORD@127.0.0.1:${portB}/mcp` });
      res.end();
    });
    await new Promise((resolve) => a.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => a.close());
    const r = await runNode(
      `const tools = await native.palaceTools();
       let err; try { await native.callTool('echo', {}, null); } catch (e) { err = e.message; }
       return { tools: tools.length, err };`,
      { ...stdioEnv(dir, ''), MEMPALACE_REMOTE_URL: `http://127.0.0.1:${a.address().port}/mcp`, MEMPALACE_REMOTE_TOKEN: 'bearer-SECRET-7', MEMPALACE_MCP_MAX_RESPAWNS: '0', MEMPALACE_EXT_DEBUG: '1' },
    );
    expect(r.error).toBeUndefined();
    expect(seenA[0]).toBe('Bearer bearer-SECRET-7'); // the configured origin gets the token
    expect(fs.existsSync(logB) ? fs.readFileSync(logB, 'utf8') : '').toBe(''); // the other origin gets nothing
    expect(r.result.tools).toBe(0);
    expect(r.result.err).toMatch(/redirect.*307|307.*redirect/i);
    for (const text of [r.result.err, r.stderr]) {
      expect(text).not.toContain('loc-PASSWORD');
      expect(text).not.toContain('mallory');
      expect(text).not.toContain('bearer-SECRET-7');
    }
  });

  it('a MEMPALACE_REMOTE_URL with user:password@ never shows the password, in tool errors or on stderr', async () => {
    const dir = tempDir('dotty-mcp-creds-');
    const closed = http.createServer();
    await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve)); // connection refused from now on
    const r = await runNode(
      `const tools = await native.palaceTools();
       let err; try { await native.callTool('echo', {}, null); } catch (e) { err = e.message; }
       return { tools: tools.length, err };`,
      { ...stdioEnv(dir, ''), MEMPALACE_REMOTE_URL: `http://alice:pw-SECRET-9@127.0.0.1:${port}/mcp`, MEMPALACE_MCP_MAX_RESPAWNS: '1', MEMPALACE_EXT_DEBUG: '1' },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.err).toMatch(/cannot reach http:\/\/127\.0\.0\.1/);
    for (const text of [r.result.err, r.stderr]) {
      expect(text).not.toContain('pw-SECRET-9');
      expect(text).not.toContain('alice:');
    }
  });
});
