// play_song's configuration and catalogue edge cases, each in a pi-like process of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';
import { json, startService } from './helpers/services.mjs';

let xz;
let catalogue = (req, res) => json(res, 200, { files: [] });
beforeAll(async () => {
  xz = await startService({
    'GET /xiaozhi/admin/songs': (req, res) => catalogue(req, res),
    'POST /xiaozhi/admin/play-asset': (req, res) => (req.headers['x-admin-token'] === 'sock-token' ? json(res, 200, {}) : json(res, 401, { error: 'unauthorized' })),
  });
});
afterAll(() => xz.close());

const base = () => ({ XIAOZHI_HOST: '127.0.0.1', XIAOZHI_HTTP_PORT: String(xz.port), DOTTY_BRAIN_DB: '/nonexistent/brain.db' });

describe('play_song edges', () => {
  it("can't reach xiaozhi-server without a host or socket, and asks nobody", async () => {
    const n = xz.requests.length;
    const r = await runNode(`return await ext.text('play_song', { name: 'happy' });`, { XIAOZHI_HTTP_PORT: String(xz.port), DOTTY_BRAIN_DB: '/nonexistent/brain.db' });
    expect(r.result).toBe("(can't reach xiaozhi-server)");
    expect(xz.requests.length).toBe(n);
  });

  it('caches an empty catalogue too', async () => {
    catalogue = (req, res) => json(res, 200, { base: '/x', files: [] });
    const n = xz.requests.length;
    const r = await runNode(`return [await ext.text('play_song', { name: 'a' }), await ext.text('play_song', { name: 'b' })];`, base());
    expect(r.result).toEqual(['(song catalogue is empty)', '(song catalogue is empty)']);
    expect(xz.requests.length - n).toBe(1);
  });

  for (const [what, fn] of [
    ['HTTP 500', (req, res) => json(res, 500, { files: ['a.mp3'] })],
    ['garbage JSON', (req, res) => json(res, 200, '{files')],
    ['files that are not a list', (req, res) => json(res, 200, { files: 'a.mp3' })],
    ['only non-string entries', (req, res) => json(res, 200, { files: [1, null, {}] })],
  ]) {
    it(`treats a catalogue with ${what} as empty`, async () => {
      catalogue = fn;
      const r = await runNode(`return await ext.text('play_song', { name: 'a' });`, base());
      expect(r.result).toBe('(song catalogue is empty)');
      expect(r.stdout).toBe('');
    });
  }

  it('talks over a UNIX socket with the token, and the token never reaches stderr', async () => {
    const sock = path.join(tempDir(), 'admin.sock');
    const viaSocket = await startService({
      'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { files: ['Rain.mp3'] }),
      'POST /xiaozhi/admin/play-asset': (req, res) => (req.headers['x-admin-token'] === 'sock-token' ? json(res, 200, {}) : json(res, 401, { error: 'unauthorized' })),
    }, { socketPath: sock });
    try {
      const ok = await runNode(`return await ext.text('play_song', { name: 'rain' });`, { XIAOZHI_ADMIN_SOCKET: sock, DOTTY_ADMIN_TOKEN: 'sock-token', DOTTY_BRAIN_DB: '/nonexistent/brain.db' });
      expect(ok.result).toBe('playing Rain');
      expect(viaSocket.requests.map((r) => [r.method, r.path, r.headers['x-admin-token']])).toEqual([
        ['GET', '/xiaozhi/admin/songs', 'sock-token'],
        ['POST', '/xiaozhi/admin/play-asset', 'sock-token'],
      ]);
      const bad = await runNode(`return await ext.text('play_song', { name: 'rain' });`, { XIAOZHI_ADMIN_SOCKET: sock, DOTTY_ADMIN_TOKEN: 'wrong-secret-xyz', DOTTY_BRAIN_DB: '/nonexistent/brain.db', XIAOZHI_HTTP_PORT: 'nope' });
      expect(bad.result).toBe('(couldn\'t play Rain.mp3: HTTP 401: {"error":"unauthorized"})');
      expect(bad.stderr).toContain('XIAOZHI_HTTP_PORT');
      expect(bad.stderr).not.toContain('wrong-secret-xyz');
      expect(bad.stdout).toBe('');
    } finally {
      await viaSocket.close();
      fs.rmSync(sock, { force: true });
    }
  });
});
