// Production's direct calls (docs/voice-tools.md, "Direct calls"): its voice client runs
// `node --experimental-strip-types --input-type=module -e <script>` importing src/tools/<tool>.ts
// from the extension folder, with the arguments on stdin, and takes stdout as `{"result": …}`.
// Here: production's script text byte for byte (the folder substituted), as a child process, on
// every runtime of helpers/runtimes.mjs, against a real brain.db and in-process fake services.
// `DIRECT_CALLS_DIR` runs the same checks against another copy of the modules (how the checks were
// shown to catch a lingering handle and a stray stdout write).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { makeBrain, readRows, root, tempDir } from './helpers/brain.mjs';
import { startService, json } from './helpers/services.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';
import { pollUntil } from './e2e/pi-rpc.mjs';
import { directRuntimes, MODULES, productionScript, pyDumps, runDirect } from './helpers/runtimes.mjs';

const dir = process.env.DIRECT_CALLS_DIR || root;
const work = tempDir('dotty-direct-');
const seed = [
  { content: 'The lighthouse is painted red and white' },
  { content: 'Ada likes strong tea', namespace: 'person:ada', importance: 0.9 },
  { content: 'Ada plays the cello', namespace: 'person:ada', importance: 0.5 },
  { content: 'Ada is secretly a spy', namespace: 'person_pending:ada', importance: 1 },
];
const dbDirect = makeBrain(path.join(work, 'direct.db'), seed); // what the direct runs use
const dbExt = makeBrain(path.join(work, 'ext.db'), seed); // the same rows, for the extension's replies
const palaceMark = path.join(work, 'palace-started');
const fakePalace = path.join(work, 'fake-mempalace.sh');
fs.writeFileSync(fakePalace, `#!/bin/sh\necho "$$" >> ${JSON.stringify(palaceMark)}\nexec sleep 600\n`, { mode: 0o755 });

let behaviour, thinker, xiaozhi, ext, env;

beforeAll(async () => {
  behaviour = await startService({
    'GET /api/voice/person_review_status': (req, res, r) => json(res, 200, { person_id: r.query.person_id, needs_review: r.query.person_id === 'Mia' }),
    'GET /api/voice/take_photo': (req, res) => json(res, 200, { description: 'A cat asleep on the red sofa.' }),
  });
  thinker = await startService({
    'POST /v1/chat/completions': (req, res) => json(res, 200, { choices: [{ message: { content: '  Rayleigh scattering: blue light scatters most.  ' } }] }),
  });
  xiaozhi = await startService({
    'GET /xiaozhi/admin/songs': (req, res) => json(res, 200, { base: '/srv/songs', files: ['twinkle_star.mp3', 'baby_shark.mp3'] }),
    'POST /xiaozhi/admin/play-asset': (req, res) => json(res, 200, { ok: true }),
  });
  const services = {
    DOTTY_BEHAVIOUR_URL: behaviour.url,
    VOICE_THINKER_URL: `${thinker.url}/v1/chat/completions`,
    VOICE_THINKER_MODEL: 'fake-thinker',
    XIAOZHI_HOST: '127.0.0.1',
    XIAOZHI_HTTP_PORT: String(xiaozhi.port),
  };
  // The direct runs: a clean environment as in the container, the palace bridge NOT switched off,
  // and its server command a script that records being started.
  env = { PATH: process.env.PATH, HOME: tempDir('dotty-direct-home-'), DOTTY_BRAIN_DB: dbDirect, MEMPALACE_MCP_BIN: fakePalace, ...services };
  // The replies through the extension (pi's path), in this process, on the twin brain.db.
  Object.assign(process.env, services, { DOTTY_BRAIN_DB: dbExt });
  ext = loadExtension();
});

afterAll(async () => {
  await Promise.all([behaviour, thinker, xiaozhi].map((s) => s?.close()));
  fs.rmSync(work, { recursive: true, force: true });
});

/** What the tool answers through pi for these arguments. */
const viaPi = (tool, args) => ext.text(tool, args);

