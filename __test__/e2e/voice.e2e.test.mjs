// End to end in the real pi: the package loaded with `-e` into `pi --mode rpc`, a scripted model,
// Dotty's home services faked in-process, a real brain.db. Asserts what pi and the mock model saw.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startMockModel, lastUserText } from './mock-model.mjs';
import { startPi, ready, root, PI_CLI, TARGETS, nodeBin, nodeExe, openFdsTo, childPids, startTicks, pollUntil } from './pi-rpc.mjs';
import { startHome, SONGS, ASSET_BASE } from './home.mjs';
import { json, stall, waitForRequests } from '../helpers/services.mjs';
import { readRows } from '../helpers/brain.mjs';

// What the model reads about each tool: production's text (docs/voice-tools.md, "What the model reads").
const PRODUCTION = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/production-descriptors.json'), 'utf8'));
// Production's persona, as its newest voice client passes it: `--system-prompt "<file text, stripped>"`.
const PERSONA = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/pi-voice-persona.json'), 'utf8')).text.trim();

// UI requests besides the palace's footer status (a fire-and-forget setStatus the client may ignore).
const dialogs = (pi) => pi.uiRequests.filter((r) => !(r.method === 'setStatus' && r.statusKey === 'mempalace'));

const RELOAD_EXT = path.join(root, '__test__/e2e/fixtures/reload-command');
// What the thinking model "thinks" before every answer: it must reach pi as thinking, never as text.
const THINK = ['The child is asking', ' something; let me', ' decide whether', ' a tool helps.'];

const FIXTURE_ROWS = [
  { content: 'The lighthouse is painted red and white', namespace: 'voice' },
  { content: 'Alice has a cat called Miso', namespace: 'person:alice', importance: 0.9 },
  { content: 'Alice is seven years old', namespace: 'person:alice', importance: 0.5 },
  { content: 'Mia secretly likes broccoli', namespace: 'person_pending:mia', importance: 0.7 },
];

const THINK_HARD_SYSTEM = "Answer the user's question concisely in 1-2 sentences. Be precise.";

const conversationRows = (db) => readRows(db).filter((r) => r.category === 'conversation');

/** Enqueues the model's side of one turn: [tool calls →] final text. */
function planTurn(mock, t, i) {
  if (t.calls) {
    mock.enqueue({
      thinking: THINK,
      text: t.pre,
      toolCalls: t.calls.map((c, k) => ({ id: `call_t${i}_${k}`, name: c.name, arguments: c.args })),
    });
  }
  mock.enqueue({ thinking: THINK, text: t.say });
}

/**
 * Runs one voice turn and checks: the spoken text (text_delta) is exactly what the model said, no
 * thinking in it; each tool reply reached the model's next request verbatim; one new conversation row.
 */
