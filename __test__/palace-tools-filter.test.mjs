// MEMPALACE_TOOLS and the palace's status, through index.js and a recording fake pi, against the REAL
// MemPalace 3.11.0 over stdio: pi is offered only the listed tools; the wake-up (mempalace_status,
// diary_read) works though neither is listed; an entry matching nothing is said once on stderr; the
// state reaches pi's footer through ctx.ui.setStatus and `/mempalace status` says it in full.
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/brain.mjs';
import { runWithFakePi, stdioEnv } from './helpers/palace.mjs';

describe('MEMPALACE_TOOLS with the real MemPalace', () => {
  it('offers pi only the listed tools; wake-up and status still work; a pattern matching nothing warns once', async () => {
    const dir = tempDir('dotty-palace-filter-');
    const r = await runWithFakePi(
      `const statuses = [], notes = [];
       const ctx = { ui: { setStatus: (k, t) => statuses.push([k, t]), notify: (m, level) => notes.push([m, level]) } };
       const atLoad = [...pi.tools.keys()];
       for (const h of pi.handlers.get('session_start')) await h({ reason: 'startup' }, ctx);
       const offered = await native.palaceTools();
       await pi.waitForTools(2);
       const wake = [];
       for (const h of pi.handlers.get('before_agent_start')) wake.push(await h({ prompt: 'hi' }, ctx));
       await pi.commands.get('mempalace').handler('status', ctx);
       await pi.commands.get('mempalace').handler('bogus', ctx);
       const diary = native.palaceDiaryPrompt('');
       await native.sessionShutdown('quit');
       return { atLoad, offered: offered.map((t) => t.name), tools: [...pi.tools.keys()].sort(), statuses, notes, wake: JSON.stringify(wake), diary, known: native.stats().palaceTools };`,
      { ...stdioEnv(dir), DOTTY_VOICE_TOOLS: '0', MEMPALACE_AGENT_NAME: 'tester', MEMPALACE_MCP_TIMEOUT_MS: '60000', MEMPALACE_TOOLS: ' mempalace_diary_* , mempalace_search,mempalace_nope' },
      { timeoutMs: 90000 },
    );
    expect(r.error).toBeUndefined();
    expect(r.loadError).toBeUndefined();
    expect(r.result.atLoad).toEqual([]); // nothing cached yet
    expect(r.result.offered).toEqual(['mempalace_search', 'mempalace_diary_write', 'mempalace_diary_read']);
    expect(r.result.tools).toEqual(['mempalace_diary_read', 'mempalace_diary_write', 'mempalace_search']);
    expect(r.result.known).toBe(47); // the palace's whole list is still known (and cached)
    // The wake-up calls mempalace_status itself, which pi is not offered.
    expect(r.result.wake).toContain('[MemPalace wake-up]');
    expect(r.result.diary).toMatch(/mempalace_diary_write/);
    const lines = r.stderr.split('\n').filter((l) => /MEMPALACE_TOOLS/.test(l));
    expect(lines).toEqual([expect.stringMatching(/MEMPALACE_TOOLS entry "mempalace_nope" matches none of the palace's 47 tools/)]);
    // The footer: connecting at session_start, then connected with what pi is offered.
    expect(r.result.statuses[0]).toEqual(['mempalace', 'MemPalace: connecting…']);
    expect(r.result.statuses.at(-1)).toEqual(['mempalace', 'MemPalace: ready · 3 of 47 tools']);
    const [status, bogus] = r.result.notes;
    expect(status[0].split('\n')).toEqual([
      'MemPalace: ready · 3 of 47 tools',
      expect.stringMatching(/^transport: stdio bash .*start-stdio\.sh$/),
      'tools: 3 offered to pi of 47 known (MEMPALACE_TOOLS=mempalace_diary_*,mempalace_search,mempalace_nope)',
      'spawns: 1, respawns: 0, calls: 2, timeouts: 0', // the wake-up's mempalace_status and diary_read
      'last error: none',
      'scope: global · wing: wing_conversations (from MEMPALACE_FEED_WING)',
      'last feed: none recorded',
      'redaction: on (built-in rules); no feed recorded',
      'recall: off (MEMPALACE_RECALL=on recalls drawers for each prompt)',
      'checkpoints: off (MEMPALACE_CHECKPOINT_TURNS=N writes a diary entry every N user turns)',
      // This fake pi reports no tool exposure: every tool is direct, as on pi 0.74.
      'exposure: direct, 3 of 3 tools direct (MEMPALACE_EXPOSURE=unset, MEMPALACE_DIRECT_TOOLS=none)',
    ]);
    expect(bogus[0]).toMatch(/^usage: \/mempalace status .*\| \/mempalace reconnect/);
  }, 120000);
});