/** The checks every direct run must pass: exit 0, stdout exactly `{"result":<string>}`, gone at once. */
function expectClean(r, what) {
  expect(r.killed, `${what}: still alive 10 s after its result (stderr: ${r.stderr})`).toBe(false);
  expect({ code: r.code, signal: r.signal }, `${what}: stderr ${r.stderr}`).toEqual({ code: 0, signal: null });
  expect(r.stdout, what).toMatch(/^\{"result":"(?:[^"\\]|\\.)*"\}$/);
  const { result } = JSON.parse(r.stdout);
  expect(JSON.stringify({ result }), `${what}: nothing else on stdout`).toBe(r.stdout);
  expect(r.afterResultMs, `${what}: exit time after the result`).toBeLessThan(10_000);
  return result;
}

const runtimes = directRuntimes();
const run = (rt, tool, args, extra = {}) => runDirect(rt.bin, productionScript(tool, dir), pyDumps(args), { env: { ...env, ...extra } });
const palaceStarts = () => (fs.existsSync(palaceMark) ? fs.readFileSync(palaceMark, 'utf8').trim().split('\n').length : 0);

// One call of each module per runtime, as production makes it.
const calls = {
  memory_lookup: { query: 'lighthouse' },
  remember: { fact: 'The lighthouse keeper is called Ada' },
  recall_person: { name: 'Ada' },
  remember_person: { name: 'Ada', fact: 'Ada has a grey cat' },
  think_hard: { question: 'Why is the sky blue?' },
  take_photo: {},
  play_song: { name: 'twinkle' },
};

describe.each(runtimes)('production\'s script on $name', (rt) => {
  it.each(Object.keys(MODULES))('%s: exit 0, stdout exactly {"result":…}, the reply pi gives, gone within 10 s', async (tool) => {
    const args = calls[tool];
    const r = await run(rt, tool, args);
    const result = expectClean(r, `${rt.name} ${tool}`);
    const want = await viaPi(tool, args);
    expect(result).toBe(want);
    if (tool === 'remember') expect(readRows(dbDirect).filter((x) => x.content === args.fact).length).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('never starts the palace, and a write is in brain.db when the process is gone', async () => {
    const fact = `written on ${rt.name} at ${process.hrtime.bigint()}`;
    const r = await run(rt, 'remember', { fact });
    expect(expectClean(r, 'remember')).toBe('(remembered)');
    // Read by another SQLite right after the exit: committed, not left in a queue that died with it.
    const rows = readRows(dbDirect).filter((x) => x.content === fact);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ category: 'core', namespace: 'voice', importance: 0.7, session_id: null });
    expect(palaceStarts(), 'the MemPalace server command was started').toBe(0);
  }, 90_000);

});

// Bad, missing and wrong-typed arguments: the tools' replies (as pi gives them), never a throw.
// Production's own modules return the same replies for missing/empty/null arguments; for a number
// they throw (`(5).trim` is not a function) where these answer as the tool does through pi.
const prod = runtimes.find((r) => r.name.includes('25.9'));
describe(`bad arguments (${prod.name})`, () => {
  const cases = [
    ['memory_lookup', {}, '(empty query)'], ['memory_lookup', { query: '   ' }, '(empty query)'], ['memory_lookup', { query: null }, '(empty query)'],
    ['memory_lookup', { query: 5 }, '(no memories found)'],
    ['remember', {}, '(empty fact)'], ['remember', { fact: ' \n ' }, '(empty fact)'], ['remember', { fact: ['x'] }, '(empty fact)'],
    ['recall_person', {}, '(no person specified)'], ['recall_person', { name: 'Zed' }, '(nothing remembered about Zed)'],
    ['remember_person', { name: 'Ada' }, '(empty fact)'], ['remember_person', { fact: 'x' }, '(no person specified)'],
    ['remember_person', { name: 'Mia', fact: 'Mia is seven' }, '(saved — a grown-up will check that)'],
    ['think_hard', {}, '(empty question)'], ['think_hard', { question: {} }, '(empty question)'],
    ['play_song', { name: '' }, '(no song name given)'], ['play_song', { name: 'zzz' }, "(no match for 'zzz'; have: twinkle_star, baby_shark)"],
  ];
  it.each(cases)('%s %j → %s', async (tool, args, reply) => {
    const r = await run(prod, tool, args);
    expect(expectClean(r, tool)).toBe(reply);
    expect(await viaPi(tool, args)).toBe(reply);
  }, 90_000);

  it('non-ASCII arguments arrive as Python wrote them (\\u escapes) and are stored as spoken', async () => {
    const fact = 'Ada’s café is on Ōtaki street 🐈';
    expect(pyDumps({ fact })).not.toMatch(/[^\x00-\x7f]/);
    expect(expectClean(await run(prod, 'remember', { fact }), 'remember')).toBe('(remembered)');
    expect(readRows(dbDirect).filter((x) => x.content === fact)).toHaveLength(1);
    expect(expectClean(await run(prod, 'memory_lookup', { query: 'Ōtaki street' }), 'lookup')).toBe(fact);
  }, 90_000);
});

