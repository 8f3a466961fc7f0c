// play_song for production's direct calls (docs/voice-tools.md, "Direct calls"): the voice client runs
// `node --experimental-strip-types --input-type=module -e <script>` importing this file by its
// absolute path. The native core (`directCall` in src/node.rs, src/voice/direct.rs) reads the
// extension's environment, applies the options, runs the tool once and answers with its reply;
// nothing is decided here. Erasable TypeScript only: Node strips the types and runs the rest.
import { createRequire } from "node:module";

// The same loader as the extension's (native.js finds the platform package or a local build).
const native = createRequire(import.meta.url)("../../native.js");

export interface PlaySongOptions {
  /** Overrides XIAOZHI_HOST (and XIAOZHI_ADMIN_SOCKET: this call goes over TCP to `host`). */
  host?: string;
  /** Overrides XIAOZHI_HTTP_PORT. */
  port?: number;
  /** Overrides XIAOZHI_ADMIN_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Overrides VOICE_PLAY_SONG_ASSET_BASE. */
  assetBaseOverride?: string;
}

/** Plays the catalogue's best match for `name` and answers the tool's reply. */
export async function runPlaySong(name: string, opts: PlaySongOptions = {}): Promise<string> {
  return await native.directCall("play_song", { name: name ?? null }, opts ?? {});
}
