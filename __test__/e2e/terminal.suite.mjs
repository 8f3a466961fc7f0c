// End to end: pi started INTERACTIVELY in a real terminal (tmux; ./tmux.mjs), the screen read as a
// person sees it, with this package and a fresh HOME (brain.db is created at its default path: the
// voice half's first-run notice), MemPalace in three states:
//   absent  no mempalace-mcp on PATH and nothing configured: `MemPalace: not installed`, no start,
//           `/mempalace status` says how to install it or switch the bridge off;
//   down    a configured MEMPALACE_MCP_BIN that dies at once: `MemPalace: down (/mempalace)` after the
//           respawns; `/mempalace reconnect` gives up again without a second notice;
//   up      the real MemPalace 3.11.0 over stdio: `MemPalace: ready · 47 tools`.
// On every screen: no raw `[dotty-pi-ext]` line anywhere, one footer state of at most 40 characters
// and no stale one, each notice shown once. Run for pi 0.74.0 (terminal.e2e.test.mjs) and pi 1.6.0 on
// Node 22 (terminal-pi16.e2e.test.mjs).
import { describe, it, expect, beforeAll, afterAll, afterEach } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startTmuxPi, linesWith } from './tmux.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { stdioEnv } from '../helpers/palace.mjs';

const BRAIN_NOTICE = 'created a new brain.db at ';
const FOOTER_MAX = 40;

/** The footer's palace state: the one line that says `MemPalace: …`, trimmed (and every such line). */
function footerOf(screen) {
  const lines = linesWith(screen, 'MemPalace: ').map((l) => l.trim());
  return { footer: lines.at(-1), all: lines };
}

/** What every screen must hold: no raw stderr line of ours, one short and current footer state, the first-run notice once. */
function expectClean(screen, footer, home) {
  expect(screen).not.toContain('[dotty-pi-ext]');
  const f = footerOf(screen);
  expect(f.all).toEqual([footer]); // no stale state (pi 0.74 kept `MemPalace: connecting…` above a raw line)
  expect([...f.footer].length).toBeLessThanOrEqual(FOOTER_MAX);
  expect(linesWith(screen, BRAIN_NOTICE)).toHaveLength(1);
  expect(screen).toContain(`${BRAIN_NOTICE}${path.join(home, '.pi/memory/brain.db')}`.slice(0, 100));
}

export function terminalSuite(target) {
  const dir = tempDir('dotty-e2e-terminal-');
  const emptyBin = path.join(dir, 'no-mempalace-bin');
  fs.mkdirSync(emptyBin);
  const PATH = `${emptyBin}:/usr/bin:/bin`;
  let mock;
  let pi;
  let n = 0;
  /** A fresh HOME for one start (no brain.db yet), and pi in tmux with `env`. */
  const start = (env) => {
    const home = path.join(dir, `home-${++n}`);
    fs.mkdirSync(home);
    pi = startTmuxPi({ target, modelBaseUrl: mock.baseUrl, home, env: { PATH, MEMPALACE_FEED: '0', ...env } });
    return home;
  };

  beforeAll(async () => { mock = await startMockModel(); });
  afterEach(async () => { await pi?.close(); pi = undefined; });
  afterAll(async () => {
    await mock?.close();
    if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe.sequential(`pi ${target} in a real terminal (tmux)`, () => {
    it('MemPalace absent: `MemPalace: not installed`, one notice, no raw line; /mempalace status says how to install it', async () => {
      for (const d of PATH.split(':')) expect(fs.existsSync(path.join(d, 'mempalace-mcp')), `${d} holds no mempalace-mcp`).toBe(false);
      const home = start({});
      const notice = 'MemPalace is not installed (`mempalace-mcp` is not on PATH)';
      const screen = await pi.waitForScreen((s) => footerOf(s).footer === 'MemPalace: not installed' && s.includes(notice) && s.includes(BRAIN_NOTICE), { what: 'the not-installed state, its notice and the brain.db notice' });
      expectClean(screen, 'MemPalace: not installed', home);
      expect(linesWith(screen, notice)).toHaveLength(1);
      pi.type('/mempalace status');
      const status = await pi.waitForScreen((s) => s.includes('to switch the bridge off: MEMPALACE_BRIDGE=0'), { what: "/mempalace status's answer", ms: 20_000 });
      expect(status).not.toContain('[dotty-pi-ext]');
      expect(status).toContain('to install it: `pipx install mempalace==3.11.0`');
      expect(status).toContain('spawns: 0, respawns: 0'); // nothing was started, nothing respawned
      expect(footerOf(status).footer).toBe('MemPalace: not installed');
      expect(linesWith(status, notice)).toHaveLength(2); // the notice, and the status's first line
    }, 90_000);

    it('MemPalace down (a configured server that dies): `MemPalace: down (/mempalace)`, the give-up said once, also after a reconnect', async () => {
      const dies = path.join(dir, 'dies.sh');
      fs.writeFileSync(dies, '#!/bin/sh\necho "the palace is locked by another writer" >&2\nexit 3\n', { mode: 0o755 });
      const home = start({ MEMPALACE_MCP_BIN: dies, MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '50', MEMPALACE_MCP_RETRY_MS: '0' });
      const notice = 'Warning: MemPalace is down: gave up after 2 respawns';
      const screen = await pi.waitForScreen((s) => footerOf(s).footer === 'MemPalace: down (/mempalace)' && s.includes(notice) && s.includes(BRAIN_NOTICE), { what: 'the down state, its notice and the brain.db notice' });
      expectClean(screen, 'MemPalace: down (/mempalace)', home);
      expect(linesWith(screen, notice)).toHaveLength(1);
      pi.type('/mempalace reconnect');
      const again = await pi.waitForScreen((s) => s.includes('MemPalace is still unavailable'), { what: "/mempalace reconnect's answer", ms: 30_000 });
      expect(again).not.toContain('[dotty-pi-ext]');
      expect(linesWith(again, notice)).toHaveLength(1); // the new client's give-up is the same notice: not shown twice
      expect(footerOf(again).all).toEqual(['MemPalace: down (/mempalace)']);
    }, 90_000);

    it('MemPalace up (the real 3.11.0): `MemPalace: ready · 47 tools`, only the first-run notice, no raw line', async () => {
      const { HOME: _h, PI_CODING_AGENT_DIR: _a, ...palaceEnv } = stdioEnv(dir);
      const home = start(palaceEnv);
      const screen = await pi.waitForScreen((s) => footerOf(s).footer === 'MemPalace: ready · 47 tools' && s.includes(BRAIN_NOTICE), { what: 'the ready state and the brain.db notice', ms: 90_000 });
      expectClean(screen, 'MemPalace: ready · 47 tools', home);
      expect(linesWith(screen, 'Warning:').filter((l) => /MemPalace|mempalace/.test(l))).toEqual([]);
    }, 120_000);
  });
}
