// A second program writing brain.db in a loop (ZeroClaw, the xiaozhi perception path): one row per
// transaction, `count` rows, with SQLite's usual busy timeout. Prints "STARTED" once, then its count.
const Database = require('better-sqlite3');
const [file, count] = [process.argv[2], Number(process.argv[3])];
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const st = db.prepare(
  "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) VALUES (?, ?, ?, 'daily', ?, ?, 'default', 0.5)",
);
process.stderr.write('STARTED\n');
let written = 0;
for (let i = 0; i < count; i++) {
  const id = `other-${process.pid}-${i}`;
  const ts = new Date().toISOString();
  st.run(id, id, `perception note ${i}`, ts, ts);
  written++;
}
db.close();
process.stdout.write(String(written));
