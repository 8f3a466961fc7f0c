'use strict';
// `npm publish`'s guard (prepublishOnly): the main package carries no binary, so publishing it without
// its platform packages would give every user a package that loads nothing. It refuses unless
// package.json lists every napi target's platform package in optionalDependencies at this very version
// — true of the copy scripts/pack-release.sh stages (as `napi prepublish` does), never of the repo's
// own package.json. Publish the platform tarballs first, then the main one (docs/deployment.md).
const path = require('node:path');

const pkg = require(path.resolve(__dirname, '..', 'package.json'));
const suffix = {
  'x86_64-unknown-linux-gnu': 'linux-x64-gnu',
  'aarch64-unknown-linux-gnu': 'linux-arm64-gnu',
  'x86_64-unknown-linux-musl': 'linux-x64-musl',
  'aarch64-unknown-linux-musl': 'linux-arm64-musl',
};
const problems = [];
for (const target of pkg.napi?.targets ?? []) {
  const name = `${pkg.name}-${suffix[target] ?? target}`;
  const have = pkg.optionalDependencies?.[name];
  if (have !== pkg.version) problems.push(`optionalDependencies["${name}"] is ${JSON.stringify(have)}, want "${pkg.version}"`);
}
if (problems.length) {
  console.error(`[dotty-pi-ext] refusing to publish ${pkg.name}@${pkg.version} without its platform packages:\n  ${problems.join('\n  ')}\n  Run scripts/pack-release.sh and publish the tarballs it writes to dist/ (platform packages first).`);
  process.exit(1);
}
