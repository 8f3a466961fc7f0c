// `pi install` in pi 1.6.0 (Node 22), offline, into a throwaway HOME/agent dir, then pi started from
// its settings alone (no -e) offers the voice tools:
//   1  the packed tarballs, installed by npm into a folder (main + platform package, as the main
//      package's optionalDependencies would fetch it from the registry), then `pi install <folder>`.
//      (`pi install npm:<file>.tgz` installs but pi 1.6 never loads it: it looks the package up
//      under node_modules/<the spec>, so a tarball is installed with npm and given to pi as a folder);
//   2  a source folder with no binary, after its install step ran as `pi install git:` runs it
//      (`npm install --omit=dev`: scripts/install.cjs) with cargo on PATH: it builds the binary;
//      `pi install <folder>` then loads it;
//   3  the same folder without a binary and without Rust on PATH: the install step and pi's load each
//      say on stderr what to do, and pi starts.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { startMockModel } from './mock-model.mjs';
import { startPi, ready, root, nodeBin, TARGETS } from './pi-rpc.mjs';
import { tempDir } from '../helpers/brain.mjs';
import { npm, packTarballs } from './pack.mjs';

const run = promisify(execFile);
const VOICE = ['memory_lookup', 'remember', 'recall_person', 'remember_person', 'think_hard', 'take_photo', 'play_song'];
const work = tempDir('dotty-e2e-piinstall-');
let mock;
let tarballs;

/** PATH without the folders holding cargo/rustc. */
const pathWithoutRust = () => process.env.PATH.split(':').filter((d) => d && !['cargo', 'rustc'].some((b) => fs.existsSync(path.join(d, b)))).join(':');

/** `pi install <source>` with pi 1.6 on Node 22 into `home`, offline. */
async function piInstall(home, source) {
  const agentDir = path.join(home, '.pi', 'agent');
  fs.mkdirSync(agentDir, { recursive: true });
  const env = { PATH: process.env.PATH, HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0', npm_config_offline: 'true', npm_config_cache: tarballs.cache, npm_config_update_notifier: 'false' };
  const { stdout } = await run(nodeBin('22'), [TARGETS['1.6.0'].cli, 'install', source], { env, timeout: 120_000 });
  expect(stdout).toContain(`Installed ${source}`);
}

/** pi 1.6 started on `home`'s settings; the tools of its first model request, and its stderr. */
async function firstTools(home, env = {}) {
  const pi = await startPi({ target: '1.6.0', modelBaseUrl: mock.baseUrl, extensions: [], home, keepHome: true, env: { MEMPALACE_BRIDGE: '0', ...env }, args: ['--no-builtin-tools'] });
  try {
    await ready(pi, 30_000);
    const from = mock.requests.length;
    mock.enqueue({ text: 'ok' });
    expect((await pi.prompt('hello', { ms: 30_000 })).text).toBe('ok');
    return { tools: (mock.requests[from].body.tools ?? []).map((t) => t.function.name), stderr: pi.stderr };
  } finally {
    await pi.close();
  }
}

/**
 * A copy of the sources as a git checkout holds them, without a binary. The suite also runs in a copy
 * of the tree without `.git` (CI), so this walks the tree and leaves out what `.gitignore` keeps out
 * of a checkout: dependencies, build output, binaries, bench data, packed tarballs.
 */
function sourceCopy(name) {
  const dest = path.join(work, name);
  const skipDirs = new Set(['.git', 'node_modules', 'target', '.vitest', 'artifacts']);
  const skipFile = (f) => f.endsWith('.node') || f.endsWith('.tgz');
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const f = path.join(rel, e.name);
      if (e.isDirectory()) {
        if (!skipDirs.has(e.name) && f !== path.join('bench', 'data')) walk(f);
      } else if (e.isFile() && !skipFile(e.name)) {
        fs.mkdirSync(path.join(dest, rel), { recursive: true });
        fs.copyFileSync(path.join(root, f), path.join(dest, f));
      }
    }
  };
  walk('');
  return dest;
}

beforeAll(async () => {
  mock = await startMockModel();
  tarballs = await packTarballs(work);
}, 120_000);

afterAll(async () => {
  await mock?.close();
  if (!process.env.E2E_KEEP_TMP) fs.rmSync(work, { recursive: true, force: true });
});

describe.sequential('pi install in pi 1.6.0', () => {
  it('the packed tarballs installed by npm, then pi install <that folder>: pi offers the voice tools', async () => {
    const app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    await npm(['install', '--no-save', tarballs.main.tgz, tarballs.platform.tgz], app, tarballs.cache);
    const installed = path.join(app, 'node_modules', 'dotty-pi-ext');
    const home = path.join(work, 'home-tgz');
    await piInstall(home, installed);
    const settings = JSON.parse(fs.readFileSync(path.join(home, '.pi', 'agent', 'settings.json'), 'utf8'));
    // pi writes a local path relative to the settings file.
    expect(settings.packages.map((p) => path.resolve(home, '.pi', 'agent', p))).toEqual([installed]);
    const { tools, stderr } = await firstTools(home);
    expect(tools.sort()).toEqual([...VOICE].sort());
    expect(stderr).not.toContain('native module unavailable');
  }, 120_000);

  it('a source folder with Rust on PATH: the install step builds the binary; pi install <folder> loads it', async () => {
    const src = sourceCopy('checkout');
    // The step `npm install --omit=dev` runs; the shared cargo target keeps the dependencies built.
    const target = process.env.CARGO_TARGET_DIR || path.join(root, 'target'); // where `npm test` built the addon
    const { stderr: said } = await run(process.execPath, [path.join(src, 'scripts/install.cjs')], { cwd: src, env: { ...process.env, CARGO_TARGET_DIR: target, npm_config_omit: 'dev' }, timeout: 900_000, maxBuffer: 64 << 20 });
    expect(said).toMatch(/no prebuilt binary loads for linux-x64-gnu: building it from source with cargo/);
    expect(said).toContain('[dotty-pi-ext] built dotty-pi-ext.linux-x64-gnu.node');
    const home = path.join(work, 'home-src');
    await piInstall(home, src);
    const { tools, stderr } = await firstTools(home);
    expect(tools.sort()).toEqual([...VOICE].sort());
    expect(stderr).not.toContain('native module unavailable');
  }, 900_000);

  it('neither a binary nor Rust: the install step and the load each say what to do; pi starts', async () => {
    const src = sourceCopy('bare');
    const { stderr: said } = await run(process.execPath, [path.join(src, 'scripts/install.cjs')], { cwd: src, env: { ...process.env, PATH: pathWithoutRust(), npm_config_omit: 'dev' } });
    expect(said.trim().split('\n')).toEqual([expect.stringMatching(/^\[dotty-pi-ext\] no prebuilt binary loads for linux-x64-gnu and no Rust toolchain is on PATH: .*dotty-pi-ext-linux-x64-gnu.*npm run build/)]);
    expect(fs.existsSync(path.join(src, 'dotty-pi-ext.linux-x64-gnu.node'))).toBe(false);
    const home = path.join(work, 'home-bare');
    await piInstall(home, src);
    const { tools, stderr } = await firstTools(home, { PATH: pathWithoutRust() });
    expect(tools).toEqual([]);
    expect(stderr).toMatch(/\[dotty-pi-ext\] native module unavailable, no tools registered/);
    expect(stderr).toMatch(/\[dotty-pi-ext\] to fix: .*npm run build/);
  }, 120_000);
});
