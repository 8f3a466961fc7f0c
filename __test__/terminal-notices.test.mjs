// Where what the extension says goes (src/diag.rs, load.js `notices`), through index.js and a
// recording fake pi, in a process of its own: in pi's interactive terminal UI (pi's stdout a terminal,
// session_start's context that of the TUI) each line goes once to ctx.ui.notify and none to stderr;
// in RPC mode (the same terminal) and wherever stdout is not a terminal (Dotty's robot), stderr as
// before. The footer is short. A palace that is not installed: no start, no respawn, help in the status.
// The real brain.db (created at the default path: the first-run notice) and the real native module.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, root } from './helpers/brain.mjs';
import { runWithFakePi } from './helpers/palace.mjs';

// `process.stdout.isTTY` as a terminal gives it, before index.js loads (the child's stdout is a pipe).
const ttyPreload = path.join(root, '__test__/fixtures/stdout-is-tty.cjs');

/** The env of a pi with a fresh HOME (brain.db created at its default path) and no mempalace-mcp on PATH. */
function freshHome() {
  const home = tempDir('dotty-notices-');
  const emptyPath = path.join(home, 'bin');
  fs.mkdirSync(emptyPath);
  return { home, env: { HOME: home, PATH: emptyPath, PI_CODING_AGENT_DIR: path.join(home, '.pi', 'agent'), MEMPALACE_BRIDGE: '1' } };
}

// The contexts pi's session_start hands an extension (what they say of the UI; the calls recorded).
const CONTEXTS = {
  'pi 1.6 interactive': `{ mode: 'tui', hasUI: true, ui }`,
  'pi 0.74 interactive': `{ hasUI: true, ui: { ...ui, getAllThemes: () => [{ name: 'dark' }, { name: 'light' }] } }`,
  'pi 1.6 RPC': `{ mode: 'rpc', hasUI: true, ui }`,
  'pi 0.74 RPC': `{ hasUI: true, ui: { ...ui, getAllThemes: () => [] } }`,
  'pi print mode': `{ hasUI: false, ui }`,
};

/**
 * Starts a session with `context`, lets the palace's handshake fail, reconnects once, asks for the
 * status, and reports. `ui`: wait (bounded) until the core's two lines have reached pi's UI (they
 * come through a threadsafe function, on the JS thread, after their moment).
 */
const session = (context, ui) => `
  const notes = [], statuses = [];
  const ui = { notify: (m, level) => notes.push([m, level]), setStatus: (k, t) => statuses.push([k, t]), getAllThemes: () => [] };
  const ctx = ${context};
  for (const h of pi.handlers.get('session_start')) await h({ reason: 'startup' }, ctx);
  await native.palaceTools();
  await pi.commands.get('mempalace').handler('reconnect', ctx);
  const deadline = Date.now() + 10_000;
  const core = () => notes.filter(([m]) => /^(created a new brain|MemPalace is not installed)/.test(m)).length;
  while ((${ui} ? core() < 2 : native.stats().brainFilesCreated < 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await pi.commands.get('mempalace').handler('status', ctx);
  const s = native.stats();
  await native.sessionShutdown('quit');
  return { notes, statuses, spawns: s.mcpSpawns, respawns: s.mcpRespawns, created: s.brainFilesCreated, brainDb: s.brainDb };`;

/** No session_start: the handshake fails, brain.db is created, queued lines reach stderr, a marker, then the exit. */
const NO_SESSION = `
  await native.palaceTools();
  const deadline = Date.now() + 10_000;
  while (native.stats().brainFilesCreated < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await native.flushTurnLog();
  process.stderr.write('@@BEFORE-EXIT@@\\n');
  return native.stats().mcpSpawns;`;

