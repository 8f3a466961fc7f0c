// Issue 18 end to end in the real pi (0.74.0 on Node 20, 1.6.0 on Node 22): prompts sent over RPC
// exactly as Dotty's voice provider builds them (the person's words + its VOICE TOOL ROUTING
// paragraph + build_turn_suffix(kid_mode), from __test__/fixtures/voice-turn-suffix.json), and
// - the per-turn log row is `user: <words> | assistant: <answer>`, byte for byte;
// - memory_lookup, called by the model, reads rows the old logger polluted (seeded beforehand, as it
//   stored them: `user: ` + the first 500 codepoints of words + scaffolding) back as conversation.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel, lastUserText } from './mock-model.mjs';
import { startPi, ready, root, TARGETS, nodeBin, pollUntil } from './pi-rpc.mjs';
import { startHome } from './home.mjs';
import { readRows } from '../helpers/brain.mjs';

const SUFFIX = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/voice-turn-suffix.json'), 'utf8'));
/** build_turn_suffix(kid_mode) of the provider's custom-providers/textUtils.py. */
const turnSuffix = (kid) => SUFFIX.base + (kid ? SUFFIX.kid_mode_lines : '') + SUFFIX.end;
/** The provider's tool-routing paragraph, put before the suffix. */
const VOICE_TOOL_ROUTING =
  '\n\nVOICE TOOL ROUTING: Decide whether to use a registered tool before composing the spoken reply. Use the matching tool when the user asks you to remember or recall, play a song, look or take a photo, or solve a question that needs careful reasoning. Call it first and use its result. Never claim an action succeeded unless its tool succeeded. The reply constraints below apply only to final spoken text, not to tool calls.';
/** A prompt as the voice provider sends it to pi. */
const providerPrompt = (words, { kid = false, memory = '' } = {}) => words + memory + VOICE_TOOL_ROUTING + turnSuffix(kid);
/** The first `n` codepoints. */
const take = (s, n) => [...s].slice(0, n).join('');

// Rows as the old logger stored them: the user half is the first 500 codepoints of the whole prompt.
const OLD_LIGHTHOUSE = { words: 'Tell me about the red lighthouse by the harbour', answer: '😊 It is red and white, with a little lamp on top.' };
const OLD_DINOSAUR = { words: 'Can you sing the stomping dinosaur song again?', answer: '😆 Stomp, stomp, roar!' };
const oldRow = ({ words, answer }, prompt) => `user: ${take(prompt, 500)} | assistant: ${answer}`;
const SEEDED = [
  { content: oldRow(OLD_LIGHTHOUSE, OLD_LIGHTHOUSE.words + turnSuffix(false)), category: 'conversation', namespace: 'voice', importance: 0.3 },
  { content: oldRow(OLD_DINOSAUR, providerPrompt(OLD_DINOSAUR.words, { kid: true })), category: 'conversation', namespace: 'voice', importance: 0.3 },
  { content: 'user: What is the cat called? | assistant: 😊 The cat is called Miso.', category: 'conversation', namespace: 'voice', importance: 0.3 },
  { content: 'The garden has three apple trees', namespace: 'voice', importance: 0.7 },
];

// Live turns: base suffix, kid mode, and a recall prompt with a MEMORY SEARCH RESULTS block.
const TURNS = [
  { words: 'Hello Dotty, how are you today?', answer: '😊 I am great, thanks for asking!' },
  { words: 'Why do cats purr? 猫はなぜ喉を鳴らすの 🐱', kid: true, answer: '🤔 Cats purr when they feel cosy and happy.' },
  { words: 'What did we talk about before?', memory: '\n\nMEMORY SEARCH RESULTS (from earlier conversations):\n- user: What is the cat called? | assistant: 😊 The cat is called Miso.', answer: '😊 We talked about Miso the cat.' },
];

const conversationRows = (db) => readRows(db).filter((r) => r.category === 'conversation');

