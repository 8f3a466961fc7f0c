// remember for production's direct calls (docs/voice-tools.md, "Direct calls"): the voice client runs
// `node --experimental-strip-types --input-type=module -e <script>` importing this file by its
// absolute path. The native core (`directCallSync` in src/node.rs, src/voice/direct.rs) reads the
// extension's environment, applies the options, runs the tool once and answers with its reply;
// nothing is decided here. Erasable TypeScript only: Node strips the types and runs the rest.
import { createRequire } from "node:module";

// The same loader as the extension's (native.js finds the platform package or a local build).
const native = createRequire(import.meta.url)("../../native.js");

/**
 * Stores `fact` and answers the tool's reply once the row has committed; `sessionId` is the row's
 * `session_id` (NULL when not given), `dbPath` overrides DOTTY_BRAIN_DB.
 */
export function runRemember(fact: string, sessionId: string | null = null, dbPath?: string): string {
  return native.directCallSync("remember", { fact: fact ?? null }, { sessionId, dbPath });
}
