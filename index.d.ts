// The pi extension factory exported by index.js. The native module's own (generated) types are in native.d.ts.
import type * as native from './native'

/** Registers the extension's tools and event handlers with pi's ExtensionAPI. */
declare function dottyPiExt(pi: {
  registerTool(tool: unknown): void
  registerCommand(name: string, options: { description: string; handler: (args: string, ctx?: any) => Promise<void> }): void
  on(event: string, handler: (event: any, ctx?: any) => unknown): void
  /** The tools registered in this pi process (a palace tool never shadows one); pi throws while extensions load. */
  getAllTools?(): { name: string }[]
  sendUserMessage(text: string): void
}): void

declare namespace dottyPiExt {
  export type Native = typeof native
}

export = dottyPiExt