describe("what the extension says, in pi's interactive terminal and elsewhere", () => {
  for (const name of ['pi 1.6 interactive', 'pi 0.74 interactive']) {
    it(`${name}: every line once in pi's UI, none on stderr; the footer short; not installed is a state`, async () => {
      const { env } = freshHome();
      const r = await runWithFakePi(session(CONTEXTS[name], true), { ...env, NODE_OPTIONS: `--require ${ttyPreload}` }, { timeoutMs: 30_000 });
      expect(r.error).toBeUndefined();
      expect(r.stderr).not.toContain('[dotty-pi-ext]');
      expect(r.stdout).toBe('');
      const { notes, statuses } = r.result;
      const status = notes.pop(); // /mempalace status
      // The /mempalace reconnect answer (a command's notice), and the core's lines, each once.
      expect(notes).toEqual(expect.arrayContaining([
        [`created a new brain.db at ${r.result.brainDb} (none existed)`, 'info'],
        ['MemPalace is not installed (`mempalace-mcp` is not on PATH): pi works without palace tools and transcripts are not fed; `/mempalace status` says how to install it or switch the bridge off', 'warning'],
        ['MemPalace is still unavailable: MemPalace is not installed (`mempalace-mcp` is not on PATH)', 'info'],
      ]));
      expect(notes).toHaveLength(3);
      expect(r.result.created).toBe(1);
      // Not installed: nothing started, nothing respawned (the reconnect included).
      expect([r.result.spawns, r.result.respawns]).toEqual([0, 0]);
      expect(statuses.at(-1)).toEqual(['mempalace', 'MemPalace: not installed']);
      for (const [, text] of statuses) expect([...(text ?? '')].length).toBeLessThanOrEqual(40);
      expect(status[0].split('\n').slice(0, 4)).toEqual([
        'MemPalace: not installed (`mempalace-mcp` is not on PATH)',
        'to install it: `pipx install mempalace==3.11.0` (or `pip install mempalace==3.11.0`) so that `mempalace-mcp` is on PATH, then `/mempalace reconnect`',
        'to use another server: MEMPALACE_MCP_BIN (a command) or MEMPALACE_REMOTE_URL (a palace over HTTP)',
        'to switch the bridge off: MEMPALACE_BRIDGE=0',
      ]);
    });
  }

  for (const name of ['pi 1.6 RPC', 'pi 0.74 RPC', 'pi print mode']) {
    it(`${name} in a terminal: the lines on stderr as before, none in pi's UI`, async () => {
      const { env } = freshHome();
      const r = await runWithFakePi(session(CONTEXTS[name], false), { ...env, NODE_OPTIONS: `--require ${ttyPreload}` }, { timeoutMs: 30_000 });
      expect(r.error).toBeUndefined();
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('[dotty-pi-ext]')).sort(); // brain.db's comes when the warm-up gets to it
      expect(lines).toEqual([
        '[dotty-pi-ext] MemPalace is not installed (`mempalace-mcp` is not on PATH): pi works without palace tools and transcripts are not fed; `/mempalace status` says how to install it or switch the bridge off',
        // The reconnect's new client says it again: stderr is a log, as before.
        '[dotty-pi-ext] MemPalace is not installed (`mempalace-mcp` is not on PATH): pi works without palace tools and transcripts are not fed; `/mempalace status` says how to install it or switch the bridge off',
        expect.stringMatching(/^\[dotty-pi-ext\] created a new brain\.db at .*\/\.pi\/memory\/brain\.db \(none existed\)$/),
      ]);
      // Only the commands' own answers reach pi's UI (RPC mode: a fire-and-forget notify).
      expect(r.result.notes.map(([m]) => m.split('\n')[0])).toEqual([
        'MemPalace is still unavailable: MemPalace is not installed (`mempalace-mcp` is not on PATH)',
        'MemPalace: not installed (`mempalace-mcp` is not on PATH)',
      ]);
      expect([r.result.spawns, r.result.respawns]).toEqual([0, 0]);
    });
  }

  it("pi's /reload in the terminal: what is said while the entry loads again waits for its session_start, then goes to pi's UI", async () => {
    const { env } = freshHome();
    const r = await runWithFakePi(
      `const notes = [];
       const ui = { notify: (m, level) => notes.push([m, level]), setStatus() {}, getAllThemes: () => [] };
       const ctx = { mode: 'tui', hasUI: true, ui };
       for (const h of pi.handlers.get('session_start')) await h({ reason: 'startup' }, ctx);
       // /reload: the entry runs again (same native state), then pi emits session_start (reason reload).
       const again = fakePi();
       again.loading = true;
       require(${JSON.stringify(path.join(root, 'index.js'))})(again);
       again.loading = false;
       const reply = await again.text('think_hard', { question: 'why?' }); // says "think_hard: …" (the thinker is down)
       await native.flushTurnLog();
       const heldFor = notes.filter(([m]) => m.startsWith('think_hard')).length;
       for (const h of again.handlers.get('session_start')) await h({ reason: 'reload' }, ctx);
       const deadline = Date.now() + 10_000;
       while (!notes.some(([m]) => m.startsWith('think_hard')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
       return { reply, heldFor, notes };`,
      { ...env, MEMPALACE_BRIDGE: '0', VOICE_THINKER_URL: 'http://127.0.0.1:9/v1/chat/completions', NODE_OPTIONS: `--require ${ttyPreload}` },
    );
    expect(r.error).toBeUndefined();
    expect(r.result.reply).toBe('(thinking failed)');
    expect(r.result.heldFor).toBe(0); // held while the reloaded entry had no session_start yet
    expect(r.result.notes.filter(([m]) => m.startsWith('think_hard: '))).toEqual([['think_hard: Connection refused (os error 111)', 'warning']]);
    expect(r.stderr).not.toContain('[dotty-pi-ext]');
  });

  it('without a terminal (Dotty runs pi in RPC mode on pipes) a line is on stderr at once, before any session_start', async () => {
    const { env } = freshHome();
    const r = await runWithFakePi(NO_SESSION, env);
    expect(r.error).toBeUndefined();
    const before = r.stderr.slice(0, r.stderr.indexOf('@@BEFORE-EXIT@@'));
    expect(before).toMatch(/\[dotty-pi-ext\] created a new brain\.db at /);
    expect(before).toContain('[dotty-pi-ext] MemPalace is not installed (`mempalace-mcp` is not on PATH)');
    expect(r.result).toBe(0);
  });

  it('in a terminal, lines held for a session_start that never came are written to stderr at exit', async () => {
    const { env } = freshHome();
    const r = await runWithFakePi(NO_SESSION, { ...env, NODE_OPTIONS: `--require ${ttyPreload}` });
    expect(r.error).toBeUndefined();
    const [before, after] = r.stderr.split('@@BEFORE-EXIT@@');
    expect(before).not.toContain('[dotty-pi-ext]'); // held while pi might still draw its UI
    expect(after).toMatch(/\[dotty-pi-ext\] created a new brain\.db at /);
    expect(after).toContain('[dotty-pi-ext] MemPalace is not installed');
  });
});
