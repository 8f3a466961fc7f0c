// The yardstick for MCP calls: the official MCP TypeScript SDK client over the stdio transport,
// as a TypeScript pi extension would bridge an MCP server. Not product code.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/**
 * Spawns `command args` and completes the MCP handshake (initialize, initialized) and a tools/list,
 * as a bridge must before it can register tools. Returns the client, the handshake time (spawn to
 * tools listed, ms) and `call(name, args)` → the text of the tool's result.
 */
export async function connectSdk({ command = process.execPath, args = [], env, cwd } = {}) {
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command, args, env: env ?? { PATH: process.env.PATH }, cwd, stderr: 'inherit' });
  const client = new Client({ name: 'dotty-bench-peer', version: '1.0.0' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const handshakeMs = performance.now() - t0;
  return {
    client,
    tools,
    handshakeMs,
    async call(name, args = {}) {
      const r = await client.callTool({ name, arguments: args });
      return (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
    },
    close: () => client.close(),
  };
}
