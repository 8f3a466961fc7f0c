// Trust boundaries of the voice half (docs/trust.md): hostile home
// services (redirects, 50 MB bodies, hostile song catalogues), brain.db replaced or deleted while
// pi runs, file modes of what the extension creates, and the admin-token warning. Each case runs
// in a pi-like process of its own (configuration is read once per process) against real peers:
// in-process HTTP servers on port 0 or a UNIX socket, real brain.db files.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { makeBrain, readRows, tempDir } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';
import { bigBody, json, redirect, startService } from './helpers/services.mjs';

const CANT_SEE = "(I can't see anything fresh right now)";
const HELD = '(saved — a grown-up will check that)';
const MB = 1 << 20;

// In the child: peak RSS since the last reset (VmHWM) and current RSS, in bytes.
const MEM = `
  const mem = () => { const s = require('node:fs').readFileSync('/proc/self/status', 'utf8');
    const g = (k) => Number(s.match(new RegExp(k + ':\\\\s+(\\\\d+)'))[1]) * 1024; return { rss: g('VmRSS'), hwm: g('VmHWM') }; };
  const resetPeak = () => require('node:fs').writeFileSync('/proc/self/clear_refs', '5');
`;

describe('no redirect is followed (rule 3)', () => {
  let recorder, behaviour, thinker, xz;
  beforeAll(async () => {
    recorder = await startService({
      'GET /api/voice/person_review_status': (req, res) => json(res, 200, { needs_review: false }),
      'GET /api/voice/take_photo': (req, res) => json(res, 200, { description: 'seen elsewhere' }),
      'POST /v1/chat/completions': (req, res) => json(res, 200, { choices: [{ message: { content: 'answered elsewhere' } }] }),
      'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { files: ['Elsewhere.mp3'] }),
      'POST /xiaozhi/admin/play-asset': (req, res) => json(res, 200, {}),
    });
    const to = (p) => recorder.url + p;
    behaviour = await startService({
      'GET /api/voice/person_review_status': redirect(302, to('/api/voice/person_review_status?person_id=Kid')),
      'GET /api/voice/take_photo': redirect(307, to('/api/voice/take_photo')),
    });
    thinker = await startService({ 'POST /v1/chat/completions': redirect(307, to('/v1/chat/completions')) });
    xz = await startService({
      'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { files: ['Rain.mp3'] }),
      'POST /xiaozhi/admin/play-asset': redirect(307, to('/xiaozhi/admin/play-asset')),
    });
  });
  afterAll(() => Promise.all([recorder, behaviour, thinker, xz].map((s) => s.close())));

  it('a 3xx fails the call: the classifier holds the fact, nothing (no token, no body) reaches the other origin', async () => {
    const db = makeBrain(path.join(tempDir(), 'brain.db'));
    const r = await runNode(
      `return [await ext.text('remember_person', { name: 'Kid', fact: 'is six' }), await ext.text('take_photo', {}),
               await ext.text('think_hard', { question: 'secret question' }), await ext.text('play_song', { name: 'rain' })];`,
      { DOTTY_BRAIN_DB: db, DOTTY_BEHAVIOUR_URL: behaviour.url, VOICE_THINKER_URL: thinker.url + '/v1/chat/completions', XIAOZHI_HOST: '127.0.0.1', XIAOZHI_HTTP_PORT: String(xz.port), DOTTY_ADMIN_TOKEN: 'redirect-secret' },
    );
    expect(r.result).toEqual([HELD, CANT_SEE, '(thinking failed)', "(couldn't play Rain.mp3: HTTP 307: )"]);
    expect(recorder.requests).toEqual([]);
    expect(readRows(db).map((x) => [x.content, x.namespace])).toEqual([['is six', 'person_pending:kid']]);
    expect(r.stderr).not.toContain('redirect-secret');
  });

  it('over the UNIX socket too: the catalogue redirect is not followed, nor the play-asset one', async () => {
    const sock = path.join(tempDir(), 'admin.sock');
    const viaSocket = await startService({
      'GET /xiaozhi/admin/songs': redirect(302, recorder.url + '/elsewhere/songs'),
      'GET /elsewhere/songs': (req, res) => json(res, 200, { files: ['Stolen.mp3'] }),
    }, { socketPath: sock });
    const playSock = path.join(tempDir(), 'play.sock');
    const playing = await startService({
      'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { files: ['Rain.mp3'] }),
      'POST /xiaozhi/admin/play-asset': redirect(307, recorder.url + '/elsewhere/play'),
      'POST /elsewhere/play': (req, res) => json(res, 200, {}),
    }, { socketPath: playSock });
    try {
      const env = { DOTTY_BRAIN_DB: '/nonexistent/brain.db', DOTTY_ADMIN_TOKEN: 'sock-secret' };
      const a = await runNode(`return await ext.text('play_song', { name: 'stolen' });`, { ...env, XIAOZHI_ADMIN_SOCKET: sock });
      expect(a.result).toBe('(song catalogue is empty)');
      expect(viaSocket.requests.map((q) => q.path)).toEqual(['/xiaozhi/admin/songs']);
      const b = await runNode(`return await ext.text('play_song', { name: 'rain' });`, { ...env, XIAOZHI_ADMIN_SOCKET: playSock });
      expect(b.result).toBe("(couldn't play Rain.mp3: HTTP 307: )");
      expect(playing.requests.map((q) => q.path)).toEqual(['/xiaozhi/admin/songs', '/xiaozhi/admin/play-asset']);
      expect(recorder.requests).toEqual([]);
    } finally {
      await viaSocket.close();
      await playing.close();
    }
  });
});

