// The package's tarballs as `npm pack` makes them, for the install tests: the main package and the
// linux-x64 platform package (a copy of npm/linux-x64-gnu with the built binary beside it). Offline:
// npm is asked about nothing but the tarballs.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './pi-rpc.mjs';

const run = promisify(execFile);
/** npm's own CLI script (the one `npm` on PATH runs), for running npm under another Node. */
const npmCli = () => path.join(path.dirname(fs.realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())), 'npm-cli.js');

/**
 * npm with its own cache under `cache`, quiet, offline unless `registry` is given (then it asks only
 * that one: registry.mjs's, on loopback); run by `node` when given (a musl Node: npm then tells the
 * libc by itself, as in production's Alpine container), else by the `npm` on PATH.
 */
export const npm = (args, cwd, cache, env = {}, { node, registry } = {}) => {
  const argv = [...args, '--cache', cache, '--no-audit', '--no-fund', '--loglevel=error', ...(registry ? ['--registry', registry] : ['--offline'])];
  const [cmd, full] = node ? [node, [npmCli(), ...argv]] : ['npm', argv];
  return run(cmd, full, { cwd, timeout: 120_000, maxBuffer: 64 << 20, env: { ...process.env, npm_config_update_notifier: 'false', ...env } });
};

/**
 * Packs the main package and the platform package of each of `triples` (`npm/<triple>` with the built
 * `dotty-pi-ext.<triple>.node` beside it) into `work`: {main, platform (the first), platforms: {triple:
 * ...}, cache}, each with the tarball's path and file list.
 */
export async function packTarballs(work, triples = ['linux-x64-gnu']) {
  const cache = path.join(work, 'npm-cache');
  const pack = async (dir) => {
    const { stdout } = await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], dir, cache);
    const [info] = JSON.parse(stdout);
    return { tgz: path.join(work, info.filename), files: info.files.map((f) => f.path) };
  };
  const main = await pack(root);
  const platforms = {};
  for (const triple of triples) {
    const platformDir = path.join(work, triple);
    fs.cpSync(path.join(root, 'npm', triple), platformDir, { recursive: true });
    fs.copyFileSync(path.join(root, `dotty-pi-ext.${triple}.node`), path.join(platformDir, `dotty-pi-ext.${triple}.node`));
    platforms[triple] = await pack(platformDir);
  }
  return { main, platform: platforms[triples[0]], platforms, cache };
}
