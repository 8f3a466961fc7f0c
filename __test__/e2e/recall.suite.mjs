// End to end: per-prompt recall (MEMPALACE_RECALL=on) in the real pi (0.74.0 on Node 20 by
// recall.e2e.test.mjs, 1.6.0 on Node 22 by recall-pi16.e2e.test.mjs; RPC mode, the mock model
// recording each request) against the REAL MemPalace 3.11.0 over stdio, on a palace seeded with 40
// drawers of the recall benchmark's labelled set (bench/recall/set.json: real application
// descriptions from Debian's AppStream metadata) and prompts from the same set.
//   1  off by default: a topical prompt's request carries the wake-up and no recall;
//   2  on: the topical prompt's FIRST request carries the wake-up, then one hidden recall message
//      with its drawer; an unrelated prompt adds none; the same prompt again adds none (no repeats);
//      an extension's custom-message run about another drawer adds none, the user's own prompt
//      about it then gets it;
//   3  resume (--continue of 2's session, a new process): the drawers 2 recalled are not recalled
//      again; another topic's drawer is;
//   4  the budget (500 ms, the default): with the server stopped (SIGSTOP), the model's request
//      arrives within the budget plus a slack, without recall.
import { describe, it, expect, beforeAll } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { piSuiteHooks } from './suite-hooks.mjs';
import { startPi, ready, root, childPids, TARGETS } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { stdioEnv } from '../helpers/palace.mjs';
import { runNode } from '../helpers/run-node.mjs';
import { stopProcess } from '../helpers/stop-process.cjs';

const SET = JSON.parse(fs.readFileSync(path.join(root, 'bench/recall/set.json'), 'utf8'));
const prompt = (drawer) => SET.prompts.find((p) => p.drawer === drawer && p.kind === 'summary');
// Prompts whose drawer scores ≥ 0.70 and best (bench/recall.mjs), and one with no drawer above 0.2.
const TOPICS = ['net.sourceforge.qtpfsgui.LuminanceHDR', 'telegnome.desktop', 'org.kde.rocs.desktop'].map(prompt);
const UNRELATED = SET.prompts.find((p) => p.prompt === 'Fit falling blocks together');
const SEEDED = [...new Set([...TOPICS.map((p) => p.drawer), ...SET.drawers.slice(0, 37).map((d) => d.key)])]
  .map((key) => SET.drawers.find((d) => d.key === key));
const drawerText = (key) => SET.drawers.find((d) => d.key === key).text;

const WAKEUP_HEAD = '[MemPalace wake-up]';
const RECALL_HEAD = '[MemPalace recall]';
const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join(''));
const users = (body, head) => body.messages.filter((m) => m.role === 'user' && textOf(m).startsWith(head)).map(textOf);
const CUSTOM_MESSAGE_EXT = path.join(root, '__test__/e2e/fixtures/custom-message');

