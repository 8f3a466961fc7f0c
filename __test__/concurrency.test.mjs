// Another OS process writes brain.db in a loop while the tools and the turn log write: every row
// lands exactly once.
import { describe, expect, it, beforeAll } from 'vitest';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { makeBrain, readRows, root, sqliteNode, tempDir } from './helpers/brain.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';

const dir = tempDir();
const db = path.join(dir, 'brain.db');
let ext;

beforeAll(() => {
  makeBrain(db);
  process.env.DOTTY_BRAIN_DB = db;
  ext = loadExtension();
});

function otherWriter(count) {
  const p = spawn(sqliteNode, [path.join(root, '__test__/helpers/writer-loop.cjs'), db, String(count)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  const started = new Promise((resolve) => p.stderr.on('data', (d) => String(d).includes('STARTED') && resolve()));
  const done = new Promise((resolve, reject) => p.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`writer exited ${code}`)))));
  return { started, done };
}

describe('concurrent writers', () => {
  it('loses and duplicates nothing while another process writes in a loop', async () => {
    const OTHER = 3000, FACTS = 200, TURNS = 60;
    const writer = otherWriter(OTHER);
    await writer.started;
    const facts = [];
    // Eight voice calls in flight at a time, turns logged in between.
    for (let i = 0; i < FACTS; i += 8) {
      const batch = [];
      for (let j = i; j < Math.min(i + 8, FACTS); j++) batch.push(ext.text('remember', { fact: `fact number ${j}` }));
      facts.push(...(await Promise.all(batch)));
      const t = i / 8;
      if (t < TURNS) await ext.emit('agent_end', { messages: [{ role: 'user', content: `question ${t}`, timestamp: 1000 + t }, { role: 'assistant', content: [{ type: 'text', text: `answer ${t}` }] }] });
    }
    for (let t = Math.ceil(FACTS / 8); t < TURNS; t++) await ext.emit('agent_end', { messages: [{ role: 'user', content: `question ${t}`, timestamp: 1000 + t }, { role: 'assistant', content: [{ type: 'text', text: `answer ${t}` }] }] });
    expect(await writer.done).toBe(OTHER);
    await ext.emit('session_shutdown', { reason: 'quit' });

    expect(facts.every((f) => f === '(remembered)')).toBe(true);
    const rows = readRows(db);
    const count = (pred) => rows.filter(pred).length;
    expect(count((r) => r.category === 'daily')).toBe(OTHER);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    for (let j = 0; j < FACTS; j++) expect(count((r) => r.content === `fact number ${j}`), `fact ${j}`).toBe(1);
    for (let t = 0; t < TURNS; t++) expect(count((r) => r.content === `user: question ${t} | assistant: answer ${t}`), `turn ${t}`).toBe(1);
    expect(rows.length).toBe(OTHER + FACTS + TURNS);
  });
});