async function voiceTurn(pi, mock, home, t, i, rowsBefore) {
  const n0 = mock.requests.length;
  planTurn(mock, t, i);
  const turn = await pi.prompt(t.prompt);
  const said = (t.pre ?? '') + t.say;

  expect(turn.text, `turn ${i} spoken text`).toBe(said);
  expect(turn.thinking.join(''), `turn ${i} thinking deltas`).toBe(THINK.join('').repeat(t.calls ? 2 : 1));
  for (const th of THINK) expect(turn.text).not.toContain(th);
  expect(mock.requests.length - n0, `turn ${i} model requests`).toBe(t.calls ? 2 : 1);
  expect(lastUserText(mock.requests[n0].body)).toBe(t.prompt);

  if (t.calls) {
    const ends = turn.toolEnds;
    // Parallel calls end in whichever order they finish; the replies' order is checked below.
    expect(ends.map((e) => e.toolName).sort()).toEqual(t.calls.map((c) => c.name).sort());
    for (const e of ends) expect(e.isError, `${e.toolName} isError`).toBe(false);
    // The request after the tool calls ends with one role:"tool" message per call, in order.
    const msgs = mock.requests[n0 + 1].body.messages;
    const tail = msgs.slice(msgs.length - t.calls.length);
    t.calls.forEach((c, k) => {
      expect(tail[k].role).toBe('tool');
      expect(tail[k].tool_call_id).toBe(`call_t${i}_${k}`);
      expect(tail[k].content, `turn ${i}: ${c.name}(${JSON.stringify(c.args)}) reply`).toBe(c.reply);
    });
  }

  // The per-turn log: written off the JS thread after agent_end, so poll (bounded) for the row.
  const rows = await pollUntil(() => { const r = conversationRows(home.brainDb); return r.length > rowsBefore && r; }, `conversation row of turn ${i}`);
  expect(rows.length, `turn ${i}: exactly one new conversation row`).toBe(rowsBefore + 1);
  const row = rows[rows.length - 1];
  expect(row.content).toBe(`user: ${t.prompt.trim()} | assistant: ${said.trim()}`);
  expect(row).toMatchObject({ category: 'conversation', namespace: 'voice', importance: 0.3, session_id: null, embedding: null, superseded_by: null });
  for (const th of THINK) expect(row.content).not.toContain(th.trim());
  // Tool-call arguments and tool replies are not what Dotty said: never in the row (when not also spoken).
  const spoken = t.prompt + said;
  for (const c of t.calls ?? []) {
    for (const v of [...Object.values(c.args).map(String), c.reply].map((x) => x.trim())) if (v.length > 3 && !spoken.includes(v)) expect(row.content).not.toContain(v);
  }
  return turn;
}