/** The recall session on one pi + Node target (a TARGETS key of ./pi-rpc.mjs). */
export function recallSuite(target = '0.74.0') {
  const T = TARGETS[target];
  const dir = tempDir(`dotty-e2e-recall-${T.pi}-`);
  const project = path.join(dir, 'project');
  const seedEnv = { ...stdioEnv(dir), DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0' };
  // stdioEnv's HOME / PI_CODING_AGENT_DIR are dropped: startPi sets both to pi's own.
  const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = seedEnv;
  const ENV = { ...bridgeEnv, DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0' };
  const timings = {};
  let pi;
  const hooks = piSuiteHooks({ dir, project, currentPi: () => pi, report: () => `[recall.e2e timings] ${JSON.stringify(timings)}` });

  // Test 2's session is kept (in `home`) for test 3's --continue; the others run without one.
  const home = path.join(dir, 'home');
  const start = async (env, extensions = [root], saved = {}) => {
    pi = await startPi({ target, modelBaseUrl: hooks.mock.baseUrl, extensions, env: { ...ENV, ...env }, cwd: project, timeoutMs: 60_000, ...saved });
    await ready(pi, 60_000);
    return pi;
  };
  /** Sends `message`; → the body of the model request it caused, and ms from the send to that request. */
  const ask = async (message) => {
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'OK.' });
    const t0 = performance.now();
    await pi.prompt(message);
    return { body: hooks.mock.requests[n0].body, ms: Math.round(hooks.mock.requests[n0].receivedAt - t0) };
  };

  beforeAll(async () => {
    // The palace's drawers, filed with mempalace_add_drawer through the addon, before any pi runs.
    const r = await runNode(
      `for (const d of ${JSON.stringify(SEEDED)}) {
         const reply = await native.callTool('mempalace_add_drawer', { wing: d.wing, room: d.room, content: d.text }, null);
         if (reply.isError) throw new Error(JSON.stringify(reply));
       }
       await native.sessionShutdown('quit');`,
      seedEnv,
      { timeoutMs: 120_000 },
    );
    expect(r.error).toBeUndefined();
  }, 150_000);

  describe(`pi ${T.pi} on Node ${T.node}: recall from the real MemPalace 3.11.0`, () => {
    it('is off by default: the topical prompt gets the wake-up and no recall', async () => {
      await start({});
      const { body } = await ask(TOPICS[0].prompt);
      expect(users(body, WAKEUP_HEAD)).toHaveLength(1);
      expect(users(body, RECALL_HEAD)).toEqual([]);
      expect((await pi.close()).code).toBe(0);
    }, 120_000);

    it('on: a topical prompt gets its drawer after the wake-up; unrelated, repeated and custom-message runs get none', async () => {
      // A budget no loaded machine misses: this test is about what is recalled (the next one about the budget).
      await start({ MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '20000' }, [root, CUSTOM_MESSAGE_EXT], { session: true, home });
      const [hdr, tele] = TOPICS;
      const first = await ask(hdr.prompt);
      timings.firstRecallMs = first.ms;
      expect(users(first.body, WAKEUP_HEAD)).toHaveLength(1);
      const [recall] = users(first.body, RECALL_HEAD);
      expect(recall).toContain(drawerText(hdr.drawer).slice(0, 60));
      expect(recall).not.toContain(drawerText(tele.drawer).slice(0, 60));
      expect(Buffer.byteLength(recall)).toBeLessThanOrEqual(2000);
      // The prompt, the wake-up, then the recall: the last messages before the model answers.
      const [mine, wake, rec] = first.body.messages.slice(-3).map(textOf);
      expect([mine, wake.startsWith(WAKEUP_HEAD), rec]).toEqual([hdr.prompt, true, recall]);
      // Hidden from the RPC client, like the wake-up.
      const hidden = pi.events.filter((e) => e.type === 'message_end' && e.message?.role === 'custom').map((e) => [e.message.customType, e.message.display]);
      expect(hidden).toEqual([['mempalace-wakeup', false], ['mempalace-recall', false]]);

      const unrelated = await ask(UNRELATED.prompt);
      expect(users(unrelated.body, RECALL_HEAD), 'an unrelated prompt adds no recall').toHaveLength(1);
      const again = await ask(hdr.prompt);
      expect(users(again.body, RECALL_HEAD), 'a drawer already recalled is not recalled again').toHaveLength(1);
      const custom = await ask(`/e2e-custom ${tele.prompt}`);
      expect(custom.body.messages.map(textOf)).toContain(tele.prompt);
      expect(users(custom.body, RECALL_HEAD), "no recall on a run an extension's message started").toHaveLength(1);
      const own = await ask(tele.prompt);
      const recalls = users(own.body, RECALL_HEAD);
      expect(recalls).toHaveLength(2);
      expect(recalls[1]).toContain(drawerText(tele.drawer).slice(0, 60));
      expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
      expect((await pi.close()).code).toBe(0);
    }, 180_000);

    it("resume (--continue): what the earlier process recalled is not recalled again; another topic's drawer is", async () => {
      // A new process: its memory of the session is the session's own history.
      await start({ MEMPALACE_RECALL: 'on', MEMPALACE_RECALL_BUDGET_MS: '20000' }, [root], { session: true, home, args: ['--continue'] });
      const [hdr, tele, rocs] = TOPICS;
      const resumed = await ask(hdr.prompt);
      expect(resumed.body.messages.map(textOf), 'resumed the previous session').toContain(tele.prompt);
      expect(users(resumed.body, WAKEUP_HEAD), 'no new wake-up').toHaveLength(1);
      const recalls = users(resumed.body, RECALL_HEAD);
      expect(recalls, 'the earlier recalls only: nothing recalled twice').toHaveLength(2);
      const other = await ask(rocs.prompt);
      const after = users(other.body, RECALL_HEAD);
      expect(after).toHaveLength(3);
      expect(after[2]).toContain(drawerText(rocs.drawer).slice(0, 60));
      expect((await pi.close()).code).toBe(0);
    }, 120_000);

    it('never holds the prompt past the budget: a stopped (SIGSTOP) server, the request comes within 500 ms plus slack, without recall', async () => {
      await start({ MEMPALACE_RECALL: 'on' });
      // The first prompt: the wake-up waits for the handshake; the search path is warm after it.
      await ask(UNRELATED.prompt);
      const [child] = childPids(pi.pid).filter((c) => { try { return fs.readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('mempalace'); } catch { return false; } });
      expect(child, 'the MemPalace child').toBeDefined();
      await stopProcess(child);
      let stopped;
      try {
        stopped = await ask(TOPICS[2].prompt);
      } finally {
        process.kill(child, 'SIGCONT');
      }
      timings.stoppedServerMs = stopped.ms;
      expect(users(stopped.body, RECALL_HEAD)).toEqual([]);
      expect(stopped.ms).toBeGreaterThanOrEqual(450);
      // The budget plus a slack for a loaded machine (without the budget: the 60 s request timeout).
      expect(stopped.ms).toBeLessThan(3000);
      expect((await pi.close()).code).toBe(0);
    }, 120_000);
  });
}
