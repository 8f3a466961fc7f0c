// The voice contract tests in a musl Node (scripts/musl-check.sh runs them; it sets NODE_PATH to
// vite's musl bindings and DOTTY_EXPECT_LIBC=musl). libc.test.mjs proves the mapped .node is the
// linux-x64-musl one; the rest are the voice tools' contract, unchanged (no-ca-store.test.mjs: an
// Alpine without a CA bundle, /etc/ssl hidden in a private mount namespace).
import { defineConfig } from 'vitest/config';
import base from './vitest.config.mjs';

export const MUSL_FILES = [
  'libc', 'memory-tools', 'trust-voice', 'services-tools', 'turn-log', 'play-song', 'play-song-edges',
  'think-hard-cold', 'error-codes', 'bad-input', 'concurrency', 'clean-turns', 'no-ca-store', 'descriptors',
].map((f) => `__test__/${f}.test.mjs`);

export default defineConfig({
  test: { ...base.test, include: MUSL_FILES, env: { ...base.test.env, DOTTY_EXPECT_LIBC: 'musl' } },
});
