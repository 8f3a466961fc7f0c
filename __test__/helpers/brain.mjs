// brain.db fixtures in the production schema, made and read with better-sqlite3 (an independent
// SQLite) in a child process: see sqlite-child.cjs for why never in the test's own process.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const schemaSql = fs.readFileSync(path.join(root, 'brain-schema.sql'), 'utf8');
const child = path.join(root, '__test__/helpers/sqlite-child.cjs');
/**
 * The Node that runs better-sqlite3 (the independent SQLite, as another program): this one, unless
 * DOTTY_TEST_SQLITE_NODE names another: the musl runs (scripts/musl-check.sh) test the addon in a
 * musl Node while better-sqlite3 was built by `npm ci` for the host's glibc Node.
 */
export const sqliteNode = process.env.DOTTY_TEST_SQLITE_NODE || process.execPath;

function sqlite(req) {
  const out = execFileSync(sqliteNode, [child], { input: JSON.stringify(req), maxBuffer: 256 << 20 });
  return JSON.parse(out.toString('utf8'));
}

export function tempDir(prefix = 'dotty-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Creates a brain.db in the real schema, as ZeroClaw would (WAL), optionally with rows. */
export function makeBrain(file, rows = []) {
  sqlite({ op: 'create', file, schema: schemaSql, rows });
  return file;
}

/** Appends rows ({content, namespace?, importance?, ts?, category?}) as another program would. */
export const addRows = (file, rows) => sqlite({ op: 'insert', file, rows });
/** Every row, in insertion order. */
export const readRows = (file) => sqlite({ op: 'rows', file });
export const schemaOf = (file) => sqlite({ op: 'schema', file });

/** The rows of a read-only statement run by another SQLite (better-sqlite3). */
export const query = (file, sql, params) => sqlite({ op: 'query', file, sql, params });
/** Runs statements with better-sqlite3, as another program would. */
export const execSql = (file, sql) => sqlite({ op: 'exec', file, sql });

/**
 * Another process takes the write lock and, inside that transaction, appends `suffix` to the rows
 * with ids `update` and deletes those with ids `remove`; resolves once it holds the lock, with
 * `commit()` (which resolves once committed).
 */
export function rewriteUnderLock(file, { update = [], remove = [], suffix }) {
  const p = spawn(sqliteNode, [child], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.stdin.end(JSON.stringify({ op: 'rewrite-under-lock', file, update, delete: remove, suffix }));
  const done = new Promise((resolve, reject) => p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`rewriter exited ${code}`)))));
  return new Promise((resolve, reject) => {
    p.stderr.on('data', (d) => { if (String(d).includes('LOCKED')) resolve({ commit: () => { p.kill('SIGUSR2'); return done; } }); });
    p.on('error', reject);
    done.catch(reject);
  });
}

/** Another process takes brain.db's write lock and holds it for `ms`; resolves once it holds it. */
export function holdWriteLock(file, ms) {
  const p = spawn(sqliteNode, [child], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.stdin.end(JSON.stringify({ op: 'hold-write-lock', file, ms }));
  const done = new Promise((resolve, reject) => p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`lock holder exited ${code}`)))));
  return new Promise((resolve, reject) => {
    p.stderr.on('data', (d) => { if (String(d).includes('LOCKED')) resolve({ done }); });
    p.on('error', reject);
    done.catch(reject);
  });
}