describe('home-service bodies are read up to 1 MiB (rule 2)', () => {
  let behaviour, thinker, xz;
  const BIG = 50 * MB;
  beforeAll(async () => {
    behaviour = await startService({
      'GET /api/voice/take_photo': bigBody('{"description":"', BIG, '"}', { length: false }),
      'GET /api/voice/person_review_status': bigBody('{"needs_review":false,"pad":"', BIG, '"}', { length: true }),
    });
    thinker = await startService({ 'POST /v1/chat/completions': bigBody('{"choices":[{"message":{"content":"', BIG, '"}}]}', { length: false }) });
    xz = await startService({ 'GET /xiaozhi/admin/songs': bigBody('{"files":["Rain.mp3"],"pad":"', BIG, '"}', { length: false }), 'POST /xiaozhi/admin/play-asset': (req, res) => json(res, 200, {}) });
  });
  afterAll(() => Promise.all([behaviour, thinker, xz].map((s) => s.close())));

  it('four 50 MB answers at once: each call fails as for garbage JSON, RSS grows ≤ 256 MB and comes back', async () => {
    const db = makeBrain(path.join(tempDir(), 'brain.db'));
    const r = await runNode(
      `${MEM}
       await ext.text('memory_lookup', { query: 'warm' });
       const before = mem(); resetPeak();
       const t0 = Date.now();
       const replies = await Promise.all([ext.text('take_photo', {}), ext.text('remember_person', { name: 'Kid', fact: 'likes trains' }),
         ext.text('think_hard', { question: 'q' }), ext.text('play_song', { name: 'rain' })]);
       const ms = Date.now() - t0, peak = mem().hwm;
       if (global.gc) global.gc();
       return { replies, ms, growthMB: (peak - before.rss) / ${MB}, afterMB: (mem().rss - before.rss) / ${MB} };`,
      { DOTTY_BRAIN_DB: db, DOTTY_BEHAVIOUR_URL: behaviour.url, DOTTY_BEHAVIOUR_TIMEOUT_MS: '60000', VOICE_THINKER_URL: thinker.url + '/v1/chat/completions', VOICE_THINKER_TIMEOUT: '60', XIAOZHI_HOST: '127.0.0.1', XIAOZHI_HTTP_PORT: String(xz.port), XIAOZHI_ADMIN_TIMEOUT_MS: '60000' },
      { timeoutMs: 60000 },
    );
    expect(r.error).toBeUndefined();
    console.log(`50 MB bodies ×4: RSS growth ${r.result.growthMB.toFixed(1)} MB, after ${r.result.afterMB.toFixed(1)} MB, ${r.result.ms} ms`);
    expect(r.result.replies).toEqual([CANT_SEE, HELD, '(thinking failed)', '(song catalogue is empty)']);
    expect(r.result.growthMB).toBeLessThanOrEqual(256);
    expect(r.result.afterMB).toBeLessThanOrEqual(64);
    expect(readRows(db).map((x) => x.namespace)).toEqual(['person_pending:kid']);
    expect(r.stderr).toMatch(/larger than 1 MiB/);
  }, 60000);
});