// 23 turns; every one of the seven tools with real arguments, plus failures of each service.
const TURNS = [
  { prompt: 'What colour is that tall tower by the sea?', pre: 'Let me check. ', calls: [{ name: 'memory_lookup', args: { query: 'lighthouse' }, reply: 'The lighthouse is painted red and white' }], say: 'It is red and white.' },
  { prompt: 'Please keep this in mind: I love teal.', calls: [{ name: 'remember', args: { fact: "  Dotty's favourite colour is teal  " }, reply: '(remembered)' }], say: 'Got it!' },
  { prompt: 'Which shade do I like best?', calls: [{ name: 'memory_lookup', args: { query: 'favourite colour' }, reply: "Dotty's favourite colour is teal" }], say: 'Teal!' },
  { prompt: 'Do you know my friend Alice?', calls: [{ name: 'recall_person', args: { name: 'Alice' }, reply: 'Alice has a cat called Miso | Alice is seven years old' }], say: 'Yes, she has a cat.' },
  { prompt: 'Bob told me what he does on weekends.', calls: [{ name: 'remember_person', args: { name: 'Bob', fact: 'Bob builds model trains' }, reply: '(remembered about Bob)' }], say: 'Noted for Bob.' },
  { prompt: 'What about Bob?', calls: [{ name: 'recall_person', args: { name: 'bob' }, reply: 'Bob builds model trains' }], say: 'He likes trains.' },
  { prompt: 'Here is something about Mia.', calls: [{ name: 'remember_person', args: { name: 'Mia', fact: 'Mia is scared of thunder' }, reply: '(saved — a grown-up will check that)' }], say: 'A grown-up will check it.' },
  // Held facts must never come out of memory_lookup (and tool-call arguments are not in the log).
  { prompt: 'Is Mia afraid of anything?', calls: [{ name: 'memory_lookup', args: { query: 'scared of thunder' }, reply: '(no memories found)' }], say: "I don't know yet." },
  { prompt: 'And what does Mia like?', calls: [{ name: 'recall_person', args: { name: 'Mia' }, reply: '(nothing remembered about Mia)' }], say: 'Nothing yet.' },
  { prompt: 'Why does the sky look that way?', calls: [{ name: 'think_hard', args: { question: '  Why is the sky blue?  ' }, reply: 'Rayleigh scattering.' }], say: 'Because of Rayleigh scattering.',
    check: (home) => {
      const r = home.llama.requests.at(-1);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(r.body)).toEqual({ model: 'qwen3.6:27b-think', messages: [{ role: 'system', content: THINK_HARD_SYSTEM }, { role: 'user', content: 'Why is the sky blue?' }], max_tokens: 200, temperature: 0.3, stream: false, chat_template_kwargs: { enable_thinking: false } });
    } },
  { prompt: 'What can you see right now?', calls: [{ name: 'take_photo', args: {}, reply: 'A child holding a red balloon.' }], say: 'A red balloon!' },
  { prompt: 'Sing me the star song.', calls: [{ name: 'play_song', args: { name: 'Twinkle' }, reply: 'playing twinkle_twinkle' }], say: 'Here it comes.',
    check: (home) => {
      const r = home.xiaozhi.requests.filter((q) => q.path === '/xiaozhi/admin/play-asset').at(-1);
      expect(JSON.parse(r.body)).toEqual({ asset: `${ASSET_BASE}/twinkle_twinkle.mp3` });
    } },
  { prompt: 'Play the Queen one.', calls: [{ name: 'play_song', args: { name: 'Bohemian Rhapsody' }, reply: "(no match for 'Bohemian Rhapsody'; have: twinkle_twinkle, baby_shark, happy_birthday)" }], say: "I don't have that one." },
  { prompt: 'Hello Dotty!', say: 'Hi there! Nice to see you.' },
  { prompt: 'Look again please.', calls: [{ name: 'take_photo', args: {}, reply: "(I can't see anything fresh right now)" }], say: "I can't see right now.",
    setup: (home) => home.behaviour.route('GET /api/voice/take_photo', (_q, res) => json(res, 503, { error: 'camera busy' })),
    check: (home) => home.behaviour.route('GET /api/voice/take_photo', (_q, res) => json(res, 200, { description: 'A child holding a red balloon.' })) },
  { prompt: 'Ask the big brain how far the moon is.', calls: [{ name: 'think_hard', args: { question: 'How far is the moon?' }, reply: '(thinking failed)' }], say: 'My big brain is tired.',
    setup: (home) => home.llama.route('POST /v1/chat/completions', (_q, res) => json(res, 500, { error: 'model not loaded' })),
    check: (home) => home.llama.route('POST /v1/chat/completions', (_q, res) => json(res, 200, { choices: [{ message: { content: '  About 384,400 km.  ' } }] })) },
  { prompt: 'Play the shark song.', calls: [{ name: 'play_song', args: { name: 'Shark' }, reply: '(couldn\'t play baby_shark.mp3: HTTP 409: {"error":"device busy"})' }], say: 'The speaker is busy.',
    setup: (home) => home.xiaozhi.route('POST /xiaozhi/admin/play-asset', (_q, res) => json(res, 409, { error: 'device busy' })),
    check: (home) => home.xiaozhi.route('POST /xiaozhi/admin/play-asset', (_q, res) => json(res, 200, { ok: true })) },
  { prompt: 'Look something up.', calls: [{ name: 'memory_lookup', args: { query: '   ' }, reply: '(empty query)' }], say: 'Look up what?' },
  // U+2028 and U+2029 are legal inside JSON strings: the RPC reader must split records on "\n" only.
  { prompt: 'Say two lines.', say: 'Line one\u2028line two\u2029 and a sparkle ✨' },
  { prompt: 'Our garden fact for later.', calls: [{ name: 'remember', args: { fact: 'The garden has three apple trees' }, reply: '(remembered)' }], say: 'Remembered.' },
  { prompt: 'How many of those fruit plants do we have?', calls: [{ name: 'memory_lookup', args: { query: 'apple trees' }, reply: 'The garden has three apple trees' }], say: 'Three.' },
  { prompt: 'Ask the big brain again, and what can you see?', pre: 'Two things at once. ', calls: [
    { name: 'think_hard', args: { question: 'How far is the moon?' }, reply: 'About 384,400 km.' },
    { name: 'take_photo', args: {}, reply: 'A child holding a red balloon.' },
  ], say: 'Far away, and a balloon.' },
  // Fail closed: the review classifier answering garbage holds the fact for review.
  { prompt: 'One more thing about Bob.', calls: [{ name: 'remember_person', args: { name: 'Bob', fact: 'Bob has a brother called Sam' }, reply: '(saved — a grown-up will check that)' }], say: 'A grown-up will check.',
    setup: (home) => home.behaviour.route('GET /api/voice/person_review_status', (_q, res) => json(res, 500, 'Internal Server Error')),
    check: (home) => home.behaviour.route('GET /api/voice/person_review_status', (_q, res, e) => json(res, 200, { person_id: e.query.person_id, needs_review: e.query.person_id.toLowerCase() !== 'bob' })) },
  { prompt: 'Thanks, bye!', say: 'Bye bye!' },
];

