// Builds the native addon for this machine when it is missing or older than its sources.
// `node scripts/native-build.mjs [--force]`; used by `npm start` and `npm test`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// linux-x64-gnu on Debian, linux-x64-musl on Alpine: the name `napi build --platform` gives this host's build.
const triple = createRequire(import.meta.url)('../load.js').platformTriple();
export const binary = path.join(root, `dotty-pi-ext.${triple}.node`);

function newestSource(dir = path.join(root, 'src')) {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name.endsWith('.ts')) continue; // src/tools/: production's direct-call modules, not built
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

export function isStale(file = binary) {
  if (!fs.existsSync(file)) return true;
  const inputs = ['Cargo.toml', 'Cargo.lock', 'build.rs', 'brain-schema.sql'].map((f) => fs.statSync(path.join(root, f)).mtimeMs);
  return Math.max(newestSource(), ...inputs) > fs.statSync(file).mtimeMs;
}

/** The linux-x64-musl binary the musl tests load (zig + cargo-zigbuild: scripts/build-musl.sh). */
export const muslBinary = path.join(root, 'dotty-pi-ext.linux-x64-musl.node');

/** Builds the linux-x64-musl addon when it is missing or older than its sources (x64 hosts only). */
export function ensureMuslBuilt({ force = false } = {}) {
  ensureDeps();
  if (!force && !isStale(muslBinary)) return false;
  const t0 = Date.now();
  process.stderr.write(`building the native addon (${path.basename(muslBinary)}, scripts/build-musl.sh x64)...\n`);
  execFileSync('bash', [path.join(root, 'scripts/build-musl.sh'), 'x64'], { cwd: root, stdio: ['ignore', 2, 2] });
  process.stderr.write(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  return true;
}

/** Installs the npm dependencies (`npm ci`) when this checkout has none yet. */
export function ensureDeps() {
  if (fs.existsSync(path.join(root, 'node_modules/.package-lock.json'))) return;
  process.stderr.write('installing npm dependencies (npm ci)...\n');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: ['ignore', 2, 2] });
}

export function ensureBuilt({ force = false } = {}) {
  ensureDeps();
  if (!force && !isStale()) return false;
  const t0 = Date.now();
  process.stderr.write(`building the native addon (${path.basename(binary)})...\n`);
  execFileSync('npx', ['napi', 'build', '--platform', '--release', '--js', 'native.js', '--dts', 'native.d.ts'], { cwd: root, stdio: ['ignore', 2, 2] });
  process.stderr.write(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureBuilt({ force: process.argv.includes('--force') });
