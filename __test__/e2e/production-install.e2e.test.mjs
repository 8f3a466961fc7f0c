// The package installed the way Dotty's production container holds it (docs/deployment.md):
// HOME = cwd = a throwaway "/root"; the release's main tarball unpacked into
// `<cwd>/.pi/extensions/dotty-pi-ext/` (the deploy ships files and keeps node_modules), its binary
// installed there with `npm install --omit=dev`; pi 0.74 started from `<cwd>` with production's exact
// flags (no `-e`: pi finds the folder as a project extension through its package.json `pi.extensions`);
// the state folder's brain.db at `<cwd>/.pi/memory/brain.db` as production binds it. npm installs the
// binary from a registry on loopback (registry.mjs) that holds both x64 platform packages. Checked:
// the deploy's healthcheck (the seven `src/tools/<tool>.ts`), the seven tools registered and called
// over RPC, and production's direct runner against that folder.
// Each runtime production could run: glibc Node 25.9 here, and musl Node (Alpine's libc) with the
// musl binary, npm itself run by that Node so it picks the package by the libc it really has.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startPi, ready, PI_CLI, root as repo } from './pi-rpc.mjs';
import { startHome } from './home.mjs';
import { tempDir, readRows, makeBrain } from '../helpers/brain.mjs';
import { npm, packTarballs } from './pack.mjs';
import { productionRuntimes, productionScript, pyDumps } from '../helpers/runtimes.mjs';
import { startRegistry } from './registry.mjs';
import { createRequire } from 'node:module';

const { releaseManifest } = createRequire(import.meta.url)('../../scripts/release-manifest.cjs');

/** pi_client.py's `_DEFAULT_PI_FLAGS`, in its order. */
const PRODUCTION_FLAGS = ['--mode', 'rpc', '--provider', 'ollama', '--model', 'qwen3.5:4b', '--no-session', '--no-context-files',
  '--offline', '--no-skills', '--no-prompt-templates', '--no-themes', '--thinking', 'off'];
const VERSION = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')).version;
const TOOLS = ['memory_lookup', 'remember', 'recall_person', 'remember_person', 'think_hard', 'take_photo', 'play_song'];

const withoutBrainDb = ({ DOTTY_BRAIN_DB: _, ...env }) => env;

