// memory_lookup for production's direct calls (docs/voice-tools.md, "Direct calls"): the voice client runs
// `node --experimental-strip-types --input-type=module -e <script>` importing this file by its
// absolute path. The native core (`directCallSync` in src/node.rs, src/voice/direct.rs) reads the
// extension's environment, applies the options, runs the tool once and answers with its reply;
// nothing is decided here. Erasable TypeScript only: Node strips the types and runs the rest.
import { createRequire } from "node:module";

// The same loader as the extension's (native.js finds the platform package or a local build).
const native = createRequire(import.meta.url)("../../native.js");

/** The tool's reply for `query`; `dbPath` overrides DOTTY_BRAIN_DB. */
export function runMemoryLookup(query: string, dbPath?: string): string {
  return native.directCallSync("memory_lookup", { query: query ?? null }, { dbPath });
}
