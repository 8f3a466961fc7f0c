// memory_lookup, remember, recall_person against a real brain.db in the production schema.
import { beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addRows, makeBrain, readRows, schemaOf, tempDir } from './helpers/brain.mjs';
import { loadExtension, native } from './helpers/fake-pi.mjs';

const dir = tempDir();
const db = path.join(dir, 'brain.db');
let ext;
let schemaBefore;

const add = (rows) => addRows(db, rows);

beforeAll(() => {
  makeBrain(db);
  schemaBefore = schemaOf(db);
  process.env.DOTTY_BRAIN_DB = db;
  process.env.DOTTY_BEHAVIOUR_URL = 'http://127.0.0.1:9'; // unused here
  ext = loadExtension();
});

describe('registration', () => {
  it('registers the seven voice tools with JSON Schema parameters', () => {
    expect([...ext.tools.keys()], "production's registration order").toEqual(['memory_lookup', 'recall_person', 'remember', 'remember_person', 'think_hard', 'play_song', 'take_photo']);
    expect(ext.tools.get('remember_person').parameters).toMatchObject({ type: 'object', required: ['name', 'fact'] });
    for (const t of ext.tools.values()) {
      expect(t.label).toBeTruthy();
      expect(t.description.length).toBeGreaterThan(20);
      expect(Array.isArray(t.promptGuidelines)).toBe(true);
    }
    // session_start: where what the voice half says goes (pi's UI in its interactive terminal, else stderr).
    expect([...ext.handlers.keys()].sort()).toEqual(['agent_end', 'session_shutdown', 'session_start']);
    expect(ext.tools.has('set_led')).toBe(false);
  });

  it('reuses one native state when the entry runs again (pi /reload)', async () => {
    const again = loadExtension();
    expect(await again.text('remember', { fact: 'reload check' })).toBe('(remembered)');
    const s = native().stats();
    expect(s.stateCreations).toBe(1);
    expect(s.brainWriterOpens).toBe(1);
    expect(s.brainDb).toBe(db);
  });
});

describe('memory_lookup', () => {
  it('answers empty queries without touching the database', async () => {
    expect(await ext.text('memory_lookup', { query: '' })).toBe('(empty query)');
    expect(await ext.text('memory_lookup', { query: ' \n\t\u3000' })).toBe('(empty query)');
  });

  it('returns the top three phrase matches, stripped, joined with " | "', async () => {
    add([
      { content: '  The cat likes fish  ' },
      { content: 'the cat likes fish on fridays' },
      { content: 'my cat likes fish a lot, really a lot' },
      { content: 'a cat likes fish and also milk and more' },
      { content: 'fish likes the cat' },
    ]);
    const got = (await ext.text('memory_lookup', { query: 'cat likes fish' })).split(' | ');
    expect(got).toHaveLength(3);
    for (const g of got) expect(g.toLowerCase()).toContain('cat likes fish');
    expect(got).not.toContain('fish likes the cat');
    // bm25 ranks the shortest document first; its surrounding whitespace is stripped.
    expect(got[0]).toBe('The cat likes fish');
  });

  it('cuts snippets at 200 codepoints (197 + "...")', async () => {
    const long = 'zebra ' + '😀'.repeat(250);
    const exact = 'yak ' + 'é'.repeat(196); // exactly 200 codepoints
    add([{ content: long }, { content: exact }]);
    expect(await ext.text('memory_lookup', { query: 'zebra' })).toBe('zebra ' + '😀'.repeat(191) + '...');
    expect(await ext.text('memory_lookup', { query: 'yak' })).toBe(exact);
  });

  it('never surfaces unreviewed person facts or rows without a namespace', async () => {
    add([
      { content: 'secret pony fact', namespace: 'person_pending:ada' },
      { content: 'orphan pony fact', namespace: null },
      { content: 'public pony fact', namespace: 'person:grace' },
    ]);
    expect(await ext.text('memory_lookup', { query: 'pony fact' })).toBe('public pony fact');
    expect(await ext.text('memory_lookup', { query: 'secret pony' })).toBe('(no memories found)');
  });

  it('treats FTS syntax and quotes in user text literally', async () => {
    add([{ content: 'tea OR coffee' }, { content: 'she said "hello there" twice' }, { content: 'plain tea' }]);
    expect(await ext.text('memory_lookup', { query: 'tea OR coffee' })).toBe('tea OR coffee');
    // Unquoted, "tea OR milk" would match "plain tea".
    expect(await ext.text('memory_lookup', { query: 'tea OR milk' })).toBe('(no memories found)');
    expect(await ext.text('memory_lookup', { query: '"hello there"' })).toBe('she said "hello there" twice');
    for (const q of ['"', '""', 'tea*', 'NEAR(tea coffee)', 'content:tea', '-tea', '(tea', 'tea AND', '^tea', "'; DROP TABLE memories; --"]) {
      const r = await ext.text('memory_lookup', { query: q });
      expect(typeof r).toBe('string');
    }
    expect(readRows(db).length).toBeGreaterThan(0);
  });
});