/**
 * What the model read in `body` (a request): the voice tools offered, in production's order, each with
 * production's description and parameters byte for byte; and the system prompt: pi's default one with
 * every promptSnippet and promptGuideline, or (with `persona`) the persona and none of them.
 */
function checkWhatTheModelRead(body, persona) {
  const offered = body.tools.map((t) => t.function).filter((f) => PRODUCTION.tools.some((p) => p.name === f.name));
  expect(offered.map((f) => f.name), "production's order").toEqual(PRODUCTION.tools.map((t) => t.name));
  for (const want of PRODUCTION.tools) {
    const f = offered.find((o) => o.name === want.name);
    expect(f.description, `${want.name} description`).toBe(want.description);
    expect(JSON.stringify(f.parameters), `${want.name} parameters`).toBe(JSON.stringify(want.parameters));
  }
  const system = body.messages[0];
  expect(system.role).toBe('system');
  const lines = PRODUCTION.tools.flatMap((t) => [`- ${t.name}: ${t.promptSnippet}`, ...t.promptGuidelines.map((g) => `- ${g}`)]);
  if (persona) {
    expect(system.content.startsWith(`${persona}\nCurrent date: `), system.content.slice(0, 200)).toBe(true);
    for (const l of lines) expect(system.content).not.toContain(l);
  } else {
    for (const l of lines) expect(system.content).toContain(l);
  }
}

