// The package's tarballs as `npm pack` makes them, for the install tests: the main package and the
// linux-x64 platform package (a copy of npm/linux-x64-gnu with the built binary beside it). Offline:
// npm is asked about nothing but the tarballs.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './pi-rpc.mjs';

const run = promisify(execFile);
/** npm with its own cache under `cache`, offline, quiet. */
export const npm = (args, cwd, cache, env = {}) => run('npm', [...args, '--cache', cache, '--no-audit', '--no-fund', '--offline', '--loglevel=error'], { cwd, timeout: 60_000, maxBuffer: 64 << 20, env: { ...process.env, npm_config_update_notifier: 'false', ...env } });

/** Packs both into `work`: {main, platform} with each tarball's path and file list. */
export async function packTarballs(work) {
  const cache = path.join(work, 'npm-cache');
  const pack = async (dir) => {
    const { stdout } = await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], dir, cache);
    const [info] = JSON.parse(stdout);
    return { tgz: path.join(work, info.filename), files: info.files.map((f) => f.path) };
  };
  const main = await pack(root);
  const platformDir = path.join(work, 'linux-x64-gnu');
  fs.cpSync(path.join(root, 'npm/linux-x64-gnu'), platformDir, { recursive: true });
  fs.copyFileSync(path.join(root, 'dotty-pi-ext.linux-x64-gnu.node'), path.join(platformDir, 'dotty-pi-ext.linux-x64-gnu.node'));
  return { main, platform: await pack(platformDir), cache };
}
