'use strict';
// Another program on the same brain.db, with better-sqlite3 in a process of its own (never beside
// the addon: see __test__/helpers/sqlite-child.cjs). Forked by soak/run.mjs with an IPC channel;
// runs until it gets 'stop', then sends what it did and exits.
//
//   rival.cjs writer  <file> <name> [--locker]   inserts rows of its own in a loop, 0-`pause` ms apart
//                                                 (xiaozhi's perception path); --locker also takes the
//                                                 write lock (BEGIN IMMEDIATE) at random moments and
//                                                 holds it up to `maxHoldMs`, logging each hold
//   rival.cjs zeroclaw <file> <cutoff-iso>        ZeroClaw's hygiene: deletes and updates rows created
//                                                 before the cutoff (the soak's start), never newer ones
const Database = require('better-sqlite3');

const [mode, file, arg] = process.argv.slice(2);
const opt = JSON.parse(process.env.SOAK_RIVAL_OPTS || '{}');
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const rnd = (a, b) => a + Math.random() * (b - a);
const now = () => new Date().toISOString();
let stopping = false;
const out = { mode, name: arg, written: 0, ids: [], holds: [], deletes: 0, updates: 0, busy: 0, errors: [] };

function guard(fn) {
  try {
    fn();
  } catch (e) {
    if (e.code === 'SQLITE_BUSY') out.busy++;
    else if (out.errors.length < 20) out.errors.push(`${e.code}: ${e.message}`);
  }
}

function writer() {
  const name = arg;
  const st = db.prepare(
    "INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) VALUES (?, ?, ?, 'daily', ?, ?, 'default', 0.5)",
  );
  let i = 0;
  const insertOne = () => {
    const id = `rival-${name}-${i}`;
    const ts = now();
    st.run(id, id, `perception note from ${name} number ${i}`, ts, ts);
    out.ids.push(id);
    out.written++;
    i++;
  };
  const locker = process.argv.includes('--locker');
  let nextHold = Date.now() + rnd(opt.holdGapMinMs ?? 500, opt.holdGapMaxMs ?? 2500);
  const step = () => {
    if (stopping) return finish();
    if (locker && Date.now() >= nextHold) {
      // Hold the write lock for up to maxHoldMs, as a long ZeroClaw transaction would.
      const ms = rnd(opt.minHoldMs ?? 200, opt.maxHoldMs ?? 4000);
      let began = false;
      guard(() => {
        db.exec('BEGIN IMMEDIATE');
        began = true;
        insertOne();
      });
      if (!began) {
        nextHold = Date.now() + 100;
        return setImmediate(step);
      }
      const from = Date.now();
      return setTimeout(() => {
        guard(() => db.exec('COMMIT'));
        out.holds.push([from, Date.now()]);
        nextHold = Date.now() + rnd(opt.holdGapMinMs ?? 500, opt.holdGapMaxMs ?? 2500);
        step();
      }, ms);
    }
    guard(insertOne);
    const pause = rnd(0, opt.pauseMs ?? 10);
    return pause < 1 ? setImmediate(step) : setTimeout(step, pause);
  };
  step();
}

function zeroclaw() {
  const cutoff = arg;
  // Only rows made before the soak started: those this process may delete or rewrite.
  const del = db.prepare(
    'DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE created_at < ? ORDER BY random() LIMIT ?)',
  );
  const upd = db.prepare(
    "UPDATE memories SET importance = importance * 0.9, content = content || ' (reviewed)', updated_at = ? " +
      'WHERE id IN (SELECT id FROM memories WHERE created_at < ? ORDER BY random() LIMIT ?)',
  );
  const step = () => {
    if (stopping) return finish();
    guard(() => {
      if (Math.random() < 0.5) out.deletes += del.run(cutoff, Math.floor(rnd(1, 6))).changes;
      else out.updates += upd.run(now(), cutoff, Math.floor(rnd(1, 11))).changes;
    });
    setTimeout(step, rnd(20, opt.zeroclawGapMs ?? 200));
  };
  step();
}

function finish() {
  db.close();
  process.send(out, () => process.exit(0));
}

process.on('message', (m) => {
  if (m === 'stop') stopping = true;
});
if (mode === 'writer') writer();
else if (mode === 'zeroclaw') zeroclaw();
else throw new Error(`unknown mode ${mode}`);
process.send('started');
