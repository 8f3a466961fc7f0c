// Another program writing brain.db in a loop (ZeroClaw, the xiaozhi perception path), like
// __test__/helpers/writer-loop.cjs but until stopped: one row per transaction, busy_timeout 5000.
// Prints "STARTED" on stderr once; on SIGTERM prints its row count on stdout and exits.
const path = require('node:path');
const Database = require(path.resolve(__dirname, '../../node_modules/better-sqlite3'));
const db = new Database(process.argv[2], { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const st = db.prepare(
  "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) VALUES (?, ?, ?, 'daily', ?, ?, 'default', 0.5)",
);
let written = 0, stop = false;
process.on('SIGTERM', () => { stop = true; });
process.stderr.write('STARTED\n');
(function loop() {
  // Batches of 20 single-row transactions, then a turn of the event loop to notice SIGTERM.
  for (let i = 0; i < 20; i++) {
    const id = `other-${process.pid}-${written}`;
    const ts = new Date().toISOString();
    st.run(id, id, `perception note ${written}: someone walked through the hallway`, ts, ts);
    written++;
  }
  if (stop) { db.close(); process.stdout.write(String(written)); return; }
  setImmediate(loop);
})();
