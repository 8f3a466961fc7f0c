// End to end (issue 33): the model's writes through pi 1.6.0's OWN MCP tools are redacted before they
// reach the palace. pi's user-level mcp.json runs the REAL MemPalace 3.11.0 over stdio as
// "mempalace" (exposure "direct": its tools are declared to the model as mcp__mempalace__*); the
// bridge reads the palace through its read-only twin and offers no tools. The mock model writes a
// drawer, a diary entry and a knowledge-graph fact through pi's own tools, each holding a GitHub
// token and an AWS secret access key line. Afterwards no byte of either value is in any file under
// the palace directory (chroma.sqlite3, the knowledge graph, …), the markers are; the model's next
// request carries the bridge's note in each tool result (kinds and counts, never a value); the
// same with pi's default exposure, the drawer written by a codemode script (a nested call: its note
// is in codemode's result); the tally that `/mempalace status` and `doctor` show counts the calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startPi, ready } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { stdioEnv, mempalaceRoot, toolsDir } from '../helpers/palace.mjs';
import { filesUnder, holding } from '../helpers/redact.mjs';

// Made-up credentials: a GitHub classic PAT (ghp_ + 36 alphanumerics) and an AWS secret access key
// (40 characters of A-Za-z0-9/+) on the line a credentials file has it.
const GITHUB = 'ghp_Zq7RkX2mT9vL4pW8sN3yB6cF1hJ5dA0eG2uK';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYzQ8vT3nB4k';
const AWS_LINE = `aws_secret_access_key = ${AWS_SECRET}`;
const SECRETS = { github: GITHUB, aws: AWS_SECRET };

const dir = tempDir('dotty-e2e-redact-pimcp-');
const home = path.join(dir, 'pi-home');
const agentDir = path.join(home, '.pi', 'agent');
const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...bridgeEnv } = stdioEnv(dir);
const palace = bridgeEnv.MEMPALACE_PALACE;
let mock, pi, written;

beforeAll(async () => {
  mock = await startMockModel();
  fs.mkdirSync(agentDir, { recursive: true });
  fs.writeFileSync(path.join(agentDir, 'mcp.json'), JSON.stringify({
    mcpServers: { mempalace: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: palace, MEMPALACE_ROOT: mempalaceRoot }, exposure: 'direct' } },
  }, null, 2));
}, 30_000);
afterAll(async () => {
  if (pi?.alive) await pi.close(5_000);
  await mock?.close();
  if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** Waits until pi's `/mcp` says `server` is connected (its direct tools are then declared). */
async function connected(p, server) {
  for (;;) {
    const from = p.events.length;
    await p.send({ type: 'prompt', message: '/mcp' });
    const note = await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'notify' && e.message.startsWith(`${server}: `), { from, what: `/mcp on ${server}`, ms: 60_000 });
    if (/^\S+: connected/.test(note.message)) return;
    expect(note.message).toMatch(/connecting|starting/); // not failed
    await p.waitForEvent((e) => e.type === 'extension_ui_request' && e.method === 'notify' && e.message.includes(server) && e.message !== note.message, { from: p.events.length, what: 'a change of the server', ms: 5_000 }).catch(() => {});
  }
}

const text = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((c) => c.text ?? '').join('\n'));

