// The package as users get it: `npm pack` of the main package and of the linux-x64 platform package
// (the napi-rs way: the binary ships in `dotty-pi-ext-linux-x64-gnu`, which the published main
// package lists in optionalDependencies), both tarballs installed into an empty folder, that folder
// loaded in pi with -e, and a tool run. Catches a runtime file missing from either package.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startPi, ready, root } from './pi-rpc.mjs';
import { startHome } from './home.mjs';
import { tempDir, readRows } from '../helpers/brain.mjs';
import { npm, packTarballs } from './pack.mjs';

describe('the packed package', () => {
  let work, tgz, packed, platformPacked, installed;
  beforeAll(async () => {
    work = tempDir('dotty-e2e-pack-');
    const { main, platform, cache } = await packTarballs(work);
    ({ files: packed, tgz } = main);
    platformPacked = platform.files;
    const app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    await npm(['install', '--no-save', '--ignore-scripts', tgz, platform.tgz], app, cache);
    installed = path.join(app, 'node_modules', 'dotty-pi-ext');
  }, 120_000);
  afterAll(() => { if (work) fs.rmSync(work, { recursive: true, force: true }); });

  it('holds the pi entry and the loader; the binary ships in the platform package; no tests or node_modules', () => {
    for (const f of ['package.json', 'index.js', 'index.d.ts', 'native.js', 'native.d.ts', 'CHANGELOG.md', 'scripts/install.cjs']) expect(packed, `${f} in the tarball`).toContain(f);
    expect(packed.filter((f) => f.endsWith('.node'))).toEqual([]);
    expect(platformPacked).toContain('dotty-pi-ext.linux-x64-gnu.node');
    expect(packed.filter((f) => f.startsWith('__test__/') || f.startsWith('node_modules/') || f.startsWith('target/'))).toEqual([]);
    expect(fs.realpathSync(installed).startsWith(fs.realpathSync(root))).toBe(false); // a copy, not a link to the worktree
  });

  it.each(['0.74.0', '1.6.0'])('loads in pi %s from the installed folder and answers a tool call', async (target) => {
    const mock = await startMockModel();
    const home = await startHome({ brainRows: [{ content: 'The lighthouse is painted red and white' }] });
    const pi = await startPi({ target, modelBaseUrl: mock.baseUrl, extensions: [installed], env: home.env });
    try {
      await ready(pi);
      mock.enqueue({ thinking: 'let me look', toolCalls: [{ id: 'call_pkg', name: 'memory_lookup', arguments: { query: 'lighthouse' } }] }, { text: 'Red and white.' });
      const t = await pi.prompt('What colour is the tall tower?');
      expect(pi.stderr).not.toContain('native module unavailable');
      expect(mock.requests[0].body.tools.map((x) => x.function.name)).toContain('memory_lookup');
      expect(mock.requests[1].body.messages.at(-1)).toEqual({ role: 'tool', content: 'The lighthouse is painted red and white', tool_call_id: 'call_pkg' });
      expect(t.text).toBe('Red and white.');
      expect(await pi.close()).toEqual({ code: 0, signal: null }); // session_shutdown flushes the turn log
      expect(readRows(home.brainDb).filter((r) => r.category === 'conversation').map((r) => r.content))
        .toEqual(['user: What colour is the tall tower? | assistant: Red and white.']);
    } finally {
      await pi.close();
      await Promise.all([mock.close(), home.close()]);
    }
  }, 60_000);
});
