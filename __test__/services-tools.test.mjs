// remember_person, think_hard, take_photo against in-process stand-ins for dotty-behaviour and
// llama-swap that follow the contract, including their failure answers.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { makeBrain, readRows, tempDir } from './helpers/brain.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';
import { json, stall, startService } from './helpers/services.mjs';

const dir = tempDir();
const db = path.join(dir, 'brain.db');
let ext, behaviour, thinker;

beforeAll(async () => {
  makeBrain(db);
  behaviour = await startService();
  thinker = await startService();
  Object.assign(process.env, {
    DOTTY_BRAIN_DB: db,
    DOTTY_BEHAVIOUR_URL: behaviour.url + '/',
    DOTTY_BEHAVIOUR_TIMEOUT_MS: '400',
    VOICE_THINKER_URL: thinker.url + '/v1/chat/completions',
    VOICE_THINKER_TIMEOUT: '0.4',
    VOICE_THINKER_MODEL: 'test-model',
  });
  ext = loadExtension();
});

afterAll(async () => {
  await behaviour.close();
  await thinker.close();
});

beforeEach(() => {
  behaviour.requests.length = 0;
  thinker.requests.length = 0;
});

const lastRow = () => readRows(db).at(-1);
const review = (answer) => behaviour.route('GET /api/voice/person_review_status', answer);

describe('remember_person', () => {
  it('stores an approved fact in person:<id> and asks with the name as given', async () => {
    review((req, res, r) => json(res, 200, { person_id: r.query.person_id, needs_review: false }));
    expect(await ext.text('remember_person', { name: ' Ada Lovelace ', fact: ' likes maths ' })).toBe('(remembered about Ada Lovelace)');
    expect(behaviour.requests[0].rawUrl).toBe('/api/voice/person_review_status?person_id=Ada%20Lovelace');
    const r = lastRow();
    expect(r).toMatchObject({ content: 'likes maths', namespace: 'person:ada lovelace', category: 'core', importance: 0.7 });
    expect(r.key).toBe(`voice_core_${r.created_at}_${r.id.slice(0, 8)}`);
    expect(await ext.text('recall_person', { name: 'ADA LOVELACE' })).toBe('likes maths');
  });

  it('holds a fact for review when the classifier says so', async () => {
    review((req, res) => json(res, 200, { person_id: 'Mia', needs_review: true }));
    expect(await ext.text('remember_person', { name: 'Mia', fact: 'is seven' })).toBe('(saved — a grown-up will check that)');
    expect(lastRow()).toMatchObject({ content: 'is seven', namespace: 'person_pending:mia' });
    expect(await ext.text('recall_person', { name: 'Mia' })).toBe('(nothing remembered about Mia)');
    expect(await ext.text('memory_lookup', { query: 'is seven' })).toBe('(no memories found)');
  });

  // Fail closed: only a 2xx answer whose needs_review is exactly JSON false approves.
  const failures = {
    'needs_review as the string "false"': (req, res) => json(res, 200, { needs_review: 'false' }),
    'needs_review 0': (req, res) => json(res, 200, { needs_review: 0 }),
    'needs_review null': (req, res) => json(res, 200, { needs_review: null }),
    'needs_review missing': (req, res) => json(res, 200, { person_id: 'x' }),
    'a JSON array': (req, res) => json(res, 200, [false]),
    'garbage body': (req, res) => json(res, 200, '{"needs_review": fal'),
    'HTTP 500 with needs_review false': (req, res) => json(res, 500, { needs_review: false }),
    'HTTP 404': (req, res) => json(res, 404, { error: 'nope' }),
    'a stalled classifier (timeout)': stall,
    'a connection reset': (req) => req.socket.destroy(),
  };
  for (const [what, answer] of Object.entries(failures)) {
    it(`holds the fact when the classifier gives ${what}`, async () => {
      review(answer);
      const t0 = Date.now();
      expect(await ext.text('remember_person', { name: 'Kid', fact: `fact for ${what}` })).toBe('(saved — a grown-up will check that)');
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(lastRow()).toMatchObject({ content: `fact for ${what}`, namespace: 'person_pending:kid' });
    });
  }

  it('answers missing names and facts before asking anyone', async () => {
    expect(await ext.text('remember_person', { name: '  ', fact: 'x' })).toBe('(no person specified)');
    expect(await ext.text('remember_person', { name: 'Ada', fact: '' })).toBe('(empty fact)');
    expect(await ext.text('remember_person', {})).toBe('(no person specified)');
    expect(behaviour.requests).toHaveLength(0);
  });

  it('caps the fact at 300 codepoints', async () => {
    review((req, res) => json(res, 200, { needs_review: false }));
    expect(await ext.text('remember_person', { name: 'Ada', fact: 'ß'.repeat(301) })).toBe('(remembered about Ada)');
    expect(lastRow().content).toBe('ß'.repeat(300));
    // The store strips the capped fact once more (a cap that ends in whitespace loses it).
    expect(await ext.text('remember_person', { name: 'Ada', fact: 'ß'.repeat(299) + '\u3000tail' })).toBe('(remembered about Ada)');
    expect(lastRow().content).toBe('ß'.repeat(299));
  });
});