describe("the model's writes through pi 1.6's own MemPalace tools are redacted (real pi, real MemPalace)", () => {
  it('writes a drawer, a diary entry and a fact holding a GitHub token and an AWS secret key through pi\'s own tools', async () => {
    pi = await startPi({ target: '1.6.0', modelBaseUrl: mock.baseUrl, home, env: { ...bridgeEnv, DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', MEMPALACE_AGENT_NAME: 'redact-agent' }, args: ['--no-builtin-tools'], timeoutMs: 60_000 });
    await ready(pi, 60_000);
    await connected(pi, 'mempalace');
    expect(pi.stderr).toMatch(/mempalace: pi's MCP server 'mempalace' .* writes the palace; the bridge reads it through a read-only twin/);
    const from = mock.requests.length;
    mock.enqueue(
      { toolCalls: [{ id: 'c_drawer', name: 'mcp__mempalace__mempalace_add_drawer', arguments: { wing: 'wing_ops', room: 'deploy', content: `Deploy credentials from ~/.aws/credentials and .env:\n${AWS_LINE}\nGITHUB_TOKEN=${GITHUB}` } }] },
      { toolCalls: [{ id: 'c_diary', name: 'mcp__mempalace__mempalace_diary_write', arguments: { agent_name: 'redact-agent', entry: `SESSION:deploy|set up ${GITHUB} and\n${AWS_LINE}|★★` } }] },
      { toolCalls: [{ id: 'c_kg', name: 'mcp__mempalace__mempalace_kg_add', arguments: { subject: 'ci_pipeline', predicate: 'authenticates_with', object: `${GITHUB} / ${AWS_LINE}` } }] },
      { text: 'stored' },
    );
    expect((await pi.prompt('remember the deploy credentials', { ms: 120_000 })).text).toBe('stored');
    written = mock.requests.slice(from);
    expect(await pi.close(60_000)).toMatchObject({ code: 0 });
  }, 240_000);

  it("each tool result the model reads next carries the bridge's note: kinds and counts, never a value", () => {
    const results = written.at(-1).body.messages.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.tool_call_id)).toEqual(['c_drawer', 'c_diary', 'c_kg']);
    for (const m of results) {
      const t = text(m);
      expect(t, m.tool_call_id).not.toMatch(/read-only|Peer MCP writer|error/i);
      // Two secrets each: the token, and the secret key under its kind (whichever rule names it).
      expect(t, m.tool_call_id).toMatch(/\[mempalace bridge\] secrets were redacted from this call's arguments before they were stored: 2 \((?=.*github-pat 1)[a-z0-9:-]+ 1, [a-z0-9:-]+ 1\)\. The palace holds \[REDACTED:<kind>\] in their place; the values were not sent\./);
      for (const [kind, v] of Object.entries(SECRETS)) expect(t, `${m.tool_call_id} ${kind}`).not.toContain(v);
    }
  });

  it("pi's default exposure (codemode): a script's nested write is redacted too, and codemode's result carries the note", async () => {
    fs.writeFileSync(path.join(agentDir, 'mcp.json'), JSON.stringify({
      mcpServers: { mempalace: { command: 'bash', args: [path.join(toolsDir, 'start-stdio.sh')], env: { MEMPALACE_PALACE: palace, MEMPALACE_ROOT: mempalaceRoot } } },
    }, null, 2));
    pi = await startPi({ target: '1.6.0', modelBaseUrl: mock.baseUrl, home, env: { ...bridgeEnv, DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', MEMPALACE_AGENT_NAME: 'redact-agent' }, args: ['--no-builtin-tools'], timeoutMs: 60_000 });
    await ready(pi, 60_000);
    const code = [
      `const r = await tools.mcp__mempalace__mempalace_add_drawer({ wing: 'wing_ops', room: 'scripted', content: ${JSON.stringify(`Scripted deploy note: GITHUB_TOKEN=${GITHUB}\n${AWS_LINE}`)} });`,
      'return r.content.map((c) => c.text).join("\\n");',
    ].join('\n');
    const from = mock.requests.length;
    mock.enqueue({ toolCalls: [{ id: 'c_script', name: 'codemode', arguments: { code } }] }, { text: 'scripted' });
    expect((await pi.prompt('store it from a script', { ms: 120_000 })).text).toBe('scripted');
    const result = mock.requests.slice(from).at(-1).body.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'c_script');
    const t = text(result);
    expect(t).toMatch(/^Script completed/);
    expect(t).toContain('"success": true');
    // The script gets the server's result as it was; codemode's own result ends with the note.
    expect(t).toMatch(/\n\[mempalace bridge\] secrets were redacted from this call's arguments before they were stored: 2 \((?=.*github-pat 1)[a-z0-9:-]+ 1, [a-z0-9:-]+ 1\)[^\n]*$/);
    for (const [kind, v] of Object.entries(SECRETS)) expect(t, kind).not.toContain(v);
    expect(await pi.close(60_000)).toMatchObject({ code: 0 });
  }, 240_000);

  it('no byte of either value is in any file under the palace directory; the markers are', () => {
    const all = filesUnder(palace);
    expect(all.map(([f]) => path.relative(palace, f))).toContain('chroma.sqlite3');
    for (const [kind, v] of Object.entries(SECRETS)) {
      // The value, a part of it, and lower case (the knowledge graph keeps entities in lower case).
      for (const s of [v, v.slice(4, 24), v.toLowerCase()]) expect(holding(all, s, palace), `${kind}: ${s.length} chars`).toEqual([]);
    }
    const chroma = fs.readFileSync(path.join(palace, 'chroma.sqlite3')).toString('latin1');
    expect(chroma).toContain('GITHUB_TOKEN=[REDACTED:github-pat]');
    expect(chroma).toContain('Scripted deploy note: GITHUB_TOKEN=[REDACTED:github-pat]');
    expect(all.some(([, bytes]) => bytes.includes('[REDACTED:'))).toBe(true);
  });

  it('the tally /mempalace status and doctor show counts the four calls', () => {
    const tally = JSON.parse(fs.readFileSync(path.join(agentDir, 'mempalace-feed', 'tool-writes.json'), 'utf8'));
    expect(tally.calls).toBe(4);
    expect(tally.redacted['github-pat']).toBe(4);
    expect(Object.values(tally.redacted).reduce((a, b) => a + b, 0)).toBe(8); // and the four secret keys
  });
});
