#!/usr/bin/env node
// The architecture's measures, read from the sources (no build, no network):
//   node scripts/arch-metrics.mjs [repo-root]
// - the module graph between src/'s top-level modules, drawn from the `crate::…` paths each file names:
//   the arrows that point up (against FLOORS below) and the circles (strongly connected groups);
// - inside each folder of src/ (a wing: palace, mcp, …), the graph between its rooms (its direct
//   children), drawn from code without its tests (`crate::<wing>::room`, `super::room`, and the wing's
//   own re-exports resolved to the room that defines them): its circles, and for the wings that have
//   floors (WING_FLOORS) the arrows that point up;
// - the largest files and the longest functions, counted without their tests (`#[cfg(test)]` items,
//   test files);
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

// The floors of a wing's rooms, lowest first (`mod` is the wing's own mod.rs).
const WING_FLOORS = {
  palace: [
    ['mod', 'error', 'files', 'scope'],
    ['connection'],
    ['offer', 'context', 'twin'],
    ['config'],
    ['feed', 'checkpoint'],
    ['bridge'],
  ],
};

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

// Strips comments, string and char literals (their newlines kept, so line numbers hold): enough not to
// count a path in a doc comment or a brace in a string.
function code(text) {
  let out = '';
  const keepLines = (t) => t.replace(/[^\n]/g, '');
  for (let i = 0; i < text.length; ) {
    const rest = text.slice(i, i + 3);
    const prev = i > 0 ? text[i - 1] : ' ';
    if (rest.startsWith('//')) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (rest.startsWith('/*')) {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += keepLines(text.slice(i, stop));
      i = stop;
    } else if (/[rb]/.test(text[i]) && !/\w/.test(prev) && /^(?:br|r)#*"/.test(text.slice(i, i + 300))) {
      const m = text.slice(i).match(/^(?:br|r)(#*)"/);
      const close = `"${m[1]}`;
      const end = text.indexOf(close, i + m[0].length);
      const stop = end < 0 ? text.length : end + close.length;
      out += `""${keepLines(text.slice(i, stop))}`;
      i = stop;
    } else if (text[i] === '"' || (text[i] === 'b' && text[i + 1] === '"' && !/\w/.test(prev))) {
      let j = text[i] === 'b' ? i + 2 : i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += `""${keepLines(text.slice(i, j + 1))}`;
      i = j + 1;
    } else if (text[i] === '\'') {
      const m = text.slice(i, i + 12).match(/^'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'/u);
      if (m) {
        out += "' '";
        i += m[0].length;
      } else {
        out += text[i++];
      }
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The code of `body` (already without comments and strings) with each `#[cfg(test)]` item blanked out
// (its lines kept empty, so line numbers still hold), and how many lines that blanked.
function withoutTests(body) {
  const lines = body.split('\n');
  let blanked = 0;
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*#\[cfg\(test\)\]\s*$/.test(lines[i])) continue;
    let depth = 0;
    let opened = false;
    let j = i;
    for (; j < lines.length; j++) {
      let end = false;
      for (const ch of lines[j]) {
        if (ch === '{') { depth++; opened = true; }
        else if (ch === '}') { depth--; if (opened && depth === 0) { end = true; break; } }
        else if (ch === ';' && !opened && depth === 0 && j > i) { end = true; break; }
      }
      if (end) break;
    }
    for (let k = i; k <= Math.min(j, lines.length - 1); k++) lines[k] = '';
    blanked += Math.min(j, lines.length - 1) - i + 1;
    i = j;
  }
  return { prod: lines.join('\n'), blanked };
}

// The files of test modules (`#[cfg(test)] mod x;`): x.rs or x/mod.rs beside the declaring file, and
// everything under x/.
const testPaths = [];
for (const file of files) {
  const lines = code(fs.readFileSync(file, 'utf8')).split('\n');
  const dir = /(^|\/)(mod|lib)\.rs$/.test(file) ? path.dirname(file) : file.replace(/\.rs$/, '');
  lines.forEach((line, i) => {
    const m = /^\s*#\[cfg\(test\)\]\s*$/.test(line) && (lines[i + 1] ?? '').match(/^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/);
    if (m) testPaths.push(path.join(dir, m[1]));
  });
}
const isTestFile = (file) => testPaths.some((t) => file === `${t}.rs` || file.startsWith(`${t}${path.sep}`));

// A file's module path under src/ (src/palace/feed/mod.rs -> palace::feed).
const modPath = (file) => {
  const rel = path.relative(src, file).replace(/\.rs$/, '').split(path.sep);
  return rel[rel.length - 1] === 'mod' || rel[rel.length - 1] === 'lib' ? rel.slice(0, -1) : rel;
};

// The rooms of each wing (the folders of src/ with a mod.rs), and the items its mod.rs re-exports
// from them (`pub use room::Item`).
const wings = new Map();
for (const e of fs.readdirSync(src, { withFileTypes: true })) {
  const modrs = path.join(src, e.name, 'mod.rs');
  if (!e.isDirectory() || !fs.existsSync(modrs)) continue;
  const rooms = new Set(fs.readdirSync(path.join(src, e.name)).filter((n) => n !== 'mod.rs').map((n) => n.replace(/\.rs$/, '')));
  const reexports = new Map();
  for (const m of code(fs.readFileSync(modrs, 'utf8')).matchAll(/\bpub(?:\([^)]*\))?\s+use\s+(?:self::)?(\w+)::(\{[^}]*\}|\w+)/g)) {
    if (!rooms.has(m[1])) continue;
    for (const item of m[2].replace(/[{}]/g, '').split(',').map((s) => s.trim().split(/\s/)[0]).filter(Boolean)) reexports.set(item, m[1]);
  }
  wings.set(e.name, { rooms, reexports, edges: new Map() });
}

// The wing-absolute paths a line of a file in module `at` names: `crate::a::b`, `super::…::a`, and
// the lists of `{a, b::c}` after either.
function pathsNamed(line, at) {
  const out = [];
  const add = (base, rest) => {
    for (const part of rest.startsWith('{') ? rest.slice(1).split(',') : [rest]) {
      const segs = part.trim().split('::').map((s) => s.trim().split(/\s/)[0]).filter((s) => /^\w+$/.test(s));
      if (segs.length) out.push([...base, ...segs]);
    }
  };
  for (const m of line.matchAll(/\bcrate::((?:\w+::)*)(\{[^}]*\}?|\w+)/g)) add(m[1].split('::').filter(Boolean), m[2]);
  for (const m of line.matchAll(/(?<![:\w])((?:super::)+)((?:\w+::)*)(\{[^}]*\}?|\w+)/g)) {
    const up = m[1].split('::').filter(Boolean).length;
    if (up > at.length) continue;
    add([...at.slice(0, at.length - up), ...m[2].split('::').filter(Boolean)], m[3]);
  }
  return out;
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
  const from = topOf(file);
  const body = code(text);
  const test = isTestFile(file);
  const { prod, blanked } = test ? { prod: '', blanked: Infinity } : withoutTests(body);
  const total = lines.length - (text.endsWith('\n') ? 1 : 0);
  // [lines, file, lines without its tests (0 for a test file)]
  sizes.push([total, rel, test ? 0 : total - blanked]);
  // The rooms of its wing it names.
  const wing = wings.get(from);
  if (wing && !test) {
    const at = modPath(file);
    const room = at.length === 1 ? 'mod' : at[1];
    prod.split('\n').forEach((line, i) => {
      const named = pathsNamed(line, at);
      // In the wing's mod.rs a room is named by its bare name (`room::Item`); its `pub use` lines only
      // re-export (resolved above to the room that defines the item).
      if (room === 'mod' && !/^\s*pub(?:\([^)]*\))?\s+use\b/.test(line)) {
        for (const m of line.matchAll(/(?<![:\w])(\w+)::/g)) if (wing.rooms.has(m[1])) named.push([from, m[1]]);
      }
      for (const p of named) {
        if (p[0] !== from || p.length < 2) continue;
        const to = wing.rooms.has(p[1]) ? p[1] : wing.reexports.get(p[1]);
        if (!to || to === room) continue;
        const key = `${room}->${to}`;
        if (!wing.edges.has(key)) wing.edges.set(key, []);
        wing.edges.get(key).push(`${rel}:${i + 1}`);
      }
    });
  }
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

