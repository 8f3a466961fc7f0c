// think_hard for production's direct calls (docs/voice-tools.md, "Direct calls"): the voice client runs
// `node --experimental-strip-types --input-type=module -e <script>` importing this file by its
// absolute path. The native core (`directCall` in src/node.rs, src/voice/direct.rs) reads the
// extension's environment, applies the options, runs the tool once and answers with its reply;
// nothing is decided here. Erasable TypeScript only: Node strips the types and runs the rest.
import { createRequire } from "node:module";

// The same loader as the extension's (native.js finds the platform package or a local build).
const native = createRequire(import.meta.url)("../../native.js");

export interface ThinkHardOptions {
  /** Overrides VOICE_THINKER_URL. */
  url?: string;
  /** Overrides VOICE_THINKER_TIMEOUT (seconds). */
  timeoutSec?: number;
  /** Overrides VOICE_THINKER_MODEL. */
  model?: string;
}

/** Asks the thinker `question` and answers the tool's reply. */
export async function runThinkHard(question: string, opts: ThinkHardOptions = {}): Promise<string> {
  return await native.directCall("think_hard", { question: question ?? null }, opts ?? {});
}
