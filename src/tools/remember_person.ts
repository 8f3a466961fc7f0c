// remember_person for production's direct calls (docs/voice-tools.md, "Direct calls"): the voice client runs
// `node --experimental-strip-types --input-type=module -e <script>` importing this file by its
// absolute path. The native core (`directCall` in src/node.rs, src/voice/direct.rs) reads the
// extension's environment, applies the options, runs the tool once and answers with its reply;
// nothing is decided here. Erasable TypeScript only: Node strips the types and runs the rest.
import { createRequire } from "node:module";

// The same loader as the extension's (native.js finds the platform package or a local build).
const native = createRequire(import.meta.url)("../../native.js");

export interface RememberPersonOptions {
  /** Overrides DOTTY_BEHAVIOUR_URL (the review classifier). */
  baseUrl?: string;
  /** Overrides DOTTY_BEHAVIOUR_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Overrides DOTTY_BRAIN_DB. */
  dbPath?: string;
  /** The row's `session_id` (NULL when not given). */
  sessionId?: string | null;
}

/** Stores `fact` about `name` (approved or held for review) and answers the tool's reply. */
export async function runRememberPerson(name: string, fact: string, opts: RememberPersonOptions = {}): Promise<string> {
  return await native.directCall("remember_person", { name: name ?? null, fact: fact ?? null }, opts ?? {});
}
