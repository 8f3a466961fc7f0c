// The brain half's pi-like process: loads the package through index.js into a fake pi (as pi
// does), then runs `remember` through the registered tool's execute() and fires agent_end with
// one turn's messages, interleaved, `concurrency` at a time and without pauses. Forked by
// soak/run.mjs (environment: DOTTY_BRAIN_DB, MEMPALACE_BRIDGE=0); sends its figures back over IPC.
import { loadExtension, native } from '../__test__/helpers/fake-pi.mjs';
import { factText, pool, startMonitor, turnAnswer, turnRetried, turnUser } from './common.mjs';

const { runId, remembers, turns, concurrency, turnBaseTs, minSeconds } = JSON.parse(process.env.SOAK_BRAIN_OPTS);

async function main() {
  const pi = loadExtension();
  if (!pi.tools.has('remember')) throw new Error(`remember not registered (tools: ${[...pi.tools.keys()]})`);
  const mon = startMonitor();
  await mon.ready;
  const failures = [];
  const total = remembers + turns;
  let r = 0, t = 0, remembered = 0, turnHandlerMaxMs = 0, warmedUp = false;
  const t0 = Date.now();
  // The counts are a floor, and so is the duration: at full speed the counts take a second or two,
  // too short a window to judge memory by, so the same mix goes on until `minSeconds` have passed.
  // Every op made is counted exactly (brain-half.mjs checks `remembersMade` facts and `turnsFired` turns).
  const minMs = minSeconds * 1000;
  const more = (j) => j < total || Date.now() - t0 < minMs;
  await pool(more, concurrency, async (j) => {
    // Warm-up is the first quarter of the run: of the counts and of the minimum duration.
    if (!warmedUp && j >= Math.floor(total / 4) && Date.now() - t0 >= minMs / 4) {
      warmedUp = true;
      mon.retained('warm-up');
    }
    // Op j is a turn when it crosses the next multiple of total/turns: turns spread evenly.
    if (Math.floor(((j + 1) * turns) / total) > Math.floor((j * turns) / total)) {
      const i = t++;
      const user = { role: 'user', content: [{ type: 'text', text: turnUser(runId, i) }], timestamp: turnBaseTs + i };
      // Some turns end twice, as pi's automatic retry does: the same prompt with a new answer,
      // right after the first (its row may not be written yet). The row must be rewritten, once.
      for (const retry of turnRetried(i) ? [false, true] : [false]) {
        const messages = [user, { role: 'assistant', content: [{ type: 'text', text: turnAnswer(i, retry) }] }];
        // As pi does (it awaits each handler), timing only the handlers' synchronous part: an
        // await would also count whatever else the event loop ran meanwhile.
        const h0 = performance.now();
        const pending = pi.handlers.get('agent_end').map((h) => h({ messages }, {}));
        turnHandlerMaxMs = Math.max(turnHandlerMaxMs, performance.now() - h0);
        await Promise.all(pending);
      }
      return;
    }
    const i = r++;
    const c0 = Date.now();
    const text = await pi.text('remember', { fact: factText(runId, i) });
    if (text === '(remembered)') remembered++;
    else failures.push({ i, text, from: c0, to: Date.now() });
  });
  const loadMs = Date.now() - t0;
  // pi's quit: the queued conversation rows are written before the extension lets pi go on.
  await pi.emit('session_shutdown', { reason: 'quit' });
  await native().flushTurnLog();
  const drainMs = Date.now() - t0 - loadMs;
  const figures = await mon.stop();
  mon.retained('end'); // after stop(): its forced GC is outside the figures, and lands in figures.retained
  figures.handles.settled = await mon.settled();
  process.send({
    remembersMade: r,
    remembered,
    failures,
    turnsFired: t,
    turnHandlerMaxMs,
    t0,
    loadMs,
    drainMs,
    stats: native().stats(),
    ...figures,
  }, () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`pi-brain: ${e.stack}\n`);
  process.exit(1);
});
