// What load.js itself has to say goes where the core's lines go (src/diag.rs), not straight to
// stderr: a palace registration that throws is said through the core's sink (`native.warn`); a
// native module that can't be loaded, while pi's stdout is a terminal, waits for session_start and
// then goes once to pi's terminal UI (ctx.ui.notify), or to stderr anywhere else. Fakes only: no
// native module is loaded here.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const load = require('../load.js');

/** A pi that records its handlers. */
function fakePi() {
  const handlers = new Map();
  return { handlers, on: (event, h) => handlers.set(event, [...(handlers.get(event) ?? []), h]), getAllTools: () => [] };
}

afterEach(() => vi.restoreAllMocks());

describe('the entry speaks through the message sink', () => {
  it('a palace registration that throws is said through native.warn, not console.error', () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const warned = [];
    const native = { warn: (text) => warned.push(text) };
    const registry = { newPalaceTools: () => { throw new Error('boom'); } };
    load.palaceRegistrar(native, fakePi(), registry, () => {})();
    expect(warned).toEqual(['palace tools not registered: boom']);
    expect(errors).not.toHaveBeenCalled();
  });

  const failing = () => { throw new Error('no binary here'); };
  const withTty = (isTTY, f) => {
    const before = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
    Object.defineProperty(process.stdout, 'isTTY', { value: isTTY, configurable: true });
    try { return f(); } finally {
      if (before) Object.defineProperty(process.stdout, 'isTTY', before); else delete process.stdout.isTTY;
    }
  };

  it("an unloadable native module in pi's terminal UI is said once through ctx.ui.notify", async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const pi = fakePi();
    expect(withTty(true, () => load.loadNative(failing))).toBeNull();
    load.unavailable(pi);
    expect(errors).not.toHaveBeenCalled();
    const notes = [];
    const ctx = { mode: 'tui', hasUI: true, ui: { notify: (m, level) => notes.push([m, level]) } };
    for (const h of pi.handlers.get('session_start')) await h({ reason: 'startup' }, ctx);
    for (const h of pi.handlers.get('session_start')) await h({ reason: 'new' }, ctx);
    expect(notes).toHaveLength(1);
    expect(notes[0][0]).toMatch(/^native module unavailable, no tools registered: no binary here/);
    expect(notes[0][1]).toBe('warning');
    expect(errors).not.toHaveBeenCalled();
  });

  it('in RPC mode on the same terminal it goes to stderr at session_start; without a terminal at once', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const pi = fakePi();
    withTty(true, () => load.loadNative(failing));
    load.unavailable(pi);
    const ui = { notify: () => { throw new Error('not in RPC mode'); }, getAllThemes: () => [] };
    for (const h of pi.handlers.get('session_start')) await h({ reason: 'startup' }, { hasUI: true, ui });
    expect(errors).toHaveBeenCalledTimes(1);
    expect(errors.mock.calls[0][0]).toMatch(/^\[dotty-pi-ext\] native module unavailable, no tools registered: no binary here/);
    withTty(false, () => load.loadNative(failing));
    expect(errors).toHaveBeenCalledTimes(2);
    const later = fakePi();
    load.unavailable(later);
    expect(later.handlers.size).toBe(0);
  });
});
