// Every tool answers every odd argument with a reply: wrong types, missing fields, 1 MB strings,
// lone surrogates, NUL bytes, FTS operators and quotes. Nothing rejects; nothing crashes pi.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { makeBrain, readRows, tempDir } from './helpers/brain.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';
import { json, startService } from './helpers/services.mjs';

const dir = tempDir();
const db = path.join(dir, 'brain.db');
let ext, svc;

beforeAll(async () => {
  makeBrain(db, [{ content: 'a NUL\u0000inside', namespace: 'voice' }]);
  svc = await startService({
    'GET /api/voice/person_review_status': (req, res) => json(res, 200, { needs_review: false }),
    'GET /api/voice/take_photo': (req, res) => json(res, 200, { description: 'a room' }),
    'POST /v1/chat/completions': (req, res) => json(res, 200, { choices: [{ message: { content: 'ok' } }] }),
    'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { files: ['Song.mp3'] }),
    'POST /xiaozhi/admin/play-asset': (req, res) => json(res, 200, {}),
  });
  Object.assign(process.env, {
    DOTTY_BRAIN_DB: db,
    DOTTY_BEHAVIOUR_URL: svc.url,
    VOICE_THINKER_URL: `${svc.url}/v1/chat/completions`,
    XIAOZHI_HOST: '127.0.0.1',
    XIAOZHI_HTTP_PORT: String(svc.port),
  });
  ext = loadExtension();
});
afterAll(() => svc.close());

const MB = 'x'.repeat(1 << 20);
const odd = {
  number: 42,
  float: -0.5,
  boolean: false,
  null: null,
  object: { a: 1 },
  array: ['a'],
  '1 MB string': MB,
  'lone surrogates': '\ud800 half \udfff',
  'NUL bytes': 'a\u0000b',
  'FTS operators': 'NEAR(a b) OR c* AND -d : ^e',
  quotes: `"'\`""`,
  'RTL and combining marks': '\u202eabc\u0301\u200d',
};
const argsOf = {
  memory_lookup: ['query'],
  remember: ['fact'],
  recall_person: ['name'],
  remember_person: ['name', 'fact'],
  think_hard: ['question'],
  take_photo: [],
  play_song: ['name'],
};
const emptyReply = {
  memory_lookup: '(empty query)',
  remember: '(empty fact)',
  recall_person: '(no person specified)',
  remember_person: '(no person specified)',
  think_hard: '(empty question)',
  play_song: '(no song name given)',
};

describe('bad input', () => {
  for (const [tool, keys] of Object.entries(argsOf)) {
    it(`${tool} answers every odd argument`, async () => {
      for (const [what, value] of Object.entries(odd)) {
        const params = Object.fromEntries(keys.map((k) => [k, value]));
        const r = await ext.run(tool, params);
        expect(r.content, `${tool} with ${what}`).toHaveLength(1);
        expect(typeof r.content[0].text, `${tool} with ${what}`).toBe('string');
        if (['null', 'object', 'array'].includes(what) && tool in emptyReply) expect(r.content[0].text, `${tool} with ${what}`).toBe(emptyReply[tool]);
      }
      for (const params of [undefined, null, {}, 'a string', 7]) {
        const r = await ext.run(tool, params);
        if (tool in emptyReply) expect(r.content[0].text).toBe(emptyReply[tool]);
      }
    });
  }

  it('stores odd text faithfully, within the cap', async () => {
    expect(await ext.text('remember', { fact: 'a\u0000b' })).toBe('(remembered)');
    expect(await ext.text('remember', { fact: '\ud800 half' })).toBe('(remembered)');
    expect(await ext.text('remember', { fact: 42 })).toBe('(remembered)');
    const contents = readRows(db).map((r) => r.content);
    expect(contents).toContain('a\u0000b');
    expect(contents).toContain('\ufffd half'); // a lone surrogate can't be UTF-8: it becomes U+FFFD
    expect(contents).toContain('42');
    expect(contents).toContain('x'.repeat(300));
  });

  it('finds text with NUL bytes and keeps answering after all of it', async () => {
    expect(await ext.text('memory_lookup', { query: 'NUL' })).toBe('a NUL\u0000inside');
    // A NUL in the query: FTS5 refuses the phrase ("unterminated string"); the contract's reply to a
    // database error, the same as the production extension's (better-sqlite3 raises that error too).
    expect(await ext.text('memory_lookup', { query: 'NUL\u0000inside' })).toBe('(no memories found)');
    expect(await ext.text('take_photo', {})).toBe('a room');
  });
});
