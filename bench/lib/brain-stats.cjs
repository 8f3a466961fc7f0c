// Counts for bench/clean-turns.mjs, with better-sqlite3 in a process of its own (never beside the
// addon: see __test__/helpers/sqlite-child.cjs). stdin: {file, clean?}; stdout: JSON.
//   rows, conversation (category), userRows (content starts `user: `),
//   differFromClean (rows whose content differs from the same rowid in `clean`, the file of the same
//   size without pollution), cutInMarker (of those, rows the read side leaves with a cut marker: no whole marker to find),
//   hardConstraintsHits (FTS phrase "HARD CONSTRAINTS"), ftsIntegrity ('ok' or the error).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const Database = require(path.resolve(__dirname, '../../node_modules/better-sqlite3'));
const { cleanRow } = require('../peers/text.cjs');

const req = JSON.parse(fs.readFileSync(0, 'utf8'));
const db = new Database(req.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const one = (sql) => db.prepare(sql).pluck().get();
const out = {
  rows: one('SELECT count(*) FROM memories'),
  conversation: one("SELECT count(*) FROM memories WHERE category = 'conversation'"),
  userRows: one("SELECT count(*) FROM memories WHERE substr(content, 1, 6) = 'user: '"),
  hardConstraintsHits: one(`SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '"HARD CONSTRAINTS"'`),
};
try { db.exec("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')"); out.ftsIntegrity = 'ok'; }
catch (e) { out.ftsIntegrity = e.message; }
if (req.clean) {
  db.exec(`ATTACH DATABASE '${req.clean.replace(/'/g, "''")}' AS clean`);
  const differ = db.prepare('SELECT m.content FROM memories m JOIN clean.memories c ON c.rowid = m.rowid WHERE m.content IS NOT c.content').pluck().all();
  out.differFromClean = differ.length;
  // The generator's words hold no newline: a user half that still has one after the read side's
  // cleaning ends in a cut marker (`…\n\n---\nHARD CONSTRAIN`).
  const userHalf = (c) => { const i = c.indexOf(' | assistant: '); return i < 0 ? c : c.slice(0, i); };
  out.cutInMarker = differ.filter((c) => userHalf(cleanRow(c)).includes('\n')).length;
}
db.close();
process.stdout.write(JSON.stringify(out));
