// The palace half of the soak (docs/soak.md): a pi-like process calls the fault fixture through
// the bridge while its server is killed, stopped and stalled; then no process may be left.
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from '../__test__/helpers/brain.mjs';
import { here, procs, runChild } from './common.mjs';
import { fmt } from './verdict.mjs';

/** Runs the half; its figures and checks go to `v` (verdict.mjs). */
export async function palaceHalf(cfg, runId, v) {
  const { check, row, okMark } = v;
  const dir = tempDir('dotty-soak-palace-');
  const mark = `DOTTY_SOAK_RUN=${runId}`;
  const boundMs = cfg.timeoutMs + cfg.initTimeoutMs + cfg.backoffMs * 7 + 2000;
  const opts = { runId, seed: cfg.seed, calls: cfg.palaceCalls, faults: cfg.faults, kinds: cfg.faultKinds, concurrency: cfg.palaceConcurrency, timeoutMs: cfg.timeoutMs, boundMs };
  const env = {
    PATH: process.env.PATH,
    HOME: path.join(dir, 'home'),
    PI_CODING_AGENT_DIR: path.join(dir, 'agent'),
    DOTTY_VOICE_TOOLS: '0',
    MEMPALACE_BRIDGE: '1',
    MEMPALACE_FEED: '0',
    MEMPALACE_MCP_BIN: 'sh',
    MEMPALACE_MCP_ARGS: path.join(root, '__test__/fixtures/wrapped_mcp_server.sh'),
    MEMPALACE_MCP_TIMEOUT_MS: String(cfg.timeoutMs),
    MEMPALACE_MCP_INIT_TIMEOUT_MS: String(cfg.initTimeoutMs),
    MEMPALACE_MCP_RESPAWN_BACKOFF_MS: String(cfg.backoffMs),
    // Marks every process the bridge starts (they inherit it): what is left after the run is an orphan.
    DOTTY_SOAK_RUN: runId,
    SOAK_PALACE_OPTS: JSON.stringify(opts),
  };
  // Watched from outside meanwhile: the palace is single-writer, so two servers of this run must
  // never be alive at once (an old one still running when a new one starts).
  let maxServers = 0, overlaps = [];
  const watch = setInterval(() => {
    const servers = procs(mark).filter((p) => p.marked && p.state !== 'Z' && /python/.test(p.comm));
    if (servers.length > 1) overlaps.push(servers.map((p) => `${p.pid}/${p.pgid}/${p.state}`).join(' '));
    maxServers = Math.max(maxServers, servers.length);
  }, 100);
  const pi = await runChild(path.join(here, 'pi-palace.mjs'), [], env);
  clearInterval(watch);
  // After the pi-like process is gone: nothing it started may remain (zombies included: their
  // parent, if alive, failed to reap them).
  let left = [];
  for (let i = 0; i < 20; i++) {
    left = procs(mark).filter((p) => p.marked);
    if (left.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (pi.code !== 0 || !pi.message) {
    check(false, `palace: the pi-like process exited ${pi.code ?? pi.signal} without figures`);
    process.stderr.write(pi.stderr);
    return;
  }
  const m = pi.message;
  const outcomes = m.outcomes;
  const hung = (outcomes.HUNG ?? 0) + m.unsettled;
  const wrong = outcomes['WRONG-REPLY'] ?? 0;
  const lat = m.latency.slice().sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((lat.length * p) / 100))];
  const late = m.latency.filter((ms) => ms > boundMs).length;
  const overTimeout = m.latency.filter((ms) => ms > cfg.timeoutMs + 1000).length;
  const kinds = {};
  for (const f of m.faults) kinds[f.kind] = `${(kinds[f.kind] ?? '0/0').split('/').map(Number).map((n, j) => n + (j === 0 ? 1 : f.done ? 1 : 0)).join('/')}`;
  const errorKinds = m.errors;
  const end = m.end;

  row('palace', 'calls: outcomes', Object.entries(outcomes).map(([k, v]) => `${k} ${v}`).join(', '));
  row('palace', 'wall time', `${fmt(m.runMs / 1000)} s`);
  row('palace', 'faults injected (kind: tried/done)', Object.entries(kinds).map(([k, v]) => `${k} ${v}`).join(', '), okMark(check(m.faults.filter((f) => f.done).length >= Math.ceil(cfg.faults * 0.75), `palace: only ${m.faults.filter((f) => f.done).length} of ${m.faults.length} faults landed`)));
  row('palace', 'calls hung (no answer within 2x bound) / pending at the end', `${hung} / ${end.pendingBeforeShutdown.length}`, okMark(check(hung === 0 && end.pendingBeforeShutdown.length === 0, `palace: ${hung} calls hung, ${end.pendingBeforeShutdown.length} pending`)));
  row('palace', `calls settled later than the bound (${boundMs} ms)`, late, okMark(check(late === 0, `palace: ${late} calls later than ${boundMs} ms`)));
  row('palace', `calls longer than the timeout + 1 s (${cfg.timeoutMs + 1000} ms)`, overTimeout);
  row('palace', 'latency p50 / p99 / max', `${pct(50)} / ${pct(99)} / ${lat[lat.length - 1]} ms`);
  row('palace', 'replies for another call', wrong, okMark(check(wrong === 0, `palace: ${wrong} calls got another call's reply`)));
  row('palace', 'spawns / respawns', `${end.stats.mcpSpawns} / ${end.stats.mcpRespawns}`);
  row('palace', 'bridge at the end: connected / final call / status', `${end.stats.palaceConnected} / ${end.finalCall} / ${end.status}`, okMark(check(end.stats.palaceConnected && end.finalCall === 'ok', `palace: bridge not healthy at the end (${end.finalCall}, ${end.status})`)));
  row('palace', 'calls in flight after shutdown', end.afterShutdown.callsInFlight, okMark(check(end.afterShutdown.callsInFlight === 0, 'palace: calls in flight after shutdown')));
  row('palace', 'servers alive at once: most seen (polled every 100 ms)', maxServers, okMark(check(maxServers <= 1, `palace: ${maxServers} servers alive at once: ${overlaps.slice(0, 3).join('; ')}`)));
  row('palace', 'processes left after exit (orphans)', left.length ? left.map((p) => `${p.pid} ${p.comm} ${p.state}`).join(', ') : 0, okMark(check(left.length === 0, `palace: ${left.length} processes left`)));
  v.stallRow('palace', m);
  v.handlesRow('palace', m);
  v.memoryRows('palace', m);
  for (const [k, v] of Object.entries(errorKinds)) console.log(`palace error x${v}: ${k}`);
  for (const c of m.odd) console.log(`palace call #${c.k}: ${c.hung ? 'hung' : `answered another call's text: ${c.got}`}`);
  const t0 = m.t0;
  for (const f of m.faults) console.log(`fault at call ${f.atCall} (+${f.at - t0} ms): ${f.kind}${f.skipped ? ` skipped (${f.skipped})` : ''}${f.outcome ? ` -> ${f.outcome} in ${f.ms} ms` : ''}`);
  v.printStalls('palace', m, t0);
  if (!v.failed('palace')) fs.rmSync(dir, { recursive: true, force: true });
  const stderrLines = pi.stderr.split('\n').filter(Boolean);
  console.log(`palace pi-like stderr: ${stderrLines.length} lines; first: ${stderrLines.slice(0, 5).join(' | ')}`);
}
