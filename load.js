'use strict';
// What index.js needs around the native module: loading it (a missing or unloadable binary is
// reported on stderr, never thrown) and converting the core's descriptors (tools, commands, the
// footer status) and pi's shapes into each other.
let Type;
try { ({ Type } = require('@sinclair/typebox')); } catch { Type = { Unsafe: (schema) => schema }; }
let nextCallId = 1;

let unloaded = null; // why the native module is missing, until it is said

/**
 * The native module, or null: why, with what to do about it, is said on stderr, or, while pi's
 * stdout is a terminal (pi may draw its UI there), held for `unavailable` to say.
 */
exports.loadNative = function loadNative(load = () => require('./native.js')) {
  try {
    return load();
  } catch (e) {
    unloaded = `[dotty-pi-ext] native module unavailable, no tools registered: ${e.message}\n${loadHelp(e)}`;
    if (!process.stdout.isTTY) { console.error(unloaded); unloaded = null; }
    return null;
  }
};

/**
 * Without the native module there is no core to say where a line goes, so its one rule
 * (src/diag.rs, `Surface::of`) is applied here to the held line: at `session_start`, pi's terminal
 * UI gets it once through `ctx.ui.notify`, anything else stderr.
 */
exports.unavailable = function unavailable(pi) {
  if (unloaded == null) return;
  pi.on('session_start', (_e, ctx) => {
    const line = unloaded;
    unloaded = null;
    if (line == null) return;
    const themes = (() => { try { return ctx?.ui?.getAllThemes?.()?.length ?? 0; } catch { return 0; } })();
    const terminal = typeof ctx?.mode === 'string' ? ctx.mode === 'tui' : !!ctx?.hasUI && themes > 0;
    if (terminal) { try { ctx.ui.notify(line.replace(/^\[dotty-pi-ext\] /, ''), 'warning'); return; } catch { /* gone */ } }
    console.error(line);
  });
};

/**
 * A native tool descriptor as pi registers it: TypeBox parameters, and an `execute` whose AbortSignal
 * cancels the native call.
 */
