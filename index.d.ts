// The pi extension factory exported by index.js. The native module's own (generated) types are in native.d.ts.
import type * as native from './native'

/** A tool as index.js registers it: a native `ToolDescriptor` with pi's `execute`. */
interface PiTool extends Omit<native.ToolDescriptor, 'parameters'> {
  /** The JSON Schema wrapped in TypeBox's `Type.Unsafe`. */
  parameters: unknown
  execute(toolCallId: string, params: unknown, signal?: AbortSignal): Promise<{ content: unknown[]; details: {} }>
}

/** The part of pi's `ExtensionContext` index.js reads. */
interface PiContext {
  sessionManager?: { getEntries?(): { type: string }[] }
  ui?: { notify?(message: string, level: 'info' | 'warning' | 'error'): void }
}

/** The part of pi's ExtensionAPI index.js calls. */
interface Pi {
  registerTool(tool: PiTool): void
  registerCommand(name: string, options: { description: string; handler: (args: string, ctx?: PiContext) => Promise<void> }): void
  on(event: 'agent_end', handler: (event: { messages?: unknown[] }) => void): void
  on(event: 'session_shutdown', handler: (event: { reason?: string }) => Promise<void>): void
  on(event: 'session_start', handler: (event: { reason?: string }, ctx?: PiContext) => void): void
  on(event: 'agent_settled', handler: () => void): void
  on(
    event: 'before_agent_start',
    handler: (event: { messageType?: string; prompt?: string; systemPromptOptions?: { sections?: Record<string, string> } }) => Promise<native.BeforeAgentStart | undefined>,
  ): void
  /**
   * The tools registered in this pi process (a palace tool never shadows one); pi throws while
   * extensions load. pi 1.x reports each one's `exposure`, and `reachesTools` for tools that reach
   * others (its `codemode` and `tool_search`): what decides how the palace tools are exposed.
   */
  getAllTools?(): { name: string; exposure?: string; reachesTools?: unknown }[]
  /** The tools declared to the model. */
  getActiveTools?(): string[]
  /** Replaces the tools declared to the model (pi 1.x: `codemode` or `tool_search` is added to reach the palace tools). */
  setActiveTools?(names: string[]): void
  sendUserMessage(text: string | null): void
}

/** Registers the extension's tools and event handlers with pi's ExtensionAPI. */
declare function dottyPiExt(pi: Pi): void

declare namespace dottyPiExt {
  export type Native = typeof native
  export type { Pi, PiTool, PiContext }
}

export = dottyPiExt