for (const target of ['0.74.0', '1.6.0']) {
  const T = TARGETS[target];

  describe(`pi ${T.pi} on Node ${T.node}: voice turns with the provider's real per-turn suffix`, () => {
    let mock, home, pi;
    beforeAll(async () => {
      mock = await startMockModel();
      home = await startHome({ brainRows: SEEDED });
      pi = await startPi({ target, modelBaseUrl: mock.baseUrl, env: home.env });
      await ready(pi);
    }, 60_000);
    afterAll(async () => {
      await pi?.close();
      await Promise.all([mock?.close(), home?.close()]);
    }, 30_000);

    it('pi runs on the intended Node', () => {
      expect(fs.realpathSync(`/proc/${pi.pid}/exe`)).toBe(fs.realpathSync(nodeBin(T.node)));
    });

    it('each turn writes `user: <words> | assistant: <answer>`, byte for byte, without the scaffolding', async () => {
      const before = conversationRows(home.brainDb).length;
      expect(before).toBe(3);
      for (const [i, t] of TURNS.entries()) {
        const prompt = providerPrompt(t.words, t);
        const n0 = mock.requests.length;
        mock.enqueue({ text: t.answer });
        const turn = await pi.prompt(prompt);
        expect(turn.text).toBe(t.answer);
        // pi passed the prompt through as the provider built it: the scaffolding did reach the model.
        expect(lastUserText(mock.requests[n0].body)).toBe(prompt);
        const rows = await pollUntil(() => { const r = conversationRows(home.brainDb); return r.length > before + i && r; }, `conversation row of turn ${i}`);
        expect(rows.length, `turn ${i}: one new row`).toBe(before + i + 1);
        const row = rows.at(-1);
        expect(row.content, `turn ${i} row`).toBe(`user: ${t.words} | assistant: ${t.answer}`);
        expect(row).toMatchObject({ category: 'conversation', namespace: 'voice', importance: 0.3 });
      }
      for (const r of conversationRows(home.brainDb).slice(before)) {
        for (const marker of ['HARD CONSTRAINTS', 'VOICE TOOL ROUTING', 'MEMORY SEARCH RESULTS', 'Begin your reply now']) expect(r.content).not.toContain(marker);
      }
    }, 60_000);

    it('memory_lookup through the model reads rows the old logger polluted back as conversation, byte for byte', async () => {
      // The seeded rows are stored polluted (the read side cleans, it does not rewrite).
      const stored = readRows(home.brainDb);
      expect(stored[0].content).toContain('HARD CONSTRAINTS for THIS reply');
      expect(stored[1].content).toContain('VOICE TOOL ROUTING:');
      const words = 'Do you remember the lighthouse, and that dinosaur song? Do you speak English?';
      const calls = [
        // A word of the person's own, a phrase of theirs, and a word only the old scaffolding holds.
        { args: { query: 'lighthouse' }, reply: `user: ${OLD_LIGHTHOUSE.words} | assistant: ${OLD_LIGHTHOUSE.answer}` },
        { args: { query: 'dinosaur song' }, reply: `user: ${OLD_DINOSAUR.words} | assistant: ${OLD_DINOSAUR.answer}` },
        { args: { query: 'English' }, reply: `user: ${OLD_LIGHTHOUSE.words} | assistant: ${OLD_LIGHTHOUSE.answer}` },
      ];
      const answer = '😊 Yes: the red lighthouse, and the stomping song.';
      const n0 = mock.requests.length;
      mock.enqueue(
        { toolCalls: calls.map((c, k) => ({ id: `call_lookup_${k}`, name: 'memory_lookup', arguments: c.args })) },
        { text: answer },
      );
      const rowsBefore = conversationRows(home.brainDb).length;
      const turn = await pi.prompt(providerPrompt(words));
      expect(turn.text).toBe(answer);
      expect(turn.toolEnds.map((e) => [e.toolName, e.isError])).toEqual(calls.map(() => ['memory_lookup', false]));
      // What the model was given back: one role:"tool" message per call, in order, each verbatim.
      const msgs = mock.requests[n0 + 1].body.messages;
      const tail = msgs.slice(msgs.length - calls.length);
      calls.forEach((c, k) => {
        expect(tail[k]).toMatchObject({ role: 'tool', tool_call_id: `call_lookup_${k}` });
        expect(tail[k].content, `memory_lookup(${JSON.stringify(c.args.query)})`).toBe(c.reply);
      });
      // And this turn's own row is clean too.
      const rows = await pollUntil(() => { const r = conversationRows(home.brainDb); return r.length > rowsBefore && r; }, 'conversation row of the lookup turn');
      expect(rows.at(-1).content).toBe(`user: ${words} | assistant: ${answer}`);
      expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
      expect(mock.errors).toEqual([]);
    }, 60_000);

    it('exits 0 when stdin closes', async () => {
      expect(await pi.close()).toEqual({ code: 0, signal: null });
    }, 30_000);
  });
}
