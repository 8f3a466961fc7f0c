// Issue 28: the user's opt-out through a real `dotty-pi-ext feed` into the REAL MemPalace 3.11.0.
// `[no-memory]` in a user message keeps that turn (the message and the reply to it) out of the
// staged copy; in the first user message of a session, the whole session. Neither the words of
// those turns nor the marker reach the palace; pi's own files are untouched.
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { stdioEnv } from './helpers/palace.mjs';
import { filesUnder, holding } from './helpers/redact.mjs';

const bin = path.join(root, 'bin/dotty-pi-ext.js');
const dir = tempDir('dotty-no-memory-');
const env = { ...stdioEnv(dir), MEMPALACE_CONFIG_DIR: path.join(dir, 'mempalace-cfg'), MEMPALACE_FEED_BIN: '/nonexistent/exporter', DOTTY_VOICE_TOOLS: '0', TOKENIZERS_PARALLELISM: 'false' };
const sessions = path.join(env.PI_CODING_AGENT_DIR, 'sessions', '--work-project--');
const staging = path.join(env.PI_CODING_AGENT_DIR, 'mempalace-feed', 'staging', '--work-project--');

function cli(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`timed out: ${args.join(' ')}\n${stderr}`)); }, 170_000);
    p.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }); });
  });
}

function session(id, turns) {
  const lines = [{ type: 'session', version: 3, id, timestamp: '2026-12-01T10:00:00.000Z', cwd: '/work/project' }];
  let parentId = null;
  turns.forEach(([role, text], i) => {
    const ts = Date.parse('2026-12-01T10:00:00.000Z') + i * 1000;
    const message = role === 'user'
      ? { role: 'user', content: [{ type: 'text', text }], timestamp: ts }
      : { role: 'assistant', content: [{ type: 'text', text }], stopReason: 'stop', api: 'openai-completions', provider: 'mock', model: 'mock-model', timestamp: ts };
    const entryId = `${id.slice(0, 4)}${String(i).padStart(4, '0')}`;
    lines.push({ type: 'message', id: entryId, parentId, timestamp: new Date(ts).toISOString(), message });
    parentId = entryId;
  });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

const files = {
  'turn.jsonl': session('b1b2c3d4-0000-4000-8000-000000000001', [
    ['user', 'Help me plan the garden shed roof with cedar shingles.'],
    ['assistant', 'Cedar shingles need a pitch of at least four in twelve for the shed roof.'],
    ['user', '[no-memory] my neighbour Quillfeather owes me money, keep this between us'],
    ['assistant', 'Understood, Quillfeather stays between us.'],
    ['user', 'Back to the shed: how many bundles of shingles for the roof?'],
    ['assistant', 'About nine bundles of cedar shingles cover that shed roof.'],
  ]),
  'session.jsonl': session('b1b2c3d4-0000-4000-8000-000000000002', [
    ['user', '[no-memory] a private chat about Zanzibarite crystals'],
    ['assistant', 'Zanzibarite crystals are a fine private topic.'],
    ['user', 'more about the Zanzibarite crystals please'],
    ['assistant', 'The Zanzibarite crystals grow slowly.'],
  ]),
};
let feed;
beforeAll(async () => {
  fs.mkdirSync(sessions, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(sessions, name), text);
  feed = await cli(['feed']);
}, 180_000);

describe('[no-memory]', () => {
  it('keeps a marked turn out of the staged copy and the palace, the rest of the session in', () => {
    expect(feed.code, feed.stderr).toBe(0);
    const staged = fs.readFileSync(path.join(staging, 'turn.jsonl'), 'utf8');
    expect(staged).toContain('cedar shingles');
    expect(staged).toContain('nine bundles');
    expect(staged).not.toContain('Quillfeather');
    expect(staged.toLowerCase()).not.toContain('[no-memory]');
    // Still one tree: every parentId names a line of the staged copy.
    const lines = staged.trimEnd().split('\n').map((l) => JSON.parse(l));
    const ids = new Set(lines.map((l) => l.id));
    for (const l of lines.slice(1)) if (l.parentId) expect(ids.has(l.parentId), l.parentId).toBe(true);
  });

  it('keeps a session whose first user message is marked out entirely', () => {
    expect(fs.existsSync(path.join(staging, 'session.jsonl'))).toBe(false);
  });

  it('leaves the words of those turns and the marker out of every file the feed or the palace wrote', () => {
    const all = filesUnder(dir, (f) => !f.startsWith(sessions + path.sep));
    const chroma = all.find(([f]) => f.endsWith('chroma.sqlite3'));
    expect(chroma, 'the palace was mined').toBeDefined();
    expect(chroma[1].toString('latin1')).toContain('cedar shingles');
    for (const v of ['Quillfeather', 'Zanzibarite', '[no-memory]']) expect(holding(all, v, dir), v).toEqual([]);
    // pi's own files are untouched.
    for (const [name, text] of Object.entries(files)) expect(fs.readFileSync(path.join(sessions, name), 'utf8')).toBe(text);
  });
});
