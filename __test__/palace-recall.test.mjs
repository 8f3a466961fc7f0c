// Per-prompt recall (MEMPALACE_RECALL=on) against the REAL MemPalace 3.11.0 over stdio: each case a
// pi-like process of its own that runs pi's before_agent_start handlers as pi does (in order, one
// message each) and keeps what they return.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { createRequire } from 'node:module';
import { root, tempDir } from './helpers/brain.mjs';
import { stdioEnv } from './helpers/palace.mjs';
import { runNode } from './helpers/run-node.mjs';

const stopHelper = path.join(root, '__test__/helpers/stop-process.cjs');

// What pi's runner does with an extension's before_agent_start handlers (pi 0.74 and 1.6:
// `for (const handler of handlers) { const r = await handler(event, ctx); if (r?.message) messages.push(r.message) }`).
const prelude = `
  const run = async (prompt, messageType) => {
    const messages = [];
    for (const h of handlers.get('before_agent_start') ?? []) {
      const r = await h({ type: 'before_agent_start', prompt, messageType, systemPrompt: '' }, {});
      if (r?.message) messages.push(r.message);
    }
    return messages;
  };
  const recalled = (messages) => messages.filter((m) => m.customType === 'mempalace-recall');
  const drawers = [
    'We chose PostgreSQL over MySQL for the billing service because JSONB columns keep the invoice line items queryable.',
    'The deploy pipeline runs on GitHub Actions with a self-hosted runner on the NAS in the garage.',
    'Grandma Rose celebrates her birthday on March 3rd and her favourite flowers are white lilies.',
  ];
  for (const content of drawers) await native.callTool('mempalace_add_drawer', { wing: 'wing_notes', room: 'facts', content }, null);
`;

