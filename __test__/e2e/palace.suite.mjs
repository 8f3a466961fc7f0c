// End to end: the MemPalace bridge in the real pi (0.74.0 on Node 20, 1.6.0 on Node 22: one test file each, RPC mode, the mock model) against the REAL
// MemPalace 3.11.0 server over stdio (installed under ~/.cache/mempalace-test, see ../helpers/palace.mjs).
// One pi HOME, agent dir, palace and project folder across four pi processes, in order:
//   A  first start, no tool cache yet: wake-up, diary tools, /mempalace-diary, feed on close;
//   B  second start (the cache is primed): all 47 tools in the FIRST request, the diary from A in the
//      wake-up, /reload keeps one MemPalace child;
//   C  `--continue` of B's session: no second wake-up.
// The bridge's agent dir is pi's (PI_CODING_AGENT_DIR, where pi writes its sessions and the bridge its
// tool cache and feed state). Tests in this file depend on each other and run in order.
import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { lastUserText } from './mock-model.mjs';
import { piSuiteHooks } from './suite-hooks.mjs';
import { startPi as startPiOn, ready, root, childPids, TARGETS, nodeBin } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { spawnSync } from 'node:child_process';
import { mempalaceRoot, referenceTools, stdioEnv } from '../helpers/palace.mjs';

/** The palace session on one pi + Node target (a TARGETS key of ./pi-rpc.mjs); one such call per test file. */
export function palaceSuite(target = '0.74.0') {
const T = TARGETS[target];
const startPi = (opts) => startPiOn({ target, ...opts });

const RELOAD_EXT = path.join(root, '__test__/e2e/fixtures/reload-command');
const SESSION_EVENTS_EXT = path.join(root, '__test__/e2e/fixtures/session-events');
const CUSTOM_MESSAGE_EXT = path.join(root, '__test__/e2e/fixtures/custom-message');
const AGENT = 'e2e-agent';
const WAKEUP_HEAD = '[MemPalace wake-up]';
const REF_NAMES = referenceTools.tools.map((t) => t.name).sort();
// Distinctive phrases: one said in run A's first turn, one in its LAST turn (after the mid-session
// feed, which the 10-minute debounce keeps from running again): only the shutdown feed can mine it.
const FIRST_PHRASE = 'the periwinkle heron sleeps inside quokka lighthouse';
const CLOSING_PHRASE = 'zanzibar marmalade accordion tournament';
const DIARY_ENTRY = 'SESSION:e2e|tested.palace.bridge+wakeup+diary|KEY:cobalt.walrus.4711|★★★';
const FEED_PREPARE_MS = 60_000;
const FEED_MINE_MS = 40_000;

const dir = tempDir(`dotty-e2e-palace-${T.pi}-`);
const home = path.join(dir, 'pi-home');
const project = path.join(dir, 'project');
// stdioEnv's HOME / PI_CODING_AGENT_DIR are dropped: startPi sets both to pi's own (<home>/.pi/agent).
const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
const palace = bridgeEnv.MEMPALACE_PALACE;
const ENV = {
  ...bridgeEnv,
  DOTTY_VOICE_TOOLS: '0',
  MEMPALACE_AGENT_NAME: AGENT,
  // The palace's tools declared, on pi 1.6 too (its exposure modes: exposure-pi16.e2e.test.mjs).
  MEMPALACE_EXPOSURE: 'direct',
  MEMPALACE_FEED_PREPARE_TIMEOUT_MS: String(FEED_PREPARE_MS),
  MEMPALACE_FEED_MINE_TIMEOUT_MS: String(FEED_MINE_MS),
  DOTTY_E2E_PACKAGE_DIR: root,
};
const agentDir = path.join(home, '.pi', 'agent');
const cacheFile = path.join(agentDir, 'mempalace-tools-cache.json');
const timings = {};

let pi; // the pi of the current step (closed by the step, or by afterAll on a failure)

const startPalacePi = (extra = {}) => startPi({
  modelBaseUrl: hooks.mock.baseUrl,
  extensions: [root, RELOAD_EXT, SESSION_EVENTS_EXT],
  env: ENV,
  session: true,
  sessionDir: 'default', // <agentDir>/sessions/<cwd>/: what the built-in exporter feeds
  home,
  cwd: project,
  args: ['--no-builtin-tools'], // the request's `tools` are then exactly the palace's
  timeoutMs: 60_000,
  ...extra,
});

/** Spawn → first RPC answer, in ms. */
async function timedReady(p) {
  await ready(p, 60_000);
  return Math.round(performance.now() - p.spawnedAt);
}

const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join(''));
const wakeups = (body) => body.messages.filter((m) => m.role === 'user' && textOf(m).startsWith(WAKEUP_HEAD));
const toolNames = (body) => (body.tools ?? []).map((t) => t.function.name).sort();
const palaceChildren = (pid) => childPids(pid).filter((c) => {
  try { return fs.readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('mempalace'); } catch { return false; }
});

