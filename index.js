'use strict';
// pi extension entry: registers what the native core describes and routes every call to it.
// No tool logic lives here (see src/). Loading never throws: a missing binary is reported on stderr.
let native;
try { native = require('./native.js'); } catch (e) { console.error(`[dotty-pi-ext] native module unavailable, no tools registered: ${e.message}\n${loadHelp(e)}`); }
let Type; try { ({ Type } = require('@sinclair/typebox')); } catch { Type = { Unsafe: (schema) => schema }; }
let nextCallId = 1;

module.exports = function dottyPiExt(pi) {
  if (!native) return;
  native.init();
  for (const tool of native.toolDescriptors()) {
    pi.registerTool({ ...tool, parameters: Type.Unsafe(tool.parameters), async execute(_toolCallId, params, signal) {
      const callId = nextCallId++, abort = () => native.cancelCall(callId);
      signal?.addEventListener('abort', abort, { once: true });
      try { return { content: [{ type: 'text', text: (await native.callTool(tool.name, params ?? {}, callId)).text }], details: {} }; }
      finally { signal?.removeEventListener('abort', abort); }
    } });
  }
  pi.on('agent_end', (event) => { native.logTurn(event?.messages ?? []); });
  pi.on('session_shutdown', () => native.flushTurnLog());
};

// What to do about a missing or unloadable binary, and why each place the loader looked failed.
function loadHelp(e) {
  const triple = `${process.platform}-${process.arch}`, tried = [];
  for (let c = e && e.cause; c; c = c.cause) if (!/wasi/.test(c.message)) tried.unshift(String(c.message).split('\n')[0]);
  const fix = ['linux-x64', 'linux-arm64'].includes(triple)
    ? `install the optional dependency dotty-pi-ext-${triple}-gnu (npm install --include=optional), or build from source with \`npm run build\` (needs a Rust toolchain)`
    : `no prebuilt binary for ${triple}: build from source with \`npm run build\` (needs a Rust toolchain)`;
  return `[dotty-pi-ext] to fix: ${fix}` + tried.map((m) => `\n[dotty-pi-ext]   tried: ${m}`).join('');
}
