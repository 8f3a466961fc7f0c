#!/usr/bin/env node
// The longest busy stretches of a JavaScript thread in a `node --cpu-prof` profile: runs of samples
// with no (idle) sample between them closer than `gapUs` (the thread never got back to the event
// loop), each with the self and total time of the functions in it. For the soak's pi-like
// processes (docs/soak.md, "What held the JS thread"):
//
//   SOAK_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof --cpu-prof-interval=200" node soak/run.mjs --palace-only
//   node soak/busy.mjs /tmp/prof/CPU.*.0.001.cpuprofile [n=8] [gapUs=450]
//
// (`.0.001` is the main thread's profile; the /proc worker's is `.1.002`.) A sample's time runs to
// the next sample, so a thread that was preempted or blocked shows as a long sample: read the
// stretch beside the soak's run-queue split, or the kernel's view (perf sched timehist).
import fs from 'node:fs';
const [file, nTop = '8', gapArg = '450'] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
let t = p.startTime;
const samples = p.samples.map((id, i) => { t += p.timeDeltas[i]; return { id, t }; });
// each sample's duration: until the next sample
for (let i = 0; i < samples.length; i++) samples[i].d = (samples[i + 1]?.t ?? samples[i].t) - samples[i].t;
const isIdle = (id) => { const f = byId.get(id).callFrame.functionName; return f === '(idle)'; };
const stretches = [];
let cur = null;
for (const s of samples) {
  if (!isIdle(s.id)) {
    if (cur && s.t - cur.end <= Number(gapArg)) { cur.list.push(s); cur.end = s.t + s.d; }
    else { cur = { start: s.t, end: s.t + s.d, list: [s] }; stretches.push(cur); }
  }
}
for (const st of stretches) st.ms = (st.end - st.start) / 1000;
stretches.sort((a, b) => b.ms - a.ms);
console.log(`${file}: ${samples.length} samples, ${(p.endTime - p.startTime) / 1e6} s, startTime ${p.startTime} us (CLOCK_MONOTONIC)`);
for (const st of stretches.slice(0, Number(nTop))) {
  const self = new Map(); const total = new Map();
  for (const s of st.list) {
    const n = byId.get(s.id); self.set(name(n), (self.get(name(n)) ?? 0) + s.d);
    const seen = new Set();
    for (let id = s.id; id !== undefined; id = parent.get(id)) { const k = name(byId.get(id)); if (!seen.has(k)) { seen.add(k); total.set(k, (total.get(k) ?? 0) + s.d); } }
  }
  console.log(`\nbusy ${st.ms.toFixed(1)} ms at mono ${(st.start / 1e6).toFixed(3)} s (+${((st.start - p.startTime) / 1e3).toFixed(0)} ms into profile), ${st.list.length} samples`);
  console.log('  self:', [...self].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${(v / 1000).toFixed(1)} ms ${k}`).join('\n        '));
  console.log('  total:', [...total].sort((a, b) => b[1] - a[1]).slice(0, 14).map(([k, v]) => `${(v / 1000).toFixed(1)} ms ${k}`).join('\n         '));
}
