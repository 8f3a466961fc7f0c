// Dotty's home services for an end-to-end run, in-process on port 0 (reusing ../helpers/services.mjs):
// dotty-behaviour, llama-swap (the think_hard model) and xiaozhi-server's admin API, plus a brain.db
// fixture. `env` is what the pi process needs to reach them.
import fs from 'node:fs';
import path from 'node:path';
import { startService, json } from '../helpers/services.mjs';
import { makeBrain, tempDir } from '../helpers/brain.mjs';

export const SONGS = ['twinkle_twinkle.mp3', 'baby_shark.mp3', 'happy_birthday.mp3'];
export const ASSET_BASE = '/opt/dotty-e2e/songs';

export async function startHome({ brainRows = [], approved = ['bob'], photo = 'A child holding a red balloon.', thinkerAnswer = 'Rayleigh scattering.' } = {}) {
  const behaviour = await startService({
    'GET /api/voice/take_photo': (_req, res) => json(res, 200, { description: photo }),
    'GET /api/voice/person_review_status': (_req, res, e) =>
      json(res, 200, { person_id: e.query.person_id, needs_review: !approved.includes(String(e.query.person_id).toLowerCase()) }),
  });
  const llama = await startService({
    'POST /v1/chat/completions': (_req, res) => json(res, 200, { choices: [{ index: 0, message: { role: 'assistant', content: thinkerAnswer } }] }),
  });
  const xiaozhi = await startService({
    'GET /xiaozhi/admin/songs': (_req, res) => json(res, 200, { base: ASSET_BASE, files: SONGS }),
    'POST /xiaozhi/admin/play-asset': (_req, res) => json(res, 200, { ok: true }),
  });
  const dir = tempDir('dotty-e2e-brain-');
  const brainDb = makeBrain(path.join(dir, 'brain.db'), brainRows);
  const env = {
    DOTTY_BRAIN_DB: brainDb,
    DOTTY_BEHAVIOUR_URL: behaviour.url,
    VOICE_THINKER_URL: `${llama.url}/v1/chat/completions`,
    VOICE_THINKER_TIMEOUT: '30',
    XIAOZHI_HOST: '127.0.0.1',
    XIAOZHI_HTTP_PORT: String(xiaozhi.port),
    VOICE_PLAY_SONG_ASSET_BASE: ASSET_BASE,
  };
  return {
    behaviour, llama, xiaozhi, brainDb, env,
    async close() {
      await Promise.all([behaviour.close(), llama.close(), xiaozhi.close()]);
      if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
