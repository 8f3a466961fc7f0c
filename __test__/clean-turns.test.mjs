// `dotty-pi-ext clean-turns` as a real process against a real brain.db that other processes write
// during the run: what it cleans, what it must leave alone, its dry run, its backup, and doctor's count.
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execSql, makeBrain, query, readRows, rewriteUnderLock, root, sqliteNode, tempDir } from './helpers/brain.mjs';

const bin = path.join(root, 'bin/dotty-pi-ext.js');
const writerLoop = path.join(root, '__test__/helpers/writer-loop.cjs');
const SUFFIX = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/voice-turn-suffix.json'), 'utf8'));
const RULES = SUFFIX.base + SUFFIX.end;
const cp = (s) => [...s];
/** A row as the old logger stored it: the user half cut at 500 codepoints. */
const oldRow = (words, answer) => `user: ${cp((words + RULES).trim()).slice(0, 500).join('')} | assistant: ${answer}`.trim();

/** Runs the CLI; `onStderr(text)` sees its stderr as it comes. */
function cli(args, env, { onStderr } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, MEMPALACE_BRIDGE: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => { stderr += d; onStderr?.(stderr); });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const sha = (f) => crypto.createHash('sha256').update(fs.readFileSync(f)).digest('hex');
/** Rows a search for "HARD CONSTRAINTS" finds that hold the provider's rules (FTS ignores case: a
 * person's "hard constraints" matches too, and stays). */
const hardConstraints = (db) => query(db, `SELECT m.id, m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH '"HARD CONSTRAINTS"'`)
  .filter((r) => r.content.includes('\n---\nHARD CONSTRAINTS for THIS reply')).map((r) => r.id).sort();

// Words whose old cut fell inside the marker itself (`…\n\n---\nHARD CONSTRAIN`): the read path finds no
// whole marker there; only clean-turns repairs it.
const cutWords = 'w'.repeat(480);
const fixtures = {
  p1: [oldRow('How tall is a giraffe?', '😮 About five metres!'), 'user: How tall is a giraffe? | assistant: 😮 About five metres!'],
  p2: [oldRow('Sing me a song', ''), 'user: Sing me a song | assistant:'],
  p3: [oldRow(cutWords, '😊 Lots of w.'), `user: ${cutWords} | assistant: 😊 Lots of w.`],
  p4: ['user: {"content": "My favourite colour is purple."}\n---\nHARD CONSTRAINTS for THIS reply (overr | assistant: 😊 Purple is lovely!', 'user: My favourite colour is purple. | assistant: 😊 Purple is lovely!'],
  p5: [oldRow('你好 🦖 dinosaur time', '😆 Roar!'), 'user: 你好 🦖 dinosaur time | assistant: 😆 Roar!'],
  // A recall turn whose MEMORY SEARCH RESULTS block quoted an earlier row, separator and all.
  p6: [oldRow('Do you remember my cat?\n\nMEMORY SEARCH RESULTS (from earlier conversations):\n- user: what is my cat called | assistant: 😊 Miso.', '😊 Your cat is Miso!'), 'user: Do you remember my cat? | assistant: 😊 Your cat is Miso!'],
};
const untouched = {
  c1: 'user: is a giraffe tall | assistant: 😊 Very tall.',
  c2: 'user: what are hard constraints for this reply | assistant: 🤔 Rules.',
  f1: 'Dotty was told: Reply in ENGLISH ONLY when Grandma visits.',
  k1: 'Leo is six',
  u1: 'USER: shouting' + RULES,
};
const rival = { r1: oldRow('Rewritten by ZeroClaw meanwhile', '😐 ok'), r2: oldRow('Also rewritten', '😐 ok'), d1: oldRow('Deleted meanwhile', '😐 ok') };

