'use strict';
// pi extension entry: hands each pi event to the native core (src/extension/) and registers the tools,
// commands and footer status it describes. No decision is made here; load.js converts.
const { loadNative, piTool, piCommand, palaceRegistrar, palaceSection, hasMessages, footer, notices } = require('./load.js');
const native = loadNative();

module.exports = function dottyPiExt(pi) {
  if (!native) return;
  const speak = notices(native); // first: what the core says while it loads waits for session_start
  const { palaceEnabled } = native.init();
  const registry = new native.ToolRegistry();
  const register = (tool) => pi.registerTool(piTool(native, tool));
  registry.newVoiceTools().forEach(register);
  const registerPalace = palaceEnabled ? palaceRegistrar(pi, registry, register) : () => {};
  const show = palaceEnabled ? footer(native) : () => {};
  pi.on('session_start', (e, ctx) => {
    speak.start(ctx, () => show(ctx));
    if (palaceEnabled) { native.sessionStart(e?.reason ?? 'startup', hasMessages(ctx)); registerPalace(); show(ctx); }
  });
  pi.on('agent_end', (event) => { native.logTurn(event?.messages ?? []); });
  pi.on('session_shutdown', (event) => { speak.stop(event?.reason); return native.sessionShutdown(event?.reason ?? 'quit'); });
  if (!palaceEnabled) return;
  const refresh = (ctx) => { registerPalace(); show(ctx); };
  registerPalace();
  native.palaceTools().then(() => refresh(), () => {});
  pi.on('agent_settled', () => native.agentSettled());
  pi.on('before_agent_start', async (e, ctx) => {
    show(ctx);
    palaceSection(native, e);
    return (await native.beforeAgentStart(e?.messageType, e?.prompt)) ?? undefined;
  });
  native.commands().forEach((c) => pi.registerCommand(c.name, piCommand(native, pi, c, refresh)));
};
