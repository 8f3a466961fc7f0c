// The REAL MemPalace 3.11.0 server for tests, installed by scripts/mempalace/install.sh
// (CI runs it). Tests fail, not skip, when it is missing.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './brain.mjs';

export const toolsDir = path.resolve(root, 'scripts/mempalace');
export const referenceTools = JSON.parse(fs.readFileSync(path.resolve(root, '__test__/fixtures/mempalace-3.11.0-tools.json'), 'utf8'));
export const mempalaceRoot = process.env.MEMPALACE_ROOT || path.join(os.homedir(), '.cache/mempalace-test');

export function requireMempalace() {
  if (!fs.existsSync(path.join(mempalaceRoot, 'venv/bin/mempalace-mcp'))) {
    throw new Error(`MemPalace is not installed under ${mempalaceRoot}: run bash scripts/mempalace/install.sh`);
  }
}

/** Environment that makes the bridge spawn the real server over stdio on a palace of its own. */
export function stdioEnv(dir) {
  requireMempalace();
  return {
    MEMPALACE_BRIDGE: '1',
    MEMPALACE_MCP_BIN: 'bash',
    MEMPALACE_MCP_ARGS: path.join(toolsDir, 'start-stdio.sh'),
    MEMPALACE_PALACE: path.join(dir, 'palace-root', 'palace'),
    MEMPALACE_ROOT: mempalaceRoot,
    PI_CODING_AGENT_DIR: path.join(dir, 'agent'),
    HOME: path.join(dir, 'home'),
  };
}

/**
 * The command that starts `mempalace serve` over HTTP with a bearer token on the palace of `dir`:
 * {file, args, env} for execFileSync (a test's child process may run it too). `port`: the one to
 * listen on (a restart where it was); else the script asks the OS for a free one.
 */
export function httpCommand(dir, token, port) {
  requireMempalace();
  return {
    file: 'bash',
    args: [path.join(toolsDir, 'start-http.sh'), ...(port ? [String(port)] : [])],
    env: { ...process.env, MEMPALACE_ROOT: mempalaceRoot, MEMPALACE_PALACE: path.join(dir, 'http-root', 'palace'), MEMPALACE_MCP_HTTP_TOKEN: token },
  };
}

/**
 * A plain stdio MemPalace server on `env`'s palace (as pi's own MCP, or any other writer, runs it)
 * that has made `calls` (`[tool, arguments]` pairs) in order: after a write it holds the palace's
 * writer lease. → {pid, wrote (resolves once every call is answered), stop()}.
 */
export function startStdioWriter(env, calls, client = 'writer') {
  requireMempalace();
  const p = spawn('bash', [path.join(toolsDir, 'start-stdio.sh')], { env: { ...process.env, MEMPALACE_ROOT: mempalaceRoot, ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
  let buf = '';
  const wrote = new Promise((resolve, reject) => {
    p.stdout.on('data', (d) => {
      buf += d;
      if (buf.includes(`"id": ${calls.length + 1}`)) resolve();
    });
    p.on('exit', (code) => reject(new Error(`${client} exited ${code}`)));
  });
  const send = (m) => p.stdin.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: client, version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  calls.forEach(([name, args], i) => send({ jsonrpc: '2.0', id: i + 2, method: 'tools/call', params: { name, arguments: args } }));
  const exited = new Promise((resolve) => p.on('exit', resolve));
  return { pid: p.pid, wrote, stop: () => { p.stdin.end(); return exited; } };
}

/** Starts `mempalace serve` over HTTP with a bearer token (on `port`, if given); returns {url, pid, stop()}. */
export function startHttp(dir, token, port) {
  const cmd = httpCommand(dir, token, port);
  const out = execFileSync(cmd.file, cmd.args, { env: cmd.env, encoding: 'utf8', timeout: 60_000 });
  const url = out.match(/URL=(\S+)/)[1];
  const pid = Number(out.match(/PID=(\d+)/)[1]);
  return { url, pid, stop: () => { try { process.kill(pid, 'SIGTERM'); } catch {} } };
}

/** The real CLI, for checks from outside the extension (e.g. what a feed mined). */
export function mempalaceCli(args, palace) {
  const r = spawnSync(path.join(mempalaceRoot, 'venv/bin/mempalace'), ['--palace', palace, ...args], {
    env: { ...process.env, HOME: path.join(mempalaceRoot, 'home'), MEMPALACE_CONFIG_DIR: path.join(mempalaceRoot, 'cfg'), HF_HUB_OFFLINE: '1', MEMPALACE_HUB_FORWARD: '0' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return r.stdout + r.stderr;
}

/** A pi session file (JSONL, version 3) with the given [role, text] messages. */
export function writeSession(file, messages, id = 'c3a6d0f4-5b1e-4f7e-9d2a-0e8f6a1b2c3d') {
  const lines = [JSON.stringify({ type: 'session', version: 3, id, timestamp: '2026-11-29T10:00:00.000Z', cwd: '/work/project' })];
  let parentId = null;
  messages.forEach(([role, text], i) => {
    const entryId = `e${String(i + 1).padStart(7, '0')}`;
    const ts = Date.parse('2026-11-29T10:00:00.000Z') + i * 1000;
    const message = role === 'user'
      ? { role, content: [{ type: 'text', text }], timestamp: ts }
      : { role, content: [{ type: 'text', text }], api: 'openai-completions', provider: 'mock', model: 'mock-model', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: 'stop', timestamp: ts };
    lines.push(JSON.stringify({ type: 'message', id: entryId, parentId, timestamp: new Date(ts).toISOString(), message }));
    parentId = entryId;
  });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

/**
 * Runs `body` in a Node process of its own (configuration is read once per process) after loading
 * index.js into a recording fake pi (`pi`, with `others` as tools of other extensions; see
 * fake-pi.mjs); `native` is in scope too. Resolves with {loadError, result, error, stderr, stdout}:
 * `loadError` is what the factory threw into pi, if anything.
 */
export function runWithFakePi(body, env = {}, { others = [], timeoutMs = 30000 } = {}) {
  const script = `
    import { createRequire } from 'node:module';
    import { fakePi } from ${JSON.stringify(root + '/__test__/helpers/fake-pi.mjs')};
    const require = createRequire(import.meta.url);
    const native = require(${JSON.stringify(root + '/native.js')});
    const pi = fakePi({ others: ${JSON.stringify(others)} });
    let loadError;
    pi.loading = true;
    try { require(${JSON.stringify(root + '/index.js')})(pi); } catch (e) { loadError = String(e && e.message || e); }
    pi.loading = false;
    const out = { loadError };
    try { out.result = await (async () => { ${body} })(); } catch (e) { out.error = String(e && e.stack || e); }
    await native.flushTurnLog();
    process.stderr.write('\\n@@OUT@@' + JSON.stringify(out) + '\\n');
    process.exit(0);
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, MEMPALACE_BRIDGE: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const m = stderr.match(/\n@@OUT@@(.*)\n/);
      const out = m ? JSON.parse(m[1]) : { error: `no result (exit ${code})` };
      resolve({ ...out, code, stdout, stderr: stderr.replace(/\n@@OUT@@.*\n/, '') });
    });
  });
}