const graphOf = (edgeMap) => {
  const g = new Map();
  for (const key of edgeMap.keys()) {
    const [a, b] = key.split('->');
    if (!g.has(a)) g.set(a, new Set());
    g.get(a).add(b);
  }
  return g;
};

// Tarjan's strongly connected components of `graph` over `nodes`: a component of more than one
// module is a circle.
function circles(graph, nodes) {
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
  for (const v of nodes) if (!idx.has(v)) visit(v);
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
const circ = circles(graphOf(edges), floorOf.keys());

console.log(`arch metrics of ${root}`);
console.log(`files: ${files.length} .rs under src/, ${sizes.reduce((s, [n]) => s + n, 0)} lines`);
console.log(`module graph: ${edges.size} arrows between top-level modules`);
console.log(`  arrows up: ${up.length}`);
for (const [key, at] of up) console.log(`    ${key}  (${at.length}x, first at ${at[0]})`);
console.log(`  circles: ${circ.length}`);
for (const c of circ) console.log(`    ${c.join(' <-> ')}  (${files.filter((f) => c.includes(topOf(f))).length} files)`);
console.log('wings (the graph between the rooms of each folder of src/, code without tests):');
for (const [name, wing] of [...wings].sort()) {
  const floors = WING_FLOORS[name];
  const roomFloor = floors && new Map(floors.flatMap((names, i) => names.map((n) => [n, i])));
  const wingUp = floors ? [...wing.edges].filter(([key]) => {
    const [a, b] = key.split('->');
    return (roomFloor.get(b) ?? Infinity) > (roomFloor.get(a) ?? -Infinity);
  }) : [];
  const wingCirc = circles(graphOf(wing.edges), [...wing.rooms, 'mod']);
  console.log(`  ${name}: ${wing.rooms.size} rooms, ${wing.edges.size} arrows, ${floors ? `arrows up ${wingUp.length}, ` : ''}circles ${wingCirc.length}`);
  if (floors) {
    const unplaced = [...wing.rooms].filter((r) => !roomFloor.has(r));
    if (unplaced.length) console.log(`    rooms on no floor (counted as arrows up): ${unplaced.join(', ')}`);
  }
  for (const [key, at] of wingUp) console.log(`    up: ${key}  (${at.length}x, first at ${at[0]})`);
  for (const c of wingCirc) console.log(`    circle: ${c.join(' <-> ')}`);
}
console.log('largest files, without their tests (with them):');
for (const [n, f, c] of sizes.sort((a, b) => b[2] - a[2]).slice(0, 12)) console.log(`  ${String(c).padStart(5)}  ${f} (${n})`);
console.log(`files over 450 lines without their tests: ${sizes.filter(([, , c]) => c > 450).length}; with them: ${sizes.filter(([n]) => n > 450).length}`);
console.log('longest functions:');
for (const [n, f] of fns.sort((a, b) => b[0] - a[0]).slice(0, 8)) console.log(`  ${String(n).padStart(5)}  ${f}`);
console.log(`functions over 60 lines: ${fns.filter(([n]) => n > 60).length}`);
console.log(`visibility: ${pub} pub, ${restricted} pub(crate|super|in)`);
console.log(`src/node.rs: ${lineCount('src/node.rs')} lines`);
console.log(`index.js: ${lineCount('index.js')} lines, ${wide} over 120 columns`);
