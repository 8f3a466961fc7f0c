// The loader picks the binary built for the libc of the Node it runs in: linux-x64-gnu on Debian's
// glibc, linux-x64-musl on Alpine's musl (scripts/musl-check.sh runs this file, and the voice contract
// tests, in a real musl Node; DOTTY_EXPECT_LIBC=musl there makes a run that is not musl fail).
// Checked on the file that is mapped into this process and its ELF, not on a load that seems to
// work: musl's loader takes a glibc .node's libc.so.6 for itself.
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { makeBrain, readRows, root, tempDir } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';

const require = createRequire(import.meta.url);
const glibcRuntime = process.report.getReport().header.glibcVersionRuntime;
const libc = glibcRuntime ? 'gnu' : 'musl';
const mappedAddons = () => [...new Set(fs.readFileSync('/proc/self/maps', 'utf8').split('\n')
  .map((l) => l.slice(l.indexOf('/'))).filter((f) => /dotty-pi-ext[^/]*\.node$/.test(f)))];

describe(`the native binary for this Node (${process.version}, ${libc})`, () => {
  it('is the libc this run expects (DOTTY_EXPECT_LIBC), as load.js names it', () => {
    if (process.env.DOTTY_EXPECT_LIBC) expect(libc).toBe(process.env.DOTTY_EXPECT_LIBC);
    expect(require(path.join(root, 'load.js')).platformTriple()).toBe(`linux-${process.arch}-${libc}`);
  });

  it(`native.js loads dotty-pi-ext.linux-${process.arch}-${libc}.node and nothing else`, () => {
    const native = require(path.join(root, 'native.js'));
    expect(typeof native.callTool).toBe('function');
    const want = `dotty-pi-ext.linux-${process.arch}-${libc}.node`;
    expect(mappedAddons().map((f) => path.basename(f))).toEqual([want]);
    expect(Object.keys(require.cache).filter((f) => f.endsWith('.node') && f.includes('dotty-pi-ext')).map((f) => path.basename(f))).toEqual([want]);
  });

  it('its ELF needs only what this libc provides', () => {
    const [file] = mappedAddons();
    const r = spawnSync('readelf', ['-d', file], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const needed = [...r.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[(.+)\]/g)].map((m) => m[1]);
    if (libc === 'musl') {
      expect(needed.filter((n) => !/^(libc\.musl-(x86_64|aarch64)\.so\.1|libc\.so|libgcc_s\.so\.1)$/.test(n))).toEqual([]);
    } else {
      expect(needed).toContain('libc.so.6');
    }
  });

  it('remembers and looks up through it, in a pi-like process of the same Node', async () => {
    const db = makeBrain(path.join(tempDir('dotty-libc-'), 'brain.db'));
    const r = await runNode(`return [await ext.text('remember', { fact: 'The kettle is shaped like a whale' }), await ext.text('memory_lookup', { query: 'shaped like a whale' }), [...ext.tools.keys()].length];`, { DOTTY_BRAIN_DB: db });
    expect(r.error).toBeUndefined();
    expect(r.result).toEqual(['(remembered)', 'The kettle is shaped like a whale', 7]);
    expect(readRows(db).map((row) => row.content)).toEqual(['The kettle is shaped like a whale']);
  });
});