describe(`where the call goes (${prod.name})`, () => {
  it('think_hard sends the contract\'s request to VOICE_THINKER_URL with VOICE_THINKER_MODEL', async () => {
    const before = thinker.requests.length;
    expect(expectClean(await run(prod, 'think_hard', { question: 'Why is the sky blue?' }), 'think_hard')).toBe('Rayleigh scattering: blue light scatters most.');
    const sent = thinker.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0].body)).toMatchObject({ model: 'fake-thinker', messages: [{ role: 'system' }, { role: 'user', content: 'Why is the sky blue?' }], chat_template_kwargs: { enable_thinking: false } });
  }, 90_000);

  it('remember_person lands in person:<id> when approved; play_song asks xiaozhi to play the match', async () => {
    expect(expectClean(await run(prod, 'remember_person', { name: 'Ada', fact: 'Ada bakes bread' }), 'remember_person')).toBe('(remembered about Ada)');
    expect(readRows(dbDirect).filter((x) => x.content === 'Ada bakes bread').map((x) => x.namespace)).toEqual(['person:ada']);
    const before = xiaozhi.requests.filter((x) => x.path === '/xiaozhi/admin/play-asset').length;
    expect(expectClean(await run(prod, 'play_song', { name: 'twinkle' }), 'play_song')).toBe('playing twinkle_star');
    const plays = xiaozhi.requests.filter((x) => x.path === '/xiaozhi/admin/play-asset');
    expect(plays.length).toBe(before + 1);
    expect(JSON.parse(plays.at(-1).body)).toEqual({ asset: '/opt/xiaozhi-esp32-server/config/assets/songs/twinkle_star.mp3' });
  }, 90_000);

  it('without DOTTY_BRAIN_DB: the default brain.db is created, said on stderr only; the palace never starts', async () => {
    const home = tempDir('dotty-direct-home-');
    const { DOTTY_BRAIN_DB, ...rest } = env;
    const r = await runDirect(prod.bin, productionScript('remember', dir), pyDumps({ fact: 'first fact' }), { env: { ...rest, HOME: home } });
    expect(expectClean(r, 'remember')).toBe('(remembered)');
    expect(r.stderr).toMatch(/\[dotty-pi-ext\] .*brain\.db/);
    expect(readRows(path.join(home, '.pi/memory/brain.db')).map((x) => x.content)).toEqual(['first fact']);
    expect(palaceStarts()).toBe(0);
  }, 90_000);

  it('an unreachable thinker gives the failure reply, with the cause on stderr and nothing else on stdout', async () => {
    const r = await run(prod, 'think_hard', { question: 'hello?' }, { VOICE_THINKER_URL: 'http://127.0.0.1:9/v1/chat/completions' });
    expect(expectClean(r, 'think_hard')).toBe('(thinking failed)');
    expect(r.stderr).toContain('think_hard');
  }, 90_000);

  it('the per-call options of the modules override the environment', async () => {
    const other = makeBrain(path.join(work, 'other.db'), [{ content: 'only in the other file' }]);
    const script = `import { runMemoryLookup } from "${dir}/src/tools/memory_lookup.ts";` +
      `import { runRemember } from "${dir}/src/tools/remember.ts";` +
      `import { runThinkHard } from "${dir}/src/tools/think_hard.ts";` +
      `const a = runMemoryLookup("other file", ${JSON.stringify(other)});` +
      `const b = runRemember("tagged", "session-7", ${JSON.stringify(other)});` +
      `const c = await runThinkHard("q", { url: "http://127.0.0.1:9/v1", timeoutSec: 5, model: "m" });` +
      'process.stdout.write(JSON.stringify({result: [typeof a, a, b, c].join("|")}));';
    const r = await runDirect(prod.bin, script, '', { env });
    expect(expectClean(r, 'options')).toBe('string|only in the other file|(remembered)|(thinking failed)');
    expect(readRows(other).filter((x) => x.content === 'tagged').map((x) => x.session_id)).toEqual(['session-7']);
  }, 90_000);
});

