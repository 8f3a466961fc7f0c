import { defineConfig } from 'vitest/config';

// Contract tests. Each file runs in a process of its own (forks + isolate): the native state and its
// configuration are per process, exactly as in pi.
export default defineConfig({
  test: {
    include: ['__test__/**/*.test.mjs'],
    exclude: ['__test__/e2e/**', '**/node_modules/**'],
    pool: 'forks',
    isolate: true,
    testTimeout: 30000,
    hookTimeout: 30000,
    // The voice contract tests run as in the Dotty container, which has no palace. The bridge's
    // own tests switch it on in their processes.
    env: { MEMPALACE_BRIDGE: '0' },
  },
});
