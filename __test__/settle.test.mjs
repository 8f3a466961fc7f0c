// How a tool call's promise is settled (issue 38, src/node/settle.rs): one threadsafe function for
// the process and a queue of answers, answers that arrive together settled in one wake-up of the
// JS thread. Every call still gets its own answer (replies, rows, errors, cancellations), the
// loop stays alive exactly while calls are in flight, and a worker thread's calls still settle.
import { beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addRows, makeBrain, readRows, root, tempDir } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';

const dir = tempDir('dotty-settle-');
const db = path.join(dir, 'brain.db');

beforeAll(() => {
  makeBrain(db);
  addRows(db, Array.from({ length: 64 }, (_, i) => ({ content: `Miso the cat likes fish number ${i}` })));
});

describe('settling tool calls', () => {
  it('many calls in flight at once each get their own reply, errors and cancellations included, in fewer wake-ups', async () => {
    const r = await runNode(
      `const settle = async (p) => { try { return { ok: await p }; } catch (e) { return { code: e.code, message: e.message }; } };
       const calls = [];
       for (let i = 0; i < 64; i++) {
         calls.push(settle(native.callTool('memory_lookup', { query: i % 2 ? 'fish number ' + i : 'no such words ' + i }, null)));
         calls.push(settle(native.callTool('remember', { fact: 'settled fact ' + i }, null)));
         if (i % 16 === 0) calls.push(settle(native.callTool('no_such_tool', {}, null)));
       }
       const doomed = settle(native.callTool('remember', { fact: 'cancelled fact' }, 777));
       native.cancelCall(777);
       const before = native.stats().promiseWakeups;
       const out = await Promise.all([...calls, doomed]);
       return { out, wakeups: native.stats().promiseWakeups - before, inFlight: native.stats().callsInFlight };`,
      { DOTTY_BRAIN_DB: db },
      { timeoutMs: 30_000 },
    );
    expect(r.error).toBeUndefined();
    const out = r.result.out;
    expect(out).toHaveLength(64 * 2 + 4 + 1);
    let k = 0;
    for (let i = 0; i < 64; i++) {
      const lookup = out[k++], remember = out[k++];
      if (i % 2) expect(lookup.ok.text).toMatch(new RegExp(`Miso the cat likes fish number ${i}\\b`));
      else expect(lookup.ok.text).toBe('(no memories found)');
      expect(lookup.ok.content).toEqual([{ type: 'text', text: lookup.ok.text }]);
      expect(remember.ok).toEqual({ text: '(remembered)', content: [{ type: 'text', text: '(remembered)' }] });
      if (i % 16 === 0) expect(out[k++]).toEqual({ code: 'BAD_ARGUMENTS', message: 'unknown tool: no_such_tool' });
    }
    expect(out[k].code).toBe('CANCELLED');
    expect(r.result.inFlight).toBe(0);
    // Answers that came in while the JS thread was busy or asleep were settled together.
    expect(r.result.wakeups).toBeGreaterThan(0);
    expect(r.result.wakeups).toBeLessThan(64 * 2);
    const rows = readRows(db).map((x) => x.content);
    for (let i = 0; i < 64; i++) expect(rows.filter((c) => c === `settled fact ${i}`), `fact ${i}`).toHaveLength(1);
    expect(rows.filter((c) => c === 'cancelled fact').length).toBeLessThanOrEqual(1); // a queued write may still land
  });

  it('keeps the process alive while a call is in flight and lets it exit after', async () => {
    // No timer, no await at the top: only the call in flight holds the loop. Before it settles the
    // process must not exit; after, nothing of ours may hold it (run-node's wrapper then returns).
    const r = await runNode(
      `const t0 = Date.now();
       const reply = await new Promise((resolve) => { native.callTool('remember', { fact: 'kept alive' }, null).then((x) => resolve(x.text)); });
       return { reply, ms: Date.now() - t0 };`,
      { DOTTY_BRAIN_DB: db },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.reply).toBe('(remembered)');
    expect(r.code).toBe(0);
    expect(r.signal).toBeNull(); // exited by itself, not killed at the timeout
  });

  it('settles calls made from a worker thread', async () => {
    const r = await runNode(
      `const { Worker } = require('node:worker_threads');
       await native.callTool('memory_lookup', { query: 'fish' }, null); // the main thread's settler exists
       const code = "const { parentPort } = require('node:worker_threads');" +
         "const n = require(" + JSON.stringify(${JSON.stringify(path.join(root, 'native.js'))}) + ");" +
         "n.callTool('memory_lookup', { query: 'fish number 7' }, null).then((x) => parentPort.postMessage(x.text), (e) => parentPort.postMessage('error: ' + e.message));";
       const w = new Worker(code, { eval: true });
       const text = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
       await w.terminate();
       return text;`,
      { DOTTY_BRAIN_DB: db },
    );
    expect(r.error).toBeUndefined();
    expect(r.result).toMatch(/Miso the cat likes fish number 7\b/);
  });
});
