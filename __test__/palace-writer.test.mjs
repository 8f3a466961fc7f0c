// The palace is single-writer: while another mempalace-mcp holds it, the bridge's writes fail with
// the server's clear error (no respawn loop, reads still work), and they work again once it is free.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/brain.mjs';
import { loadExtension, native } from './helpers/fake-pi.mjs';
import { startStdioWriter, stdioEnv } from './helpers/palace.mjs';

const dir = tempDir('dotty-palace-writer-');
const env = stdioEnv(dir);
let ext, holder;

/** Another writer on the same palace: a real mempalace-mcp that has written once, so it holds the lock. */
const startHolder = () => startStdioWriter(env, [['mempalace_diary_write', { agent_name: 'holder', entry: 'holding.the.palace' }]], 'holder');

beforeAll(async () => {
  holder = startHolder();
  await holder.wrote;
  Object.assign(process.env, env, { DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0' });
  ext = loadExtension();
  await native().palaceTools();
}, 60_000);
afterAll(async () => {
  await holder?.stop();
  await ext.emit('session_shutdown', { reason: 'quit' });
});

describe('a second writer holding the palace', () => {
  it('makes writes fail with the server message, without a respawn, while reads work', async () => {
    await expect(native().callTool('mempalace_diary_write', { agent_name: 'pi', entry: 'blocked.write' }, null)).rejects.toThrow(/Peer MCP writer active/);
    // One line for the model that names the holder (MemPalace's lock file records its PID).
    const refused = await native().callTool('mempalace_diary_write', { agent_name: 'pi', entry: 'blocked.again' }, null).catch((e) => e.message);
    expect(refused).toMatch(new RegExp(`another MemPalace writer holds the palace \\(PID ${holder.pid} \\(.*mempalace-mcp --palace .*\\)\\); writes fail until it stops, reads still work`));
    expect(refused).not.toContain('\n');
    const read = await native().callTool('mempalace_diary_read', { agent_name: 'holder' }, null);
    expect(read.text).toContain('holding.the.palace');
    expect(native().stats()).toMatchObject({ mcpSpawns: 1, mcpRespawns: 0, palaceConnected: true });
  });

  it('writes again once the other writer is gone', async () => {
    await holder.stop();
    const w = await native().callTool('mempalace_diary_write', { agent_name: 'pi', entry: 'after.the.holder' }, null);
    expect(w.text).toContain('"success": true');
    const r = await native().callTool('mempalace_diary_read', { agent_name: 'pi' }, null);
    expect(r.text).toContain('after.the.holder');
    expect(native().stats().mcpRespawns).toBe(0);
  });
});
