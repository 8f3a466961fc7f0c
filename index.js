'use strict';
// pi extension entry: registers the tools, commands and footer status the native core (src/extension/)
// describes, and hands it each pi event it says it handles. No decision is made here; load.js converts.
const { loadNative, unavailable, piTool, piCommand, palaceRegistrar } = require('./load.js');
const { footer, notices, eventHandlers } = require('./load.js');
const native = loadNative();

module.exports = function dottyPiExt(pi) {
  if (!native) return unavailable(pi);
  const speak = notices(native); // first: what the core says while it loads waits for session_start
  const { palaceEnabled } = native.init();
  const registry = new native.ToolRegistry();
  const register = (tool) => pi.registerTool(piTool(native, tool));
  registry.newVoiceTools().forEach(register);
  const registerPalace = palaceEnabled ? palaceRegistrar(native, pi, registry, register) : () => {};
  const show = palaceEnabled ? footer(native) : () => {};
  const refresh = (ctx) => { registerPalace(); show(ctx); };
  const handlers = eventHandlers(native, { speak, refresh, show });
  native.piEvents().forEach(({ event, handler }) => pi.on(event, handlers[handler]));
  if (!palaceEnabled) return;
  registerPalace();
  native.palaceTools().then(() => refresh(), () => {});
  native.commands().forEach((c) => pi.registerCommand(c.name, piCommand(native, pi, c, refresh)));
};
