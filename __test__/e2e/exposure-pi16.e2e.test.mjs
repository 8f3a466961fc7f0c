// End to end: how the palace tools reach the model on pi 1.6.0 (Node 22, RPC mode, the mock model)
// with the REAL MemPalace 3.11.0 over stdio. One pi HOME and palace across four pi processes:
//   1  codemode (the default): the first request declares only pi's `codemode` tool and carries the
//      wake-up; the mock model writes a script that calls mempalace_kg_add then mempalace_kg_query
//      and gets MemPalace's real answers; pi's getAllTools() reports the server's annotations of
//      mempalace_search and mempalace_delete_drawer, exposure `deferred`, namespace `mempalace`;
//      `/mempalace-diary` names the codemode way to mempalace_diary_write and a script writes it;
//   2  deferred: only `tool_search` is declared; the model searches, the found tool is declared in
//      the next request, and calling it returns the row written by step 1's pi (in the palace); the
//      wake-up reads step 1's diary entry;
//   3  a pi 1.6 without codemode and tool_search (`--no-extensions`): all 47 palace tools declared,
//      one stderr line says why.
// The path the model took is printed as `[exposure figures]`.
import { describe, it, expect } from 'vitest';
import path from 'node:path';
import { lastUserText, toolMessages } from './mock-model.mjs';
import { piSuiteHooks } from './suite-hooks.mjs';
import { startPi, ready, root } from './pi-rpc.mjs';
import { toolsOf, measure, hasWakeup, textOf, systemText } from './tools-budget.suite.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { stdioEnv, referenceTools } from '../helpers/palace.mjs';

const TOOL_INFO_EXT = path.join(root, '__test__/e2e/fixtures/tool-info');
const AGENT = 'exposure-agent';
const ENTRY = 'SESSION:e2e|exposure.codemode+diary|KEY:amber.okapi.2718|★★★';
const dir = tempDir('dotty-e2e-exposure-');
const home = path.join(dir, 'pi-home');
const project = path.join(dir, 'project');
const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
const ENV = { ...bridgeEnv, DOTTY_VOICE_TOOLS: '0', MEMPALACE_AGENT_NAME: AGENT, MEMPALACE_FEED: '0' };
const figures = {};
let pi;

const hooks = piSuiteHooks({ dir, project, currentPi: () => pi, report: () => `[exposure figures] ${JSON.stringify(figures)}` });
const start = (env = {}, args = []) => startPi({ target: '1.6.0', modelBaseUrl: hooks.mock.baseUrl, extensions: [root, TOOL_INFO_EXT], env: { ...ENV, ...env }, session: true, home, cwd: project, args: ['--no-builtin-tools', ...args], timeoutMs: 90_000 });

/** Waits for the footer to say the palace is up (its tools registered from the server's list). */
async function palaceUp(p) {
  await ready(p, 60_000);
  await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'setStatus' && /^MemPalace: ready · \d+/.test(e.statusText ?? ''), { what: 'the connected status', ms: 60_000 });
}

/** The nested calls a codemode script made in a turn, as pi reports them: [toolName, isError]. */
const nestedCalls = (turn) => turn.events.filter((e) => e.type === 'tool_execution_end' && e.parentToolCallId).map((e) => [e.toolName, e.isError]);

const script = (...lines) => ({ toolCalls: [{ name: 'codemode', arguments: { code: lines.join('\n') } }] });

