// brain.db fixtures built with better-sqlite3 (an independent SQLite), from the production schema.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const schemaSql = fs.readFileSync(path.join(root, 'brain-schema.sql'), 'utf8');

export function tempDir(prefix = 'dotty-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Creates a brain.db in the real schema, as ZeroClaw would (WAL), optionally with rows. */
export function makeBrain(file, rows = []) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(schemaSql);
  insertRows(db, rows);
  db.close();
  return file;
}

let seq = 0;
export function insertRows(db, rows) {
  const st = db.prepare(
    `INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance)
     VALUES (@id, @key, @content, @category, @ts, @ts, @namespace, @importance)`,
  );
  for (const r of rows) {
    const id = r.id ?? `fixture-${process.pid}-${++seq}`;
    st.run({ id, key: r.key ?? id, content: r.content, category: r.category ?? 'core', ts: r.ts ?? '2026-01-01T00:00:00.000Z', namespace: r.namespace === undefined ? 'voice' : r.namespace, importance: r.importance === undefined ? 0.5 : r.importance });
  }
}

/** Every row, in insertion order. */
export function readRows(file) {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT * FROM memories ORDER BY rowid').all();
  } finally {
    db.close();
  }
}

export function schemaOf(file) {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").all();
  } finally {
    db.close();
  }
}
