'use strict';
// Plain-node smoke test of the built addon, run on arm64 by scripts/arm64-check.sh (qemu-user + Debian's
// arm64 Node 18, where vitest can't run). Also runs on the host: `node __test__/arm64/smoke.cjs`.
// It loads the package the way pi does (index.js -> native.js -> <platform>.node), drives every native entry
// point a tool uses, asserts every reply exactly, and exits non-zero at the first mismatch.
//
// Env:
//   SMOKE_EXPECT_ARCH   fail unless process.arch is this (arm64-check.sh sets arm64)
//   SMOKE_EXPECT_LIBC   fail unless this Node's libc is this: gnu or musl (musl-check.sh sets musl)
//   DOTTY_BRAIN_DB      an existing brain.db to use (else a fresh one is made under a temp HOME)
//   SMOKE_SEEDED_FACT   a fact already in that brain.db, looked up first (the read of an existing db)
//   SMOKE_PACKAGE_DIR   the package to load (default: this repo)
//   SMOKE_TIMEOUT_MS    per-step limit (default 30000; qemu is slow, but nothing may hang)
//   SMOKE_MCP_PYTHON    the interpreter that runs the MCP fixture (default python3 on PATH). Under qemu-user
//                       this is a host (x86-64) binary: the arm64 addon spawns it and the kernel runs it natively.
//   SMOKE_MCP_CHILD_ELF fail unless the MCP child's /proc/<pid>/exe has this ELF e_machine (0x3e: x86-64)
const assert = require('node:assert/strict');
const http = require('node:http');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const STEP_MS = Number(process.env.SMOKE_TIMEOUT_MS || 30000);
// The fault-injecting stdio MCP server, run as the MemPalace server (tools echo/big/env/sleep/fail/pid).
const MCP_FIXTURE = path.resolve(__dirname, '..', 'fixtures', 'fault_mcp_server.py');
const MCP_PYTHON = process.env.SMOKE_MCP_PYTHON || 'python3';
// The fixture's tools/list, exactly: the bridge must pass each inputSchema through unchanged.
const MCP_TOOLS = [
  { name: 'echo', description: 'Echoes its arguments', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: true } },
  { name: 'big', description: 'A long text', inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } }, required: ['bytes'] } },
  { name: 'env', description: '', inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
  { name: 'sleep', description: 'Sleeps', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } } },
  { name: 'fail', description: 'Always isError', inputSchema: { type: 'object', properties: {} } },
  { name: 'pid', description: "The server's pid", inputSchema: { type: 'object', properties: {} } },
];
// Production's registration order (docs/voice-tools.md, "What the model reads").
const VOICE_TOOLS = ['memory_lookup', 'recall_person', 'remember', 'remember_person', 'think_hard', 'play_song', 'take_photo'];
// The libc of this Node (musl's Node reports no glibc runtime version): which binary must load.
const LIBC = process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl';
const PKG = path.resolve(process.env.SMOKE_PACKAGE_DIR || path.join(__dirname, '..', '..'));
let passed = 0, current = '(setup)';

