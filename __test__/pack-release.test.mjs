// `npm run pack:release` ships all four binaries (linux-{x64,arm64}-{gnu,musl}) or nothing: with one
// missing it fails before packing anything, naming each missing binary and the command that builds it.
// Run in a copy of the release scripts with placeholder binaries (the check comes before any ELF check).
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';

const dir = tempDir('dotty-pack-release-');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const ALL = ['linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl'];
const BUILD = {
  'linux-x64-gnu': 'npm run build',
  'linux-arm64-gnu': 'bash scripts/build-arm64.sh',
  'linux-x64-musl': 'bash scripts/build-musl.sh x64',
  'linux-arm64-musl': 'bash scripts/build-musl.sh arm64',
};

function packWith(name, present) {
  const d = path.join(dir, name);
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  for (const f of ['pack-release.sh', 'check-glibc.sh', 'check-musl.sh']) fs.copyFileSync(path.join(root, 'scripts', f), path.join(d, 'scripts', f));
  fs.copyFileSync(path.join(root, 'package.json'), path.join(d, 'package.json'));
  for (const t of present) fs.writeFileSync(path.join(d, `dotty-pi-ext.${t}.node`), 'placeholder');
  return spawnSync('bash', ['scripts/pack-release.sh'], { cwd: d, encoding: 'utf8', env: { ...process.env, DIST: path.join(d, 'dist') } });
}

describe('pack-release.sh: all four binaries or nothing', () => {
  it('package.json lists the four napi targets', () => {
    const { napi } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(napi.targets).toEqual(['x86_64-unknown-linux-gnu', 'aarch64-unknown-linux-gnu', 'x86_64-unknown-linux-musl', 'aarch64-unknown-linux-musl']);
  });

  it('only the glibc binaries: refused, naming each musl binary and how to build it; nothing packed', () => {
    const r = packWith('gnu-only', ['linux-x64-gnu', 'linux-arm64-gnu']);
    expect(r.status).toBe(1);
    for (const t of ['linux-x64-musl', 'linux-arm64-musl']) expect(r.stderr).toContain(`pack-release: FAIL missing dotty-pi-ext.${t}.node (build it: ${BUILD[t]})`);
    expect(r.stderr).not.toContain('missing dotty-pi-ext.linux-x64-gnu.node');
    expect(r.stderr).toContain('2 of 4 binaries missing');
    expect(fs.existsSync(path.join(dir, 'gnu-only/dist')) ? fs.readdirSync(path.join(dir, 'gnu-only/dist')) : []).toEqual([]);
  });

  it('none: refused, naming all four', () => {
    const r = packWith('none', []);
    expect(r.status).toBe(1);
    for (const t of ALL) expect(r.stderr).toContain(`missing dotty-pi-ext.${t}.node (build it: ${BUILD[t]})`);
    expect(r.stderr).toContain('4 of 4 binaries missing');
  });

  it('all four present: past the presence check, to the ELF checks (placeholders fail there)', () => {
    const r = packWith('all', ALL);
    expect(r.stderr).not.toContain('binaries missing');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/check-glibc: FAIL|check-musl: FAIL/);
  });
});
