// Waiting for a transcript feed to end, as an event: `<agentDir>/mempalace-feed/last-outcome.json`
// is written when a feed ends (src/palace/feed/outcome.rs), and a change of its folder is watched.
import fs from 'node:fs';
import path from 'node:path';

/**
 * Resolves with the outcome once last-outcome.json names a feed of `reason` that ended; rejects
 * after `ms` with `detail()` (pi's stderr, say) in the message.
 */
export function feedEnded(agentDir, reason, { ms = 60_000, detail = () => '' } = {}) {
  const file = path.join(agentDir, 'mempalace-feed', 'last-outcome.json');
  const ended = () => { try { const o = JSON.parse(fs.readFileSync(file, 'utf8')); return o.reason === reason && o; } catch { return false; } };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  return new Promise((resolve, reject) => {
    const watcher = fs.watch(path.dirname(file), () => { const o = ended(); if (o) finish(o); });
    const timer = setTimeout(() => { watcher.close(); reject(new Error(`no ${reason} feed ended within ${ms} ms\n${detail()}`)); }, ms);
    const finish = (o) => { clearTimeout(timer); watcher.close(); resolve(o); };
    const o = ended();
    if (o) finish(o);
  });
}
