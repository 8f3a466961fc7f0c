// README's map of the house follows the folders: every module of src/ (a folder or a file) is named in
// it, and every room of the palace wing (src/palace/) is named in the wing's entry, each folder on a
// line of its own. A room added, moved or renamed without the map fails here.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './helpers/brain.mjs';

const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
/** The map: the code block that begins with the pi entry. */
const map = readme.match(/```\nindex\.js[\s\S]*?```/)?.[0] ?? '';
const isDir = (p) => fs.statSync(path.join(root, p)).isDirectory();

describe("README's map of the house", () => {
  it('names every folder and file of src/', () => {
    expect(map).not.toBe('');
    const missing = fs.readdirSync(path.join(root, 'src'))
      .filter((n) => n !== 'lib.rs')
      .filter((n) => !map.includes(`src/${n.replace(/\.rs$/, '')}`));
    expect(missing).toEqual([]);
  });

  it("names every room of the palace wing in the wing's entry, each folder on a line of its own", () => {
    const start = map.indexOf('\nsrc/palace/');
    const end = map.indexOf('\nsrc/', start + 1);
    expect(start).toBeGreaterThan(0);
    const entry = map.slice(start, end);
    const ownLines = entry.split('\n').map((l) => l.match(/^ {2}(\S+)/)?.[1]).filter(Boolean);
    const rooms = fs.readdirSync(path.join(root, 'src/palace')).filter((n) => n !== 'mod.rs');
    const missing = rooms.filter((r) => (isDir(`src/palace/${r}`) ? !ownLines.includes(`${r}/`) : !entry.includes(r)));
    expect(missing).toEqual([]);
  });
});
