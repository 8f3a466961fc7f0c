#!/usr/bin/env node
'use strict';
// The operator's command line: parses argv, calls the native core, prints. No check logic here (src/doctor/).
const USAGE = {
  main: `usage: dotty-pi-ext <command> [options]

commands:
  doctor [--json]            check configuration, brain.db, home services, the palace, pi and Node
  call <tool> [json-args]    run one voice or palace tool as pi would and print its reply
  feed [--dry-run]           run the transcript feed once (dry run: say what would be sent)
  clean-turns [--dry-run] [--backup PATH|none]
                             clean old conversation rows of the voice provider's prompt rules

\`dotty-pi-ext <command> --help\` for more.`,
  doctor: `usage: dotty-pi-ext doctor [--json]

Read-only checks, one line each with ok / warn / fail and the fix for each problem.
  --json   the report as JSON ({status, exitCode, checks: [{name, status, detail, fix}]})
Exit status: 0 all ok, 1 warnings, 2 failures. Never writes anything, never creates brain.db.`,
  call: `usage: dotty-pi-ext call <tool> [json-args]

Runs one tool through the same native callTool path pi uses and prints the reply text.
  e.g. dotty-pi-ext call memory_lookup '{"query":"birthday"}'
Exit status 1 when the tool fails (a palace tool's error) or the arguments are not JSON.`,
  feed: `usage: dotty-pi-ext feed [--dry-run]

Runs the transcript feed to the palace once and says what it sent.
  --dry-run   say what would be staged and sent; writes and sends nothing`,
  'clean-turns': `usage: dotty-pi-ext clean-turns [--dry-run] [--backup PATH|none]

Rewrites brain.db's conversation rows that older loggers stored with the voice provider's prompt
scaffolding inside ("HARD CONSTRAINTS for THIS reply ..."), so searches stop matching the rules.
Safe while pi, ZeroClaw and the perception path write the same file: short transactions, and a row
changed by another writer meanwhile is left alone (and counted). Idempotent.
  --dry-run        say how many rows would change, with three examples; writes nothing
  --backup PATH    write the backup (VACUUM INTO, mode 0600) to PATH, which must not exist
  --backup none    no backup (default: brain.db.before-clean-turns-<time> beside brain.db)
Exit status: 0 done, 1 failed (the counts say what was written), 2 usage.`,
};

const [command, ...rest] = process.argv.slice(2);
const out = (s) => process.stdout.write(s.endsWith('\n') ? s : s + '\n');
const fail = (msg, code = 2) => { process.stderr.write(`dotty-pi-ext: ${msg}\n`); process.exit(code); };
const color = !!process.stdout.isTTY && !process.env.NO_COLOR;

function progress(what) {
  const t = setTimeout(() => process.stderr.write(`dotty-pi-ext: ${what}…\n`), 1000);
  return () => clearTimeout(t);
}

/** Splits argv into flags, plain arguments and the values of the options in `valued` (`--opt V` or `--opt=V`). */
function parseArgs(argv, valued) {
  const flags = [], args = [], values = {};
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].startsWith('--') ? argv[i].split(/=(.*)/s) : [null];
    if (!flag) { args.push(argv[i]); continue; }
    flags.push(flag);
    if (valued.includes(flag)) values[flag] = inline ?? argv[++i] ?? '';
  }
  return { flags, args, values };
}

function loadNative() {
  try { return require('../native.js'); } catch (e) { fail(`native module unavailable: ${e.message}`); }
}

async function main() {
  if (!command || command === '--help' || command === '-h' || command === 'help') { out(USAGE.main); return command ? 0 : 2; }
  if (!USAGE[command]) { process.stderr.write(`dotty-pi-ext: unknown command ${JSON.stringify(command)}\n${USAGE.main}\n`); return 2; }
  if (rest.includes('--help') || rest.includes('-h')) { out(USAGE[command]); return 0; }
  const { flags, args, values } = parseArgs(rest, command === 'clean-turns' ? ['--backup'] : []);
  const allowed = { doctor: ['--json'], call: [], feed: ['--dry-run'], 'clean-turns': ['--dry-run', '--backup'] }[command];
  const bad = flags.find((f) => !allowed.includes(f));
  if (bad) { process.stderr.write(`dotty-pi-ext ${command}: unknown option ${bad}\n${USAGE[command]}\n`); return 2; }
  const native = loadNative();
  if (command === 'doctor') {
    const done = progress('checking (the palace handshake can take a few seconds)');
    const r = await native.doctor(flags.includes('--json'), color, process.versions.node, process.execPath);
    done();
    out(r.text);
    return r.exitCode;
  }
  if (command === 'call') {
    if (args.length < 1 || args.length > 2) { process.stderr.write(`${USAGE.call}\n`); return 2; }
    let params = {};
    if (args[1] !== undefined) { try { params = JSON.parse(args[1]); } catch (e) { fail(`json-args is not JSON: ${e.message}`, 1); } }
    native.init();
    const done = progress(`calling ${args[0]}`);
    try {
      const reply = await native.callTool(args[0], params, 1);
      done();
      out(reply.text);
      return 0;
    } catch (e) {
      done();
      process.stderr.write(`dotty-pi-ext call ${args[0]}: ${e.message}\n`);
      return 1;
    } finally { await native.flushTurnLog(); }
  }
  if (command === 'clean-turns') {
    if (args.length || values['--backup'] === '') { process.stderr.write(`${USAGE[command]}\n`); return 2; }
    const r = await native.cleanTurns(flags.includes('--dry-run'), values['--backup']);
    (r.exitCode ? process.stderr : process.stdout).write(r.text);
    return r.exitCode;
  }
  if (command === 'feed') {
    if (flags.includes('--dry-run')) { out(native.feedPlan()); return 0; }
    native.init();
    const done = progress('feeding the palace');
    const r = await native.feedOnce();
    done();
    await native.flushTurnLog();
    out(r.text);
    return r.ok ? 0 : 1;
  }
  return 2;
}

main().then((code) => process.exit(code), (e) => fail(e && e.stack || String(e)));