describe('clean-turns', () => {
  const dir = tempDir('dotty-clean-');
  const db = path.join(dir, 'brain.db');
  const env = { DOTTY_BRAIN_DB: db };
  let before;

  beforeAll(() => {
    expect(fixtures.p3[0]).toMatch(/\n\n---\nHARD CONSTRAIN \| assistant: /);
    makeBrain(db, [
      ...Object.entries(fixtures).map(([id, [content]]) => ({ id, content, category: 'conversation' })),
      ...Object.entries(untouched).map(([id, content]) => ({ id, content, category: id === 'f1' ? 'core' : 'conversation', namespace: id === 'k1' ? 'person_pending:leo' : 'voice' })),
      ...Object.entries(rival).map(([id, content]) => ({ id, content, category: 'conversation' })),
    ]);
    fs.chmodSync(db, 0o600);
    before = new Map(readRows(db).map((r) => [r.id, r]));
  });

  it('doctor counts the polluted rows and names clean-turns (read-only)', async () => {
    const hash = sha(db);
    const r = await cli(['doctor'], { ...env, DOTTY_BEHAVIOUR_URL: 'http://127.0.0.1:9', VOICE_THINKER_URL: 'http://127.0.0.1:9/v1' });
    expect(r.stdout).toMatch(/^warn +brain\.db turns +9 of 11 conversation rows hold the voice provider's prompt scaffolding/m);
    expect(r.stdout).toContain('dotty-pi-ext clean-turns --dry-run');
    expect(sha(db)).toBe(hash);
  });

  it('--dry-run says what would change, with three examples, and writes nothing', async () => {
    const files = fs.readdirSync(dir).sort();
    const hash = sha(db);
    const r = await cli(['clean-turns', '--dry-run'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`clean-turns --dry-run: ${db} (nothing written)`);
    expect(r.stdout).toContain('scanned 11 conversation rows: 9 would be cleaned, 2 unchanged');
    expect(r.stdout.match(/^example \d of 3:$/gm)).toHaveLength(3);
    expect(r.stdout).toContain(`  after:  ${JSON.stringify(fixtures.p1[1])}`);
    expect(sha(db)).toBe(hash);
    expect(fs.readdirSync(dir).sort()).toEqual(files);
  });

  it('cleans while other processes write; a row changed meanwhile is left alone and counted', async () => {
    // ZeroClaw-like: rewrites two polluted rows and deletes a third inside a transaction that holds the
    // write lock; the perception path inserts rows in a loop behind it.
    const lock = await rewriteUnderLock(db, { update: ['r1', 'r2'], remove: ['d1'], suffix: ' (edited)' });
    const writer = spawn(sqliteNode, [writerLoop, db, '400'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let written = '';
    writer.stdout.on('data', (d) => (written += d));
    const writerDone = new Promise((resolve) => writer.on('close', resolve));
    // clean-turns reads the committed rows, then meets the lock: only then does the rival commit.
    let committed;
    const r = await cli(['clean-turns'], env, { onStderr: (s) => { if (!committed && s.includes('waiting for it')) committed = lock.commit(); } });
    await committed;
    expect(await writerDone).toBe(0);
    expect(r.stderr).toContain("another writer holds brain.db's write lock; waiting for it");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('scanned 11 conversation rows: cleaned 6, skipped 3 (changed by another writer meanwhile), unchanged 2');
    const backup = /^backup: (.+) \(0600/m.exec(r.stdout)[1];

    const rows = new Map(readRows(db).map((r) => [r.id, r]));
    for (const [id, [, clean]] of Object.entries(fixtures)) {
      // Only the content changed: key, dates, importance, namespace stay.
      expect(rows.get(id)).toEqual({ ...before.get(id), content: clean });
    }
    for (const id of Object.keys(untouched)) expect(rows.get(id)).toEqual(before.get(id));
    expect(rows.get('r1').content).toBe(rival.r1 + ' (edited)');
    expect(rows.get('r2').content).toBe(rival.r2 + ' (edited)');
    expect(rows.has('d1')).toBe(false);
    expect([...rows.values()].filter((r) => r.content.startsWith('perception note'))).toHaveLength(Number(written));
    expect(Number(written)).toBe(400);
    execSql(db, "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)");
    expect(query(db, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    // The rows left alone, and u1, which is not a turn row (`USER:`), never touched.
    expect(hardConstraints(db)).toEqual(['r1', 'r2', 'u1']);

    // The backup: a private, valid copy of the rows as they were before the run.
    expect(path.dirname(backup)).toBe(dir);
    expect(fs.statSync(backup).mode & 0o777).toBe(0o600);
    expect(query(backup, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    const saved = new Map(readRows(backup).map((r) => [r.id, r]));
    expect(saved).toEqual(before);
  }, 60_000);

  it('a second run cleans the rows changed meanwhile; a third cleans nothing', async () => {
    const second = await cli(['clean-turns', '--backup', 'none'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('backup: none');
    expect(second.stdout).toContain('scanned 10 conversation rows: cleaned 2, skipped 0 (changed by another writer meanwhile), unchanged 8');
    expect(hardConstraints(db)).toEqual(['u1']);
    expect(readRows(db).find((r) => r.id === 'r1').content).toBe('user: Rewritten by ZeroClaw meanwhile | assistant: 😐 ok (edited)');
    // SQLite's -wal and -shm come and go with connections: no other file appears.
    const files = () => fs.readdirSync(dir).filter((f) => !/-(wal|shm)$/.test(f)).sort();
    const filesBefore = files();
    const third = await cli(['clean-turns', '--backup=none'], env);
    expect(third.stdout).toContain('cleaned 0, skipped 0 (changed by another writer meanwhile), unchanged 10');
    expect(files()).toEqual(filesBefore);
    const doctor = await cli(['doctor'], { ...env, DOTTY_BEHAVIOUR_URL: 'http://127.0.0.1:9', VOICE_THINKER_URL: 'http://127.0.0.1:9/v1' });
    expect(doctor.stdout).toMatch(/^ok +brain\.db turns +no conversation row holds prompt scaffolding/m);
  });

  it('refuses an existing backup path, a missing brain.db and bad arguments, writing nothing', async () => {
    const taken = path.join(dir, 'taken.bak');
    fs.writeFileSync(taken, 'mine');
    const hash = sha(db);
    const r = await cli(['clean-turns', '--backup', taken], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^clean-turns: backup to .*taken\.bak failed, nothing cleaned: /m);
    expect(fs.readFileSync(taken, 'utf8')).toBe('mine');
    expect(sha(db)).toBe(hash);

    const missing = path.join(tempDir('dotty-clean-missing-'), 'brain.db');
    const m = await cli(['clean-turns'], { DOTTY_BRAIN_DB: missing });
    expect(m.code).toBe(1);
    expect(m.stderr).toContain(`clean-turns: no brain.db at ${missing}: nothing to clean`);
    expect(fs.existsSync(missing)).toBe(false);

    for (const args of [['clean-turns', 'extra'], ['clean-turns', '--backup'], ['clean-turns', '--force']]) {
      const u = await cli(args, env);
      expect(u.code, args.join(' ')).toBe(2);
      expect(u.stderr).toContain('usage: dotty-pi-ext clean-turns');
    }
    expect(sha(db)).toBe(hash);
  });
});
