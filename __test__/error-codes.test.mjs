// What a JS caller sees when a call fails: an Error whose `code` names the kind (src/error.rs) and
// whose message is the one it always was. Against the fault fixture over stdio, a palace that can't
// be started, and the bridge turned off.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';

const fixture = path.join(root, '__test__/fixtures/fault_mcp_server.py');
const failure = `const failure = async (p) => { try { await p; return null; } catch (e) { return { isError: e instanceof Error, code: e.code, message: e.message }; } };`;

function palaceEnv(extra = {}) {
  const dir = tempDir('dotty-error-codes-');
  return {
    MEMPALACE_BRIDGE: '1', MEMPALACE_MCP_BIN: 'python3', MEMPALACE_MCP_ARGS: fixture, MEMPALACE_MCP_TIMEOUT_MS: '800',
    PI_CODING_AGENT_DIR: path.join(dir, 'agent'), HOME: dir, DOTTY_VOICE_TOOLS: '0', ...extra,
  };
}

describe('error codes at the JS boundary', () => {
  it('SERVER_ERROR for isError and a JSON-RPC error, TIMEOUT, CANCELLED', async () => {
    const r = await runNode(
      `${failure}
       await native.palaceTools();
       const server = await failure(native.callTool('fail', {}, null));
       const rpc = await failure(native.callTool('no_such_tool', {}, null));
       const timeout = await failure(native.callTool('sleep', { ms: 5000 }, null));
       const pending = failure(native.callTool('sleep', { ms: 1500 }, 4242));
       setTimeout(() => native.cancelCall(4242), 200);
       const cancelled = await pending;
       await native.sessionShutdown('quit');
       return { server, rpc, timeout, cancelled };`,
      palaceEnv(),
      { timeoutMs: 30_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.server).toEqual({ isError: true, code: 'SERVER_ERROR', message: 'the tool failed' });
    expect(r.result.rpc).toEqual({ isError: true, code: 'SERVER_ERROR', message: '-32601 Unknown tool: no_such_tool' });
    expect(r.result.timeout.code).toBe('TIMEOUT');
    expect(r.result.timeout.message).toMatch(/^MemPalace timed out after 800 ms \(tools\/call\)/);
    expect(r.result.cancelled).toEqual({ isError: true, code: 'CANCELLED', message: 'sleep: aborted' });
  });

  it('PALACE_DOWN when the palace cannot be started', async () => {
    const r = await runNode(
      `${failure} await native.palaceTools(); return await failure(native.callTool('mempalace_status', {}, null));`,
      palaceEnv({ MEMPALACE_MCP_BIN: '/nonexistent/mempalace', MEMPALACE_MCP_ARGS: '' }),
    );
    expect(r.error).toBeUndefined();
    expect(r.result.isError).toBe(true);
    expect(r.result.code).toBe('PALACE_DOWN');
    expect(r.result.message).toMatch(/MemPalace/);
  });

  it('BAD_ARGUMENTS for a tool nobody has', async () => {
    const r = await runNode(`${failure} return await failure(native.callTool('no_such_tool', {}, null));`, { DOTTY_BRAIN_DB: '/nonexistent/brain.db' });
    expect(r.error).toBeUndefined();
    expect(r.result).toEqual({ isError: true, code: 'BAD_ARGUMENTS', message: 'unknown tool: no_such_tool' });
  });
});