/** The long voice session on `target`; with `persona`, pi is started with `--system-prompt <persona>` as production's newest client does. */
function longSession(target, persona) {
const T = TARGETS[target];
const withPersona = persona ? ' with --system-prompt (production\'s persona)' : '';

describe(`pi ${T.pi} on Node ${T.node} + dotty-pi-ext${withPersona}: a long voice session in one pi process`, () => {
  let mock, home, pi, startTick;
  beforeAll(async () => {
    mock = await startMockModel();
    home = await startHome({ brainRows: FIXTURE_ROWS });
    pi = await startPi({ target, modelBaseUrl: mock.baseUrl, env: home.env, args: persona ? ['--system-prompt', persona] : [] });
    await ready(pi);
    startTick = startTicks(pi.pid);
  }, 60_000);
  afterAll(async () => {
    await pi?.close();
    await Promise.all([mock?.close(), home?.close()]);
  }, 30_000);

  it(`answers ${TURNS.length} consecutive turns, every tool reply reaching the model verbatim, one log row per turn`, async () => {
    const rowsAtStart = conversationRows(home.brainDb).length;
    expect(rowsAtStart).toBe(0);
    for (const [i, t] of TURNS.entries()) {
      t.setup?.(home);
      await voiceTurn(pi, mock, home, t, i, rowsAtStart + i);
      t.check?.(home);
      expect(pi.alive).toBe(true);
    }
    // Seven tools were offered to the model, and each of them was called at least once.
    const offered = mock.requests[0].body.tools.map((t) => t.function.name);
    const VOICE_TOOLS = ['memory_lookup', 'remember', 'recall_person', 'remember_person', 'think_hard', 'take_photo', 'play_song'];
    for (const name of VOICE_TOOLS) expect(offered).toContain(name);
    expect(offered).not.toContain('set_led');
    const called = new Set(TURNS.flatMap((t) => (t.calls ?? []).map((c) => c.name)));
    expect([...called].sort()).toEqual([...VOICE_TOOLS].sort());
    // What the model read, in every request of the session: production's descriptors; the persona or pi's own prompt.
    for (const r of mock.requests) checkWhatTheModelRead(r.body, persona);

    // One more RPC round trip, then the log still holds exactly one row per turn (no late duplicates).
    await pi.send({ type: 'get_state' });
    const rows = conversationRows(home.brainDb);
    expect(rows.length).toBe(TURNS.length);
    expect(rows.map((r) => r.content)).toEqual(TURNS.map((t) => `user: ${t.prompt} | assistant: ${((t.pre ?? '') + t.say).trim()}`));

    // The services saw what the tools were asked, and nothing else.
    const review = home.behaviour.requests.filter((r) => r.path === '/api/voice/person_review_status');
    expect(review.map((r) => r.query.person_id)).toEqual(['Bob', 'Mia', 'Bob']);
    expect(home.xiaozhi.requests.filter((r) => r.path === '/xiaozhi/admin/songs').length, 'song catalogue cached').toBe(1);
    expect(home.llama.requests.length).toBe(3);
    // remember / remember_person rows, as the contract writes them.
    const all = readRows(home.brainDb);
    const byContent = (c) => all.find((r) => r.content === c);
    expect(byContent("Dotty's favourite colour is teal")).toMatchObject({ category: 'core', namespace: 'voice', importance: 0.7 });
    expect(byContent('Bob builds model trains')).toMatchObject({ namespace: 'person:bob', importance: 0.7 });
    expect(byContent('Mia is scared of thunder')).toMatchObject({ namespace: 'person_pending:mia', importance: 0.7 });
    expect(byContent('Bob has a brother called Sam')).toMatchObject({ namespace: 'person_pending:bob', importance: 0.7 });
    for (const r of all.filter((x) => !x.id.startsWith('fixture-'))) {
      expect(r.key).toMatch(new RegExp(`^voice_${r.category}_${r.created_at.replace(/[.]/g, '\\.')}_${r.id.slice(0, 8)}$`));
      expect(r.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(r.updated_at).toBe(r.created_at);
    }
  }, 120_000);

  it('never restarted pi, never spawned another process, never opened a dialog', () => {
    expect(pi.alive).toBe(true);
    expect(fs.realpathSync(`/proc/${pi.pid}/exe`), `pi runs on Node ${T.node}`).toBe(fs.realpathSync(nodeExe(T.node)));
    expect(startTicks(pi.pid)).toBe(startTick);
    expect(childPids(pi.pid)).toEqual([]);
    expect(dialogs(pi)).toEqual([]);
    expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
    expect(pi.badLines).toEqual([]);
    expect(mock.errors).toEqual([]);
  });

  it(`runs on Node ${T.node} and loaded the addon built for its libc (${T.libc ?? 'glibc'})`, () => {
    // Which .node pi's process mapped: the file itself, not a load that seemed to work (musl's
    // loader would take a glibc .node's libc.so.6 for itself).
    const mapped = [...new Set(fs.readFileSync(`/proc/${pi.pid}/maps`, 'utf8').split('\n')
      .map((l) => l.slice(l.indexOf('/'))).filter((f) => /dotty-pi-ext[^/]*\.node$/.test(f)))];
    expect(mapped.map((f) => path.basename(f))).toEqual([`dotty-pi-ext.linux-x64-${T.libc ?? 'gnu'}.node`]);
    const facts = spawnSync(nodeBin(T.node), ['-p', 'JSON.stringify([process.version, !!process.report.getReport().header.glibcVersionRuntime])'], { encoding: 'utf8' });
    const [version, glibc] = JSON.parse(facts.stdout);
    expect(version).toBe(T.node === '20' ? process.version : `v${{ '22': '22.23.5', '25.9': '25.9.0', 'musl-24': '24.19.0' }[T.node]}`);
    expect(glibc, 'the Node runtime links glibc').toBe(T.libc !== 'musl');
  });

  it('exits 0 when stdin closes', async () => {
    expect(await pi.close()).toEqual({ code: 0, signal: null });
  }, 30_000);
});

}

// The voice session, the abort and /reload on Dotty's robot's pi (0.74.0, Node 20), on pi 1.6.0 (Node 22),
// and on production's runtime: pi 0.74.0 on Node 25.9 (glibc) and on a musl Node (Alpine's libc).
for (const target of ['0.74.0', '1.6.0', '0.74.0@25.9', '0.74.0@musl']) {
const T = TARGETS[target];
longSession(target, null);

describe(`pi ${T.pi} on Node ${T.node}: abort mid-tool`, () => {
  let mock, home, pi;
  beforeAll(async () => {
    mock = await startMockModel();
    home = await startHome();
    // As a voice deployment would run it: pi's coding tools off, only the extension's tools offered.
    pi = await startPi({ target, modelBaseUrl: mock.baseUrl, env: { ...home.env, VOICE_THINKER_TIMEOUT: '30' }, args: ['--no-builtin-tools'] });
    await ready(pi);
  }, 60_000);
  afterAll(async () => {
    await pi?.close();
    await Promise.all([mock?.close(), home?.close()]);
  }, 30_000);

  it('RPC abort during a stalled think_hard closes the request to llama-swap at once and ends the turn', async () => {
    let closedAt = null;
    let closedUnanswered = false;
    const closed = new Promise((resolve) => {
      home.llama.route('POST /v1/chat/completions', (req, res) => {
        // Not req 'close': on Node >= 16 that fires as soon as the body is read. The response closing
        // before it was ever finished means the client dropped the connection.
        res.on('close', () => { closedAt = performance.now(); closedUnanswered = !res.writableFinished; resolve(); });
        stall(req, res);
      });
    });
    mock.enqueue({ thinking: THINK, toolCalls: [{ id: 'call_abort', name: 'think_hard', arguments: { question: 'What is the biggest number?' } }] });
    mock.enqueue({ text: 'This should never be asked for.' });

    const turn = pi.prompt('Think hard about the biggest number.');
    await waitForRequests(home.llama, 1, 10_000);
    const abortAt = performance.now();
    const res = await pi.send({ type: 'abort' });
    expect(res.success).toBe(true);
    const t = await turn;
    const endedAt = performance.now();
    await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('llama-swap request never closed')), 5000))]);

    expect(closedUnanswered).toBe(true);
    expect(closedAt - abortAt, 'request closed well before VOICE_THINKER_TIMEOUT (30 s)').toBeLessThan(2000);
    expect(endedAt - abortAt, 'turn ended promptly').toBeLessThan(2000);
    expect(mock.requests.length, 'no model request after the abort').toBe(1);
    expect(mock.requests[0].body.tools.map((x) => x.function.name).sort()).toEqual(['memory_lookup', 'play_song', 'recall_person', 'remember', 'remember_person', 'take_photo', 'think_hard']);
    expect(mock.clearQueue()).toHaveLength(1); // the plan that was never asked for
    const last = t.agentEnd.messages.filter((m) => m.role === 'assistant').at(-1);
    expect(last.stopReason).toBe('aborted');
    expect(t.toolEnds.map((e) => [e.toolName, e.isError])).toEqual([['think_hard', true]]);
    expect(dialogs(pi)).toEqual([]);
  }, 30_000);

  it('the same pi answers the next tool turn normally', async () => {
    home.llama.route('POST /v1/chat/completions', (_q, res) => json(res, 200, { choices: [{ message: { content: 'Infinity is not a number.' } }] }));
    const pid = pi.pid;
    const n0 = mock.requests.length;
    mock.enqueue({ thinking: THINK, toolCalls: [{ id: 'call_again', name: 'think_hard', arguments: { question: 'What is the biggest number?' } }] }, { text: 'There is none.' });
    const t = await pi.prompt('Try again.');
    expect(t.text).toBe('There is none.');
    expect(mock.requests[n0 + 1].body.messages.at(-1)).toEqual({ role: 'tool', content: 'Infinity is not a number.', tool_call_id: 'call_again' });
    expect(pi.pid).toBe(pid);
    expect(pi.alive).toBe(true);
  }, 30_000);
});

