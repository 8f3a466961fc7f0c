// Nothing secret is fed to the palace: `dotty-pi-ext feed` (a real process) stages pi's sessions
// through the redactor and mines them into the REAL MemPalace 3.11.0. Sessions hold one made-up
// secret of each kind (__test__/fixtures/redact/secrets.json) in chat text (pasted by the user,
// repeated by the assistant) and only in tool output (bash arguments and results); the feeding
// process has MY_SERVICE_TOKEN and DOTTY_ADMIN_TOKEN in its environment, and a pattern file with
// one broken regex. Afterwards no value is in any file under the test's folder but pi's own
// session files (palace, chroma.sqlite3, MemPalace's write-ahead log, staging, state), nor in
// `mempalace search` or `hallways`; the markers are; the ordinary corpus is staged and filed unchanged.
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { mempalaceCli, stdioEnv } from './helpers/palace.mjs';
import { filesUnder, holding, ordinary, samples } from './helpers/redact.mjs';

const bin = path.join(root, 'bin/dotty-pi-ext.js');
const dir = tempDir('dotty-redact-');
const env = {
  ...stdioEnv(dir),
  MEMPALACE_CONFIG_DIR: path.join(dir, 'mempalace-cfg'), // its write-ahead log is under the test's folder
  MEMPALACE_FEED_BIN: '/nonexistent/exporter', // the built-in exporter
  MEMPALACE_FEED_REDACT: path.join(dir, 'redact-patterns.txt'),
  DOTTY_VOICE_TOOLS: '0',
  TOKENIZERS_PARALLELISM: 'false',
};
for (const s of samples) if (s.env) env[s.env] = s.value;
const sessions = path.join(env.PI_CODING_AGENT_DIR, 'sessions', '--work-project--');
const palace = env.MEMPALACE_PALACE;
const CUSTOM = 'ACME-TICKET-483920';

function cli(args, timeoutMs = 170_000) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`timed out: ${args.join(' ')}\n${stderr}`)); }, timeoutMs);
    p.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }); });
  });
}

