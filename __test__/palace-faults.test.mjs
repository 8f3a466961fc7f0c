// The bridge's startup and failure behaviour, each case a pi-like process of its own: pi's load
// never waits for the palace, a dead palace is fail-soft, HTTP with a token, the token kept secret.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { referenceTools, startHttp, stdioEnv } from './helpers/palace.mjs';
import { runNode } from './helpers/run-node.mjs';

const fixture = path.join(root, '__test__/fixtures/fault_mcp_server.py');
// `atLoad`: what the factory registered before returning (later registrations land in `reg` too).
const loadTimer = `const t0 = performance.now(); const f = require(${JSON.stringify(root + '/index.js')}); const reg = []; f({ registerTool: (t) => reg.push(t.name), on() {}, registerCommand() {} }); const loadMs = performance.now() - t0; const atLoad = reg.slice(); const connectedAtLoad = native.stats().palaceConnected;`;

const servers = [];
afterAll(() => servers.forEach((s) => s.stop()));

describe('bridge startup and faults', () => {
  it('registers cached tools at once while a cold server is still starting, and calls wait for it', async () => {
    const dir = tempDir('dotty-palace-cold-');
    const agentDir = path.join(dir, 'agent');
    // The cache exactly as the product writes it: one real handshake first. (A hand-made seed in
    // a format the code doesn't read let this test pass without any cache.)
    const env = { ...stdioEnv(dir), DOTTY_VOICE_TOOLS: '0' };
    const warm = await runNode(`await native.palaceTools(); await native.sessionShutdown('quit'); return require('fs').readFileSync(${JSON.stringify(path.join(agentDir, 'mempalace-tools-cache.json'))}, 'utf8');`, env, { timeoutMs: 60_000 });
    const cache = JSON.parse(warm.result);
    expect(cache.tools.map((t) => t.name).sort()).toEqual(referenceTools.tools.map((t) => t.name).sort());
    // A fresh start with that cache: the real server needs one to a few seconds to answer initialize.
    const slow = await runNode(
      `${loadTimer}
       const t1 = performance.now();
       const status = await native.callTool('mempalace_diary_write', { agent_name: 'cold', entry: 'cold.start' }, null);
       const callMs = performance.now() - t1;
       await native.sessionShutdown('quit');
       return { loadMs, atLoad: atLoad.length, connectedAtLoad, callMs, status: status.text.slice(0, 200) };`,
      env,
      { timeoutMs: 60_000 },
    );
    expect(slow.error).toBeUndefined();
    expect(slow.result.atLoad).toBe(47); // from the cache, before the factory returned
    expect(slow.result.connectedAtLoad).toBe(false); // the factory returned before the handshake: load did not wait
    expect(slow.result.callMs).toBeGreaterThan(slow.result.loadMs);
    expect(slow.result.status).toContain('"success": true'); // the server's answer (mempalace_status only says "Chroma database missing" on a fresh palace)
  });

  it('is fail-soft when the server cannot be started: one line on stderr, pi keeps working', async () => {
    const dir = tempDir('dotty-palace-dead-');
    const r = await runNode(
      `${loadTimer}
       const tools = await native.palaceTools();
       let err; try { await native.callTool('mempalace_status', {}, null); } catch (e) { err = e.message; }
       const wake = await native.beforeAgentStart();
       return { loadMs, registered: reg, tools: tools.length, err, wake };`,
      { MEMPALACE_BRIDGE: '1', MEMPALACE_MCP_BIN: path.join(dir, 'no-such-mempalace-mcp'), MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10', PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.tools).toBe(0);
    expect(r.result.registered).toHaveLength(7); // the voice tools are unaffected
    expect(r.result.err).toMatch(/MemPalace|spawn|down|No such file/i);
    expect(r.result.wake).toBe(null);
    expect(r.stderr.split('\n').filter((l) => /mempalace/i.test(l))).toHaveLength(1);
    expect(r.stdout).toBe('');
  });

  it('gives up on a server that always dies after MAX_RESPAWNS, then fails at once (MEMPALACE_MCP_RETRY_MS=0: for good)', async () => {
    const dir = tempDir('dotty-palace-dies-');
    const r = await runNode(
      `const tools = await native.palaceTools();
       const t0 = performance.now();
       let err; try { await native.callTool('echo', {}, null); } catch (e) { err = e.message; }
       const quickMs = performance.now() - t0;
       return { tools: tools.length, err, quickMs, stats: native.stats() };`,
      { MEMPALACE_BRIDGE: '1', MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: `${fixture} --die-on-start`, MEMPALACE_MCP_MAX_RESPAWNS: '2', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '20', MEMPALACE_MCP_RETRY_MS: '0', PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir, DOTTY_VOICE_TOOLS: '0' },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.tools).toBe(0);
    expect(r.result.stats.mcpSpawns).toBe(3); // the first start and MAX_RESPAWNS=2 respawns
    expect(r.result.err).toMatch(/down|gave up/i);
    // At once: no further try (the spawns above) and no wait (a try of this server takes a respawn
    // round; a bound for a loaded machine, not a measurement).
    expect(r.result.quickMs).toBeLessThan(1000);
  });

  it('talks to a shared palace over HTTP with a bearer token, and the token stays secret', async () => {
    const dir = tempDir('dotty-palace-http-');
    const token = 'tok-' + 'x7'.repeat(12);
    const srv = startHttp(dir, token);
    servers.push(srv);
    const common = { MEMPALACE_BRIDGE: '1', MEMPALACE_REMOTE_URL: srv.url, PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir, DOTTY_VOICE_TOOLS: '0', MEMPALACE_EXT_DEBUG: '1' };
    const ok = await runNode(
      `const tools = await native.palaceTools();
       const w = await native.callTool('mempalace_diary_write', { agent_name: 'remote', entry: 'over.http|ok' }, null);
       const r = await native.callTool('mempalace_diary_read', { agent_name: 'remote' }, null);
       return { tools: tools.map((t) => t.name).sort(), read: r.text, childPid: native.stats().mcpChildPid ?? null };`,
      { ...common, MEMPALACE_REMOTE_TOKEN: token },
      { timeoutMs: 60_000 },
    );
    expect(ok.error).toBeUndefined();
    expect(ok.result.tools).toEqual(referenceTools.tools.map((t) => t.name).sort());
    expect(ok.result.read).toContain('over.http');
    expect(ok.result.childPid).toBe(null); // no child in remote mode
    const cacheText = fs.readFileSync(path.join(dir, 'agent', 'mempalace-tools-cache.json'), 'utf8');
    expect(cacheText).not.toContain(token);

    const bad = await runNode(
      `const tools = await native.palaceTools();
       let err; try { await native.callTool('mempalace_status', {}, null); } catch (e) { err = e.message; }
       return { tools: tools.length, err };`,
      { ...common, MEMPALACE_REMOTE_TOKEN: 'wrong-' + token },
      { timeoutMs: 60_000 },
    );
    expect(bad.result.tools).toBe(0);
    expect(bad.result.err).toMatch(/unauthorized|401/i);
    expect(bad.result.err).toContain('MEMPALACE_REMOTE_TOKEN');
    for (const text of [bad.stderr, bad.result.err, ok.stderr]) expect(text).not.toContain(token);
  });
});
