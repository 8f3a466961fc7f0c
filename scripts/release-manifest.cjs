'use strict';
// The main package's package.json as released (the one owner of that shape; scripts/pack-release.sh and
// the install tests use it): the repository's package.json with
//  - optionalDependencies: every platform package at this very version (what `napi prepublish` does), so
//    npm installs the one whose os/cpu/libc fit the machine;
//  - no devDependencies: the released folder is installed as a project of its own in Dotty's container
//    (`npm install --omit=dev` in the extension folder, docs/deployment.md), and npm resolves a project's
//    devDependencies from the registry even when it omits them (pi, vitest… for nothing).
//   node scripts/release-manifest.cjs <package.json to rewrite> <triple>...
const fs = require('node:fs');

function releaseManifest(pkg, triples) {
  const { devDependencies: _dev, ...released } = pkg;
  released.optionalDependencies = { ...(pkg.optionalDependencies || {}) };
  for (const t of triples) released.optionalDependencies[`${pkg.name}-${t}`] = pkg.version;
  return released;
}

module.exports = { releaseManifest };

if (require.main === module) {
  const [file, ...triples] = process.argv.slice(2);
  if (!file || triples.length === 0) {
    console.error('usage: node scripts/release-manifest.cjs <package.json> <triple>...');
    process.exit(2);
  }
  const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.writeFileSync(file, JSON.stringify(releaseManifest(pkg, triples), null, 2) + '\n');
}