describe('song catalogue entries that are not plain file names are dropped (rule 7)', () => {
  it('drops them with one stderr line per fetch; a good name beside them still plays', async () => {
    const HOSTILE = ['../../etc/shadow.mp3', 'a/b.mp3', '..', '.', 'back\\slash.mp3', 'bell\u0007.mp3', 'nul\u0000.mp3', 'line\nbreak.mp3', 'c1\u0085.mp3', 'shadow/'];
    const xz = await startService({
      'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { files: [...HOSTILE, 'Rain.mp3', 'shadow-dance.mp3'] }),
      'POST /xiaozhi/admin/play-asset': (req, res) => json(res, 200, {}),
    });
    try {
      const r = await runNode(
        `return [await ext.text('play_song', { name: 'etc/shadow' }), await ext.text('play_song', { name: 'b' }), await ext.text('play_song', { name: 'bell' }), await ext.text('play_song', { name: 'rain' }), await ext.text('play_song', { name: 'shadow' })];`,
        { DOTTY_BRAIN_DB: '/nonexistent/brain.db', XIAOZHI_HOST: '127.0.0.1', XIAOZHI_HTTP_PORT: String(xz.port), VOICE_PLAY_SONG_ASSET_BASE: '/songs' },
      );
      expect(r.result).toEqual([
        "(no match for 'etc/shadow'; have: Rain, shadow-dance)",
        "(no match for 'b'; have: Rain, shadow-dance)",
        "(no match for 'bell'; have: Rain, shadow-dance)",
        'playing Rain',
        'playing shadow-dance',
      ]);
      const assets = xz.requests.filter((q) => q.path === '/xiaozhi/admin/play-asset').map((q) => JSON.parse(q.body).asset);
      expect(assets).toEqual(['/songs/Rain.mp3', '/songs/shadow-dance.mp3']);
      // One fetch (cached), one line for it, naming how many were dropped; control characters escaped.
      expect(xz.requests.filter((q) => q.path === '/xiaozhi/admin/songs')).toHaveLength(1);
      const lines = r.stderr.split('\n').filter((l) => l.includes('not plain file names'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`${HOSTILE.length}`);
      expect(r.stderr).not.toMatch(/[\u0000\u0007\u0085]/);
    } finally {
      await xz.close();
    }
  });
});

describe('files the extension creates are private (rule 6)', () => {
  const mode = (p) => fs.statSync(p).mode & 0o777;

  it('brain.db at the default path is 0600 (and its -wal/-shm), the folders it made 0700', async () => {
    const home = tempDir();
    const r = await runNode(
      `await ext.text('remember', { fact: 'private' });
       const fs = require('node:fs'), p = require('node:path').join(process.env.HOME, '.pi/memory/brain.db');
       return Object.fromEntries(['', '-wal', '-shm'].map((s) => [s || 'db', fs.existsSync(p + s) ? (fs.statSync(p + s).mode & 0o777).toString(8) : 'absent']));`,
      { HOME: home },
    );
    expect(r.result).toEqual({ db: '600', '-wal': '600', '-shm': '600' });
    expect(mode(path.join(home, '.pi'))).toBe(0o700);
    expect(mode(path.join(home, '.pi/memory'))).toBe(0o700);
  });

  it('existing folders and files keep their modes', async () => {
    const home = tempDir();
    fs.mkdirSync(path.join(home, '.pi'), { mode: 0o755 });
    fs.chmodSync(path.join(home, '.pi'), 0o755);
    const r = await runNode(`return await ext.text('remember', { fact: 'x' });`, { HOME: home });
    expect(r.result).toBe('(remembered)');
    expect(mode(path.join(home, '.pi'))).toBe(0o755);
    expect(mode(path.join(home, '.pi/memory'))).toBe(0o700);
    expect(mode(path.join(home, '.pi/memory/brain.db'))).toBe(0o600);
    const db = makeBrain(path.join(tempDir(), 'brain.db'));
    fs.chmodSync(db, 0o644);
    const again = await runNode(`return await ext.text('remember', { fact: 'y' });`, { DOTTY_BRAIN_DB: db });
    expect(again.result).toBe('(remembered)');
    expect(mode(db)).toBe(0o644);
  });
});

describe('DOTTY_ADMIN_TOKEN over plain http (network rules)', () => {
  const warning = /DOTTY_ADMIN_TOKEN.*plain http/;
  it('warns once at load for a host that is not loopback, never showing the token', async () => {
    const r = await runNode(`return native.stats().voiceEnabled;`, { HOME: tempDir(), XIAOZHI_HOST: '192.0.2.10', DOTTY_ADMIN_TOKEN: 'warn-secret-42' });
    expect(r.result).toBe(true);
    expect(r.stderr.split('\n').filter((l) => warning.test(l))).toHaveLength(1);
    expect(r.stderr).toContain('192.0.2.10');
    expect(r.stderr).not.toContain('warn-secret-42');
  });

  it('stays quiet for loopback hosts, a UNIX socket, or no token', async () => {
    for (const env of [
      { XIAOZHI_HOST: '127.0.0.1', DOTTY_ADMIN_TOKEN: 't' },
      { XIAOZHI_HOST: 'localhost', DOTTY_ADMIN_TOKEN: 't' },
      { XIAOZHI_HOST: '::1', DOTTY_ADMIN_TOKEN: 't' },
      { XIAOZHI_HOST: '192.0.2.10', XIAOZHI_ADMIN_SOCKET: '/run/x.sock', DOTTY_ADMIN_TOKEN: 't' },
      { XIAOZHI_HOST: '192.0.2.10' },
    ]) {
      const r = await runNode(`return 1;`, { HOME: tempDir(), ...env });
      expect(r.stderr, JSON.stringify(env)).not.toMatch(warning);
    }
  });
});

describe('brain.db replaced or deleted while pi runs (rule 4)', () => {
  it('a file renamed over the path: the next write lands in the new file, never in the old inode', async () => {
    const dir = tempDir();
    const db = makeBrain(path.join(dir, 'brain.db'), [{ content: 'old file row' }]);
    const backup = makeBrain(path.join(dir, 'restore.tmp'), [{ content: 'restored backup row' }]);
    const oldInode = path.join(dir, 'old-inode.db'); // a second name for the original file
    const r = await runNode(
      `const fs = require('node:fs');
       const out = [await ext.text('remember', { fact: 'before the restore' }), await ext.text('memory_lookup', { query: 'old file row' })];
       fs.linkSync(${JSON.stringify(db)}, ${JSON.stringify(oldInode)});
       fs.renameSync(${JSON.stringify(backup)}, ${JSON.stringify(db)});
       out.push(await ext.text('remember', { fact: 'after the restore' }), await ext.text('memory_lookup', { query: 'after the restore' }),
                await ext.text('memory_lookup', { query: 'restored backup row' }), await ext.text('memory_lookup', { query: 'before the restore' }));
       await ext.emit('agent_end', { messages: [{ role: 'user', content: 'hi', timestamp: 1 }, { role: 'assistant', content: [{ type: 'text', text: 'hello' }] }] });
       return out;`,
      { DOTTY_BRAIN_DB: db },
    );
    expect(r.result).toEqual(['(remembered)', 'old file row', '(remembered)', 'after the restore', 'restored backup row', '(no memories found)']);
    expect(readRows(db).map((x) => x.content)).toEqual(['restored backup row', 'after the restore', 'user: hi | assistant: hello']);
    // The old inode got what was written before, and nothing after.
    expect(readRows(oldInode).map((x) => x.content)).toEqual(['old file row', 'before the restore']);
  });

  it('deleted at the default path: created again as on first start, the write lands there', async () => {
    const home = tempDir();
    const file = path.join(home, '.pi/memory/brain.db');
    const r = await runNode(
      `const fs = require('node:fs');
       const out = [await ext.text('remember', { fact: 'first life' })];
       fs.unlinkSync(${JSON.stringify(file)});
       out.push(await ext.text('remember', { fact: 'second life' }), await ext.text('memory_lookup', { query: 'second life' }), await ext.text('memory_lookup', { query: 'first life' }), native.stats().brainFilesCreated);
       return out;`,
      { HOME: home },
    );
    expect(r.result).toEqual(['(remembered)', '(remembered)', 'second life', '(no memories found)', 2]);
    expect(readRows(file).map((x) => x.content)).toEqual(['second life']);
    expect(r.stderr.match(/created a new brain\.db/g)).toHaveLength(2);
  });

  it('an explicit path gone: remember fails, the turn row waits and lands once a file is back', async () => {
    const dir = tempDir();
    const db = makeBrain(path.join(dir, 'brain.db'));
    const aside = path.join(dir, 'moved-away.db');
    const restored = makeBrain(path.join(dir, 'restore.tmp'), [{ content: 'restored row' }]);
    const r = await runNode(
      `const fs = require('node:fs');
       const out = [await ext.text('remember', { fact: 'while here' })];
       fs.renameSync(${JSON.stringify(db)}, ${JSON.stringify(aside)});
       out.push(await ext.text('remember', { fact: 'while gone' }));
       await ext.emit('agent_end', { messages: [{ role: 'user', content: 'are you there?', timestamp: 7 }, { role: 'assistant', content: [{ type: 'text', text: 'yes' }] }] });
       await native.flushTurnLog(); // the shutdown flush: reports the waiting row, does not hang
       out.push(native.stats().turnRowsWritten);
       fs.renameSync(${JSON.stringify(restored)}, ${JSON.stringify(db)});
       const t0 = Date.now();
       while (native.stats().turnRowsWritten === 0 && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 20));
       out.push(native.stats().turnRowsWritten, await ext.text('memory_lookup', { query: 'are you there' }));
       return out;`,
      { DOTTY_BRAIN_DB: db },
    );
    expect(r.result).toEqual(['(remembered)', '(remember failed)', 0, 1, 'user: are you there? | assistant: yes']);
    expect(r.stderr).toMatch(/turn log: .*wait/);
    expect(readRows(db).map((x) => x.content)).toEqual(['restored row', 'user: are you there? | assistant: yes']);
    expect(readRows(aside).map((x) => x.content)).toEqual(['while here']);
  });
});
