// think_hard with VOICE_THINKER_TIMEOUT unset waits for a reasoner that is still loading: the
// default is 90 s because a cold load alone takes 30-50 s (production raised it from 30).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { makeBrain, tempDir } from './helpers/brain.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';
import { json, startService } from './helpers/services.mjs';

const COLD_LOAD_MS = 35_000;
let ext, thinker;

beforeAll(async () => {
  const db = path.join(tempDir(), 'brain.db');
  makeBrain(db);
  // A llama-swap that answers only after the model's cold load, as the real one does after an idle spell.
  thinker = await startService({
    'POST /v1/chat/completions': (req, res) => {
      const timer = setTimeout(() => json(res, 200, { choices: [{ message: { content: 'Forty-two.' } }] }), COLD_LOAD_MS);
      res.on('close', () => clearTimeout(timer));
    },
  });
  Object.assign(process.env, { DOTTY_BRAIN_DB: db, VOICE_THINKER_URL: thinker.url + '/v1/chat/completions' });
  delete process.env.VOICE_THINKER_TIMEOUT;
  ext = loadExtension();
});

afterAll(() => thinker.close());

describe('think_hard with the default timeout', () => {
  it('answers a reasoner that needs 35 s to load instead of giving up at 30 s', async () => {
    expect(await ext.text('think_hard', { question: 'What is six times seven?' })).toBe('Forty-two.');
    expect(thinker.requests).toHaveLength(1);
  }, COLD_LOAD_MS + 30_000);
});