describe(`pi ${T.pi} on Node ${T.node}: /reload keeps one native state`, () => {
  let mock, home, pi;
  const ROUND = [
    { prompt: 'What colour is the tower?', calls: [{ name: 'memory_lookup', args: { query: 'lighthouse' }, reply: 'The lighthouse is painted red and white' }], say: 'Red and white.' },
    { prompt: 'Tell me about my friend.', calls: [{ name: 'recall_person', args: { name: 'Alice' }, reply: 'Alice has a cat called Miso | Alice is seven years old' }], say: 'She has a cat.' },
    { prompt: 'Sing the star song.', calls: [{ name: 'play_song', args: { name: 'twinkle' }, reply: 'playing twinkle_twinkle' }], say: 'Singing.' },
    { prompt: 'Keep this.', calls: [{ name: 'remember', args: { fact: 'Reload rounds are counted' }, reply: '(remembered)' }], say: 'Kept.' },
    { prompt: 'Ask the big brain.', calls: [{ name: 'think_hard', args: { question: 'Why is the sky blue?' }, reply: 'Rayleigh scattering.' }], say: 'Scattering.' },
  ];
  // The helper extension prints the counters on stderr, which is not ordered with the RPC response.
  const nativeStats = async () => {
    const from = pi.stderr.length;
    await pi.send({ type: 'prompt', message: '/e2e-native-stats' });
    const line = await pi.waitForStderr(/^\[e2e-native-stats\] /, { from });
    return JSON.parse(line.slice('[e2e-native-stats] '.length));
  };

  beforeAll(async () => {
    mock = await startMockModel();
    home = await startHome({ brainRows: FIXTURE_ROWS });
    pi = await startPi({ target, modelBaseUrl: mock.baseUrl, extensions: [root, RELOAD_EXT], env: { ...home.env, DOTTY_E2E_PACKAGE_DIR: root } });
    await ready(pi);
  }, 60_000);
  afterAll(async () => {
    await pi?.close();
    await Promise.all([mock?.close(), home?.close()]);
  }, 30_000);

  it('tools answer identically after /reload, brain.db keeps the same open descriptors, no second state', async () => {
    const brainPrefix = home.brainDb; // brain.db, brain.db-wal, brain.db-shm
    let turnNo = 0;
    for (const t of ROUND) await voiceTurn(pi, mock, home, t, turnNo, turnNo++);
    const fdsBefore = openFdsTo(pi.pid, brainPrefix);
    expect(fdsBefore.length).toBeGreaterThan(0);
    const statsBefore = await nativeStats();

    const res = await pi.send({ type: 'prompt', message: '/e2e-reload' }); // answered once the reload is done
    expect(res.success).toBe(true);
    const commands = (await pi.send({ type: 'get_commands' })).data.commands.map((c) => c.name);
    expect(commands).toContain('e2e-reload');

    for (const t of ROUND) await voiceTurn(pi, mock, home, t, turnNo, turnNo++);
    const fdsAfter = openFdsTo(pi.pid, brainPrefix);
    const statsAfter = await nativeStats();

    // From outside: the very same descriptors on brain.db (one writer, not a second connection set).
    expect(fdsAfter).toEqual(fdsBefore);
    // ...and they are the process's only connections: one descriptor on the main file per connection opened.
    expect(fdsAfter.filter((f) => f.target === home.brainDb).length).toBe(statsAfter.brainWriterOpens + statsAfter.brainReaderOpens);
    // The play_song catalogue cache (native state) survived: one catalogue fetch for both rounds.
    expect(home.xiaozhi.requests.filter((r) => r.path === '/xiaozhi/admin/songs').length).toBe(1);
    // One conversation row per turn across the reload: no doubled agent_end handler.
    expect(conversationRows(home.brainDb).length).toBe(ROUND.length * 2);
    // And from the inside, the native counters agree.
    expect(statsAfter.stateCreations).toBe(1);
    expect(statsAfter.brainWriterOpens).toBe(1);
    expect(statsAfter.brainWriterOpens).toBe(statsBefore.brainWriterOpens);
    expect(statsAfter.brainReaderOpens).toBe(statsBefore.brainReaderOpens);
    expect(statsAfter.songCatalogueFetches).toBe(1);
    expect(dialogs(pi)).toEqual([]);
    expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
  }, 60_000);
});
}

