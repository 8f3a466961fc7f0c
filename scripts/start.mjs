// `npm start [-- pi args]`: builds the addon if needed, then runs pi with this extension loaded.
// With no configuration the voice tools use $HOME/.pi/memory/brain.db, created when missing.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ensureBuilt, root } from './native-build.mjs';

ensureBuilt();
const require = createRequire(import.meta.url);
const pkg = path.dirname(require.resolve('@earendil-works/pi-coding-agent/package.json'));
const cli = path.join(pkg, require(path.join(pkg, 'package.json')).bin.pi);
const child = spawn(process.execPath, [cli, '-e', root, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(signal ? 1 : code ?? 0));
