'use strict';
// Loads an installed dotty-pi-ext into the real pi CLI (`--mode rpc`) and checks that it registered its tools
// and said nothing about a load failure. Used by scripts/check-release.sh.
//   node scripts/pi-load-check.cjs <pi cli.js> <installed package dir>
//   PI_CHECK_EXPECT_NO_BINARY=1 ...: the package has no binary; pi must still start and stderr must say what to do.
//   PI_CHECK_EXPECT_ADDON=<file name>: the one dotty-pi-ext .node mapped into pi's process must be this one
//     (e.g. dotty-pi-ext.linux-x64-musl.node when this runs in a musl Node: pi runs on process.execPath).
// A probe extension (loaded after ours) writes pi.getAllTools() on session_start; get_state must answer;
// closing stdin must end pi with exit 0. Every wait is for an event, bounded by PI_CHECK_TIMEOUT_MS.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const [cli, pkgDir] = process.argv.slice(2);
if (!cli || !pkgDir) { console.error('usage: pi-load-check.cjs <pi cli.js> <package dir>'); process.exit(2); }
const EXPECT_NO_BINARY = process.env.PI_CHECK_EXPECT_NO_BINARY === '1';
const LIMIT = Number(process.env.PI_CHECK_TIMEOUT_MS || 30000);
const TOOLS = ['memory_lookup', 'remember', 'recall_person', 'remember_person', 'think_hard', 'take_photo', 'play_song'];
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'dotty-pi-load-'));
const agentDir = path.join(home, 'agent');
fs.mkdirSync(agentDir, { recursive: true });
const probeOut = path.join(home, 'tools.json');
const probe = path.join(home, 'probe.cjs');
const addonsOut = path.join(home, 'addons.json');
fs.writeFileSync(probe, `module.exports = (pi) => pi.on('session_start', () => {
  const fs = require('fs');
  fs.writeFileSync(${JSON.stringify(probeOut)}, JSON.stringify(pi.getAllTools().map((t) => t.name)));
  // The dotty-pi-ext .node files mapped into this (pi's) process: what really loaded.
  const mapped = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.slice(l.indexOf('/'))).filter((f) => /dotty-pi-ext[^/]*\\.node$/.test(f));
  fs.writeFileSync(${JSON.stringify(addonsOut)}, JSON.stringify([...new Set(mapped)]));
});\n`);

const fail = (msg) => { console.error(`pi-load-check: FAIL ${msg}`); try { child.kill('SIGKILL'); } catch {} process.exit(1); };
const timer = setTimeout(() => fail(`no complete answer within ${LIMIT} ms\nstderr:\n${stderr}`), LIMIT);
const env = { ...process.env, HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0',
  DOTTY_BRAIN_DB: '', DOTTY_BEHAVIOUR_URL: 'http://127.0.0.1:9' };
const child = spawn(process.execPath, [cli, '--mode', 'rpc', '--no-session', '-e', pkgDir, '-e', probe], { env, stdio: ['pipe', 'pipe', 'pipe'] });
let stdout = '', stderr = '', state = null;
child.stderr.on('data', (d) => { stderr += d; });
child.stdout.on('data', (d) => {
  stdout += d;
  let i;
  while ((i = stdout.indexOf('\n')) >= 0) {
    const line = stdout.slice(0, i); stdout = stdout.slice(i + 1);
    let msg; try { msg = JSON.parse(line); } catch { continue; }
    if (msg.type === 'response' && msg.id === '1') { state = msg; child.stdin.end(); }
  }
});
child.stdin.write(JSON.stringify({ id: '1', type: 'get_state' }) + '\n');
child.on('exit', (code, signal) => {
  clearTimeout(timer);
  if (code !== 0) fail(`pi exited ${code ?? signal}\nstderr:\n${stderr}`);
  if (!state || state.success !== true || state.command !== 'get_state') fail(`get_state answer: ${JSON.stringify(state)}`);
  let tools;
  try { tools = JSON.parse(fs.readFileSync(probeOut, 'utf8')); } catch (e) { fail(`the probe extension wrote no tool list (${e.message})\nstderr:\n${stderr}`); }
  if (EXPECT_NO_BINARY) {
    // The package without its binary: pi must still start, with none of our tools and the advice on stderr.
    if (!/\[dotty-pi-ext\] to fix: /.test(stderr)) fail(`no advice on stderr:\n${stderr}`);
    const present = TOOLS.filter((t) => tools.includes(t));
    if (present.length) fail(`tools registered without a binary: ${present.join(', ')}`);
    fs.rmSync(home, { recursive: true, force: true });
    return console.log('pi-load-check: ok, without a binary pi still starts, with the advice on stderr and none of our tools');
  }
  const bad = stderr.split('\n').filter((l) => /native module unavailable|Cannot find native binding|Failed to load|Error:/i.test(l));
  if (bad.length) fail(`load errors on stderr:\n${bad.join('\n')}`);
  const missing = TOOLS.filter((t) => !tools.includes(t));
  if (missing.length) fail(`pi has no ${missing.join(', ')} (tools: ${tools.join(', ')})`);
  const addons = JSON.parse(fs.readFileSync(addonsOut, 'utf8'));
  const want = process.env.PI_CHECK_EXPECT_ADDON;
  if (want && (addons.length !== 1 || path.basename(addons[0]) !== want)) fail(`pi mapped ${JSON.stringify(addons)}, want exactly one ${want}`);
  fs.rmSync(home, { recursive: true, force: true });
  const libc = process.report.getReport().header.glibcVersionRuntime ? `glibc ${process.report.getReport().header.glibcVersionRuntime}` : 'musl';
  console.log(`pi-load-check: ok, pi on Node ${process.version} (${libc}) answered get_state and has the ${TOOLS.length} dotty tools from ${pkgDir}; mapped ${addons.map((f) => path.relative(path.dirname(pkgDir), f)).join(', ')}`);
});