const env = (dir, extra = {}) => ({ ...stdioEnv(dir), DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', ...extra });

describe('recall (MEMPALACE_RECALL=on, real MemPalace)', () => {
  it('injects the drawer a topical prompt is about, nothing for an unrelated one, and no drawer twice', async () => {
    const dir = tempDir('dotty-recall-');
    const r = await runNode(
      `${prelude}
       native.sessionStart('new', false);
       const first = await run('Which database did we pick for the billing service, and why?');
       const again = await run('Remind me: the billing database we chose?');
       const unrelated = await run('What is the capital of Mongolia?');
       const small = await run('hi!');
       const custom = await run('Which database did we pick for the billing service?', 'custom');
       native.sessionStart('new', false);
       const newSession = await run('Which flowers does Grandma Rose like?');
       const events = native.piEvents().filter((e) => e.event === 'before_agent_start').map((e) => e.handler);
       await native.sessionShutdown('quit');
       return { first, again, unrelated, small, custom, newSession, events };`,
      env(dir, { MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '20000' }),
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
    const { first, again, unrelated, small, custom, newSession, events } = r.result;
    expect(events).toEqual(['beforeAgentStart', 'recall']);
    // The first prompt of the fresh session: the wake-up, then recall, each its own hidden message.
    expect(first.map((m) => m.customType)).toEqual(['mempalace-wakeup', 'mempalace-recall']);
    const [hit] = first.filter((m) => m.customType === 'mempalace-recall');
    expect(hit.display).toBe(false);
    expect(hit.content).toContain('PostgreSQL over MySQL');
    expect(hit.content).not.toContain('lilies');
    expect(hit.content).not.toContain('GitHub Actions');
    expect(Buffer.byteLength(hit.content)).toBeLessThanOrEqual(2000);
    expect(again.filter((m) => m.customType === 'mempalace-recall')).toEqual([]); // already injected
    expect(unrelated).toEqual([]);
    expect(small).toEqual([]);
    expect(custom).toEqual([]); // an extension's custom message starts no recall
    const rose = newSession.filter((m) => m.customType === 'mempalace-recall');
    expect(rose).toHaveLength(1);
    expect(rose[0].content).toContain('white lilies');
  });

  it("a resumed session (a new process) doesn't recall what its history already shows", async () => {
    const dir = tempDir('dotty-recall-resume-');
    const r = await runNode(
      `${prelude}
       native.sessionStart('new', false);
       const first = await run('Which database did we pick for the billing service, and why?');
       // pi's session_start for a continued thread: its branch holds the messages the earlier
       // process injected (pi's custom_message entries; content a string or text blocks).
       const resume = async (hidden) => {
         const entries = [
           { type: 'message', message: { role: 'user', content: [{ type: 'text', text: 'Which database did we pick?' }] } },
           ...hidden.map((m, i) => ({ type: 'custom_message', customType: m.customType, display: false, content: i % 2 ? [{ type: 'text', text: m.content }] : m.content })),
           { type: 'custom_message', customType: 'other-extension', display: false, content: 'unrelated' },
         ];
         const ctx = { sessionManager: { getEntries: () => entries, getBranch: () => entries } };
         for (const h of handlers.get('session_start')) await h({ type: 'session_start', reason: 'startup' }, ctx);
       };
       await resume(first);
       const resumed = await run('Which database did we pick for the billing service, and why?');
       await resume(first.filter((m) => m.customType !== 'mempalace-recall'));
       const withoutIt = await run('Which database did we pick for the billing service, and why?');
       await native.sessionShutdown('quit');
       return { first: first.map((m) => m.customType), resumed, withoutIt: recalled(withoutIt).map((m) => m.content) };`,
      env(dir, { MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '20000' }),
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.first).toEqual(['mempalace-wakeup', 'mempalace-recall']);
    // No wake-up (a resume) and no recall: the drawer is in the history.
    expect(r.result.resumed).toEqual([]);
    // The same resume without the recall message in its history gets the drawer again.
    expect(r.result.withoutIt).toHaveLength(1);
    expect(r.result.withoutIt[0]).toContain('PostgreSQL over MySQL');
  });

  it('is off by default: no recall handler, no message', async () => {
    const dir = tempDir('dotty-recall-off-');
    const r = await runNode(
      `${prelude}
       native.sessionStart('resume', true);
       const msgs = await run('Which database did we pick for the billing service?');
       const events = native.piEvents().filter((e) => e.event === 'before_agent_start').map((e) => e.handler);
       await native.sessionShutdown('quit');
       return { msgs, events };`,
      env(dir),
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.events).toEqual(['beforeAgentStart']);
    expect(r.result.msgs).toEqual([]);
  });

  it('never holds the prompt past the budget: a stopped (SIGSTOP) server gives no recall within it', async () => {
    const dir = tempDir('dotty-recall-stop-');
    const r = await runNode(
      `${prelude}
       native.sessionStart('resume', true);
       const warm = recalled(await run('Which database did we pick for the billing service?'));
       const pid = native.stats().mcpChildPid;
       await require(${JSON.stringify(stopHelper)}).stopProcess(pid);
       const t0 = performance.now();
       const stopped = await run('Where does the deploy pipeline run?');
       const ms = performance.now() - t0;
       process.kill(pid, 'SIGCONT');
       await native.sessionShutdown('quit');
       return { warm: warm.length, stopped, ms };`,
      env(dir, { MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '500' }),
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.warm).toBe(1);
    expect(r.result.stopped).toEqual([]);
    // The budget plus a generous slack for a loaded machine (a hung server would hold it 60 s).
    expect(r.result.ms).toBeGreaterThanOrEqual(450);
    expect(r.result.ms).toBeLessThan(3000);
  });

  it("the budget counts from pi's call: the core is called before the handler's own work", async () => {
    // Fakes only (load.js's handlers): the core starts the recall budget's clock when it is called
    // (src/node.rs), so the handler calls it first and the tools' refresh and the prompt section
    // are inside the budget, not before it.
    // The tools' refresh and the section follow the core's answer: while the core answers it may
    // hold the bridge's handshake (adopting a palace that came back on its own), and a refresh
    // beside it would find the palace's tools not adopted yet and register none for the run.
    const order = [];
    const native = {
      beforeAgentStart: () => {
        order.push('core');
        return new Promise((resolve) => setImmediate(() => { order.push('core answered'); resolve(null); }));
      },
      palacePromptSection: () => { order.push('section'); return null; },
    };
    const load = createRequire(import.meta.url)('../load.js');
    const handlers = load.eventHandlers(native, { speak: {}, refresh: () => order.push('refresh'), show: () => {} });
    await handlers.beforeAgentStart({ type: 'before_agent_start', prompt: 'q', systemPromptOptions: { sections: {} } }, {});
    expect(order).toEqual(['core', 'core answered', 'refresh', 'section']);
  });
});