exports.piTool = function piTool(native, tool) {
  async function execute(_toolCallId, params, signal) {
    const callId = nextCallId++;
    const abort = () => native.cancelCall(callId);
    signal?.addEventListener('abort', abort, { once: true });
    try {
      return { content: (await native.callTool(tool.name, params ?? {}, callId)).content, details: {} };
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }
  return { ...tool, parameters: Type.Unsafe(tool.parameters), execute };
};

/** A native command descriptor as pi registers it: its handler runs the command and hands its outcome to pi. */
exports.piCommand = function piCommand(native, pi, command, refresh) {
  async function handler(args, ctx) {
    const { userMessage, notice } = await native.runCommand(command.name, args ?? '');
    if (userMessage != null) pi.sendUserMessage(userMessage);
    if (notice == null) return;
    refresh(ctx);
    ctx?.ui?.notify?.(notice, 'info');
  }
  return { description: command.description, handler };
};

/**
 * Registers the palace tools pi may have now and adds the tool that reaches them (pi 1.x's
 * `codemode` or `tool_search`) to pi's active set when the core says so; a failure is said through
 * the core's message sink, never thrown at pi.
 */
exports.palaceRegistrar = function palaceRegistrar(native, pi, registry, register) {
  return function registerPalace() {
    try {
      const { tools, activate } = registry.newPalaceTools(piView(pi));
      tools.forEach(register);
      if (activate.length > 0) pi.setActiveTools([...pi.getActiveTools(), ...activate]);
    } catch (e) {
      native.warn(`palace tools not registered: ${e.message}`);
    }
  };
};

/**
 * What pi offers, off `getAllTools()` (null while pi loads extensions: it throws then): every
 * tool's name, whether pi reports tool exposure, the tools that reach others (`reachesTools`), the
 * active set.
 */
function piView(pi) {
  try {
    const all = pi.getAllTools();
    const reaching = all.filter((t) => typeof t.reachesTools === 'function').map((t) => t.name);
    const active = typeof pi.getActiveTools === 'function' ? pi.getActiveTools() : [];
    return { names: all.map((t) => t.name), exposure: all.some((t) => 'exposure' in t), reaching, active };
  } catch { return null; }
}

/** pi 1.x's `before_agent_start`: the core's section on the palace tools not declared, in the system prompt. */
exports.palaceSection = function palaceSection(native, event) {
  const sections = event?.systemPromptOptions?.sections;
  if (!sections) return; // pi 0.73/0.74: no sections, nothing to ask the core on every turn
  const text = native.palacePromptSection();
  if (text != null) sections.mempalace = text;
  else delete sections.mempalace;
};

/** Whether the session `session_start` reports already holds messages. */
function hasMessages(ctx) {
  return !!ctx?.sessionManager?.getEntries?.()?.some((e) => e.type === 'message');
}
exports.hasMessages = hasMessages;

/** The hidden messages extensions put on the session's branch: [{customType, text}]. */
function earlierMessages(ctx) {
  const sm = ctx?.sessionManager;
  let entries;
  try { entries = (typeof sm?.getBranch === 'function' ? sm.getBranch() : sm?.getEntries?.()) ?? []; } catch { entries = []; }
  const text = (c) => (typeof c === 'string' ? c : Array.isArray(c) ? c.filter((p) => p?.type === 'text').map((p) => String(p.text)).join('\n') : '');
  return entries.filter((e) => e?.type === 'custom_message' && typeof e.customType === 'string').map((e) => ({ customType: e.customType, text: text(e.content) }));
}

/** pi's `ctx.cwd` (the session's working directory), or null. */
function cwdOf(ctx) {
  return typeof ctx?.cwd === 'string' ? ctx.cwd : null;
}

/** pi 1.x's `ctx.isProjectTrusted()`; null on a pi without project trust (0.7x) or when it throws. */
function projectTrusted(ctx) {
  try { return typeof ctx?.isProjectTrusted === 'function' ? !!ctx.isProjectTrusted() : null; } catch { return null; }
}

/**
 * pi's handlers of the events the core describes (`native.piEvents()`), by the name of the native
 * call each ends in: each only hands pi's event to it (`speak`: the notices, `refresh`: the palace
 * tools and footer, `show`: the footer alone). `redactPiWrite` puts what the core returns in place
 * of `tool_call`'s `event.input` (pi runs the call with that object); `notePiWrite` adds the core's
 * text block to `tool_result`'s content. Neither throws at pi: a failure is one line.
 */
exports.eventHandlers = function eventHandlers(native, { speak, refresh, show }) {
  return {
    sessionStart(e, ctx) {
      speak.start(ctx, () => show(ctx));
      native.sessionStart(e?.reason ?? 'startup', hasMessages(ctx), earlierMessages(ctx), cwdOf(ctx), projectTrusted(ctx));
      refresh(ctx);
    },
    logTurn(e) { native.logTurn(e?.messages ?? []); },
    sessionShutdown(e) { speak.stop(e?.reason); return native.sessionShutdown(e?.reason ?? 'quit'); },
    agentSettled() { native.agentSettled(); },
    beforeCompact() { native.beforeCompact(); }, // returns nothing: pi compacts as it would, at once
    async beforeAgentStart(e, ctx) {
      // First: the recall budget counts from this call. The rest follows the core's answer, which
      // adopts a palace back on its own since the last prompt (holding its handshake meanwhile):
      // then its tools are registered for this run and the section says how to reach them.
      try {
        return (await native.beforeAgentStart(e?.messageType, e?.prompt)) ?? undefined;
      } finally {
        refresh(ctx);
        exports.palaceSection(native, e);
      }
    },
    async recall() {
      return (await native.recall()) ?? undefined;
    },
    redactPiWrite(e) {
      try {
        if (e?.input === null || typeof e?.input !== 'object') return;
        const input = native.redactPiWrite(String(e.toolCallId ?? ''), String(e.toolName ?? ''), e.input);
        if (input == null) return;
        for (const key of Object.keys(e.input)) delete e.input[key]; // keys may have been redacted too
        Object.assign(e.input, input);
      } catch (err) { said(native, `${e?.toolName}: its input was not redacted: ${err?.message}`); }
    },
    notePiWrite(e) {
      try {
        const text = native.notePiWrite(String(e?.toolCallId ?? ''), e?.parentToolCallId ?? null);
        if (text == null) return undefined;
        const kept = e.structuredContent === undefined ? {} : { structuredContent: e.structuredContent };
        return { content: [...(Array.isArray(e.content) ? e.content : []), { type: 'text', text }], ...kept };
      } catch (err) { said(native, `${e?.toolName}: the redaction note was not added: ${err?.message}`); return undefined; }
    },
  };
};

/** Says `text` through the core's sink, else on stderr: never throws at pi. */
function said(native, text) {
  try { native.warn(text); } catch { console.error(`[dotty-pi-ext] ${text}`); }
}

let releaseOnExit = false;

/**
 * Where what the core says goes (src/diag.rs decides; this only hands it pi's facts). From the
 * entry's load, while pi's stdout is a terminal, it waits; `start(ctx, after)` at `session_start`
 * tells the core what pi's context says of its UI: in the interactive terminal each line goes once
 * to `ctx.ui.notify` (then `after()` runs: the footer is brought up to date), anywhere else to
 * stderr as before. `stop(reason)` at `session_shutdown`: on quit pi's terminal UI is gone, so
 * stderr again. Lines still waiting when the process exits are written to stderr then.
 */
exports.notices = function notices(native) {
  native.holdNotices(!!process.stdout.isTTY);
  if (!releaseOnExit) {
    releaseOnExit = true;
    process.once('exit', () => native.releaseNotices());
  }
  return {
    start(ctx, after = () => {}) {
      const ui = ctx?.ui;
      const facts = { mode: typeof ctx?.mode === 'string' ? ctx.mode : undefined, hasUi: !!ctx?.hasUI, themes: themes(ui) };
      native.speakThrough(facts, (level, text) => {
        try { ui.notify(text, level); after(); } catch { /* a UI that is gone */ }
      });
    },
    stop(reason) {
      if ((reason ?? 'quit') === 'quit') native.noticesToStderr();
    },
  };
};

/** How many themes pi's UI lists (none in RPC mode, whose UI has no terminal). */
function themes(ui) {
  try { return ui?.getAllThemes?.()?.length ?? 0; } catch { return 0; }
}

/**
 * The core's footer status in pi's footer: `show(ctx)` puts it there when it changed (in RPC mode a
 * fire-and-forget extension_ui_request that nothing waits on). The last ctx seen is kept for calls
 * that have none (the background handshake settling).
 */
exports.footer = function footer(native) {
  let ui = null;
  let shown;
  return function show(ctx) {
    ui = ctx?.ui ?? ui;
    const { key, text } = native.footerStatus();
    if (!ui?.setStatus || (text ?? undefined) === shown) return;
    shown = text ?? undefined;
    try { ui.setStatus(key, shown); } catch { /* a pi without a UI */ }
  };
};

/**
 * The napi-rs platform name of this process: `linux-x64-gnu`, `linux-x64-musl`, `linux-arm64-musl`, …
 * (`<platform>-<arch>` elsewhere). musl is told from glibc as native.js tells them apart: /usr/bin/ldd
 * mentions musl (Alpine's does), else Node's report has no glibc runtime version.
 */
exports.platformTriple = function platformTriple() {
  const triple = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return triple;
  return `${triple}-${isMusl() ? 'musl' : 'gnu'}`;
};

function isMusl() {
  try { return require('node:fs').readFileSync('/usr/bin/ldd', 'utf8').includes('musl'); } catch { /* no ldd */ }
  try { return !process.report.getReport().header.glibcVersionRuntime; } catch { return false; }
}

// What to do about a missing or unloadable binary, and why each place the loader looked failed.
function loadHelp(e) {
  const triple = exports.platformTriple();
  const tried = [];
  for (let c = e && e.cause; c; c = c.cause) if (!/wasi/.test(c.message)) tried.unshift(String(c.message).split('\n')[0]);
  const fix = ['linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl'].includes(triple)
    ? `install the optional dependency dotty-pi-ext-${triple} (npm install --include=optional), or build from source with \`npm run build\` (needs a Rust toolchain)`
    : `no prebuilt binary for ${triple}: build from source with \`npm run build\` (needs a Rust toolchain)`;
  return `[dotty-pi-ext] to fix: ${fix}` + tried.map((m) => `\n[dotty-pi-ext]   tried: ${m}`).join('');
}