function withTimeout(promise, what) {
  let timer;
  const limit = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_MS} ms`)), STEP_MS); });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}
// Polls `cond` until true; bounded by the enclosing step's limit (the loop stops when that fires).
async function until(cond, what) {
  const deadline = Date.now() + STEP_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${STEP_MS} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { if (e.code === 'ESRCH') return false; throw e; } };
// e_machine of an ELF file: 0x3e x86-64, 0xb7 aarch64.
const elfMachine = (file) => { const b = Buffer.alloc(20); const fd = fs.openSync(file, 'r'); try { fs.readSync(fd, b, 0, 20, 0); } finally { fs.closeSync(fd); } return b.readUInt16LE(18); };

async function step(name, fn) {
  current = name;
  const t0 = Date.now();
  await withTimeout(Promise.resolve().then(fn), name);
  passed++;
  console.log(`ok ${passed} - ${name} (${Date.now() - t0} ms)`);
}

// A stand-in for dotty-behaviour on 127.0.0.1:<port 0>. Each request is recorded and announced, so the test
// awaits the request itself instead of sleeping.
function startBehaviour() {
  const requests = [];
  const waiters = [];
  let onPhoto = (_req, res) => json(res, 200, { description: 'a red ball on a wooden floor', age_s: 2 });
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method, url: req.url });
    for (const w of waiters.splice(0)) w();
    if (req.method === 'GET' && req.url === '/api/voice/take_photo') return onPhoto(req, res);
    json(res, 404, { error: 'not found' });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    setPhoto(fn) { onPhoto = fn; },
    nextRequest() { return new Promise((r) => waiters.push(r)); },
    close() { server.closeAllConnections(); return new Promise((r) => server.close(r)); },
  })));
}
function json(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function main() {
  if (process.env.SMOKE_EXPECT_ARCH) assert.equal(process.arch, process.env.SMOKE_EXPECT_ARCH, 'process.arch');
  if (process.env.SMOKE_EXPECT_LIBC) assert.equal(LIBC, process.env.SMOKE_EXPECT_LIBC, 'the libc of this Node');
  console.log(`# node ${process.version} ${process.platform}-${process.arch} napi ${process.versions.napi}, package ${PKG}`);

  const behaviour = await startBehaviour();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-smoke-'));
  // The native config is read once when the state is built: set the environment before loading.
  process.env.HOME = tmp; // the fresh-db default ($HOME/.pi/memory/brain.db) and nothing of the real HOME
  process.env.DOTTY_BEHAVIOUR_URL = behaviour.url;
  process.env.DOTTY_BEHAVIOUR_TIMEOUT_MS = String(STEP_MS);
  delete process.env.DOTTY_VOICE_TOOLS;
  // The MemPalace bridge, on, against the fixture as a child of this (arm64) node. Bounded everywhere: the
  // handshake and each request by the step limit, no respawns (a crash is a failure, not a retry), no
  // transcript feeding (no mempalace-pi-session here), the tool cache in a temp agent dir.
  assert.ok(!/\s/.test(MCP_FIXTURE), `MEMPALACE_MCP_ARGS is split on whitespace: ${MCP_FIXTURE}`);
  for (const k of Object.keys(process.env)) if (/^MEMPALACE_/.test(k)) delete process.env[k];
  Object.assign(process.env, {
    MEMPALACE_BRIDGE: '1',
    MEMPALACE_MCP_BIN: MCP_PYTHON,
    MEMPALACE_MCP_ARGS: MCP_FIXTURE,
    MEMPALACE_MCP_INIT_TIMEOUT_MS: String(STEP_MS),
    MEMPALACE_MCP_TIMEOUT_MS: String(STEP_MS),
    MEMPALACE_MCP_MAX_RESPAWNS: '0',
    MEMPALACE_FEED: '0',
    PI_CODING_AGENT_DIR: path.join(tmp, 'agent'),
  });
  const brainDb = process.env.DOTTY_BRAIN_DB || path.join(tmp, '.pi', 'memory', 'brain.db');

  // pi's side of the contract: a fake ExtensionAPI that records what index.js registers.
  const tools = new Map(), handlers = new Map(), commands = new Map();
  const pi = {
    registerTool(t) { tools.set(t.name, t); },
    on(event, fn) { handlers.set(event, fn); },
    registerCommand(name, c) { commands.set(name, c); },
  };
  const errors = [];
  const origError = console.error;
  console.error = (...a) => { errors.push(a.join(' ')); origError(...a); };
  let factory;
  await step('index.js loads the native binding for this platform', () => {
    factory = require(PKG);
    assert.equal(typeof factory, 'function', 'index.js exports the extension factory');
    assert.deepEqual(errors.filter((e) => e.includes('[dotty-pi-ext]')), [], 'index.js reported a load error');
    const loaded = Object.keys(require.cache).filter((f) => f.endsWith('.node')).map((f) => path.basename(f));
    assert.deepEqual(loaded, [`dotty-pi-ext.${process.platform}-${process.arch}-${LIBC}.node`], 'the .node file that loaded');
    // Mapped into this process, not merely required: musl's loader takes a glibc .node's libc.so.6 for itself.
    const mapped = [...new Set(fs.readFileSync('/proc/self/maps', 'utf8').split('\n').map((l) => l.slice(l.indexOf('/'))).filter((f) => /dotty-pi-ext[^/]*\.node$/.test(f)))];
    assert.deepEqual(mapped.map((f) => path.basename(f)), loaded, 'the .node file mapped into this process');
  });
  console.error = origError;
  const native = require(path.join(PKG, 'native.js'));

  await step('init() and the ToolRegistry through the pi factory', () => {
    factory(pi);
    // Synchronously: the voice tools first. No cache yet, so the palace's come once the handshake is done,
    // which can already be the case here: the fixture is a native child while this node runs under qemu.
    const names = [...tools.keys()];
    assert.deepEqual(names.slice(0, VOICE_TOOLS.length), VOICE_TOOLS);
    const early = names.slice(VOICE_TOOLS.length);
    assert.ok(early.length === 0 || early.length === MCP_TOOLS.length, `palace tools registered early: ${early}`);
    assert.deepEqual(early, early.length ? MCP_TOOLS.map((t) => t.name) : []);
    for (const t of tools.values()) {
      assert.equal(typeof t.execute, 'function', `${t.name}.execute`);
      assert.equal(t.parameters.type, 'object', `${t.name}.parameters`);
    }
    assert.deepEqual([...handlers.keys()].sort(), ['agent_end', 'agent_settled', 'before_agent_start', 'session_before_compact', 'session_shutdown', 'session_start']);
    assert.deepEqual([...commands.keys()], ['mempalace-diary', 'mempalace']);
    const s = native.stats();
    assert.equal(s.stateCreations, 1);
    assert.equal(s.voiceEnabled, true);
    assert.equal(s.brainDb, brainDb);
    assert.equal(s.palaceEnabled, true);
  });

  const call = async (name, params, signal) => {
    const r = await tools.get(name).execute(`smoke-${name}`, params, signal);
    assert.deepEqual(Object.keys(r).sort(), ['content', 'details']);
    assert.equal(r.content.length, 1);
    assert.equal(r.content[0].type, 'text');
    return r.content[0].text;
  };

  if (process.env.SMOKE_SEEDED_FACT) {
    await step('brain.db read: memory_lookup finds the seeded fact', async () => {
      assert.equal(await call('memory_lookup', { query: 'lighthouse' }), process.env.SMOKE_SEEDED_FACT);
    });
  }
  const fact = 'The arm64 smoke test is fond of quokkas';
  await step('brain.db write: remember', async () => {
    assert.equal(await call('remember', { fact }), '(remembered)');
  });
  await step('brain.db read-back: memory_lookup of the new fact', async () => {
    assert.equal(await call('memory_lookup', { query: 'quokkas' }), fact);
    assert.equal(await call('memory_lookup', { query: 'no such word xyzzy' }), '(no memories found)');
  });

  await step('HTTP: take_photo GETs the local behaviour server', async () => {
    assert.equal(await call('take_photo', {}), 'a red ball on a wooden floor');
    assert.deepEqual(behaviour.requests, [{ method: 'GET', url: '/api/voice/take_photo' }]);
  });
  await step('HTTP error path: a 500 gives the contract reply', async () => {
    behaviour.setPhoto((_req, res) => json(res, 500, { error: 'camera busy' }));
    assert.equal(await call('take_photo', {}), "(I can't see anything fresh right now)");
    assert.equal(behaviour.requests.length, 2);
  });
  await step('cancelCall: aborting a stalled call rejects it and frees the slot', async () => {
    behaviour.setPhoto(() => {}); // never answers
    const ac = new AbortController();
    const arrived = behaviour.nextRequest();
    const pending = call('take_photo', {}, ac.signal);
    pending.catch(() => {}); // observed below
    await arrived;
    assert.equal(native.stats().callsInFlight, 1, 'callsInFlight while stalled');
    ac.abort();
    await assert.rejects(pending, (e) => { assert.match(String(e && e.message), /take_photo: aborted/); return true; });
    assert.equal(native.stats().callsInFlight, 0, 'callsInFlight after abort');
    assert.equal(native.cancelCall(999999), false, 'cancelCall of an unknown id');
  });

  await step('per-turn log: agent_end queues, session_shutdown flushes one conversation row', async () => {
    const before = native.stats().turnRowsWritten;
    const messages = [
      { role: 'user', content: 'arm64 zebra hello', timestamp: 1 },
      { role: 'assistant', content: [{ type: 'text', text: 'yo from qemu' }] },
    ];
    assert.equal(native.logTurn([]), false, 'an empty turn logs nothing');
    handlers.get('agent_end')({ type: 'agent_end', messages });
    // `reload`, not `quit`: rows are flushed either way, and the MCP server must outlive a reload.
    await handlers.get('session_shutdown')({ type: 'session_shutdown', reason: 'reload' });
    const s = native.stats();
    assert.equal(s.turnRowsWritten, before + 1, 'turnRowsWritten');
    assert.equal(s.turnWritesInFlight, 0, 'turnWritesInFlight');
    assert.equal(await call('memory_lookup', { query: 'zebra' }), 'user: arm64 zebra hello | assistant: yo from qemu');
    assert.equal(native.logTurn(messages), false, 'the same turn again is a repeat');
    await native.flushTurnLog();
    assert.equal(native.stats().turnRowsWritten, before + 1, 'no second row for a repeat');
  });

  // ---- MCP round trip: the MemPalace bridge and a child process under qemu ---------------------------
  // The child is the host's python3 (x86-64) running the fixture: spawned by the arm64 addon through
  // qemu-user's execve, which the kernel runs natively. Checked below by reading the child's /proc/<pid>/exe.
  let childPid;
  await step('MCP handshake: palaceTools() lists the fixture tools with their inputSchema, unchanged', async () => {
    const got = await native.palaceTools();
    assert.deepEqual(got.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })), MCP_TOOLS);
    for (const t of got) assert.equal(t.label, t.name, `${t.name}.label`);
    const s = native.stats();
    assert.equal(s.palaceConnected, true, 'palaceConnected');
    assert.equal(s.palaceTools, MCP_TOOLS.length, 'palaceTools');
    assert.equal(s.mcpSpawns, 1, 'mcpSpawns');
    assert.equal(s.mcpRespawns, 0, 'mcpRespawns');
    assert.equal(typeof s.mcpChildPid, 'number', 'mcpChildPid');
    childPid = s.mcpChildPid;
    assert.ok(alive(childPid), `child ${childPid} alive`);
    // index.js registers the tools the cache didn't know, from the same handshake.
    await until(() => tools.size === VOICE_TOOLS.length + MCP_TOOLS.length, 'index.js registering the palace tools');
    assert.deepEqual([...tools.keys()], [...VOICE_TOOLS, ...MCP_TOOLS.map((t) => t.name)]);
    assert.deepEqual(tools.get('echo').parameters, MCP_TOOLS[0].inputSchema);
  });
  await step('MCP child: the host interpreter, started by the arm64 addon, is the server answering', async () => {
    const reply = await native.callTool('pid', {}, null);
    assert.deepEqual(reply, { text: String(childPid), content: [{ type: 'text', text: String(childPid) }] });
    const exe = fs.readlinkSync(`/proc/${childPid}/exe`);
    const machine = elfMachine(`/proc/${childPid}/exe`);
    if (process.env.SMOKE_MCP_CHILD_ELF) assert.equal(machine, Number(process.env.SMOKE_MCP_CHILD_ELF), `ELF e_machine of the child ${exe}`);
    console.log(`# mcp child pid ${childPid}: ${exe} (ELF machine 0x${machine.toString(16)})`);
  });
  await step('MCP tools/call: callTool(echo) returns its arguments as JSON text, exactly', async () => {
    const reply = await native.callTool('echo', { x: 1 }, null);
    assert.deepEqual(reply, { text: '{"x": 1}', content: [{ type: 'text', text: '{"x": 1}' }] });
    // The same call the way pi makes it (index.js execute -> callTool with a call id).
    const r = await tools.get('echo').execute('smoke-echo', { text: 'héllo from arm64', n: [1, 2] }, undefined);
    assert.deepEqual(r, { content: [{ type: 'text', text: '{"text": "h\\u00e9llo from arm64", "n": [1, 2]}' }], details: {} });
  });
  await step('MCP server error: isError (fail) and an unknown tool reject with the server\'s message', async () => {
    await assert.rejects(native.callTool('fail', {}, null), (e) => { assert.equal(e.message, 'the tool failed'); return true; });
    await assert.rejects(native.callTool('no_such_tool', {}, null), (e) => { assert.match(e.message, /Unknown tool: no_such_tool/); return true; });
    assert.equal(native.stats().mcpSpawns, 1, 'an error reply is not a crash');
  });
  await step('MCP cancel: cancelCall aborts a pending tools/call; the connection stays usable', async () => {
    const pending = native.callTool('sleep', { ms: 1500 }, 424242);
    pending.catch(() => {}); // observed below
    // callTool registers its id when its future first runs on the native runtime, not on return.
    await until(() => native.stats().callsInFlight === 1, 'callsInFlight 1 while sleeping');
    assert.equal(native.cancelCall(424242), true, 'cancelCall of the pending call');
    await assert.rejects(pending, (e) => { assert.match(e.message, /sleep: aborted/); return true; });
    assert.equal(native.stats().callsInFlight, 0, 'callsInFlight after abort');
    // The fixture answers in order: this reply comes after the late one of the aborted call, which
    // the client must drop.
    const t0 = Date.now();
    const reply = await native.callTool('echo', { after: 'cancel' }, null);
    assert.equal(reply.text, '{"after": "cancel"}');
    console.log(`# echo after the aborted sleep answered in ${Date.now() - t0} ms (~1500: it queued behind the sleep)`);
    assert.equal(native.stats().mcpChildPid, childPid, 'same child');
  });
  await step('MCP shutdown: sessionShutdown(quit) stops the child; later calls fail without a respawn', async () => {
    assert.ok(alive(childPid), `child ${childPid} alive before quit`);
    await native.sessionShutdown('quit');
    await until(() => !alive(childPid), `child ${childPid} gone after quit`); // reaped, not a zombie
    assert.equal(fs.existsSync(`/proc/${childPid}`), false, `/proc/${childPid} after quit`);
    const s = native.stats();
    assert.equal(s.mcpChildPid, undefined, 'mcpChildPid after quit');
    assert.equal(s.palaceConnected, false, 'palaceConnected after quit');
    await assert.rejects(native.callTool('echo', {}, null), (e) => { assert.ok(e.message.length > 0); return true; });
    assert.equal(native.stats().mcpSpawns, 1, 'no respawn after quit');
  });

  await behaviour.close();
  console.log(`# brain.db ${brainDb}`);
  if (!process.env.DOTTY_BRAIN_DB) fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`smoke: ${passed} passed, 0 failed`);
}

main().then(() => process.exit(0), (e) => {
  console.error(`not ok - ${current}\n${e && e.stack || e}`);
  console.log(`smoke: ${passed} passed, 1 failed`);
  process.exit(1);
});
