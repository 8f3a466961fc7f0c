// The pi extension factory exported by index.js. The native module's own (generated) types are in native.d.ts.
import type * as native from './native'

/** Registers the extension's tools and event handlers with pi's ExtensionAPI. */
declare function dottyPiExt(pi: {
  registerTool(tool: unknown): void
  on(event: string, handler: (event: any, ctx?: any) => unknown): void
}): void

declare namespace dottyPiExt {
  export type Native = typeof native
}

export = dottyPiExt
