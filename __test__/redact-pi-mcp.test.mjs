// Issue 33: the model's writes through pi 1.x's own MCP tools of a MemPalace server of its mcp.json
// (`mcp__<server>__mempalace_*`) are redacted in pi's `tool_call`, in the very object pi runs the
// call with, as the bridge's palace-tool writes are (same redactor, tally, off switch); pi's
// `tool_result` of that call gets the bridge's note (kinds and counts, never the values). The
// entry is loaded into a fake pi whose agent dir holds that mcp.json (an HTTP server the bridge
// steps aside for: nothing is started, which changes nothing for pi's own writes; with
// MEMPALACE_BRIDGE=0 the palace half is off completely, hooks too). The real pi and MemPalace:
// __test__/e2e/redact-pi-mcp-pi16.e2e.test.mjs; the decision: src/palace/feed/redact/pi_writes.rs's tests.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers/brain.mjs';
import { runWithFakePi } from './helpers/palace.mjs';

// Made-up credentials of two formats (GitHub's classic PAT, an AWS access key id).
const PAT = 'ghp_R7vK2mQ9xT4wL8pZ3nB6yC1dF5hJ0sA2eG7u';
const AKIA = 'AKIAQ4MBX7NVRT2ZK3PL';

/** An agent dir whose mcp.json enables a MemPalace server named `mem-palace` and another server. */
function agentDir() {
  const agent = path.join(tempDir('dotty-redact-pi-mcp-'), 'agent');
  fs.mkdirSync(agent, { recursive: true });
  fs.writeFileSync(path.join(agent, 'mcp.json'), JSON.stringify({
    mcpServers: {
      'mem-palace': { url: 'http://127.0.0.1:9/mempalace/mcp' }, // another HTTP palace: the bridge steps aside
      github: { command: 'github-mcp' },
    },
  }));
  return agent;
}

// Fires pi's tool_call then tool_result for each call, as pi does: the input object handlers mutate
// is the one pi runs the call with; tool_result's handlers return the patched content.
const ON = { DOTTY_VOICE_TOOLS: '0', MEMPALACE_BRIDGE: '1' };
const CALLS = `
  const calls = [
    { toolCallId: 'c_drawer', toolName: 'mcp__mem_palace__mempalace_add_drawer', input: { wing: 'wing_ops', room: 'deploy', content: 'GITHUB_TOKEN=${PAT} and ${AKIA}' } },
    { toolCallId: 'c_diary', toolName: 'mcp__mem_palace__mempalace_diary_write', input: { agent_name: 'pi', entry: 'rotated ${PAT}' } },
    { toolCallId: 'c_kg', toolName: 'mcp__mem_palace__mempalace_kg_add', input: { subject: 'ci', predicate: 'uses_token', object: '${PAT}' } },
    { toolCallId: 'c_search', toolName: 'mcp__mem_palace__mempalace_search', input: { query: '${PAT}' } },
    { toolCallId: 'c_gh', toolName: 'mcp__github__create_issue', input: { body: '${PAT}' } },
    { toolCallId: 'c_code', toolName: 'codemode', input: { code: 'x' } },
    { toolCallId: 'c_code/1', parentToolCallId: 'c_code', toolName: 'mcp__mem_palace__mempalace_kg_add', input: { subject: 'a', predicate: 'b', object: '${AKIA}' } },
  ];
  const out = {};
  for (const c of calls) {
    const event = { type: 'tool_call', ...c };
    const inputObject = event.input;
    const blocked = await pi.emit('tool_call', event);
    const sameObject = event.input === inputObject;
    out[c.toolCallId] = { input: event.input, sameObject, blocked };
  }
  const content = [{ type: 'text', text: 'done' }];
  for (const c of [...calls].reverse()) { // nested calls finish before the call that made them
    const results = await pi.emit('tool_result', { type: 'tool_result', ...c, content, structuredContent: { ok: true }, isError: false });
    out[c.toolCallId].result = results.find((r) => r !== undefined) ?? null;
  }
  out.events = [...pi.handlers.keys()];
  return out;
`;