describe('remember', () => {
  it('writes the contract row', async () => {
    const before = readRows(db).length;
    expect(await ext.text('remember', { fact: '  Grandad visits on Sundays \n' })).toBe('(remembered)');
    const rows = readRows(db);
    expect(rows.length).toBe(before + 1);
    const r = rows.at(-1);
    expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(r.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(r.created_at) - Date.now())).toBeLessThan(60_000);
    expect(r).toEqual({
      id: r.id,
      key: `voice_core_${r.created_at}_${r.id.slice(0, 8)}`,
      content: 'Grandad visits on Sundays',
      category: 'core',
      embedding: null,
      created_at: r.created_at,
      updated_at: r.created_at,
      session_id: null,
      namespace: 'voice',
      importance: 0.7,
      superseded_by: null,
    });
    expect(await ext.text('memory_lookup', { query: 'grandad visits' })).toBe('Grandad visits on Sundays');
  });

  it('caps facts at 300 codepoints without an ellipsis', async () => {
    expect(await ext.text('remember', { fact: '🦖'.repeat(400) })).toBe('(remembered)');
    expect(readRows(db).at(-1).content).toBe('🦖'.repeat(300));
  });

  it('strips the capped fact once more: a cap that ends in whitespace loses it', async () => {
    expect(await ext.text('remember', { fact: 'a'.repeat(299) + ' tail' })).toBe('(remembered)');
    expect(readRows(db).at(-1).content).toBe('a'.repeat(299));
  });

  it('answers an empty fact', async () => {
    expect(await ext.text('remember', { fact: '   ' })).toBe('(empty fact)');
    expect(await ext.text('remember', {})).toBe('(empty fact)');
  });

  it('leaves the schema of an existing file alone', () => {
    expect(schemaOf(db)).toEqual(schemaBefore);
    expect(native().stats().brainFilesCreated).toBe(0);
  });
});

describe('recall_person', () => {
  it('reads approved facts, most important and newest first, at most six', async () => {
    const rows = [];
    for (let i = 0; i < 8; i++) rows.push({ content: `fact ${i}`, namespace: 'person:ada', importance: i / 10, ts: `2026-01-0${i + 1}T00:00:00.000Z` });
    rows.push({ content: 'pending fact', namespace: 'person_pending:ada', importance: 1 });
    rows.push({ content: '   ', namespace: 'person:ada', importance: 0.95 });
    rows.push({ content: 'x'.repeat(250), namespace: 'person:ada', importance: 0.99 });
    rows.push({ content: 'null importance', namespace: 'person:ada', importance: null, ts: '2026-02-01 10:00:00' });
    add(rows);
    const got = await ext.text('recall_person', { name: '  ADA ' });
    // Six rows are read; the blank one is skipped after reading, so five remain.
    expect(got).toBe(['x'.repeat(197) + '...', 'fact 7', 'fact 6', 'fact 5', 'fact 4'].join(' | '));
    expect(got).not.toContain('pending');
  });

  it('says nothing is remembered, in the name as given', async () => {
    expect(await ext.text('recall_person', { name: ' Zoë ' })).toBe('(nothing remembered about Zoë)');
    expect(await ext.text('recall_person', { name: '' })).toBe('(no person specified)');
  });
});
