// A minimal stdio MCP server built with the official SDK's server classes: one `echo` tool that
// answers at once. The MCP figure's trivial round trip runs against it, for the native bridge and
// the SDK client alike.  node bench/peers/trivial-mcp-server.mjs
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'bench-trivial', version: '1.0.0' });
server.registerTool(
  'echo',
  { description: 'Returns its text argument unchanged.', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text }] }),
);
await server.connect(new StdioServerTransport());