describe("pi's own MCP writes to a MemPalace server of its mcp.json", () => {
  it('a storing call is redacted in place and its result tells the model kinds and counts; others are untouched', async () => {
    const agent = agentDir();
    const r = await runWithFakePi(CALLS, { PI_CODING_AGENT_DIR: agent, HOME: path.dirname(agent), ...ON });
    expect(r.error, r.stderr).toBeUndefined();
    const out = r.result;
    expect(out.events).toEqual(expect.arrayContaining(['tool_call', 'tool_result']));
    // The drawer, the diary entry and the fact: the markers in the object pi runs the call with.
    expect(out.c_drawer.input).toEqual({ wing: 'wing_ops', room: 'deploy', content: 'GITHUB_TOKEN=[REDACTED:github-pat] and [REDACTED:aws-access-token]' });
    expect(out.c_diary.input).toEqual({ agent_name: 'pi', entry: 'rotated [REDACTED:github-pat]' });
    expect(out.c_kg.input).toEqual({ subject: 'ci', predicate: 'uses_token', object: '[REDACTED:github-pat]' });
    for (const id of ['c_drawer', 'c_diary', 'c_kg']) {
      expect(out[id].sameObject, id).toBe(true);
      expect(out[id].blocked.filter(Boolean), id).toEqual([]); // never blocks
    }
    // A read-only tool, another server's tool, pi's own codemode: as they were, nothing said.
    expect(out.c_search.input).toEqual({ query: PAT });
    expect(out.c_gh.input).toEqual({ body: PAT });
    for (const id of ['c_search', 'c_gh']) expect(out[id].result, id).toBeNull();
    // The result: pi's content, then the bridge's note (kinds and counts, never a value).
    const note = (id) => out[id].result.content.at(-1).text;
    expect(out.c_drawer.result.content[0]).toEqual({ type: 'text', text: 'done' });
    expect(out.c_drawer.result.structuredContent).toEqual({ ok: true });
    expect(note('c_drawer')).toBe("[mempalace bridge] secrets were redacted from this call's arguments before they were stored: 2 (aws-access-token 1, github-pat 1). The palace holds [REDACTED:<kind>] in their place; the values were not sent.");
    expect(note('c_diary')).toMatch(/stored: 1 \(github-pat 1\)/);
    expect(note('c_kg')).toMatch(/stored: 1 \(github-pat 1\)/);
    // A codemode script's nested write: redacted, and codemode's own result (what the model reads) says so.
    expect(out['c_code/1'].input.object).toBe('[REDACTED:aws-access-token]');
    expect(note('c_code')).toMatch(/stored: 1 \(aws-access-token 1\)/);
    for (const id of ['c_drawer', 'c_diary', 'c_kg', 'c_code', 'c_code/1']) {
      for (const v of [PAT.slice(4), AKIA.slice(4)]) expect(JSON.stringify(out[id]), id).not.toContain(v);
    }
    // The same tally as the bridge's writes: /mempalace status and the doctor count them.
    const tally = JSON.parse(fs.readFileSync(path.join(agent, 'mempalace-feed', 'tool-writes.json'), 'utf8'));
    expect(tally).toEqual({ calls: 4, redacted: { 'aws-access-token': 2, 'github-pat': 3 } });
  });

  it('MEMPALACE_FEED_REDACT=off leaves them as they are', async () => {
    const agent = agentDir();
    const r = await runWithFakePi(CALLS, { PI_CODING_AGENT_DIR: agent, HOME: path.dirname(agent), ...ON, MEMPALACE_FEED_REDACT: 'off' });
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.result.c_drawer.input.content).toBe(`GITHUB_TOKEN=${PAT} and ${AKIA}`);
    expect(r.result.c_kg.input.object).toBe(PAT);
    for (const id of ['c_drawer', 'c_diary', 'c_kg', 'c_code']) expect(r.result[id].result, id).toBeNull();
    expect(fs.existsSync(path.join(agent, 'mempalace-feed', 'tool-writes.json'))).toBe(false);
  });

  it("without a MemPalace server in pi's mcp.json, or with MEMPALACE_BRIDGE=0, the extension handles neither event", async () => {
    const bare = path.join(tempDir('dotty-redact-pi-mcp-'), 'agent');
    fs.mkdirSync(bare, { recursive: true });
    const agent = agentDir();
    for (const env of [{ PI_CODING_AGENT_DIR: bare, HOME: path.dirname(bare), ...ON }, { PI_CODING_AGENT_DIR: agent, HOME: path.dirname(agent), ...ON, MEMPALACE_BRIDGE: '0' }]) {
      const r = await runWithFakePi(CALLS, env);
      expect(r.error, r.stderr).toBeUndefined();
      expect(r.result.events).not.toContain('tool_call');
      expect(r.result.events).not.toContain('tool_result');
      expect(r.result.c_drawer.input.content).toBe(`GITHUB_TOKEN=${PAT} and ${AKIA}`);
    }
  });
});
