// The voice provider's prompt scaffolding (docs/voice-tools.md, "Prompt scaffolding"): the turn log
// stores the person's words alone, and memory_lookup reads rows that older loggers stored with the
// rules inside back as the conversation they were. Through index.js, against a real brain.db.
import { beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { addRows, makeBrain, query, readRows, root, tempDir } from './helpers/brain.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';

// The provider's real per-turn suffix (`build_turn_suffix` in its custom-providers/textUtils.py) and
// its tool-routing paragraph (`_VOICE_TOOL_ROUTING` in pi_voice.py), as it sends every prompt:
// `user_text + ROUTING + build_turn_suffix(kid_mode)`.
const SUFFIX = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/voice-turn-suffix.json'), 'utf8'));
const suffix = (kid) => SUFFIX.base + (kid ? SUFFIX.kid_mode_lines : '') + SUFFIX.end;
const ROUTING =
  '\n\nVOICE TOOL ROUTING: Decide whether to use a registered tool before composing the spoken reply. Use the matching tool ' +
  'when the user asks you to remember or recall, play a song, look or take a photo, or solve a question that needs careful ' +
  'reasoning. Call it first and use its result. Never claim an action succeeded unless its tool succeeded. The reply ' +
  'constraints below apply only to final spoken text, not to tool calls.';
const MEMORY = '\n\nMEMORY SEARCH RESULTS (from earlier conversations):\nuser: what is my cat called | assistant: 😊 Your cat is Miso.';
const prompt = (words, { kid = false } = {}) => words + ROUTING + suffix(kid);

const dir = tempDir();
const db = path.join(dir, 'brain.db');
let ext;
let ts = 1_780_000_000_000;

beforeAll(() => {
  makeBrain(db);
  process.env.DOTTY_BRAIN_DB = db;
  ext = loadExtension();
});

const flush = () => ext.emit('session_shutdown', { reason: 'quit' });
const turn = (user, answer = '😊 OK.') => [
  { role: 'user', content: user, timestamp: ++ts },
  { role: 'assistant', content: [{ type: 'text', text: answer }], timestamp: ts },
];
/** The row one turn writes. */
async function logged(user, answer) {
  const before = readRows(db).length;
  await ext.emit('agent_end', { messages: turn(user, answer) });
  await flush();
  const rows = readRows(db);
  expect(rows.length).toBe(before + 1);
  return rows.at(-1).content;
}
const cp = (s) => [...s];

describe('the turn log stores the words, never the scaffolding', () => {
  it('the base suffix after the routing paragraph', async () => {
    expect(await logged(prompt('What is twelve plus seven?'), '😊 Nineteen!')).toBe('user: What is twelve plus seven? | assistant: 😊 Nineteen!');
  });

  it('the kid-mode suffix', async () => {
    expect(await logged(prompt('Tell me about dinosaurs', { kid: true }), '😮 They were huge!')).toBe('user: Tell me about dinosaurs | assistant: 😮 They were huge!');
  });

  it('the suffix alone, without the routing paragraph', async () => {
    expect(await logged('Good night Dotty' + suffix(false))).toBe('user: Good night Dotty | assistant: 😊 OK.');
  });

  it('a MEMORY SEARCH RESULTS block before both', async () => {
    expect(await logged('Do you remember my cat?' + MEMORY + ROUTING + suffix(false), '😊 Miso!')).toBe('user: Do you remember my cat? | assistant: 😊 Miso!');
  });

  it('the legacy {"content": …} envelope followed by the rules', async () => {
    const legacy = '{"content": "Dotty, what is my favourite colour?"}' + '\n---\nHARD CONSTRAINTS for THIS reply (overrides everything else):\n1. Reply in ENGLISH ONLY.';
    expect(await logged(legacy, '😊 Purple.')).toBe('user: Dotty, what is my favourite colour? | assistant: 😊 Purple.');
  });

  it('480 codepoints of words: all kept; 600: the usual 500-codepoint cut of the words', async () => {
    const w480 = 'a'.repeat(479) + '.';
    expect(await logged(prompt(w480))).toBe(`user: ${w480} | assistant: 😊 OK.`);
    const w600 = 'b'.repeat(600);
    expect(await logged(prompt(w600))).toBe(`user: ${'b'.repeat(500)} | assistant: 😊 OK.`);
  });

  it('emoji and CJK before the suffix, counted in codepoints', async () => {
    const words = '🦖你好 '.repeat(120).trim(); // 479 codepoints
    expect(cp(words).length).toBe(479);
    expect(await logged(prompt(words))).toBe(`user: ${words} | assistant: 😊 OK.`);
    const longer = '😀你'.repeat(300); // 600 codepoints
    expect(await logged(prompt(longer))).toBe(`user: ${'😀你'.repeat(250)} | assistant: 😊 OK.`);
  });

  it('text blocks joined first: a marker split across two blocks is still the scaffolding', async () => {
    const blocks = [
      { type: 'text', text: 'Where is my hat?\n\n---\nHARD CONSTR' },
      { type: 'image', data: 'iVBOR', mimeType: 'image/png' },
      { type: 'text', text: 'AINTS for THIS reply (overrides everything else):\n1. Reply in ENGLISH ONLY.' },
    ];
    expect(await logged(blocks)).toBe('user: Where is my hat? | assistant: 😊 OK.');
    const routingSplit = [{ type: 'text', text: 'Play a song\n' }, { type: 'text', text: '\nVOICE TOOL' }, { type: 'text', text: ' ROUTING: Decide…' }];
    expect(await logged(routingSplit)).toBe('user: Play a song | assistant: 😊 OK.');
  });

  it('words that are only whitespace: the row keeps the answer; no answer either: no row', async () => {
    expect(await logged(' \n\t ' + ROUTING + suffix(false), '😐 Hello?')).toBe('user:  | assistant: 😐 Hello?');
    const before = readRows(db).length;
    await ext.emit('agent_end', { messages: [{ role: 'user', content: '   ' + suffix(true), timestamp: ++ts }, { role: 'assistant', content: [{ type: 'toolCall', id: 'x', name: 'take_photo', arguments: {} }] }] });
    await flush();
    expect(readRows(db).length).toBe(before);
  });

  it('nothing else is touched: a person saying the words keeps the sentence; braces that aren’t JSON stay', async () => {
    expect(await logged('what are hard constraints for this reply')).toBe('user: what are hard constraints for this reply | assistant: 😊 OK.');
    expect(await logged('say VOICE TOOL ROUTING: please')).toBe('user: say VOICE TOOL ROUTING: please | assistant: 😊 OK.');
    expect(await logged('{not json} hello' + suffix(false))).toBe('user: {not json} hello | assistant: 😊 OK.');
    expect(await logged('{"content": 7}')).toBe('user: {"content": 7} | assistant: 😊 OK.');
    expect(await logged('line one\n---\nline two')).toBe('user: line one\n---\nline two | assistant: 😊 OK.');
  });
});

// What the old logger stored for a turn: `user: <first 500 codepoints of the stripped prompt> |
// assistant: <answer>` (the rules cut mid-word when the words were long).
// Older provider builds sent the suffix without the routing paragraph: `routing: false`.
const oldRow = (words, answer, { kid = false, routing = true } = {}) =>
  `user: ${cp((words + (routing ? ROUTING : '') + suffix(kid)).trim()).slice(0, 500).join('')} | assistant: ${answer}`;

describe('memory_lookup reads polluted rows back as conversation', () => {
  const pollutedGiraffe = oldRow('How tall is a giraffe?', '😮 About five metres!');
  const pollutedKid = oldRow('Is a shark a fish?', '🤔 Yes, sharks are fish.', { kid: true });
  const dinner = oldRow('What should we have for dinner', '😊 Pasta!', { routing: false });
  const count = oldRow('Can you count to three', '😊 One, two, three!', { routing: false, kid: true });
  // Words long enough for the 200-codepoint rule to cut the cleaned row; the old cut fell inside the rules.
  const longWords = 'I like long stories about my pet tortoise Shelly ' + 'and her garden '.repeat(9);
  const pollutedLong = oldRow(longWords, '😊 Shelly sounds lovely!', { routing: false });
  const legacy = 'user: {"content": "My favourite colour is purple."}\n---\nHARD CONSTRAINTS for THIS reply (overr | assistant: 😊 Purple is lovely!';
  const noAnswer = oldRow('Hello there giraffe fan', '').trimEnd(); // `… | assistant:` as the store stripped it

  beforeAll(() => {
    expect(cp(pollutedLong.split(' | assistant: ')[0]).length).toBe(6 + 500);
    // The marker is whole; the rules after it were cut before their end.
    expect(pollutedLong).toContain('\n\n---\nHARD CONSTRAINTS for THIS reply');
    expect(pollutedLong).not.toContain('Begin your reply now.');
    expect(dinner).toContain('Reply in ENGLISH ONLY');
    addRows(db, [
      { content: dinner, category: 'conversation', importance: 0.3 },
      { content: count, category: 'conversation', importance: 0.3 },
      { content: pollutedGiraffe, category: 'conversation', importance: 0.3 },
      { content: pollutedKid, category: 'conversation', importance: 0.3 },
      { content: pollutedLong, category: 'conversation', importance: 0.3 },
      { content: legacy, category: 'conversation', importance: 0.3 },
      { content: noAnswer, category: 'conversation', importance: 0.3 },
      { content: 'user: is a giraffe tall | assistant: 😊 Very tall.', category: 'conversation', importance: 0.3 },
      { content: 'Giraffes are the tallest animals. Reply in ENGLISH ONLY is what the robot says.', category: 'core' },
      { content: 'Leo thinks giraffes are purple', category: 'core', namespace: 'person_pending:leo' },
      { content: 'user: the tortoise is called Shelly', category: 'core', namespace: 'person:mum' },
    ]);
  });

  it('one polluted row: the words and the answer, byte for byte', async () => {
    expect(await ext.text('memory_lookup', { query: 'shark' })).toBe('user: Is a shark a fish? | assistant: 🤔 Yes, sharks are fish.');
    expect(await ext.text('memory_lookup', { query: 'purple is lovely' })).toBe('user: My favourite colour is purple. | assistant: 😊 Purple is lovely!');
  });

  it('a row whose rules the old cut left mid-word; the 200-codepoint rule applies to the cleaned text', async () => {
    const clean = `user: ${longWords.trim()} | assistant: 😊 Shelly sounds lovely!`;
    expect(cp(clean).length).toBeGreaterThan(200);
    expect(await ext.text('memory_lookup', { query: 'tortoise Shelly' })).toBe(cp(clean).slice(0, 197).join('') + '...');
  });

  it('the rules themselves no longer come out: "English" finds only rows whose words are shown clean', async () => {
    const got = await ext.text('memory_lookup', { query: 'English' });
    expect(got).not.toMatch(/HARD CONSTRAINTS|Begin your reply|EXACTLY ONE emoji/);
    // Only the fact that quotes a rule still says it: it is not a turn row.
    expect((got.match(/ENGLISH ONLY/g) ?? []).length).toBeLessThanOrEqual(1);
    // The same rows, in the contract's order, each cleaned as the contract says.
    const rows = query(db, `SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
      WHERE memories_fts MATCH '"English"' AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT 5`).map((r) => r.content);
    // Four rows hold the word (three in their rules, one fact): the contract's top three, cleaned.
    expect(rows.length).toBe(4);
    expect(got).toBe(rows.slice(0, 3).map((c) => snippet(contractClean(c))).join(' | '));
  });

  it('a polluted row without an answer; clean rows, facts and person facts as they are; never a pending fact', async () => {
    const got = await ext.text('memory_lookup', { query: 'giraffe' });
    const parts = got.split(' | ');
    expect(got).not.toMatch(/HARD CONSTRAINTS|Leo thinks/);
    expect(parts).toContain('user: How tall is a giraffe?');
    expect(parts).toContain('assistant: 😮 About five metres!');
    const fan = await ext.text('memory_lookup', { query: 'giraffe fan' });
    expect(fan).toBe('user: Hello there giraffe fan');
    expect(await ext.text('memory_lookup', { query: 'tallest animals' })).toBe('Giraffes are the tallest animals. Reply in ENGLISH ONLY is what the robot says.');
    expect(await ext.text('memory_lookup', { query: 'is a giraffe tall' })).toBe('user: is a giraffe tall | assistant: 😊 Very tall.');
    expect(await ext.text('memory_lookup', { query: 'called Shelly' })).toBe('user: the tortoise is called Shelly');
  });

  it('recall_person is unchanged: person facts are not turn rows', async () => {
    expect(await ext.text('recall_person', { name: 'Mum' })).toBe('user: the tortoise is called Shelly');
  });
});

// The contract's reading of a row (memory_lookup step 5 and "Prompt scaffolding"), written from the
// contract's text for the ordering check above.
const PY_SPACE = /^[\s\u001c-\u001f\u0085]+|[\s\u001c-\u001f\u0085]+$/gu;
const strip = (s) => s.replace(PY_SPACE, '');
function contractSpoken(text) {
  const m = /\n+(?:MEMORY SEARCH RESULTS \(|VOICE TOOL ROUTING:|---\nHARD CONSTRAINTS for THIS reply)/.exec(text);
  let words = m ? text.slice(0, m.index) : text;
  const t = strip(words);
  if (t.startsWith('{') && t.endsWith('}')) {
    try {
      const o = JSON.parse(t);
      if (o && typeof o === 'object' && !Array.isArray(o) && typeof o.content === 'string') words = o.content;
    } catch { /* not JSON: the words as they are */ }
  }
  return strip(words);
}
function contractClean(content) {
  if (!content.startsWith('user: ')) return content;
  const rest = content.slice(6);
  const at = rest.indexOf(' | assistant: ');
  return at < 0 ? `user: ${contractSpoken(rest)}` : `user: ${contractSpoken(rest.slice(0, at))} | assistant: ${strip(rest.slice(at + 14))}`;
}
const snippet = (c) => { const s = cp(strip(c)); return s.length > 200 ? s.slice(0, 197).join('') + '...' : s.join(''); };
