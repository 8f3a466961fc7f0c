// play_song against an in-process xiaozhi-server admin API (TCP here; the UNIX socket variant and
// the catalogue edge cases run in processes of their own, since the catalogue is cached per process).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadExtension, native } from './helpers/fake-pi.mjs';
import { json, stall, startService } from './helpers/services.mjs';

const FILES = ['Twinkle Twinkle Little Star.mp3', 'Happy Birthday.mp3', 'happy.MP3', 'Baby Shark (Remix).ogg', 'Wheels On The Bus.mp3', 'Lullaby.wav', 42, null, 'ABCD.mp3', 'ABCE.mp3'];
let ext, xz;
let songsServed = 0;

beforeAll(async () => {
  xz = await startService({
    'GET /xiaozhi/admin/songs': (req, res) => {
      songsServed++;
      // Hold the catalogue until more requests come in or 300 ms pass: calls that don't share the
      // in-flight fetch would show up here as extra GETs.
      const t = setTimeout(() => json(res, 200, { base: '/srv/songs', files: FILES }), 300);
      res.on('close', () => clearTimeout(t));
    },
    'POST /xiaozhi/admin/play-asset': (req, res) => json(res, 200, { ok: true }),
  });
  Object.assign(process.env, {
    XIAOZHI_HOST: '127.0.0.1',
    XIAOZHI_HTTP_PORT: String(xz.port),
    XIAOZHI_ADMIN_TIMEOUT_MS: '400',
    DOTTY_ADMIN_TOKEN: 'tok-3141',
    VOICE_PLAY_SONG_ASSET_BASE: '/songs//',
    DOTTY_BRAIN_DB: '/nonexistent/brain.db',
  });
  ext = loadExtension();
});

afterAll(() => xz.close());
beforeEach(() => xz.route('POST /xiaozhi/admin/play-asset', (req, res) => json(res, 200, { ok: true })));

const plays = () => xz.requests.filter((r) => r.path === '/xiaozhi/admin/play-asset');

describe('play_song', () => {
  it('shares one catalogue fetch between concurrent calls', async () => {
    const replies = await Promise.all(['happy', 'lullaby', 'wheels', 'baby shark', 'twinkle'].map((name) => ext.text('play_song', { name })));
    expect(replies).toEqual(['playing happy', 'playing Lullaby', 'playing Wheels On The Bus', 'playing Baby Shark (Remix)', 'playing Twinkle Twinkle Little Star']);
    expect(songsServed).toBe(1);
  });

  it('sends the admin token and the asset path', async () => {
    expect(await ext.text('play_song', { name: 'Happy Birthday' })).toBe('playing Happy Birthday');
    const p = plays().at(-1);
    expect(JSON.parse(p.body)).toEqual({ asset: '/songs/Happy Birthday.mp3' });
    expect(p.headers['content-type']).toBe('application/json');
    for (const r of xz.requests) expect(r.headers['x-admin-token']).toBe('tok-3141');
  });

  it('matches case-insensitively, exact stems first, then the closest length, first on ties', async () => {
    expect(await ext.text('play_song', { name: 'HAPPY' })).toBe('playing happy');
    expect(await ext.text('play_song', { name: 'happy birthday.wav' })).toBe('playing Happy Birthday');
    expect(await ext.text('play_song', { name: 'abc' })).toBe('playing ABCD');
    expect(await ext.text('play_song', { name: 'little star' })).toBe('playing Twinkle Twinkle Little Star');
  });

  it('lists five stems when nothing matches, in the name as given', async () => {
    const before = plays().length;
    expect(await ext.text('play_song', { name: '  Bohemian Rhapsody ' })).toBe(
      "(no match for 'Bohemian Rhapsody'; have: Twinkle Twinkle Little Star, Happy Birthday, happy, Baby Shark (Remix), Wheels On The Bus)",
    );
    expect(await ext.text('play_song', { name: '.mp3' })).toMatch(/^\(no match for '\.mp3'; have: /);
    expect(plays().length).toBe(before);
  });

  const statuses = [
    [400, '{"error":"bad request"}'],
    [401, '{"error":"unauthorized"}'],
    [403, '{"error":"asset not permitted"}'],
    [404, '{"error":"not found"}'],
    [409, '{"error":"device busy"}'],
    [503, '{"error":"no device connected"}'],
    [201, '{"ok":true}'],
  ];
  for (const [status, body] of statuses) {
    it(`reports HTTP ${status} from play-asset`, async () => {
      xz.route('POST /xiaozhi/admin/play-asset', (req, res) => json(res, status, body));
      expect(await ext.text('play_song', { name: 'lullaby' })).toBe(`(couldn't play Lullaby.wav: HTTP ${status}: ${body})`);
    });
  }

  it('quotes at most 120 characters of the error body', async () => {
    const body = 'é'.repeat(130);
    xz.route('POST /xiaozhi/admin/play-asset', (req, res) => { res.writeHead(500); res.end(body); });
    expect(await ext.text('play_song', { name: 'lullaby' })).toBe(`(couldn't play Lullaby.wav: HTTP 500: ${'é'.repeat(120)})`);
  });

  it('reports a transport error shortly', async () => {
    xz.route('POST /xiaozhi/admin/play-asset', stall);
    expect(await ext.text('play_song', { name: 'lullaby' })).toBe("(couldn't play Lullaby.wav: timed out)");
    xz.route('POST /xiaozhi/admin/play-asset', (req) => req.socket.destroy());
    expect(await ext.text('play_song', { name: 'lullaby' })).toMatch(/^\(couldn't play Lullaby\.wav: .+\)$/);
  });

  it('answers an empty name without a request', async () => {
    const n = xz.requests.length;
    expect(await ext.text('play_song', { name: ' ' })).toBe('(no song name given)');
    expect(xz.requests.length).toBe(n);
  });

  it('kept the catalogue cached for the whole file (60 s)', () => {
    expect(songsServed).toBe(1);
    expect(native().stats().songCatalogueFetches).toBe(1);
  });
});
