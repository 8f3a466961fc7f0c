// `npm start [-- pi args]`: builds the addon if needed, then runs pi with this extension loaded.
// With no configuration the voice tools use $HOME/.pi/memory/brain.db, created when missing.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureBuilt, root } from './native-build.mjs';

ensureBuilt();
// pi's package.json is not in its "exports": find it on disk.
const pkg = path.join(root, 'node_modules/@earendil-works/pi-coding-agent');
const cli = path.join(pkg, JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).bin.pi);
const child = spawn(process.execPath, [cli, '-e', root, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(signal ? 1 : code ?? 0));