/**
 * The real CLI on `palace`, from outside the extension. (../helpers/palace.mjs `mempalaceCli` puts
 * `--palace` after the subcommand, which 3.11.0 rejects: "unrecognized arguments: --palace".)
 */
function mempalaceCli(args, palacePath) {
  const r = spawnSync(path.join(mempalaceRoot, 'venv/bin/mempalace'), ['--palace', palacePath, ...args], {
    env: { ...process.env, HOME: path.join(mempalaceRoot, 'home'), MEMPALACE_CONFIG_DIR: path.join(mempalaceRoot, 'cfg'), HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', MEMPALACE_HUB_FORWARD: '0' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

/** What pi's `session_start` said (the session-events fixture's stderr lines), in order. */
const sessionStarts = (p) => p.stderr.split('\n').filter((l) => l.startsWith('[e2e-session-start] ')).map((l) => JSON.parse(l.slice('[e2e-session-start] '.length)));

/** The quoted drawer lines of a `mempalace search` answer (the header echoes the query: not evidence). */
const drawerLines = (out) => out.split('\n').map((l) => l.trim()).filter((l) => l && !/^(=+|-+|Results for:|\[\d+\]|Source:|Match:)/.test(l));

/** The reload fixture prints the native counters on stderr (not ordered with the RPC response). */
async function nativeStats(p) {
  const from = p.stderr.length;
  await p.send({ type: 'prompt', message: '/e2e-native-stats' });
  const line = await p.waitForStderr(/^\[e2e-native-stats\] /, { from });
  return JSON.parse(line.slice('[e2e-native-stats] '.length));
}

function expectAllPalaceTools(body, what) {
  expect(toolNames(body), `${what}: tool names`).toEqual(REF_NAMES);
  const byName = new Map(body.tools.map((t) => [t.function.name, t.function]));
  for (const ref of referenceTools.tools) {
    const f = byName.get(ref.name);
    expect(f.parameters, `${what}: ${ref.name} parameters`).toEqual(ref.inputSchema);
    expect(f.description, `${what}: ${ref.name} description`).toBe(ref.description);
  }
}

/** Closes pi by ending stdin (how the voice client stops it); bounded by the feed timeouts. */
async function closeTimed(p) {
  const t0 = performance.now();
  const exit = await p.close(FEED_PREPARE_MS + FEED_MINE_MS + 15_000);
  if (process.env.E2E_DEBUG) console.log(`--- pi ${p.pid} stderr ---\n${p.stderr}`);
  return { exit, ms: Math.round(performance.now() - t0) };
}

const hooks = piSuiteHooks({ dir, project, currentPi: () => pi, report: () => `[palace.e2e timings] ${JSON.stringify(timings)}` });

describe(`pi ${T.pi} on Node ${T.node} + the MemPalace bridge (real MemPalace 3.11.0 over stdio)`, () => {
  it('baseline: pi starts with the bridge off (MEMPALACE_BRIDGE=0): no palace child, no tool cache', async () => {
    for (const key of ['startNoPalaceColdMs', 'startNoPalaceMs']) { // the second start is the warm one
      const p = await startPi({ modelBaseUrl: hooks.mock.baseUrl, env: { ...ENV, MEMPALACE_BRIDGE: '0' }, args: ['--no-builtin-tools'] });
      try {
        timings[key] = await timedReady(p);
        expect(palaceChildren(p.pid)).toEqual([]);
      } finally {
        expect((await p.close()).code).toBe(0);
      }
    }
    expect(fs.existsSync(cacheFile)).toBe(false);
  }, 60_000);

  it('first start, fresh session: the FIRST request carries one hidden wake-up user message; the second prompt adds none', async () => {
    expect(fs.existsSync(cacheFile)).toBe(false);
    pi = await startPalacePi();
    timings.firstStartWithPalaceMs = await timedReady(pi);
    expect(fs.realpathSync(`/proc/${pi.pid}/exe`), `pi runs on Node ${T.node}`).toBe(fs.realpathSync(nodeBin(T.node)));

    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'Hello! Noted.' });
    const t0 = performance.now();
    const turn1 = await pi.prompt(`Please remember this: ${FIRST_PHRASE}.`);
    timings.firstWakeupLatencyMs = Math.round(hooks.mock.requests[n0].receivedAt - t0); // prompt → first model request
    expect(turn1.text).toBe('Hello! Noted.');
    const first = hooks.mock.requests[n0].body;
    timings.firstRequestToolsOnFirstStart = toolNames(first).length; // informative: the handshake may still run

    const w = wakeups(first);
    expect(w, 'exactly one wake-up message in the first request').toHaveLength(1);
    const text = textOf(w[0]);
    expect(text).toContain('## Palace status (mempalace_status)');
    expect(text).toContain(`## Your diary (mempalace_diary_read, agent_name "${AGENT}")`);
    // A user-role message of its own, right after the user's prompt (pi appends before_agent_start
    // messages to the prompt), the last message before the model answers.
    const users = first.messages.filter((m) => m.role === 'user');
    expect(users.map(textOf)).toEqual([`Please remember this: ${FIRST_PHRASE}.`, text]);
    expect(first.messages.at(-1)).toBe(w[0]);
    // Hidden from the RPC client: the custom message is not displayed (display:false).
    const custom = turn1.events.filter((e) => e.type === 'message_end' && e.message?.role === 'custom');
    expect(custom.map((e) => [e.message.customType, e.message.display])).toEqual([['mempalace-wakeup', false]]);

    hooks.mock.enqueue({ text: 'Still here.' });
    await pi.prompt('And a second question.');
    const second = hooks.mock.requests[n0 + 1].body;
    expect(wakeups(second), 'the second prompt adds no wake-up (only the first stays in the history)').toHaveLength(1);
    expect(textOf(wakeups(second)[0])).toBe(text);
    // The only UI requests are the palace's footer status (fire-and-forget setStatus).
    expect(pi.uiRequests.filter((r) => !(r.method === 'setStatus' && r.statusKey === 'mempalace'))).toEqual([]);
    expect(sessionStarts(pi)).toEqual([{ reason: 'startup', messages: 0 }]);
  }, 60_000);

  it('palace tools are callable by the model: mempalace_diary_write then mempalace_diary_read, the results reach its next requests', async () => {
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue(
      { text: 'Writing my diary. ', toolCalls: [{ id: 'call_dw', name: 'mempalace_diary_write', arguments: { agent_name: AGENT, entry: DIARY_ENTRY, topic: 'e2e' } }] },
      { toolCalls: [{ id: 'call_dr', name: 'mempalace_diary_read', arguments: { agent_name: AGENT } }] },
      { text: 'Diary written and read back.' },
    );
    const turn = await pi.prompt('Write your diary, then read it back.');
    expect(turn.text).toBe('Writing my diary. Diary written and read back.');
    expect(hooks.mock.requests.length - n0).toBe(3);
    expect(turn.toolEnds.map((e) => [e.toolName, e.isError])).toEqual([['mempalace_diary_write', false], ['mempalace_diary_read', false]]);

    const afterWrite = hooks.mock.requests[n0 + 1].body.messages.at(-1);
    expect(afterWrite).toMatchObject({ role: 'tool', tool_call_id: 'call_dw' });
    expect(textOf(afterWrite)).toMatch(/"success":\s*true/);
    const afterRead = hooks.mock.requests[n0 + 2].body.messages.at(-1);
    expect(afterRead).toMatchObject({ role: 'tool', tool_call_id: 'call_dr' });
    expect(textOf(afterRead)).toContain(DIARY_ENTRY);

    // By now the background handshake is long done: every palace tool, with the real schema.
    for (let k = 0; k < 3; k++) expectAllPalaceTools(hooks.mock.requests[n0 + k].body, `run A request ${n0 + k}`);
    // ...and the cache for the next start has been written.
    const cache = JSON.parse(fs.readFileSync(cacheFile, 'utf8'));
    expect(cache.tools.map((t) => t.name).sort()).toEqual(REF_NAMES);
  }, 60_000);

  it('/mempalace-diary release sends the model a user message asking for mempalace_diary_write with the agent name and topic', async () => {
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'I will write it.' });
    const turn = await pi.prompt('/mempalace-diary release');
    expect(turn.text).toBe('I will write it.');
    expect(hooks.mock.requests.length - n0).toBe(1);
    const body = hooks.mock.requests[n0].body;
    const asked = lastUserText(body);
    expect(asked).toContain('`mempalace_diary_write`');
    expect(asked).toContain(`\`agent_name\`: "${AGENT}", \`topic\`: "release"`);
    expect(asked).toContain('Focus the entry on: release.');
    expect(asked).toContain('AAAK');
    // The command itself is not model text, and no second wake-up.
    expect(body.messages.some((m) => textOf(m).includes('/mempalace-diary'))).toBe(false);
    expect(wakeups(body)).toHaveLength(1);
  }, 60_000);

  it('closing pi (stdin end) feeds the session: pi exits 0 within the feed timeouts and the last turn is found by mempalace search', async () => {
    hooks.mock.enqueue({ text: `Bye! Our secret words are ${CLOSING_PHRASE}.` });
    await pi.prompt(`Last thing before I go: remember ${CLOSING_PHRASE}.`);
    const sessionFiles = fs.readdirSync(path.join(agentDir, 'sessions'), { recursive: true }).filter((f) => f.endsWith('.jsonl'));
    expect(sessionFiles, 'pi writes its session under <agentDir>/sessions').toHaveLength(1);
    const child = palaceChildren(pi.pid);
    expect(child).toHaveLength(1);

    const { exit, ms } = await closeTimed(pi);
    timings.closeWithFeedMs = ms;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(FEED_PREPARE_MS + FEED_MINE_MS);
    expect(fs.existsSync(`/proc/${child[0]}`), 'the MemPalace server exited with pi').toBe(false);
    expect(pi.stderr).not.toMatch(/feed .*failed/i);

    // From outside, with the server gone (the palace is free): the shutdown feed mined the last turn.
    const t0 = performance.now();
    const found = mempalaceCli(['search', CLOSING_PHRASE], palace);
    timings.cliSearchMs = Math.round(performance.now() - t0);
    expect(found.status, found.out).toBe(0);
    expect(drawerLines(found.out), found.out).toEqual(expect.arrayContaining([
      `> Last thing before I go: remember ${CLOSING_PHRASE}.`,
      `Bye! Our secret words are ${CLOSING_PHRASE}.`,
    ]));
    expect(found.out).toMatch(/\[1\] wing_conversations \//);
    // The first turn too (mined by the mid-session feed after it, or by this one).
    const early = mempalaceCli(['search', FIRST_PHRASE], palace);
    expect(drawerLines(early.out), early.out).toContain(`> Please remember this: ${FIRST_PHRASE}.`);
  }, 120_000);

  it('second start (cache primed): the FIRST request already carries all 47 palace tools with the reference schemas, and the wake-up reads the diary written before', async () => {
    expect(fs.existsSync(cacheFile)).toBe(true);
    pi = await startPalacePi();
    timings.secondStartWithPalaceMs = await timedReady(pi);
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'Good morning.' });
    const t0 = performance.now();
    await pi.prompt('Good morning!');
    timings.secondWakeupLatencyMs = Math.round(hooks.mock.requests[n0].receivedAt - t0);
    const first = hooks.mock.requests[n0].body;
    expectAllPalaceTools(first, 'second start, first request');
    const w = wakeups(first);
    expect(w).toHaveLength(1);
    expect(textOf(w[0])).toContain(DIARY_ENTRY);
    // The first request of a fresh session: nothing from run A's thread.
    expect(first.messages.some((m) => textOf(m).includes(CLOSING_PHRASE))).toBe(false);
  }, 60_000);

  it('/reload keeps ONE MemPalace child (the same process) and the palace tools keep working', async () => {
    const before = palaceChildren(pi.pid);
    expect(before).toHaveLength(1);
    const statsBefore = await nativeStats(pi);
    expect(statsBefore).toMatchObject({ palaceConnected: true, mcpSpawns: 1, mcpChildPid: before[0] });

    const res = await pi.send({ type: 'prompt', message: '/e2e-reload' }); // answered once the reload is done
    expect(res.success).toBe(true);

    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue(
      { toolCalls: [{ id: 'call_after_reload', name: 'mempalace_diary_read', arguments: { agent_name: AGENT } }] },
      { text: 'Read it after the reload.' },
    );
    const turn = await pi.prompt('Read your diary again.');
    expect(turn.toolEnds.map((e) => [e.toolName, e.isError])).toEqual([['mempalace_diary_read', false]]);
    expect(textOf(hooks.mock.requests[n0 + 1].body.messages.at(-1))).toContain(DIARY_ENTRY);
    // A reload is not a fresh session: no second wake-up in the thread.
    expect(wakeups(hooks.mock.requests[n0].body)).toHaveLength(1);
    expectAllPalaceTools(hooks.mock.requests[n0].body, 'after /reload');

    const after = palaceChildren(pi.pid);
    expect(after, 'still exactly the same one MemPalace child').toEqual(before);
    const statsAfter = await nativeStats(pi);
    expect(statsAfter).toMatchObject({ palaceConnected: true, mcpSpawns: 1, mcpRespawns: 0, mcpChildPid: before[0], stateCreations: 1 });
    expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
    expect(sessionStarts(pi).map((e) => e.reason)).toEqual(['startup', 'reload']);

    const { exit, ms } = await closeTimed(pi);
    timings.closeAfterReloadMs = ms;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(fs.existsSync(`/proc/${before[0]}`)).toBe(false);
  }, 120_000);

  it('resume (--continue): the first request of the resumed session carries NO new wake-up message', async () => {
    pi = await startPalacePi({ args: ['--no-builtin-tools', '--continue'] });
    timings.resumeStartMs = await timedReady(pi);
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'Welcome back.' });
    await pi.prompt('I am back.');
    const first = hooks.mock.requests[n0].body;
    // The resumed thread is session B's: its own wake-up (from B's first prompt) is in the history...
    expect(first.messages.some((m) => textOf(m) === 'Good morning!'), 'resumed the previous session').toBe(true);
    // pi 0.74.0 reports `--continue` as session_start reason "startup" (not "resume"), with the
    // resumed thread's messages already in the session: the extension must tell the two apart.
    timings.continueSessionStart = sessionStarts(pi)[0];
    expect(sessionStarts(pi)[0].messages).toBeGreaterThan(0);
    const { exit } = await closeTimed(pi);
    expect(exit.code).toBe(0);
    // ...and resuming must not add a second one.
    expect(wakeups(first), 'wake-up messages in the resumed thread (a resumed session must get no new wake-up)').toHaveLength(1);
  }, 120_000);

  it('the wake-up goes only to a run the user started: not a custom-message run, not /mempalace-diary\'s own prompt', async () => {
    pi = await startPalacePi({ session: false, extensions: [root, CUSTOM_MESSAGE_EXT, SESSION_EVENTS_EXT] });
    await timedReady(pi);
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'Noted the note.' }, { text: 'I will write it.' }, { text: 'Good evening!' });
    await pi.prompt('/e2e-custom'); // an extension's custom message starts the run
    const custom = hooks.mock.requests[n0].body;
    expect(custom.messages.map(textOf)).toContain('A note from another extension.');
    expect(wakeups(custom), 'no wake-up on a run an extension started').toHaveLength(0);
    await pi.prompt('/mempalace-diary');
    const diary = hooks.mock.requests[n0 + 1].body;
    expect(lastUserText(diary)).toContain('`mempalace_diary_write`');
    expect(wakeups(diary), "no wake-up on /mempalace-diary's own prompt").toHaveLength(0);
    await pi.prompt('Good evening.');
    const user = hooks.mock.requests[n0 + 2].body;
    expect(wakeups(user), "the user's first prompt gets the wake-up").toHaveLength(1);
    expect(textOf(user.messages.at(-1))).toContain(DIARY_ENTRY);
    expect(hooks.mock.requests.length - n0).toBe(3);
    expect(pi.events.filter((e) => e.type === 'extension_error')).toEqual([]);
    expect((await closeTimed(pi)).exit.code).toBe(0);
  }, 120_000);
});
}
