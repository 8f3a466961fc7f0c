'use strict';
// pi extension entry: registers what the native core describes and routes every call to it.
// No tool logic lives here (see src/). Loading never throws: a missing binary is reported on stderr.
let native;
try { native = require('./native.js'); } catch (e) { console.error(`[dotty-pi-ext] native module unavailable, no tools registered: ${e.message}\n${loadHelp(e)}`); }
let Type; try { ({ Type } = require('@sinclair/typebox')); } catch { Type = { Unsafe: (schema) => schema }; }
let nextCallId = 1;

module.exports = function dottyPiExt(pi) {
  if (!native) return;
  const { palaceEnabled } = native.init(), registered = new Set();
  const register = (tool) => registered.has(tool.name) || (registered.add(tool.name), pi.registerTool({ ...tool, parameters: Type.Unsafe(tool.parameters), async execute(_toolCallId, params, signal) {
    const callId = nextCallId++, abort = () => native.cancelCall(callId);
    signal?.addEventListener('abort', abort, { once: true });
    try { return { content: (await native.callTool(tool.name, params ?? {}, callId)).content, details: {} }; }
    finally { signal?.removeEventListener('abort', abort); }
  } }));
  native.toolDescriptors().forEach(register);
  pi.on('agent_end', (event) => { native.logTurn(event?.messages ?? []); });
  pi.on('session_shutdown', (event) => native.sessionShutdown(event?.reason ?? 'quit'));
  if (!palaceEnabled) return;
  // Palace tools: from the cache now, from the server once its handshake is done. The core picks
  // them, given the names other extensions hold (pi throws on getAllTools while extensions load).
  const others = () => { try { return pi.getAllTools().map((t) => t.name).filter((n) => !registered.has(n)); } catch { return []; } };
  const registerPalace = () => { try { native.palaceToolDescriptors(others()).forEach(register); } catch (e) { console.error(`[dotty-pi-ext] palace tools not registered: ${e.message}`); } };
  registerPalace();
  native.palaceTools().then(registerPalace, () => {});
  pi.on('session_start', (event, ctx) => native.palaceSessionStart(event?.reason ?? 'startup', !!ctx?.sessionManager?.getEntries?.()?.some((e) => e.type === 'message')));
  pi.on('agent_settled', () => native.palaceSettled());
  pi.on('before_agent_start', async () => { const content = await native.palaceWakeup(); return content ? { message: { customType: 'mempalace-wakeup', content, display: false } } : undefined; });
  pi.registerCommand('mempalace-diary', { description: 'Ask the model to write a MemPalace diary entry for this session', handler: async (args) => pi.sendUserMessage(native.palaceDiaryPrompt(args ?? '')) });
  pi.registerCommand('mempalace', { description: 'MemPalace bridge: `/mempalace reconnect` starts the palace again after it went down', handler: async (args, ctx) => { const said = await native.palaceCommand(args ?? ''); registerPalace(); ctx?.ui?.notify?.(said, 'info'); } });
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