/** A pi session (v3) of `turns`: [role, text] with role user | assistant | call (bash) | result. */
function session(id, turns) {
  const lines = [{ type: 'session', version: 3, id, timestamp: '2026-12-01T10:00:00.000Z', cwd: '/work/project' }];
  let parentId = null;
  turns.forEach(([role, text], i) => {
    const ts = Date.parse('2026-12-01T10:00:00.000Z') + i * 1000;
    const assistant = { api: 'openai-completions', provider: 'mock', model: 'mock-model', timestamp: ts };
    const message = {
      user: { role: 'user', content: [{ type: 'text', text }], timestamp: ts },
      assistant: { role: 'assistant', content: [{ type: 'text', text }], stopReason: 'stop', ...assistant },
      call: { role: 'assistant', content: [{ type: 'toolCall', id: `call_${i}`, name: 'bash', arguments: { command: text } }], stopReason: 'toolUse', ...assistant },
      result: { role: 'toolResult', toolCallId: `call_${i - 1}`, toolName: 'bash', content: [{ type: 'text', text }], isError: false, timestamp: ts },
    }[role];
    const entryId = `${id.slice(0, 4)}${String(i).padStart(4, '0')}`;
    lines.push({ type: 'message', id: entryId, parentId, timestamp: new Date(ts).toISOString(), message });
    parentId = entryId;
  });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

const paste = (s) => s.text.replace('{v}', s.value);
// Chat text: each secret pasted by the user and repeated by the assistant.
const chat = session('a1b2c3d4-0000-4000-8000-000000000001', [
  ['user', 'I am debugging our deploy, these are the things I have in front of me.'],
  ...samples.flatMap((s) => [['user', paste(s)], ['assistant', `I see ${s.value} there; that one is worth rotating.`]]),
  ['user', `Also ticket ${CUSTOM} is the one to close.`],
  ['assistant', 'Done with the review of the deploy.'],
]);
// Tool output only: the chat text is clean, the secrets are in bash arguments and results.
const tools = session('a1b2c3d4-0000-4000-8000-000000000002', [
  ['user', 'Check the environment of the deploy box and tell me what is wrong.'],
  ...samples.flatMap((s, i) => [['call', i % 2 ? `echo ${JSON.stringify(s.value)}` : 'cat deploy.log'], ['result', paste(s)]]),
  ['assistant', 'The deploy box looks misconfigured: the service points at the wrong database.'],
]);
const files = { 'chat.jsonl': chat, 'tools.jsonl': tools, 'ordinary.jsonl': ordinary };
const sha = (f) => crypto.createHash('sha256').update(fs.readFileSync(f)).digest('hex');
/** A distinctive piece of a value (the whole of a short one), to catch a partial leak too. */
const pieces = (v) => [v, v.slice(Math.floor(v.length / 2) - 8, Math.floor(v.length / 2) + 8)];

/** Every file under `d` except pi's session files and the pattern file, as [path, bytes]. */
const written = (d) => filesUnder(d, (f) => !f.startsWith(path.join(env.PI_CODING_AGENT_DIR, 'sessions') + path.sep) && !f.endsWith('redact-patterns.txt'));

let before, feed;
beforeAll(async () => {
  fs.mkdirSync(sessions, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(sessions, name), text);
  fs.writeFileSync(env.MEMPALACE_FEED_REDACT, '# our ticket ids\nACME-TICKET-[0-9]{6}\n(?P<broken\n');
  before = Object.fromEntries(Object.keys(files).map((n) => [n, sha(path.join(sessions, n))]));
  feed = await cli(['feed']);
}, 180_000);

describe('feeding redacts every secret before it reaches the palace', () => {
  it('feeds, says what it redacted, and says the broken pattern once', () => {
    expect(feed.code, feed.stdout + feed.stderr).toBe(0);
    expect(feed.stdout).toMatch(/^fed \S*staging\S* to the palace: /);
    expect(feed.stdout).toMatch(/\nredacted: \d+ \(.*env:MY_SERVICE_TOKEN \d+.*\)\n$/);
    const broken = feed.stderr.split('\n').filter((l) => l.includes('redact-patterns.txt'));
    expect(broken, feed.stderr).toEqual([expect.stringMatching(/line 3 is not a usable regular expression .*every other redaction rule still applies$/)]);
    expect(feed.stderr).not.toContain('broken');
  });

  it('leaves no value in any file the feed or the palace wrote, chroma.sqlite3 and the write-ahead log included', () => {
    const all = written(dir);
    const names = all.map(([f]) => path.relative(dir, f));
    expect(names).toContain(path.join('palace-root', 'palace', 'chroma.sqlite3'));
    expect(names).toContain(path.join('palace-root', 'hallways.json'));
    expect(fs.existsSync(env.MEMPALACE_CONFIG_DIR)).toBe(true); // where its write-ahead log would be
    for (const s of [...samples, { kind: 'user-pattern', value: CUSTOM }]) {
      for (const piece of pieces(s.value)) {
        const leaks = holding(all, piece, dir);
        expect(leaks, `${s.kind} in ${leaks}`).toEqual([]);
      }
    }
    const chroma = all.find(([f]) => f.endsWith('chroma.sqlite3'))[1].toString('latin1');
    for (const kind of new Set(samples.map((s) => s.kind))) expect(chroma, kind).toContain(`[REDACTED:${kind}]`);
    expect(chroma).toContain('[REDACTED:user-pattern]');
  });

  it("keeps pi's session files byte-identical and stages valid JSON lines with the same entries", () => {
    for (const [name, text] of Object.entries(files)) {
      expect(sha(path.join(sessions, name)), name).toBe(before[name]);
      const staged = fs.readFileSync(path.join(env.PI_CODING_AGENT_DIR, 'mempalace-feed', 'staging', '--work-project--', name), 'utf8');
      const [a, b] = [text.trimEnd().split('\n'), staged.trimEnd().split('\n')];
      expect(b.length, name).toBe(a.length);
      b.forEach((l, i) => expect(Object.keys(JSON.parse(l)), `${name}:${i}`).toEqual(Object.keys(JSON.parse(a[i]))));
    }
    // The ordinary session: nothing redacted, staged byte for byte.
    expect(fs.readFileSync(path.join(env.PI_CODING_AGENT_DIR, 'mempalace-feed', 'staging', '--work-project--', 'ordinary.jsonl'), 'utf8')).toBe(ordinary);
  });

  it('search results and hallways hold markers, never values; ordinary values are filed unchanged', () => {
    const found = mempalaceCli(['search', 'rotating worth token key password deploy'], palace) + mempalaceCli(['hallways'], palace);
    expect(found).toContain('[REDACTED:');
    for (const s of samples) for (const piece of pieces(s.value)) expect(found, s.kind).not.toContain(piece);
    const chroma = fs.readFileSync(path.join(palace, 'chroma.sqlite3')).toString('utf8');
    const lines = ordinary.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const sha1 = lines.find((l) => l.message?.role === 'assistant' && /The last commit is [0-9a-f]{40}/.test(l.message.content[0].text)).message.content[0].text.match(/[0-9a-f]{40}/)[0];
    for (const plain of [sha1, 'TOKENIZERS_PARALLELISM=false', 'data:image/png;base64,iVBOR', 'MemPalaceBridgeToolCacheInvalidationAfterHandshakeMismatch', 'integrity: sha512-']) {
      expect(chroma, plain).toContain(plain);
    }
  });

  it('records the counts per kind (never a value) in last-outcome.json, and doctor and the dry run show them', async () => {
    const outcomeFile = path.join(env.PI_CODING_AGENT_DIR, 'mempalace-feed', 'last-outcome.json');
    const outcome = JSON.parse(fs.readFileSync(outcomeFile, 'utf8'));
    expect(outcome.outcome).toBe('fed');
    for (const kind of new Set(samples.map((s) => s.kind))) expect(outcome.redacted[kind], kind).toBeGreaterThanOrEqual(2);
    // env:MY_SERVICE_TOKEN: pasted, repeated, and in a tool result (echo argument too).
    expect(outcome.redacted['env:MY_SERVICE_TOKEN']).toBe(4);
    expect(outcome.redacted['user-pattern']).toBe(1);
    const text = fs.readFileSync(outcomeFile, 'utf8');
    for (const s of samples) expect(text).not.toContain(s.value);
    const doc = await cli(['doctor'], 60_000);
    const redaction = doc.stdout.split('\n').find((l) => /^(ok|warn|fail) +feed redaction  /.test(l));
    expect(redaction, doc.stdout).toMatch(/^ok +feed redaction +on \(built-in rules \+ \S+redact-patterns.txt\); last feed redacted \d+ \(.*env:MY_SERVICE_TOKEN 4.*\)$/);
    const plan = await cli(['feed', '--dry-run'], 60_000);
    expect(plan.stdout).toMatch(/^redaction: on \(built-in rules .*\); last feed redacted \d+ \(/);
    expect(plan.stdout).toMatch(/\nredaction: would replace \d+ \(.*\) in those sessions\n/);
  }, 130_000);
});