// The checks above, against modules broken on purpose (a copy beside a link to native.js): a ref'd
// handle left behind, a diagnostic written to stdout, the process-wide extension started (its palace).
describe(`the checks catch a broken module (${prod.name})`, () => {
  const broken = (name, edit) => {
    const d = path.join(work, `broken-${name}`);
    fs.mkdirSync(path.join(d, 'src'), { recursive: true });
    fs.cpSync(path.join(root, 'src/tools'), path.join(d, 'src/tools'), { recursive: true });
    fs.symlinkSync(path.join(root, 'native.js'), path.join(d, 'native.js'));
    const file = path.join(d, 'src/tools/remember.ts');
    fs.writeFileSync(file, edit(fs.readFileSync(file, 'utf8')));
    return d;
  };
  const call = (d, lingerMs) => runDirect(prod.bin, productionScript('remember', d), pyDumps({ fact: 'broken' }), { env, lingerMs });
  it('a handle left behind: still alive after the result, caught', async () => {
    const d = broken('linger', (t) => t.replace('export function runRemember', 'setInterval(() => {}, 60_000);\nexport function runRemember'));
    const r = await call(d, 1500);
    expect(r.killed).toBe(true);
    expect(() => expectClean(r, 'linger')).toThrow(/still alive/);
  }, 30_000);
  it('a line on stdout: caught', async () => {
    const d = broken('stdout', (t) => t.replace('  return native.', '  process.stdout.write("[dotty-pi-ext] created a new brain.db\\n");\n  return native.'));
    const r = await call(d);
    expect(r.code).toBe(0);
    expect(() => expectClean(r, 'stdout')).toThrow();
  }, 30_000);
  it('the process-wide extension started: its palace server is seen starting', async () => {
    const before = palaceStarts();
    const d = broken('palace', (t) => t.replace('  return native.', '  native.init();\n  return native.'));
    expectClean(await call(d), 'palace');
    await pollUntil(() => palaceStarts() > before, 'the fake MemPalace server starting');
    fs.rmSync(palaceMark, { force: true });
  }, 30_000);
});

// Node 20 (this machine's /usr/bin/node) predates type stripping (Node 22.6): production's command
// fails there with Node's own error before any of our code runs. Said, not hidden.
describe('Node 20', () => {
  it('refuses production\'s command line itself: "bad option: --experimental-strip-types"', async () => {
    const node20 = '/usr/bin/node';
    expect(execFileSync(node20, ['--version'], { encoding: 'utf8' })).toMatch(/^v20\./);
    const r = await runDirect(node20, productionScript('remember', dir), pyDumps({ fact: 'x' }), { env });
    expect(r.code).toBe(9);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('bad option: --experimental-strip-types');
  });
  it('refuses it the same way when the arguments outsize the pipe: Node 20 exits unread, nothing thrown here', async () => {
    // 1 MiB of arguments can't sit in the pipe: the write meets the closed pipe (EPIPE) every time.
    const r = await runDirect('/usr/bin/node', productionScript('remember', dir), pyDumps({ fact: 'x'.repeat(1 << 20) }), { env });
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 9, stdout: '' });
    expect(r.stderr).toContain('bad option: --experimental-strip-types');
  });
});

it('the seven modules are in src/tools/ as the deploy\'s healthcheck wants them', () => {
  for (const { module } of Object.values(MODULES)) expect(fs.existsSync(path.join(dir, 'src/tools', module)), module).toBe(true);
});
