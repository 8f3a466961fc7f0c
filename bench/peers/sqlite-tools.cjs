// The yardstick for the brain.db tools and the per-turn log: the production TypeScript way.
// better-sqlite3 (12.x), one connection opened once, synchronous calls on the JS thread, the
// contract's SQL (docs/voice-tools.md) and its reply shaping. Not product code:
// small and faithful, so that the native side is compared with what it replaces.
'use strict';
const path = require('node:path');
const crypto = require('node:crypto');
const Database = require(path.resolve(__dirname, '../../node_modules/better-sqlite3'));

const { strip, take, ellipsize, spoken, cleanRow } = require('./text.cjs');

function createSqliteTools(file) {
  const db = new Database(file, { fileMustExist: true });
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  const lookupSt = db.prepare(
    `SELECT m.content FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
     WHERE memories_fts MATCH ? AND m.namespace NOT LIKE 'person_pending:%' ORDER BY rank LIMIT 5`,
  ).pluck();
  const personSt = db.prepare(
    "SELECT content FROM memories WHERE namespace = 'person:' || ? ORDER BY importance DESC, updated_at DESC LIMIT ?",
  ).pluck();
  const insertSt = db.prepare(
    `INSERT INTO memories (id, key, content, category, embedding, created_at, updated_at, session_id, namespace, importance, superseded_by)
     VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, ?, ?, NULL)`,
  );
  function insert(content, category, namespace, importance) {
    const id = crypto.randomUUID();
    const ts = new Date().toISOString();
    insertSt.run(id, `voice_${category}_${ts}_${id.slice(0, 8)}`, content, category, ts, ts, namespace, importance);
    return id;
  }

  function memory_lookup({ query } = {}) {
    const q = strip(query ?? '');
    if (!q) return '(empty query)';
    try {
      const rows = lookupSt.all('"' + q.replace(/"/g, '""') + '"');
      if (!rows.length) return '(no memories found)';
      // Rows older loggers stored with the voice provider's rules inside are read back clean (step 5).
      return rows.slice(0, 3).map((c) => ellipsize(strip(cleanRow(c)), 200)).join(' | ');
    } catch (e) {
      process.stderr.write(`memory_lookup: ${e.message}\n`);
      return '(no memories found)';
    }
  }

  function remember({ fact } = {}) {
    const f = strip(fact ?? '');
    if (!f) return '(empty fact)';
    try { insert(take(f, 300), 'core', 'voice', 0.7); return '(remembered)'; }
    catch (e) { process.stderr.write(`remember: ${e.message}\n`); return '(remember failed)'; }
  }

  function recall_person({ name } = {}, max = 6) {
    const n = strip(name ?? '');
    if (!n) return '(no person specified)';
    let facts = [];
    try { facts = personSt.all(n.toLowerCase(), max).map((c) => strip(c ?? '')).filter(Boolean).map((c) => ellipsize(c, 200)); }
    catch (e) { process.stderr.write(`recall_person: ${e.message}\n`); }
    return facts.length ? facts.join(' | ') : `(nothing remembered about ${n})`;
  }

  // The per-turn log as production TS did it: a synchronous INSERT inside the agent_end handler.
  const textOf = (c) => (typeof c === 'string' ? c : Array.isArray(c) ? c.filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('') : '');
  let lastKey;
  function logTurn(messages) {
    if (!Array.isArray(messages)) return false;
    let u = -1;
    for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user') { u = i; break; }
    const user = spoken(u >= 0 ? textOf(messages[u].content) : ''); // the words, without the provider's scaffolding
    const assistant = strip(messages.slice(u + 1).filter((m) => m?.role === 'assistant').map((m) => textOf(m.content)).join(''));
    if (!user && !assistant) return false;
    const key = u >= 0 && messages[u].timestamp != null ? `${messages[u].timestamp}\0${user}` : undefined;
    if (key && key === lastKey) return false; // pi's auto-retry of the same prompt
    lastKey = key;
    try { insert(`user: ${take(user, 500)} | assistant: ${take(assistant, 1000)}`, 'conversation', 'voice', 0.3); return true; }
    catch (e) { process.stderr.write(`turn log: ${e.message}\n`); return false; }
  }

  const tools = { memory_lookup, remember, recall_person };
  return {
    db,
    tools,
    /** As pi calls a tool: an async execute whose body runs synchronously on the JS thread. */
    async callTool(name, params) { return { text: tools[name](params ?? {}) }; },
    logTurn,
    close: () => db.close(),
  };
}

module.exports = { createSqliteTools, strip, take, ellipsize };
