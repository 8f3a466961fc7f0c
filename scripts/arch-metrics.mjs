#!/usr/bin/env node
// The architecture's measures, read from the sources (no build, no network):
//   node scripts/arch-metrics.mjs [repo-root]
// - the module graph between src/'s top-level modules, drawn from the `crate::…` paths each file names:
//   the arrows that point up (against FLOORS below) and the circles (strongly connected groups);
// - the largest files and the longest functions;
// - `pub` items against `pub(crate)`/`pub(super)` ones;
// - the line counts of src/node.rs and index.js (and index.js's lines over 120 columns).
'use strict';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const src = path.join(root, 'src');

// The house's floors, lowest first: a module may name the ones on its floor or below, never above.
// (config gathers the settings of mcp and palace and is read by services and voice; error converts the
// errors of every floor for the boundary.)
const FLOORS = [
  ['sync', 'process_group', 'text', 'env', 'diag', 'http'],
  ['mcp'],
  ['palace'],
  ['config'],
  ['brain', 'services'],
  ['voice'],
  ['error'],
  ['doctor', 'extension'],
  ['node', 'lib'],
];
const floorOf = new Map(FLOORS.flatMap((names, i) => names.map((n) => [n, i])));

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : e.name.endsWith('.rs') ? [p] : [];
  });
}

const files = walk(src).sort();
const topOf = (file) => {
  const rel = path.relative(src, file).split(path.sep);
  return rel.length === 1 ? rel[0].replace(/\.rs$/, '') : rel[0];
};

// Strips comments and string literals (roughly: enough not to count a path in a doc comment).
function code(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/r#*"[\s\S]*?"#*/g, '""')
    .replace(/"(?:\\.|[^"\\])*"/g, '""');
}

const edges = new Map(); // "from->to" -> [file:line]
const sizes = [];
const fns = [];
let pub = 0;
let restricted = 0;
for (const file of files) {
  const text = fs.readFileSync(file, 'utf8');
  const rel = path.relative(root, file);
  const lines = text.split('\n');
  sizes.push([lines.length - (text.endsWith('\n') ? 1 : 0), rel]);
  const from = topOf(file);
  const body = code(text);
  body.split('\n').forEach((line, i) => {
    const refs = [...line.matchAll(/\bcrate::(\w+)/g)].map((m) => m[1]);
    // `use crate::{a, b::c}` names several modules at once.
    for (const m of line.matchAll(/\bcrate::\{([^}]*)\}?/g)) {
      refs.push(...m[1].split(',').map((s) => s.trim().split(/::|\s/)[0]).filter(Boolean));
    }
    for (const to of refs) {
      if (to === from || !floorOf.has(to)) continue;
      const key = `${from}->${to}`;
      if (!edges.has(key)) edges.set(key, []);
      edges.get(key).push(`${rel}:${i + 1}`);
    }
    pub += [...line.matchAll(/\bpub\b(?!\s*\()/g)].length;
    restricted += [...line.matchAll(/\bpub\s*\((crate|super|in [^)]*)\)/g)].length;
  });
  // Functions: from the `fn` line to the line whose closing brace balances it.
  const clean = body.split('\n');
  for (let i = 0; i < clean.length; i++) {
    const m = clean[i].match(/^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"[^"]*"\s+)?fn\s+(\w+)/);
    if (!m) continue;
    let depth = 0;
    let opened = false;
    for (let j = i; j < clean.length; j++) {
      for (const ch of clean[j]) {
        if (ch === '{') { depth++; opened = true; }
        else if (ch === '}') depth--;
        else if (ch === ';' && !opened && depth === 0) { j = clean.length; break; } // a declaration only
      }
      if (opened && depth <= 0) { fns.push([j - i + 1, `${rel}:${i + 1} ${m[1]}`]); break; }
    }
  }
}

const graph = new Map();
for (const key of edges.keys()) {
  const [a, b] = key.split('->');
  if (!graph.has(a)) graph.set(a, new Set());
  graph.get(a).add(b);
}

// Tarjan's strongly connected components: a component of more than one module is a circle.
function circles() {
  let index = 0;
  const idx = new Map(), low = new Map(), on = new Set(), stack = [], out = [];
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++; stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do { w = stack.pop(); on.delete(w); comp.push(w); } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of floorOf.keys()) if (!idx.has(v)) visit(v);
  return out;
}

const up = [...edges].filter(([key]) => {
  const [a, b] = key.split('->');
  return floorOf.get(b) > floorOf.get(a);
});
const lineCount = (p) => {
  try {
    const t = fs.readFileSync(path.join(root, p), 'utf8');
    return t.split('\n').length - (t.endsWith('\n') ? 1 : 0);
  } catch { return NaN; }
};
const wide = (() => {
  try { return fs.readFileSync(path.join(root, 'index.js'), 'utf8').split('\n').filter((l) => l.length > 120).length; }
  catch { return NaN; }
})();
const circ = circles();

console.log(`arch metrics of ${root}`);
console.log(`files: ${files.length} .rs under src/, ${sizes.reduce((s, [n]) => s + n, 0)} lines`);
console.log(`module graph: ${edges.size} arrows between top-level modules`);
console.log(`  arrows up: ${up.length}`);
for (const [key, at] of up) console.log(`    ${key}  (${at.length}x, first at ${at[0]})`);
console.log(`  circles: ${circ.length}`);
for (const c of circ) console.log(`    ${c.join(' <-> ')}  (${files.filter((f) => c.includes(topOf(f))).length} files)`);
console.log('largest files:');
for (const [n, f] of sizes.sort((a, b) => b[0] - a[0]).slice(0, 8)) console.log(`  ${String(n).padStart(5)}  ${f}`);
console.log(`files over 450 lines: ${sizes.filter(([n]) => n > 450).length}`);
console.log('longest functions:');
for (const [n, f] of fns.sort((a, b) => b[0] - a[0]).slice(0, 8)) console.log(`  ${String(n).padStart(5)}  ${f}`);
console.log(`functions over 60 lines: ${fns.filter(([n]) => n > 60).length}`);
console.log(`visibility: ${pub} pub, ${restricted} pub(crate|super|in)`);
console.log(`src/node.rs: ${lineCount('src/node.rs')} lines`);
console.log(`index.js: ${lineCount('index.js')} lines, ${wide} over 120 columns`);
