// `npm publish` refuses the main package without its platform packages (prepublishOnly →
// scripts/prepublish-check.cjs): the repo's own package.json never lists them; the copy
// scripts/pack-release.sh stages does, at the same version. `--dry-run --offline`: nothing is sent.
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';

const dir = tempDir('dotty-publish-guard-');
const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `npm publish --dry-run` of a copy of the package whose package.json `edit` changed. */
function publish(name, edit = (p) => p) {
  const pkgDir = path.join(dir, name);
  fs.mkdirSync(path.join(pkgDir, 'scripts'), { recursive: true });
  fs.copyFileSync(path.join(root, 'scripts/prepublish-check.cjs'), path.join(pkgDir, 'scripts/prepublish-check.cjs'));
  const pkg = edit(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')));
  fs.writeFileSync(path.join(pkgDir, 'package.json'), JSON.stringify(pkg, null, 2));
  for (const f of pkg.files) if (!f.startsWith('scripts/')) { fs.mkdirSync(path.dirname(path.join(pkgDir, f)), { recursive: true }); fs.writeFileSync(path.join(pkgDir, f), ''); }
  return spawnSync('npm', ['publish', '--dry-run', '--offline', '--cache', path.join(dir, 'npm-cache'), '--loglevel=notice'], { cwd: pkgDir, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
}
const PLATFORMS = ['linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl'];
const withPlatforms = (v, only = PLATFORMS) => (p) => ({ ...p, optionalDependencies: Object.fromEntries(only.map((t) => [`dotty-pi-ext-${t}`, v ?? p.version])) });

describe('the publish guard', () => {
  it('the repository package.json: refused, naming each missing platform package', () => {
    const r = publish('repo');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`refusing to publish dotty-pi-ext@${version} without its platform packages`);
    for (const t of PLATFORMS) expect(r.stderr).toContain(`optionalDependencies["dotty-pi-ext-${t}"] is undefined, want "${version}"`);
    expect(r.stderr + r.stdout).not.toMatch(/\+ dotty-pi-ext@/);
  });

  it('platform packages at another version: refused', () => {
    const r = publish('stale', withPlatforms('0.0.9'));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`is "0.0.9", want "${version}"`);
  });

  it('only the glibc platform packages (the musl ones missing): refused, naming both musl packages', () => {
    const r = publish('gnu-only', withPlatforms(undefined, ['linux-x64-gnu', 'linux-arm64-gnu']));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`optionalDependencies["dotty-pi-ext-linux-x64-musl"] is undefined, want "${version}"`);
    expect(r.stderr).toContain(`optionalDependencies["dotty-pi-ext-linux-arm64-musl"] is undefined, want "${version}"`);
    expect(r.stderr).not.toContain('linux-x64-gnu"]');
  });

  it('as pack-release.sh stages it (every platform package at the same version): goes through', () => {
    const r = publish('staged', withPlatforms());
    expect(r.stderr).not.toContain('refusing');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain(`+ dotty-pi-ext@${version}`);
  });
});
