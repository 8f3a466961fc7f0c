// SIGSTOP that has taken effect: kill() only queues the signal, and on a loaded machine a server
// not yet stopped still answers what arrives meanwhile (a test of "a stopped server" then sees an
// answer). CommonJS, so that a runNode body can require it too.
const fs = require('node:fs');

/** Whether every thread of `pid` is stopped (`T` in /proc/<pid>/task/<tid>/stat; a gone thread counts). */
function stopped(pid) {
  return fs.readdirSync(`/proc/${pid}/task`).every((tid) => {
    let stat;
    try { stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'); } catch { return true; }
    // The state follows the command's closing parenthesis.
    return stat.slice(stat.lastIndexOf(') ') + 2).startsWith('T');
  });
}

/** Sends SIGSTOP to `pid` and resolves once all its threads are stopped. */
exports.stopProcess = async function stopProcess(pid, timeoutMs = 10_000) {
  process.kill(pid, 'SIGSTOP');
  const t0 = Date.now();
  while (!stopped(pid)) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`pid ${pid} did not stop within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};
