// Another program writing brain.db (ZeroClaw, the xiaozhi perception path), like
// __test__/helpers/writer-loop.cjs but until stopped, with SQLite's usual busy_timeout 5000.
//   node writer.cjs <file> loop   one row per transaction, as fast as it can
//   node writer.cjs <file> bulk   a 50 ms transaction (200 rows, lock held), then 100 ms idle, repeated
// Prints "STARTED" on stderr once; on SIGTERM prints its row count on stdout and exits.
const path = require('node:path');
const Database = require(path.resolve(__dirname, '../../node_modules/better-sqlite3'));
const [file, mode = 'loop'] = process.argv.slice(2);
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const st = db.prepare(
  "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) VALUES (?, ?, ?, 'daily', ?, ?, 'default', 0.5)",
);
let written = 0, stop = false;
const row = () => {
  const id = `other-${process.pid}-${written}`;
  const ts = new Date().toISOString();
  st.run(id, id, `perception note ${written}: someone walked through the hallway`, ts, ts);
  written++;
};
const finish = () => { db.close(); process.stdout.write(String(written)); };
process.on('SIGTERM', () => { stop = true; });
process.stderr.write('STARTED\n');
if (mode === 'bulk') {
  (function burst() {
    if (stop) return finish();
    db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < 200; i++) row();
    setTimeout(() => { db.exec('COMMIT'); setTimeout(burst, 100); }, 50);
  })();
} else {
  (function loop() {
    // 20 single-row transactions, then a turn of the event loop to notice SIGTERM.
    for (let i = 0; i < 20; i++) row();
    if (stop) return finish();
    setImmediate(loop);
  })();
}
