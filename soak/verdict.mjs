// The soak's verdict: a table of figures, each with ok/FAIL where it is an invariant, and the
// checks shared by both halves (event-loop stalls, memory, handles). See docs/soak.md for why each
// is judged the way it is.
import { rssSlope } from './common.mjs';

export const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

/** `cfg`: the soak's settings (limits); `quick`: a --quick run (memory not judged). */
export function verdict(cfg, { quick = false } = {}) {
  const failures = [];
  const table = [];
  const check = (ok, what) => {
    if (!ok) failures.push(what);
    return ok;
  };
  const row = (half, figure, value, mark = '') => table.push([half, figure, String(value), mark]);
  const okMark = (ok) => (ok ? 'ok' : 'FAIL');

  /**
   * File descriptors and threads of the pi-like process at the start of the load, after warm-up
   * (brain.db's connections open in the background at load), at the end, and after 11 s idle
   * (tokio's blocking pool keeps idle threads 10 s): the last must be back within two of warm-up.
   */
  function handlesRow(half, m) {
    const { before: b, warm: w, after: a, settled: s } = m.handles;
    // The palace's counts are taken with the bridge connected (its server's pipes open), and must be
    // compared in the same state: `connected` is noted with both.
    const sameState = w.connected === s.connected;
    const ok = sameState && s.fds <= w.fds + 2 && s.threads <= w.threads + 2;
    const state = w.connected === undefined ? '' : ` (bridge connected: ${w.connected}, ${s.connected})`;
    const names = (h) => Object.entries(h.names).map(([k, v]) => `${k} x${v}`).join(', ');
    row(half, 'open fds / threads: start, warm-up, end, 11 s idle', `${b.fds}, ${w.fds}, ${a.fds}, ${s.fds} / ${b.threads}, ${w.threads}, ${a.threads}, ${s.threads}${state}`, okMark(check(ok, `${half}: fds ${w.fds} -> ${s.fds}, threads ${w.threads} -> ${s.threads} from warm-up to 11 s idle${state}`)));
    console.log(`${half}: threads after warm-up: ${names(w)}; at the end: ${names(a)}; 11 s later: ${names(s)}`);
  }

  function printStalls(half, m, t0) {
    for (const s of m.stalls) console.log(`${half}: event loop stalled ${s.gapMs} ms at +${s.at - t0} ms (main thread on a CPU ${s.cpuMs} ms, runnable but waiting for a CPU ${s.runqueueMs} ms; from ${fmt(s.mono, 3)} s on CLOCK_MONOTONIC)`);
    // perf_hooks' GC kinds: 1 minor (scavenge), 4 major (mark-compact), 8 incremental, 16 weak callbacks.
    const kinds = { 1: 'minor', 4: 'major', 8: 'incremental', 16: 'weak callbacks' };
    for (const g of m.gcs) console.log(`${half}: GC pause ${g.ms} ms at +${g.at - t0} ms (${kinds[g.kind] ?? `kind ${g.kind}`})`);
  }

  /**
   * The event loop's worst stall, judged without the time the machine gave the thread no CPU: on a
   * shared machine a runnable thread can wait tens of ms for a core, which says nothing about the
   * extension. The raw figure is printed beside it, and on a quiet machine the two are the same.
   */
  function stallRow(half, m) {
    row(half, 'event loop: max / p99 / mean (raw)', `${fmt(m.loopMaxMs)} / ${fmt(m.loopP99Ms)} / ${fmt(m.loopMeanMs, 2)} ms`);
    row(half, `event loop: longest stall not waiting for a CPU (${m.stalls.length} stalls > ${cfg.stallMaxMs} ms)`, `${m.ownStallMaxMs} ms`, okMark(check(m.ownStallMaxMs <= cfg.stallMaxMs, `${half}: event loop stalled ${m.ownStallMaxMs} ms on its own (raw max ${fmt(m.loopMaxMs)} ms)`)));
  }

  /**
   * Memory after warm-up. Judged on what can leak: the RSS outside V8's heap (the addon, SQLite,
   * tokio: where the extension's own memory lives), by its least-squares slope when the window is
   * at least 2 minutes long (<= SOAK_RSS_SLOPE_MAX MB/min) and by its fitted growth over a shorter
   * one (<= SOAK_RSS_GROWTH_MAX MB: SQLite's page cache, 2 MB a connection, fills over the first
   * tens of thousands of rows, and seconds of that read as MB/min would be noise); and the
   * JS heap retained after a forced full GC at the end of warm-up and at the end (<= 1 MB more).
   * The raw RSS slope is printed too: it also holds V8's lazily grown heap, garbage included.
   */
  function memoryRows(half, m) {
    // Warm-up ends a second after the forced GC at a quarter of the calls: that GC shrinks V8's
    // heap, which would read as a step in RSS minus the heap if samples before it were fitted.
    const fromS = m.retained[0] ? Math.max(2, m.retained[0].at + 1) : undefined;
    const raw = rssSlope(m.rss, { fromS });
    const off = rssSlope(m.rss, { col: 3, fromS });
    const windowS = m.rss.length ? m.rss[m.rss.length - 1][0] - off.fromS : 0;
    const growthMb = (off.slopeMbPerMin * windowS) / 60;
    // Too few samples after warm-up (a run of a few seconds) give no slope: that is no evidence, not a pass.
    const ok = Number.isFinite(off.slopeMbPerMin) && (windowS >= 120 ? off.slopeMbPerMin <= cfg.rssSlopeMax : growthMb <= cfg.rssGrowthMax);
    row(half, `RSS after warm-up (${fmt(raw.fromS, 0)} s), raw: slope`, `${fmt(raw.slopeMbPerMin, 2)} MB/min (${fmt(raw.startMb)} -> ${fmt(raw.endMb)} MB, max ${fmt(raw.maxMb)})`);
    // --quick runs last seconds, all of it warm-up (allocator arenas of new threads, the page cache):
    // its memory figures are printed, not judged.
    row(half, `RSS outside the V8 heap: slope; fitted growth over ${fmt(windowS, 0)} s`, `${fmt(off.slopeMbPerMin, 2)} MB/min; ${fmt(growthMb, 2)} MB (${fmt(off.startMb)} -> ${fmt(off.endMb)} MB)`, quick ? 'not judged (--quick)' : okMark(check(ok, Number.isFinite(off.slopeMbPerMin) ? `${half}: native memory grew after warm-up: ${fmt(off.slopeMbPerMin, 2)} MB/min, ${fmt(growthMb, 2)} MB over ${fmt(windowS, 0)} s` : `${half}: too few memory samples after warm-up (${off.samples}) to judge: run more calls (SOAK_REMEMBERS / SOAK_PALACE_CALLS)`)));
    const [w, e] = m.retained;
    const heapGrowth = e && w ? e.heapMb - w.heapMb : NaN;
    row(half, `JS heap retained after a full GC: warm-up (${fmt(w?.at, 0)} s) -> end`, `${fmt(w?.heapMb, 2)} -> ${fmt(e?.heapMb, 2)} MB`, okMark(check(heapGrowth <= 1, `${half}: JS heap retained grew ${fmt(heapGrowth, 2)} MB`)));
  }

  /** Prints the table; returns the failed invariants (empty: all hold). */
  function print() {
    const w = [0, 1, 2].map((j) => Math.max(...table.map((r) => r[j].length)));
    console.log('');
    for (const r of table) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2].padEnd(w[2])}  ${r[3]}`);
    return failures;
  }

  return { check, row, okMark, handlesRow, printStalls, stallRow, memoryRows, print, failed: (half) => failures.some((f) => f.startsWith(half)) };
}