describe('think_hard', () => {
  const answer = (body, status = 200) => thinker.route('POST /v1/chat/completions', (req, res) => json(res, status, body));

  it('posts the exact request body and returns the stripped answer', async () => {
    answer({ choices: [{ message: { role: 'assistant', content: '  Because of Rayleigh scattering.  ' } }] });
    expect(await ext.text('think_hard', { question: '  why is the sky blue?  ' })).toBe('Because of Rayleigh scattering.');
    const [r] = thinker.requests;
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body).toBe(JSON.stringify({
      model: 'test-model',
      messages: [
        { role: 'system', content: "Answer the user's question concisely in 1-2 sentences. Be precise." },
        { role: 'user', content: 'why is the sky blue?' },
      ],
      max_tokens: 200,
      temperature: 0.3,
      stream: false,
      chat_template_kwargs: { enable_thinking: false },
    }));
  });

  it('cuts the answer at 500 codepoints and passes an empty answer through', async () => {
    answer({ choices: [{ message: { content: '🧠'.repeat(600) } }] });
    expect(await ext.text('think_hard', { question: 'q' })).toBe('🧠'.repeat(500));
    answer({ choices: [{ message: { content: null } }] });
    expect(await ext.text('think_hard', { question: 'q' })).toBe('');
    answer({ choices: [{ message: {} }] });
    expect(await ext.text('think_hard', { question: 'q' })).toBe('');
  });

  for (const [what, body, status] of [
    ['no choices', {}, 200],
    ['an empty choices list', { choices: [] }, 200],
    ['a choice without message', { choices: [{ text: 'hi' }] }, 200],
    ['HTTP 500', { choices: [{ message: { content: 'x' } }] }, 500],
    ['HTTP 404', { error: 'model not found' }, 404],
    ['garbage JSON', '{"choices": [', 200],
  ]) {
    it(`says thinking failed on ${what}`, async () => {
      answer(body, status);
      expect(await ext.text('think_hard', { question: 'q' })).toBe('(thinking failed)');
    });
  }

  it('says it is slow when llama-swap does not answer in time', async () => {
    thinker.route('POST /v1/chat/completions', stall);
    const t0 = Date.now();
    expect(await ext.text('think_hard', { question: 'q' })).toBe("(I'm slow today, try again in a moment)");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('says it is slow when the body stalls after the headers', async () => {
    thinker.route('POST /v1/chat/completions', (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write('{"choices":'); });
    expect(await ext.text('think_hard', { question: 'q' })).toBe("(I'm slow today, try again in a moment)");
  });

  it('answers an empty question without a request', async () => {
    expect(await ext.text('think_hard', { question: ' ' })).toBe('(empty question)');
    expect(thinker.requests).toHaveLength(0);
  });
});

describe('take_photo', () => {
  const photo = (fn) => behaviour.route('GET /api/voice/take_photo', fn);
  const cant = "(I can't see anything fresh right now)";

  it('returns the description verbatim', async () => {
    photo((req, res) => json(res, 200, { description: ' A red ball on the rug. ' }));
    expect(await ext.text('take_photo', {})).toBe(' A red ball on the rug. ');
    expect(behaviour.requests[0].path).toBe('/api/voice/take_photo');
  });

  for (const [what, fn] of [
    ['HTTP 503', (req, res) => json(res, 503, { description: 'camera busy' })],
    ['garbage JSON', (req, res) => json(res, 200, 'not json')],
    ['an empty description', (req, res) => json(res, 200, { description: '' })],
    ['a missing description', (req, res) => json(res, 200, { fresh: false })],
    ['a non-string description', (req, res) => json(res, 200, { description: 42 })],
    ['a timeout', stall],
  ]) {
    it(`says it can't see on ${what}`, async () => {
      photo(fn);
      expect(await ext.text('take_photo', {})).toBe(cant);
    });
  }
});
