// Runs one brain.db operation with better-sqlite3 in a process of its own, reading a JSON request on
// stdin and writing a JSON answer on stdout. Why a separate process: two SQLite libraries in one
// process (better-sqlite3's and the addon's) don't share POSIX lock state, so closing a handle in
// one silently drops the other's locks and can unlink its WAL — the classic "two copies of SQLite
// in one process" corruption. The addon must be the only SQLite in its process, as it is in pi.
const Database = require('better-sqlite3');
const fs = require('node:fs');

const req = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = (v) => process.stdout.write(JSON.stringify(v));

function insert(db, rows) {
  const st = db.prepare(
    `INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance)
     VALUES (@id, @key, @content, @category, @ts, @ts, @namespace, @importance)`,
  );
  db.transaction(() => {
    rows.forEach((r, i) => {
      const id = r.id ?? `fixture-${process.pid}-${Date.now()}-${i}`;
      st.run({ id, key: r.key ?? id, content: r.content, category: r.category ?? 'core', ts: r.ts ?? '2026-01-01T00:00:00.000Z', namespace: r.namespace === undefined ? 'voice' : r.namespace, importance: r.importance === undefined ? 0.5 : r.importance });
    });
  })();
}

switch (req.op) {
  case 'create': {
    const db = new Database(req.file);
    db.pragma('journal_mode = WAL');
    db.exec(req.schema);
    insert(db, req.rows ?? []);
    db.close();
    out(true);
    break;
  }
  case 'insert': {
    const db = new Database(req.file, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    insert(db, req.rows);
    db.close();
    out(true);
    break;
  }
  case 'rows': {
    const db = new Database(req.file, { readonly: true, fileMustExist: true });
    out(db.prepare('SELECT * FROM memories ORDER BY rowid').all());
    db.close();
    break;
  }
  case 'schema': {
    const db = new Database(req.file, { readonly: true, fileMustExist: true });
    out(db.prepare('SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name').all());
    db.close();
    break;
  }
  case 'hold-write-lock': {
    // Takes the write lock, says so, holds it for req.ms, then commits one row.
    const db = new Database(req.file, { fileMustExist: true });
    db.exec('BEGIN IMMEDIATE');
    insert(db, [{ content: 'written while holding the lock' }]);
    process.stderr.write('LOCKED\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); out(true); }, req.ms);
    break;
  }
  case 'query': {
    // A read-only statement of the test's (the contract's lookup, an FTS check...): its rows.
    const db = new Database(req.file, { readonly: true, fileMustExist: true });
    out(db.prepare(req.sql).all(req.params ?? {}));
    db.close();
    break;
  }
  case 'exec': {
    const db = new Database(req.file, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.exec(req.sql);
    db.close();
    out(true);
    break;
  }
  case 'rewrite-under-lock': {
    // Takes the write lock, rewrites (appends req.suffix to) and deletes rows by id inside that
    // transaction, says LOCKED, and commits only on SIGUSR2: what another writer does while a
    // reader of the old rows waits for the lock.
    const db = new Database(req.file, { fileMustExist: true });
    db.exec('BEGIN IMMEDIATE');
    for (const id of req.update ?? []) db.prepare('UPDATE memories SET content = content || ? WHERE id = ?').run(req.suffix, id);
    for (const id of req.delete ?? []) db.prepare('DELETE FROM memories WHERE id = ?').run(id);
    process.on('SIGUSR2', () => { db.exec('COMMIT'); db.close(); out(true); process.exit(0); });
    process.stderr.write('LOCKED\n');
    setInterval(() => {}, 1000);
    break;
  }
  default:
    throw new Error(`unknown op ${req.op}`);
}
