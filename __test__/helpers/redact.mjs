// The redaction tests' shared pieces (issue 21): the made-up secrets and the ordinary corpus, and
// the files a feed may have written.
import fs from 'node:fs';
import path from 'node:path';
import { root } from './brain.mjs';

/** One made-up secret of each kind: {kind, format, value, text ('{v}' where it is pasted), env?}. */
export const { samples } = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/redact/secrets.json'), 'utf8'));
/** Ordinary coding sessions with nothing secret (scripts/redact/ordinary-corpus.py). */
export const ordinary = fs.readFileSync(path.join(root, '__test__/fixtures/redact/ordinary.jsonl'), 'utf8');

/** Every regular file under `dir` but those `keep(path)` refuses, as [path, bytes]. */
export function filesUnder(dir, keep = () => true) {
  const out = [];
  const walk = (p) => {
    for (const e of fs.readdirSync(p, { withFileTypes: true })) {
      const f = path.join(p, e.name);
      if (e.isDirectory()) walk(f);
      else if (e.isFile() && keep(f)) out.push([f, fs.readFileSync(f)]);
    }
  };
  walk(dir);
  return out;
}

/** The files of `files` ([path, bytes]) that hold `value`, relative to `dir`. */
export const holding = (files, value, dir) => files.filter(([, bytes]) => bytes.includes(value)).map(([f]) => path.relative(dir, f));