// Production's newest voice client passes a persona (DOTTY_PI_SYSTEM_PROMPT_FILE): on its pi (0.74.0), on
// its Node (25.9, glibc here) and on a musl Node as in its Alpine container.
for (const target of ['0.74.0@25.9', '0.74.0@musl']) longSession(target, PERSONA);

describe('pi 0.74.0 RPC mode and the built-in /reload', () => {
  it('has no reload command: a "/reload" prompt is plain user text for the model (why /e2e-reload exists)', async () => {
    const mock = await startMockModel({ responder: (body) => ({ text: `echo ${lastUserText(body)}` }) });
    const pi = await startPi({ modelBaseUrl: mock.baseUrl, extensions: [] });
    try {
      await ready(pi);
      const t = await pi.prompt('/reload');
      expect(lastUserText(mock.requests[0].body)).toBe('/reload');
      expect(t.text).toBe('echo /reload');
      const from = pi.responses.length;
      pi.write({ id: 'r1', type: 'reload' });
      const unknown = await pi.waitForResponse((r) => r.command === 'reload', { from });
      expect(unknown).toMatchObject({ success: false, error: 'Unknown command: reload' });
      expect(pi.alive).toBe(true);
    } finally {
      await pi.close();
      await mock.close();
    }
  }, 60_000);
});

