// Runs the real pi INTERACTIVELY in a real terminal: a detached tmux session (Debian's tmux, a tmux
// server of its own per start: `tmux -L <unique socket>`), its screen read as a person sees it with
// `tmux capture-pane -p`. pi gets a throwaway HOME and PI_CODING_AGENT_DIR (models.json for the mock
// model: no network) and exactly the environment given (`env -i`), like pi-rpc.mjs does for RPC mode.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { TARGETS, modelsJson, nodeBin, root } from './pi-rpc.mjs';

let starts = 0;

/** Fails with what to do when there is no tmux (CI installs Debian's; so must a developer). */
function requireTmux() {
  try { execFileSync('tmux', ['-V'], { encoding: 'utf8' }); } catch (e) {
    throw new Error(`the terminal tests need tmux (Debian: apt-get install tmux): ${e.message}`);
  }
}
const quote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

/**
 * Starts pi (`target`: a TARGETS key) with this package in a `cols`×`rows` terminal. `home` is pi's
 * HOME (made by the caller, left to it); `env` is the whole environment besides HOME,
 * PI_CODING_AGENT_DIR, TERM and pi's offline switches (PATH included).
 */
export function startTmuxPi({ target = '0.74.0', modelBaseUrl, home, env = {}, cols = 120, rows = 40 }) {
  requireTmux();
  const { cli, node } = TARGETS[target];
  const agentDir = path.join(home, '.pi', 'agent');
  fs.mkdirSync(agentDir, { recursive: true });
  fs.writeFileSync(path.join(agentDir, 'models.json'), JSON.stringify(modelsJson(modelBaseUrl), null, 2));
  const cwd = fs.mkdtempSync(path.join(home, 'cwd-'));
  const vars = { HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0', TERM: 'xterm-256color', ...env };
  const argv = [nodeBin(node), cli, '--provider', 'mock', '--model', 'mock-model', '--no-session', '-e', root];
  const script = path.join(home, 'pi-in-tmux.sh');
  fs.writeFileSync(script, `cd ${quote(cwd)}\nexec env -i ${Object.entries(vars).map(([k, v]) => quote(`${k}=${v}`)).join(' ')} ${argv.map(quote).join(' ')}\n`);
  const conf = path.join(home, 'tmux.conf');
  fs.writeFileSync(conf, 'set -g remain-on-exit on\n'); // a pi that dies leaves its last screen to read
  const socket = `dotty-e2e-${process.pid}-${++starts}`;
  const tmux = (...args) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', timeout: 10_000 });
  tmux('-f', conf, 'new-session', '-d', '-s', 'pi', '-x', String(cols), '-y', String(rows), 'sh', script);

  const t = {
    socket,
    /** The screen now, one string (capture-pane -p: text only, no colours). */
    screen: () => tmux('capture-pane', '-p', '-t', 'pi'),
    /** Types `text` literally, then presses Enter when `enter`. */
    type(text, { enter = true } = {}) {
      tmux('send-keys', '-t', 'pi', '-l', text);
      if (enter) tmux('send-keys', '-t', 'pi', 'Enter');
    },
    /** Resolves with the screen once `ok(screen)` holds; polls the pane until `ms` runs out, then fails with the last screen. */
    async waitForScreen(ok, { what = 'the expected screen', ms = 60_000 } = {}) {
      const deadline = Date.now() + ms;
      for (;;) {
        const s = t.screen();
        if (ok(s)) return s;
        if (Date.now() > deadline) throw new Error(`no ${what} on the screen within ${ms} ms; it shows:\n${s}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    /** pi's pid (the pane's process: the script execs env, which execs node). */
    pid: () => Number(tmux('display-message', '-p', '-t', 'pi', '#{pane_pid}').trim()),
    dead: () => tmux('display-message', '-p', '-t', 'pi', '#{pane_dead}').trim() === '1',
    /** Quits pi as a person does (ctrl+d on the empty editor), waits for it to end, then stops the tmux server. */
    async close(ms = 15_000) {
      try {
        if (!t.dead()) tmux('send-keys', '-t', 'pi', 'C-d');
        const deadline = Date.now() + ms;
        while (!t.dead() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      } finally {
        try { tmux('kill-server'); } catch { /* already gone */ }
        // The socket tmux -L made (tmux leaves the file behind).
        fs.rmSync(path.join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid()}`, socket), { force: true });
      }
    },
  };
  return t;
}

/** The screen's lines that hold `text`. */
export const linesWith = (screen, text) => screen.split('\n').filter((l) => l.includes(text));