describe.sequential('pi 1.6 reaches the palace tools through its codemode and tool_search tools', () => {
  it('codemode: only codemode declared, with the wake-up; a script calls mempalace_kg_add then mempalace_kg_query and gets the real answers', async () => {
    pi = await start();
    await palaceUp(pi);
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue(
      script(
        "const added = await tools.mempalace_kg_add({ subject: 'e2e_robot', predicate: 'likes', object: 'codemode_tea' });",
        "const found = await tools.mempalace_kg_query({ entity: 'e2e_robot' });",
        "return 'ADDED ' + added + '\\nFOUND ' + found;",
      ),
      { text: 'noted' },
    );
    const turn = await pi.prompt('Remember that the e2e robot likes codemode tea.', { ms: 90_000 });
    expect(turn.text).toBe('noted');
    const first = hooks.mock.requests[n0].body;
    expect(toolsOf(first)).toEqual(['codemode']);
    expect(hasWakeup(first)).toBe(true);
    expect(systemText(first)).toContain('<mempalace>');
    figures.codemode = { ...measure(first), path: 'codemode script: tools.mempalace_kg_add, tools.mempalace_kg_query' };
    expect(nestedCalls(turn)).toEqual([['mempalace_kg_add', false], ['mempalace_kg_query', false]]);
    const answer = textOf(toolMessages(hooks.mock.requests[n0 + 1].body).at(-1));
    expect(answer).toMatch(/ADDED .*"success": true/s);
    expect(answer).toMatch(/FOUND .*codemode_tea/s);
  }, 120_000);

  it("pi's getAllTools() reports the server's annotations, exposure deferred and the mempalace namespace; codemode is active", async () => {
    const from = pi.events.length;
    await pi.send({ type: 'prompt', message: '/e2e-tools mempalace_search,mempalace_delete_drawer' });
    const note = await pi.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'notify' && e.message.startsWith('[e2e-tools] '), { from, what: 'the tool report' });
    const { tools, active } = JSON.parse(note.message.slice('[e2e-tools] '.length));
    const server = Object.fromEntries(referenceTools.tools.map((t) => [t.name, t.annotations]));
    expect(server.mempalace_search).toEqual({ readOnlyHint: true });
    for (const t of tools) {
      expect(t.annotations, t.name).toEqual(server[t.name]);
      expect(t.exposure).toBe('deferred');
      expect(t.namespace).toEqual({ name: 'mempalace', description: 'mempalace 3.11.0: your long-term memory palace. Search it before answering questions about past work.' });
    }
    expect(tools.map((t) => t.name).sort()).toEqual(['mempalace_delete_drawer', 'mempalace_search']);
    expect(active).toContain('codemode');
    expect(active.filter((n) => n.startsWith('mempalace_'))).toEqual([]);
  }, 60_000);

  it('/mempalace-diary in codemode names the codemode way to mempalace_diary_write, and a script writes the entry', async () => {
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue(script(`return await tools.mempalace_diary_write({ agent_name: '${AGENT}', entry: '${ENTRY}', topic: 'e2e' });`), { text: 'written' });
    const turn = await pi.prompt('/mempalace-diary', { ms: 90_000 });
    expect(turn.text).toBe('written');
    const asked = lastUserText(hooks.mock.requests[n0].body);
    expect(asked).toContain('`mempalace_diary_write` is not declared to you: call it from a `codemode` script, `await tools.mempalace_diary_write({ ... })`');
    expect(nestedCalls(turn)).toEqual([['mempalace_diary_write', false]]);
    expect(textOf(toolMessages(hooks.mock.requests[n0 + 1].body).at(-1))).toMatch(/"success": true/);
    expect(await pi.close()).toMatchObject({ code: 0 });
  }, 120_000);

  it("deferred: only tool_search declared; the model searches, then calls the found tool and reads the first pi's row; the wake-up has its diary", async () => {
    pi = await start({ MEMPALACE_EXPOSURE: 'deferred' });
    await palaceUp(pi);
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue(
      { toolCalls: [{ name: 'tool_search', arguments: { query: 'mempalace_kg_query' } }] },
      { toolCalls: [{ name: 'mempalace_kg_query', arguments: { entity: 'e2e_robot' } }] },
      { text: 'it likes codemode tea' },
    );
    const turn = await pi.prompt('What does the e2e robot like?', { ms: 90_000 });
    expect(turn.text).toBe('it likes codemode tea');
    const [first, second, third] = [0, 1, 2].map((i) => hooks.mock.requests[n0 + i].body);
    expect(toolsOf(first)).toEqual(['tool_search']);
    expect(hasWakeup(first)).toBe(true);
    expect(textOf(first.messages.find((m) => m.role === 'user' && textOf(m).startsWith('[MemPalace wake-up]')))).toContain('amber.okapi.2718');
    expect(textOf(toolMessages(second).at(-1))).toContain('mempalace_kg_query');
    expect(toolsOf(second)).toContain('mempalace_kg_query');
    expect(turn.toolEnds.map((e) => [e.toolName, e.isError])).toEqual([['tool_search', false], ['mempalace_kg_query', false]]);
    expect(textOf(toolMessages(third).at(-1))).toContain('codemode_tea');
    figures.deferred = { ...measure(first), afterSearch: measure(second), path: 'tool_search "mempalace_kg_query", then mempalace_kg_query' };
    expect(await pi.close()).toMatchObject({ code: 0 });
  }, 120_000);

  it('a pi 1.6 without codemode and tool_search (--no-extensions): all 47 declared, one stderr line says why', async () => {
    pi = await start({}, ['--no-extensions']);
    await palaceUp(pi);
    const n0 = hooks.mock.requests.length;
    hooks.mock.enqueue({ text: 'ok' });
    await pi.prompt('hello', { ms: 60_000 });
    const body = hooks.mock.requests[n0].body;
    expect(toolsOf(body)).toHaveLength(47);
    expect(pi.stderr.match(/neither a `codemode` nor a `tool_search` tool that reaches other tools.*declared directly/g)).toHaveLength(1);
    figures.noReacher = { ...measure(body), path: 'direct call' };
    expect(await pi.close()).toMatchObject({ code: 0 });
  }, 90_000);
});
