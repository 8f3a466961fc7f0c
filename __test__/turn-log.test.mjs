// The per-turn conversation log on pi's agent_end, against a real brain.db.
import { beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { holdWriteLock, makeBrain, readRows, tempDir } from './helpers/brain.mjs';
import { loadExtension, native } from './helpers/fake-pi.mjs';

const dir = tempDir();
const db = path.join(dir, 'brain.db');
let ext;
let ts = 1_770_000_000_000;

beforeAll(() => {
  makeBrain(db);
  process.env.DOTTY_BRAIN_DB = db;
  ext = loadExtension();
});

const conversation = () => readRows(db).filter((r) => r.category === 'conversation');
const flush = () => ext.emit('session_shutdown', { reason: 'quit' });

function turn(user, ...assistant) {
  return [
    { role: 'user', content: user, timestamp: ++ts },
    ...assistant.map((content) => ({ role: 'assistant', content, timestamp: ts })),
  ];
}

describe('agent_end', () => {
  it('writes one conversation row with what was heard and said', async () => {
    const messages = [
      { role: 'user', content: 'an older prompt', timestamp: 1 },
      { role: 'assistant', content: [{ type: 'text', text: 'older answer' }] },
      ...turn(
        [{ type: 'text', text: ' What can ' }, { type: 'image', data: 'iVBOR', mimeType: 'image/png' }, { type: 'text', text: 'you see? ' }],
        [{ type: 'thinking', thinking: 'The user wants a photo.' }, { type: 'text', text: 'Let me look. ' }, { type: 'toolCall', id: 't1', name: 'take_photo', arguments: {} }],
      ),
      { role: 'toolResult', toolCallId: 't1', toolName: 'take_photo', content: [{ type: 'text', text: 'A red ball.' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'describe it' }, { type: 'text', text: 'I see a red ball! ' }] },
    ];
    await ext.emit('agent_end', { messages });
    await flush();
    const rows = conversation();
    expect(rows).toHaveLength(1);
    const r = rows[0];
    expect(r).toEqual({
      id: r.id,
      key: `voice_conversation_${r.created_at}_${r.id.slice(0, 8)}`,
      content: 'user: What can you see? | assistant: Let me look. I see a red ball!',
      category: 'conversation',
      embedding: null,
      created_at: r.created_at,
      updated_at: r.created_at,
      session_id: null,
      namespace: 'voice',
      importance: 0.3,
      superseded_by: null,
    });
  });

  it('never reads an image\'s data, a thinking block or a tool result\'s content off the JS heap', async () => {
    const read = [];
    const watched = (obj, key) => Object.defineProperty(obj, key, { enumerable: true, get: () => { read.push(key); return 'x'; } });
    const image = watched({ type: 'image', mimeType: 'image/png' }, 'data');
    const thinking = watched({ type: 'thinking' }, 'thinking');
    const result = watched({ role: 'toolResult', toolCallId: 't1', toolName: 'take_photo' }, 'content');
    const messages = turn([{ type: 'text', text: 'look' }, image], [thinking, { type: 'text', text: 'done' }]);
    await ext.emit('agent_end', { messages: [...messages, result] });
    await flush();
    expect(read).toEqual([]);
    expect(conversation().at(-1).content).toBe('user: look | assistant: done');
  });

  it('truncates by codepoints: 500 heard, 1000 said', async () => {
    await ext.emit('agent_end', { messages: turn('🎈'.repeat(501), [{ type: 'text', text: 'ñ'.repeat(1001) }]) });
    await flush();
    expect(conversation().at(-1).content).toBe(`user: ${'🎈'.repeat(500)} | assistant: ${'ñ'.repeat(1000)}`);
  });

  it('stores a turn with an empty assistant half as "user: … | assistant:" (stripped by the store)', async () => {
    await ext.emit('agent_end', { messages: turn('Hello?', [{ type: 'toolCall', id: 'y', name: 'take_photo', arguments: {} }]) });
    await flush();
    expect(conversation().at(-1).content).toBe('user: Hello? | assistant:');
  });

  it('counts only text blocks of assistant messages: a plain-string content says nothing', async () => {
    await ext.emit('agent_end', { messages: turn('Plain?', 'a plain string answer', [{ type: 'text', text: 'blocks count' }]) });
    await ext.emit('agent_end', { messages: turn('Only plain?', 'a plain string answer') });
    await flush();
    // Two turns written by two background writes: in either order.
    expect(conversation().slice(-2).map((r) => r.content).sort()).toEqual(['user: Only plain? | assistant:', 'user: Plain? | assistant: blocks count']);
  });

  it('a cap of the assistant half that ends in whitespace loses it', async () => {
    await ext.emit('agent_end', { messages: turn('long', [{ type: 'text', text: 'b'.repeat(999) + ' and more' }]) });
    await flush();
    expect(conversation().at(-1).content).toBe(`user: long | assistant: ${'b'.repeat(999)}`);
  });

  it('writes nothing for a turn with no text on either side', async () => {
    const n = conversation().length;
    expect(native().logTurn(turn('   ', [{ type: 'toolCall', id: 'x', name: 'take_photo', arguments: {} }]))).toBe(false);
    await ext.emit('agent_end', { messages: [] });
    await ext.emit('agent_end', {});
    await ext.emit('agent_end', undefined);
    await ext.emit('agent_end', { messages: 'not a list' });
    await ext.emit('agent_end', { messages: [{ role: 'user', content: 42 }, null, 7, { role: 'assistant', content: { text: 'x' } }] });
    await flush();
    expect(conversation().length).toBe(n);
  });

  it('logs a repeated agent_end for the same prompt once, keeping the final answer', async () => {
    const first = turn('Tell me a joke', [{ type: 'text', text: '' }]);
    const retried = [first[0], { role: 'assistant', content: [{ type: 'text', text: 'Why did the robot cross the road?' }] }];
    const n = conversation().length;
    await ext.emit('agent_end', { messages: first });
    await ext.emit('agent_end', { messages: first });
    await ext.emit('agent_end', { messages: retried });
    await ext.emit('agent_end', { messages: retried });
    await flush();
    const rows = conversation();
    expect(rows.length).toBe(n + 1);
    expect(rows.at(-1).content).toBe('user: Tell me a joke | assistant: Why did the robot cross the road?');
    // The same words in a later prompt are a new turn.
    await ext.emit('agent_end', { messages: turn('Tell me a joke', [{ type: 'text', text: 'Why did the robot cross the road?' }]) });
    await flush();
    expect(conversation().length).toBe(n + 2);
  });

  it('returns at once while another process holds the write lock, and loses nothing', async () => {
    const n = conversation().length;
    const lock = await holdWriteLock(db, 2000);
    const t0 = performance.now();
    await ext.emit('agent_end', { messages: turn('are you there?', [{ type: 'text', text: 'yes' }]) });
    const handlerMs = performance.now() - t0;
    expect(handlerMs).toBeLessThan(1000); // not the 2 s the lock is held (a bound for a loaded machine)
    expect(native().stats().turnWritesInFlight).toBe(1);
    // A tool write meanwhile waits for the lock instead of failing.
    const remembered = ext.text('remember', { fact: 'written during the lock' });
    await lock.done;
    expect(await remembered).toBe('(remembered)');
    await flush();
    const rows = readRows(db);
    expect(rows.filter((r) => r.category === 'conversation').length).toBe(n + 1);
    expect(rows.some((r) => r.content === 'written during the lock')).toBe(true);
    expect(rows.some((r) => r.content === 'written while holding the lock')).toBe(true);
  });
});
