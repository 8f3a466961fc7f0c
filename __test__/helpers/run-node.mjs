// Runs a Node snippet in a child process with a chosen environment, capturing stdout and stderr.
// Used where a test needs a process of its own: configuration is read once per process, and
// native code writes its diagnostics straight to fd 2.
import { spawn } from 'node:child_process';
import { root } from './brain.mjs';

/**
 * `body` runs inside an async function with `ext` (a fake pi with the extension loaded) and
 * `native` in scope; whatever it returns is sent back as JSON. `prefix`: a command the Node runs under
 * (`withoutCaStore()` of ./no-ca-store.mjs: no CA certificates on the system).
 */
export function runNode(body, env = {}, { timeoutMs = 20000, prefix = [] } = {}) {
  const script = `
    const { createRequire } = require('node:module');
    const native = require(${JSON.stringify(root + '/native.js')});
    const factory = require(${JSON.stringify(root + '/index.js')});
    const tools = new Map(), handlers = new Map();
    const pi = { registerTool: (t) => tools.set(t.name, t), on: (e, h) => handlers.set(e, [...(handlers.get(e) ?? []), h]), registerCommand() {} };
    factory(pi);
    const ext = {
      tools,
      text: async (name, params) => (await tools.get(name).execute('id', params, undefined, undefined, {})).content[0].text,
      emit: async (event, payload) => { for (const h of handlers.get(event) ?? []) await h(payload, {}); },
    };
    (async () => { try { ${body} } finally { await native.flushTurnLog(); } })().then(
      (r) => { process.stderr.write('\\n@@RESULT@@' + JSON.stringify(r ?? null) + '\\n'); },
      (e) => { process.stderr.write('\\n@@ERROR@@' + (e && e.stack || e) + '\\n'); process.exitCode = 1; });
  `;
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = [...prefix, process.execPath, '-e', script];
    const child = spawn(cmd, args, { env: { PATH: process.env.PATH, MEMPALACE_BRIDGE: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const m = stderr.match(/@@RESULT@@(.*)\n/);
      const err = stderr.match(/@@ERROR@@([\s\S]*)$/);
      resolve({ code, signal, stdout, stderr: stderr.replace(/\n@@RESULT@@.*\n/, '').replace(/\n@@ERROR@@[\s\S]*$/, ''), result: m ? JSON.parse(m[1]) : undefined, error: err?.[1] });
    });
  });
}
