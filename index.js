'use strict';
// pi extension entry: hands each pi event to the native core (src/extension.rs) and registers the
// tools and commands it describes. No decision is made here; load.js converts.
const { loadNative, piTool, piToolNames, hasMessages, statusLine } = require('./load.js');
const native = loadNative();

module.exports = function dottyPiExt(pi) {
  if (!native) return;
  const { palaceEnabled } = native.init();
  const registry = new native.ToolRegistry();
  const register = (tool) => pi.registerTool(piTool(native, tool));
  registry.newVoiceTools().forEach(register);
  pi.on('agent_end', (event) => { native.logTurn(event?.messages ?? []); });
  pi.on('session_shutdown', (event) => native.sessionShutdown(event?.reason ?? 'quit'));
  if (!palaceEnabled) return;
  const registerPalace = () => {
    try {
      registry.newPalaceTools(piToolNames(pi)).forEach(register);
    } catch (e) {
      console.error(`[dotty-pi-ext] palace tools not registered: ${e.message}`);
    }
  };
  const showStatus = statusLine(native);
  registerPalace();
  native.palaceTools().then(() => { registerPalace(); showStatus(); }, () => {});
  pi.on('session_start', (event, ctx) => { native.sessionStart(event?.reason ?? 'startup', hasMessages(ctx)); showStatus(ctx); });
  pi.on('agent_settled', () => native.agentSettled());
  pi.on('before_agent_start', async (event, ctx) => {
    showStatus(ctx);
    return (await native.beforeAgentStart(event?.messageType, event?.prompt)) ?? undefined;
  });
  pi.registerCommand('mempalace-diary', {
    description: 'Ask the model to write a MemPalace diary entry for this session',
    handler: async (args) => pi.sendUserMessage(native.palaceDiaryPrompt(args ?? '')),
  });
  pi.registerCommand('mempalace', {
    description: 'MemPalace bridge: `/mempalace status` says its state, `/mempalace reconnect` starts the palace again after it went down',
    handler: async (args, ctx) => {
      const said = await native.palaceCommand(args ?? '');
      registerPalace();
      showStatus(ctx);
      ctx?.ui?.notify?.(said, 'info');
    },
  });
};