describe.each(productionRuntimes())('installed as production installs it, on $name', (runtime) => {
  let work, root, ext, brainDb, registry;
  const triples = ['linux-x64-gnu', 'linux-x64-musl'];
  beforeAll(async () => {
    work = tempDir('dotty-e2e-prod-');
    const { main, platforms } = await packTarballs(work, triples);
    root = path.join(work, 'root');
    ext = path.join(root, '.pi', 'extensions', 'dotty-pi-ext');
    fs.mkdirSync(ext, { recursive: true });
    execFileSync('tar', ['-xzf', main.tgz, '--strip-components=1', '-C', ext]);
    // the released package.json, as scripts/pack-release.sh stages it (the platform packages listed)
    const manifest = JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8'));
    fs.writeFileSync(path.join(ext, 'package.json'), JSON.stringify(releaseManifest(manifest, triples), null, 2));
    // npm run by the runtime's own Node, from a registry that has both x64 packages: it must pick the
    // one of the libc it really runs on.
    registry = await startRegistry(Object.values(platforms).map((p) => p.tgz));
    // a cache of its own: `npm pack` left the tarballs in `cache`, and the container's npm has none of them
    await npm(['install', '--omit=dev'], ext, path.join(work, 'install-cache'), {}, { node: runtime.bin, registry: registry.url });
    fs.mkdirSync(path.join(root, '.pi', 'memory'));
    brainDb = makeBrain(path.join(root, '.pi', 'memory', 'brain.db'), [{ content: 'The lighthouse is painted red and white' }]);
  }, 180_000);
  afterAll(async () => {
    await registry?.close();
    if (work && !process.env.E2E_KEEP_TMP) fs.rmSync(work, { recursive: true, force: true });
  });

  it('holds what the deploy healthcheck asks for and the binary of its libc', () => {
    for (const t of TOOLS) expect(fs.existsSync(path.join(ext, 'src', 'tools', `${t}.ts`)), `src/tools/${t}.ts`).toBe(true);
    const installed = fs.readdirSync(path.join(ext, 'node_modules')).filter((d) => d.startsWith('dotty-pi-ext-'));
    expect(installed).toEqual([`dotty-pi-ext-${runtime.triple}`]);
    expect(registry.fetched()).toEqual([`dotty-pi-ext-${runtime.triple}-${VERSION}.tgz`]);
    // which binary that Node really maps (musl's loader would also map a glibc .node: its ELF is checked elsewhere)
    const out = spawnSync(runtime.bin, ['-e', 'require("./native.js");process.stdout.write(require("fs").readFileSync("/proc/self/maps","utf8"))'],
      { cwd: ext, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: root } });
    expect(out.status, out.stderr).toBe(0);
    const mapped = [...new Set(out.stdout.split('\n').map((l) => l.split(/\s+/)[5]).filter((f) => f?.endsWith('.node')))];
    expect(mapped).toEqual([fs.realpathSync(path.join(ext, 'node_modules', `dotty-pi-ext-${runtime.triple}`, `dotty-pi-ext.${runtime.triple}.node`))]);
  });

  it('pi 0.74 started from <cwd> with production\'s flags finds it without -e and runs the voice tools over RPC', async () => {
    const mock = await startMockModel();
    const home = await startHome({});
    const pi = await startPi({
      modelBaseUrl: mock.baseUrl, cli: PI_CLI['0.74.0'], node: runtime.bin, home: root, cwd: root, keepHome: true, extensions: [], flags: PRODUCTION_FLAGS,
      provider: 'ollama', model: 'qwen3.5:4b',
      // production's container sets no DOTTY_BRAIN_DB: the default is <HOME>/.pi/memory/brain.db
      env: { ...withoutBrainDb(home.env), MEMPALACE_BRIDGE: '0' },
    });
    try {
      await ready(pi);
      expect(pi.argv.slice(1)).toEqual(PRODUCTION_FLAGS);
      mock.enqueue(
        { toolCalls: [{ id: 'c_look', name: 'memory_lookup', arguments: { query: 'lighthouse' } }, { id: 'c_rem', name: 'remember', arguments: { fact: 'The cat is called Miso' } }] },
        { text: 'Red and white, and noted.' },
        { toolCalls: [{ id: 'c_think', name: 'think_hard', arguments: { question: 'Why is the sky blue?' } }, { id: 'c_photo', name: 'take_photo', arguments: {} }, { id: 'c_song', name: 'play_song', arguments: { name: 'baby shark' } }] },
        { text: 'Done.' },
      );
      const t = await pi.prompt('What colour is the lighthouse? And remember my cat is Miso.');
      expect(pi.stderr).not.toMatch(/native module unavailable|Cannot find native binding/);
      expect(mock.requests[0].body.model).toBe('qwen3.5:4b');
      expect(mock.requests[0].body.tools.map((x) => x.function.name)).toEqual(expect.arrayContaining(TOOLS));
      const replies = (body) => Object.fromEntries(body.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]));
      expect(replies(mock.requests[1].body)).toEqual({ c_look: 'The lighthouse is painted red and white', c_rem: '(remembered)' });
      expect(t.text).toBe('Red and white, and noted.');
      await pi.prompt('Think hard about the sky, take a photo and play baby shark.');
      expect(replies(mock.requests[3].body)).toMatchObject({ c_think: 'Rayleigh scattering.', c_photo: 'A child holding a red balloon.', c_song: expect.stringMatching(/baby/i) });
      expect(await pi.close()).toEqual({ code: 0, signal: null });
      const rows = readRows(brainDb);
      expect(rows.filter((r) => r.content === 'The cat is called Miso')).toMatchObject([{ category: 'core', namespace: 'voice' }]);
      expect(rows.filter((r) => r.category === 'conversation').length).toBe(2);
    } finally {
      await pi.close();
      await Promise.all([mock.close(), home.close()]);
    }
  }, 90_000);

  it.each([
    ['remember', { fact: 'The dog is called Pepper' }, '(remembered)'],
    ['memory_lookup', { query: 'painted' }, 'The lighthouse is painted red and white'],
  ])('answers production\'s direct runner from that folder: %s', (tool, args, reply) => {
    const r = spawnSync(runtime.bin, ['--experimental-strip-types', '--input-type=module', '-e', productionScript(tool, ext)], {
      cwd: root, input: pyDumps(args), encoding: 'utf8', timeout: 60_000,
      env: { PATH: process.env.PATH, HOME: root },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(JSON.stringify({ result: reply }));
  });
});
