// A recording stand-in for pi's ExtensionAPI: what index.js registers, and a way to fire events the
// way pi does (awaiting every handler).
import { createRequire } from 'node:module';
import { root } from './brain.mjs';

const require = createRequire(import.meta.url);

/**
 * `others`: names of tools other extensions registered, as `getAllTools()` lists them beside this
 * extension's own. Like pi, `getAllTools()` throws while `loading` is true (during the factory).
 */
export function fakePi({ others = [] } = {}) {
  const tools = new Map();
  const handlers = new Map();
  const commands = new Map();
  const toolWaiters = [];
  return {
    tools,
    handlers,
    commands,
    registerTool(tool) {
      if (tools.has(tool.name)) throw new Error(`tool registered twice: ${tool.name}`);
      tools.set(tool.name, tool);
      for (const w of toolWaiters.splice(0)) if (tools.size >= w.n) w.resolve(); else toolWaiters.push(w);
    },
    /** Resolves once at least `n` tools are registered (late registration happens after a handshake). */
    waitForTools(n, timeoutMs = 10000) {
      if (tools.size >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${n} tools, have ${tools.size}`)), timeoutMs);
        toolWaiters.push({ n, resolve: () => { clearTimeout(timer); resolve(); } });
      });
    },
    loading: false,
    getAllTools() {
      if (this.loading) throw new Error('Extension runtime not initialized. Action methods cannot be called during extension loading.');
      return [...others.map((name) => ({ name })), ...[...tools.values()].map((t) => ({ name: t.name }))];
    },
    registerCommand(name, options) { commands.set(name, options); },
    on(event, handler) { handlers.set(event, [...(handlers.get(event) ?? []), handler]); },
    sendMessage() { throw new Error('the extension must not send messages in these tests'); },
    sendUserMessage() { throw new Error('the extension must not send user messages in these tests'); },
    /** Fires `event` like pi: awaits every handler in order; returns their results. */
    async emit(event, payload) {
      const out = [];
      for (const h of handlers.get(event) ?? []) out.push(await h(payload, {}));
      return out;
    },
    /** Runs a tool through its registered `execute`, as pi would after validation. */
    async run(name, params, signal) {
      const tool = tools.get(name);
      if (!tool) throw new Error(`no tool ${name}`);
      return tool.execute(`call-${Math.random()}`, params, signal, undefined, {});
    },
    /** The reply text of one tool call. */
    async text(name, params, signal) {
      const r = await this.run(name, params, signal);
      if (r.content.length !== 1 || r.content[0].type !== 'text') throw new Error(`unexpected content ${JSON.stringify(r)}`);
      return r.content[0].text;
    },
  };
}

/** Loads the package entry (index.js) into a fresh fake pi. The environment must be set first. */
export function loadExtension(options) {
  const factory = require(`${root}/index.js`);
  const pi = fakePi(options);
  pi.loading = true;
  try { factory(pi); } finally { pi.loading = false; }
  return pi;
}

export const native = () => require(`${root}/native.js`);