describe('pi 0.73.1 (@mariozechner/pi-coding-agent)', () => {
  it('loads the package and runs a tool round trip with its log row', async () => {
    expect(fs.existsSync(PI_CLI['0.73.1'])).toBe(true);
    const mock = await startMockModel();
    const home = await startHome({ brainRows: FIXTURE_ROWS });
    const pi = await startPi({ modelBaseUrl: mock.baseUrl, cli: PI_CLI['0.73.1'], env: home.env });
    try {
      const state = await ready(pi);
      expect(state.data.model.id).toBe('mock-model');
      await voiceTurn(pi, mock, home, TURNS[0], 0, 0);
      await voiceTurn(pi, mock, home, TURNS[4], 1, 1);
      expect(dialogs(pi)).toEqual([]);
      expect(await pi.close()).toEqual({ code: 0, signal: null });
    } finally {
      await pi.close();
      await Promise.all([mock.close(), home.close()]);
    }
  }, 60_000);
});

describe('pi 1.6.0 on Node 24 (the newest Node)', () => {
  it('loads the package and runs tool round trips with their log rows', async () => {
    const mock = await startMockModel();
    const home = await startHome({ brainRows: FIXTURE_ROWS });
    const pi = await startPi({ modelBaseUrl: mock.baseUrl, target: '1.6.0@24', env: home.env });
    try {
      const state = await ready(pi);
      expect(state.data.model.id).toBe('mock-model');
      expect(fs.realpathSync(`/proc/${pi.pid}/exe`)).toBe(fs.realpathSync(nodeBin('24')));
      expect(spawnSync(nodeBin('24'), ['--version'], { encoding: 'utf8' }).stdout.trim()).toBe('v24.22.3');
      await voiceTurn(pi, mock, home, TURNS[0], 0, 0);
      await voiceTurn(pi, mock, home, TURNS[4], 1, 1);
      expect(dialogs(pi)).toEqual([]);
      expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
      expect(await pi.close()).toEqual({ code: 0, signal: null });
    } finally {
      await pi.close();
      await Promise.all([mock.close(), home.close()]);
    }
  }, 60_000);
});
