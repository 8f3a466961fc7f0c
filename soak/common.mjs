// Shared by the soak's processes. What a pi-like process measures about itself: the JavaScript event loop's worst stall
// (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and its RSS, sampled every second.
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export function startMonitor({ sampleMs = 1000, stallMs = 20 } = {}) {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const t0 = Date.now();
  const rss = [];
  const sample = () => rss.push([(Date.now() - t0) / 1000, process.memoryUsage().rss / 1048576]);
  // The histogram says how long the worst stall was; this says when each one happened, so a stall
  // can be matched with what the process did at that moment (a fault, a respawn, a GC).
  const stalls = [];
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    if (now - last > 5 + stallMs) stalls.push({ at: Date.now(), gapMs: Math.round(now - last - 5) });
    last = now;
  }, 5);
  loop.enable();
  sample();
  const timer = setInterval(sample, sampleMs);
  return {
    /** Stops sampling; returns the figures (ms, MB, seconds). */
    stop() {
      clearInterval(timer);
      clearInterval(tick);
      sample();
      loop.disable();
      return {
        loopMaxMs: loop.max / 1e6,
        loopP99Ms: loop.percentile(99) / 1e6,
        loopMeanMs: loop.mean / 1e6,
        rss,
        stalls,
      };
    },
  };
}

/**
 * Least-squares slope of RSS over time after warm-up, in MB per minute. Warm-up is the first
 * `warmFraction` of the run (at least `minWarmS` seconds): allocator pools, SQLite's page cache and
 * V8's heap grow there by design.
 */
export function rssSlope(rss, { warmFraction = 0.25, minWarmS = 2 } = {}) {
  if (rss.length < 2) return { slopeMbPerMin: NaN, samples: rss.length, fromS: NaN };
  const end = rss[rss.length - 1][0];
  const fromS = Math.max(minWarmS, end * warmFraction);
  const pts = rss.filter(([t]) => t >= fromS);
  if (pts.length < 3) return { slopeMbPerMin: NaN, samples: pts.length, fromS };
  const n = pts.length;
  const mt = pts.reduce((s, [t]) => s + t, 0) / n;
  const mr = pts.reduce((s, [, r]) => s + r, 0) / n;
  const cov = pts.reduce((s, [t, r]) => s + (t - mt) * (r - mr), 0);
  const vt = pts.reduce((s, [t]) => s + (t - mt) ** 2, 0);
  return {
    slopeMbPerMin: (cov / vt) * 60,
    samples: n,
    fromS,
    startMb: pts[0][1],
    endMb: pts[n - 1][1],
    maxMb: Math.max(...rss.map(([, r]) => r)),
  };
}

/** Runs `worker(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n, concurrency, worker) {
  let next = 0;
  const lane = async () => {
    while (next < n) await worker(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
}

// The texts the brain half writes, each naming its sequence number so rows can be counted exactly.
export const factText = (run, i) => `soak fact ${run} #${i}`;
export const turnUser = (run, i) => `soak turn ${run} #${i}`;
export const turnAnswer = (i) => `answer to turn #${i}`;

/** Every process now: pid, parent, process group, state, and whether its environment holds `marker`. */
export function procs(marker) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: the fields after the last ')' are fixed.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const p = { pid: Number(d), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state: rest[0], ppid: Number(rest[1]), pgid: Number(rest[2]) };
      if (marker) p.marked = fs.readFileSync(`/proc/${d}/environ`, 'latin1').split('\0').includes(marker);
      out.push(p);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}
