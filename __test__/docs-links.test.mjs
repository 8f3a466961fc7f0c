// The repository stands alone: every relative link in README.md and docs/ resolves to a file or folder
// inside it (headings included for `#anchor` links), and nothing points outside it (no ../shared).
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './helpers/brain.mjs';

const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
const anchors = (file) => new Set(fs.readFileSync(file, 'utf8').split('\n').filter((l) => /^#{1,6} /.test(l))
  .map((l) => l.replace(/^#+ /, '').trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));

describe('documentation links', () => {
  for (const page of pages) {
    it(`${page}: every relative link resolves inside the repository`, () => {
      const text = fs.readFileSync(path.join(root, page), 'utf8').replace(/```[\s\S]*?```/g, '');
      const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/i.test(l));
      const broken = [];
      for (const link of links) {
        const [target, anchor] = link.split('#');
        const file = target ? path.resolve(root, path.dirname(page), target) : path.join(root, page);
        if (!file.startsWith(root + path.sep) && file !== root) broken.push(`${link} (outside the repository)`);
        else if (!fs.existsSync(file)) broken.push(`${link} (missing)`);
        else if (anchor && file.endsWith('.md') && !anchors(file).has(anchor)) broken.push(`${link} (no such heading)`);
      }
      expect(broken).toEqual([]);
      expect(text).not.toMatch(/\.\.\/shared\//);
    });
  }
});
