'use strict';
// npm's `install` step of this package. With a binary that loads (a platform package, or one built
// here before) it does nothing. In a source checkout installed for use (`npm install --omit=dev`: what
// `pi install git:…` runs) without a binary that fits, it builds one with cargo when Rust is on PATH.
// It never fails the install: without a binary pi still starts, and the extension's load says on
// stderr what to do. A development install (`npm ci`, dev dependencies included) builds nothing here:
// `npm start` / `npm test` build when needed.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const say = (line) => console.error(`[dotty-pi-ext] ${line}`);
// linux-x64-gnu, linux-x64-musl (Alpine), …: the name native.js looks for beside it.
const triple = require('../load.js').platformTriple();
const binary = path.join(root, `dotty-pi-ext.${triple}.node`);

function loads() {
  try { require(path.join(root, 'native.js')); return true; } catch { return false; }
}

function main() {
  if (loads()) return;
  const omit = `${process.env.npm_config_omit ?? ''}`.split(/[\s,]+/);
  const production = omit.includes('dev') || process.env.NODE_ENV === 'production';
  const sources = fs.existsSync(path.join(root, 'Cargo.toml')) && fs.existsSync(path.join(root, 'src'));
  if (!production && sources) return; // a development checkout: npm start / npm test build it
  const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
  if (!sources || cargo.status !== 0) {
    say(`no prebuilt binary loads for ${triple} and ${sources ? 'no Rust toolchain is on PATH' : 'this copy has no Rust sources'}: pi will start without the tools; install the platform package dotty-pi-ext-${triple} (npm install --include=optional), or build from a checkout with Rust (npm run build)`);
    return;
  }
  say(`no prebuilt binary loads for ${triple}: building it from source with ${cargo.stdout.trim()} (a few minutes, once)`);
  const target = process.env.CARGO_TARGET_DIR || path.join(root, 'target');
  // The host triple, named as `napi build --platform` names it, so a target folder it filled is reused.
  const host = /^host: (\S+)$/m.exec(spawnSync('rustc', ['-vV'], { encoding: 'utf8' }).stdout ?? '')?.[1];
  const args = ['build', '--release', '--lib', '--locked', ...(host ? ['--target', host] : [])];
  // A cdylib on musl (Alpine) links libc dynamically: rustup's musl toolchains default to crt-static.
  const rustflags = host?.includes('musl') ? { RUSTFLAGS: `${process.env.RUSTFLAGS ?? ''} -C target-feature=-crt-static`.trim() } : {};
  const build = spawnSync('cargo', args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, CARGO_TARGET_DIR: target, ...rustflags } });
  const lib = path.join(target, ...(host ? [host] : []), 'release', 'libdotty_pi_ext.so');
  if (build.status !== 0 || !fs.existsSync(lib)) {
    say(`the build failed (cargo exit ${build.status}): pi will start without the tools; see cargo's output above`);
    return;
  }
  // A copy, not a rename: the cargo target stays usable for the next build.
  fs.copyFileSync(lib, `${binary}.tmp`);
  fs.renameSync(`${binary}.tmp`, binary);
  say(loads() ? `built ${path.basename(binary)}` : `built ${path.basename(binary)}, but it does not load here`);
}

try { main(); } catch (e) { say(`install step failed, pi will start without the tools: ${e.message}`); }
