// pi's own MCP runs MemPalace over stdio (a `mempalace` entry in pi's mcp.json): the bridge reads
// the palace through a read-only twin of that entry, with the REAL MemPalace 3.11.0. A plain stdio
// server that has written once holds the palace, as pi's own would; the bridge, loaded into a fake
// pi whose agent dir holds that mcp.json, wakes the model up with the writer's diary through the
// twin (`--read-only` in its argv), recalls the writer's drawer through it, offers no palace tools
// and feeds nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers/brain.mjs';
import { runWithFakePi, startStdioWriter, stdioEnv, toolsDir, mempalaceRoot, writeSession } from './helpers/palace.mjs';

const dir = tempDir('dotty-palace-twin-');
const env = stdioEnv(dir);
const palace = env.MEMPALACE_PALACE;
const agent = env.PI_CODING_AGENT_DIR;
let writer;
const DRAWER = 'Grandma Rose celebrates her birthday on March 3rd and her favourite flowers are white lilies.';

/** pi's own server: plain stdio on the palace, holding it once it has written its diary and a drawer. */
const startWriter = () => startStdioWriter({ MEMPALACE_PALACE: palace }, [
  ['mempalace_diary_write', { agent_name: 'twin-agent', entry: 'SESSION:wrote.through.pi.s.own.mcp|★★★' }],
  ['mempalace_add_drawer', { wing: 'wing_family', room: 'birthdays', content: DRAWER }],
], 'pi');

beforeAll(async () => {
  writer = startWriter();
  await writer.wrote;
  fs.mkdirSync(agent, { recursive: true });
  fs.writeFileSync(path.join(agent, 'mcp.json'), JSON.stringify({
    mcpServers: { mempalace: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: palace, MEMPALACE_ROOT: '${TWIN_ROOT}', TWIN_TOKEN: 'tok-9f8e7d' }, cwd: dir } },
  }));
  writeSession(path.join(agent, 'sessions', '--work--', 's1.jsonl'), [['user', 'my cat is called Miso'], ['assistant', 'Miso is a lovely name']]);
}, 90_000);
afterAll(async () => { await writer?.stop(); });

describe("pi's own MCP writes the palace over stdio", () => {
  it('the bridge wakes the model up through a read-only twin, offers no palace tools and feeds nothing', async () => {
    // The bridge's own server settings are not used: its server is the twin of pi's entry.
    const { MEMPALACE_MCP_BIN: _b, MEMPALACE_MCP_ARGS: _a, MEMPALACE_PALACE: _p, ...bridgeEnv } = env;
    const r = await runWithFakePi(`
      const fs = await import('node:fs');
      pi.emit('session_start', { reason: 'startup' });
      const [woke, recalled] = await pi.emit('before_agent_start', { prompt: 'Which flowers does Grandma Rose like?' });
      const pid = native.stats().mcpChildPid;
      const argv = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0').filter(Boolean);
      const cwd = fs.readlinkSync('/proc/' + pid + '/cwd');
      const environ = fs.readFileSync('/proc/' + pid + '/environ', 'utf8').split('\\0');
      const readOnlyEnv = environ.includes('MEMPALACE_MCP_READ_ONLY=1') && environ.includes('TWIN_TOKEN=tok-9f8e7d');
      const status = await native.palaceCommand('status');
      const diary = native.palaceDiaryPrompt('');
      await pi.emit('session_shutdown', { reason: 'quit' });
      return { woke: woke?.message, recalled: recalled?.message, argv, cwd, readOnlyEnv, status, diary, tools: [...pi.tools.keys()], stats: native.stats() };
    `, { ...bridgeEnv, TWIN_ROOT: mempalaceRoot, DOTTY_VOICE_TOOLS: '0', MEMPALACE_AGENT_NAME: 'twin-agent', MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '20000' }, { timeoutMs: 120_000 });
    expect(r.error, r.stderr).toBeUndefined();
    const out = r.result;
    expect(out.woke?.customType, r.stderr).toBe('mempalace-wakeup');
    expect(JSON.stringify(out.woke.content)).toContain('wrote.through.pi.s.own.mcp');
    // Recall reads through the twin too: the drawer pi's server filed.
    expect(out.recalled?.customType, r.stderr).toBe('mempalace-recall');
    expect(out.recalled.content).toContain('white lilies');
    // The twin is pi's entry with --read-only, in the entry's cwd, with MEMPALACE_MCP_READ_ONLY=1.
    expect(out.argv.slice(-3)).toEqual(['--palace', palace, '--read-only']);
    expect(out.argv.some((a) => a.endsWith('mempalace-mcp'))).toBe(true);
    expect(out.cwd).toBe(fs.realpathSync(dir));
    expect(out.readOnlyEnv).toBe(true);
    expect(out.tools.filter((n) => n.startsWith('mempalace_'))).toEqual([]);
    expect(out.status).toContain(`pi's MCP: pi's own MCP (mcp.json entry "mempalace", ${path.join(agent, 'mcp.json')}) writes; this bridge reads through a read-only twin (wake-up, recall)`);
    expect(out.status).toMatch(/transport: stdio bash \S+start-stdio\.sh --read-only/);
    expect(out.diary).toContain('call the `mcp__mempalace__mempalace_diary_write` tool once');
    expect(r.stderr).toMatch(/mempalace: pi's MCP server 'mempalace' \(.*mcp\.json\) writes the palace; the bridge reads it through a read-only twin/);
    expect(r.stderr).not.toContain('tok-9f8e7d'); // the entry's env is carried, never logged
    expect(r.stderr).not.toMatch(/Peer MCP writer|steps aside/);
    // Nothing fed: no staging, no feed state, and the writer still holds the palace.
    expect(fs.existsSync(path.join(agent, 'mempalace-feed'))).toBe(false);
    expect(out.stats).toMatchObject({ mcpSpawns: 1, mcpRespawns: 0 });
  }, 150_000);
});
