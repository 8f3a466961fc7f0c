// The MemPalace bridge against the REAL MemPalace 3.11.0 server over stdio, through index.js and a
// recording fake pi: tools with their real schemas, calls, wake-up, the diary command, feeding.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers/brain.mjs';
import { loadExtension, native } from './helpers/fake-pi.mjs';
import { mempalaceCli, referenceTools, stdioEnv, writeSession } from './helpers/palace.mjs';

const dir = tempDir('dotty-palace-');
const env = stdioEnv(dir);
let ext;
const sent = [];

beforeAll(() => {
  Object.assign(process.env, env, { DOTTY_VOICE_TOOLS: '0', MEMPALACE_AGENT_NAME: 'tester', MEMPALACE_MCP_TIMEOUT_MS: '60000' });
  ext = loadExtension();
  ext.sendUserMessage = (text, opts) => sent.push({ text, opts });
});
afterAll(async () => {
  await ext.emit('session_shutdown', { reason: 'quit' });
  expect(native().stats().palaceConnected).toBe(false);
});

const result = async (name, params) => {
  const r = await ext.run(name, params);
  return r.content.map((c) => c.text).join('\n');
};

describe('MemPalace over stdio', () => {
  it('registers every MCP tool under its own name with the real inputSchema, after a background handshake', async () => {
    // Nothing was cached yet: the load registered no palace tool and did not wait for the server.
    expect([...ext.tools.keys()]).toEqual([]);
    const tools = await native().palaceTools();
    expect(tools).toHaveLength(47);
    await ext.waitForTools(47); // index.js registers them when its own palaceTools() resolves
    expect(ext.tools.size).toBe(47);
    for (const ref of referenceTools.tools) {
      const t = ext.tools.get(ref.name);
      expect(t, ref.name).toBeDefined();
      expect(JSON.parse(JSON.stringify(t.parameters))).toEqual(ref.inputSchema);
      expect(t.description).toBe(ref.description);
    }
    const cache = JSON.parse(fs.readFileSync(path.join(env.PI_CODING_AGENT_DIR, 'mempalace-tools-cache.json'), 'utf8'));
    expect(cache.tools.map((t) => t.name).sort()).toEqual(referenceTools.tools.map((t) => t.name).sort());
    expect(native().stats()).toMatchObject({ palaceEnabled: true, palaceConnected: true, mcpSpawns: 1, palaceTools: 47 });
  });

  it('writes a diary entry and reads it back', async () => {
    const w = await result('mempalace_diary_write', { agent_name: 'tester', entry: 'SESSION:2026-11-29|built.the.bridge|★★★', topic: 'bridge' });
    expect(w).toContain('"success": true'); // (a looser /success|entry|diary/ matched an "Unknown parameter 'entry'" error too)
    const r = await result('mempalace_diary_read', { agent_name: 'tester' });
    expect(r).toContain('built.the.bridge');
  });

  it('passes server errors on as a thrown Error with the server message', async () => {
    await expect(ext.run('mempalace_diary_read', { agent: 'tester' })).rejects.toThrow(/Unknown parameter 'agent'/);
    await expect(native().callTool('mempalace_no_such_tool', {}, null)).rejects.toThrow(/Unknown tool: mempalace_no_such_tool/);
  });

  it('injects the wake-up once on a fresh session, never after resume', async () => {
    await ext.emit('session_start', { reason: 'startup' });
    const [first] = await ext.emit('before_agent_start', { prompt: 'hi' });
    expect(first.message.customType).toBe('mempalace-wakeup');
    expect(first.message.display).toBe(false);
    expect(first.message.content).toContain('built.the.bridge'); // the diary read
    expect(first.message.content).toContain('## Palace status (mempalace_status)\n'); // the status call answered (any text matched /palace/)
    expect(await ext.emit('before_agent_start', { prompt: 'again' })).toEqual([undefined]);
    await ext.emit('session_start', { reason: 'resume' });
    expect(await ext.emit('before_agent_start', { prompt: 'resumed' })).toEqual([undefined]);
    await ext.emit('session_start', { reason: 'new' });
    const [fresh] = await ext.emit('before_agent_start', { prompt: 'new one' });
    expect(fresh.message.customType).toBe('mempalace-wakeup');
  });

  it('/mempalace-diary asks the model to write the entry', async () => {
    const cmd = ext.commands.get('mempalace-diary');
    expect(cmd).toBeDefined();
    await cmd.handler('release day', {});
    await cmd.handler('', {});
    expect(sent).toHaveLength(2);
    expect(sent[0].text).toContain('mempalace_diary_write');
    expect(sent[0].text).toContain('tester');
    expect(sent[0].text).toContain('release day');
    expect(sent[1].text).not.toContain('release day');
  });

  it('adds the wake-up only to a run a user started: not to a custom-message run (pi 1.2+), not to /mempalace-diary\'s own prompt', async () => {
    await ext.emit('session_start', { reason: 'new' });
    // pi 1.2+: an extension's custom message with triggerTurn starts a run of messageType "custom".
    expect(await ext.emit('before_agent_start', { messageType: 'custom', message: { customType: 'other-ext', content: 'ping' } })).toEqual([undefined]);
    // /mempalace-diary: its prompt goes through pi.sendUserMessage, a run of messageType "user".
    await ext.commands.get('mempalace-diary').handler('the wake-up rule', {});
    const diary = sent.at(-1).text;
    expect(await ext.emit('before_agent_start', { messageType: 'user', prompt: diary })).toEqual([undefined]);
    // The wake-up stayed armed for the user's first prompt of the session.
    const [user] = await ext.emit('before_agent_start', { messageType: 'user', prompt: 'what did I do yesterday?' });
    expect(user.message.customType).toBe('mempalace-wakeup');
    expect(await ext.emit('before_agent_start', { messageType: 'user', prompt: 'and today?' })).toEqual([undefined]);
    // A user who types the diary prompt's text themselves later is a user (remembered once only).
    await ext.emit('session_start', { reason: 'new' });
    const [typed] = await ext.emit('before_agent_start', { messageType: 'user', prompt: diary });
    expect(typed.message.customType).toBe('mempalace-wakeup');
  });

  it('feeds the session transcripts on session_shutdown, found afterwards by mempalace_search', async () => {
    writeSession(path.join(env.PI_CODING_AGENT_DIR, 'sessions', '--work-project--', '2026-11-29T10-00-00_c3a6.jsonl'), [
      ['user', 'Please remember that the quokka colony lives on Rottnest Island near Perth.'],
      ['assistant', 'Noted: the quokka colony lives on Rottnest Island, just off the coast near Perth.'],
      ['user', 'And the colony has about twelve thousand quokkas.'],
      ['assistant', 'Got it, roughly twelve thousand quokkas live in that Rottnest Island colony.'],
    ]);
    await ext.emit('session_shutdown', { reason: 'new' }); // a feed that keeps the server (quit would stop it)
    const found = await result('mempalace_search', { query: 'quokka colony Rottnest Island' });
    expect(found).toContain('Rottnest');
    expect(native().stats().mcpSpawns).toBe(1);
  });
});
