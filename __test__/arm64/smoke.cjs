'use strict';
// Plain-node smoke test of the built addon, run on arm64 by scripts/arm64-check.sh (qemu-user + Debian's
// arm64 Node 18, where vitest can't run). Also runs on the host: `node __test__/arm64/smoke.cjs`.
// It loads the package the way pi does (index.js -> native.js -> <platform>.node), drives every native entry
// point a tool uses, asserts every reply exactly, and exits non-zero at the first mismatch.
//
// Env:
//   SMOKE_EXPECT_ARCH   fail unless process.arch is this (arm64-check.sh sets arm64)
//   DOTTY_BRAIN_DB      an existing brain.db to use (else a fresh one is made under a temp HOME)
//   SMOKE_SEEDED_FACT   a fact already in that brain.db, looked up first (the read of an existing db)
//   SMOKE_PACKAGE_DIR   the package to load (default: this repo)
//   SMOKE_TIMEOUT_MS    per-step limit (default 30000; qemu is slow, but nothing may hang)
const assert = require('node:assert/strict');
const http = require('node:http');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const STEP_MS = Number(process.env.SMOKE_TIMEOUT_MS || 30000);
const PKG = path.resolve(process.env.SMOKE_PACKAGE_DIR || path.join(__dirname, '..', '..'));
let passed = 0, current = '(setup)';

function withTimeout(promise, what) {
  let timer;
  const limit = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_MS} ms`)), STEP_MS); });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}
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
  console.log(`# node ${process.version} ${process.platform}-${process.arch} napi ${process.versions.napi}, package ${PKG}`);

  const behaviour = await startBehaviour();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-smoke-'));
  // The native config is read once when the state is built: set the environment before loading.
  process.env.HOME = tmp; // the fresh-db default ($HOME/.pi/memory/brain.db) and nothing of the real HOME
  process.env.DOTTY_BEHAVIOUR_URL = behaviour.url;
  process.env.DOTTY_BEHAVIOUR_TIMEOUT_MS = String(STEP_MS);
  delete process.env.DOTTY_VOICE_TOOLS;
  const brainDb = process.env.DOTTY_BRAIN_DB || path.join(tmp, '.pi', 'memory', 'brain.db');

  // pi's side of the contract: a fake ExtensionAPI that records what index.js registers.
  const tools = new Map(), handlers = new Map();
  const pi = {
    registerTool(t) { tools.set(t.name, t); },
    on(event, fn) { handlers.set(event, fn); },
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
    assert.deepEqual(loaded, [`dotty-pi-ext.${process.platform}-${process.arch}-gnu.node`], 'the .node file that loaded');
  });
  console.error = origError;
  const native = require(path.join(PKG, 'native.js'));

  await step('init() and toolDescriptors() through the pi factory', () => {
    factory(pi);
    assert.deepEqual([...tools.keys()], ['memory_lookup', 'remember', 'recall_person', 'remember_person', 'think_hard', 'take_photo', 'play_song']);
    for (const t of tools.values()) {
      assert.equal(typeof t.execute, 'function', `${t.name}.execute`);
      assert.equal(t.parameters.type, 'object', `${t.name}.parameters`);
    }
    assert.deepEqual([...handlers.keys()].sort(), ['agent_end', 'session_shutdown']);
    const s = native.stats();
    assert.equal(s.stateCreations, 1);
    assert.equal(s.voiceEnabled, true);
    assert.equal(s.brainDb, brainDb);
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
    await handlers.get('session_shutdown')({ type: 'session_shutdown' });
    const s = native.stats();
    assert.equal(s.turnRowsWritten, before + 1, 'turnRowsWritten');
    assert.equal(s.turnWritesInFlight, 0, 'turnWritesInFlight');
    assert.equal(await call('memory_lookup', { query: 'zebra' }), 'user: arm64 zebra hello | assistant: yo from qemu');
    assert.equal(native.logTurn(messages), false, 'the same turn again is a repeat');
    await native.flushTurnLog();
    assert.equal(native.stats().turnRowsWritten, before + 1, 'no second row for a repeat');
  });

  // ---- MCP round trip: NOT COVERED YET --------------------------------------------------------------
  // The MemPalace bridge (a child-process MCP server behind callTool) doesn't exist in the native core yet.
  // When it lands, add a step here that starts a stdio MCP server as a child of this arm64 node (binfmt is
  // registered by scripts/arm64-sysroot.sh; QEMU_LD_PREFIX points children at the sysroot), calls one of
  // its tools through callTool, asserts the reply exactly, and checks the child exits on flush/shutdown.
  // Until then this prints a SKIP line so nobody mistakes this smoke for MCP coverage.
  console.log('# SKIP mcp round trip: the MCP bridge is not implemented yet');

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
