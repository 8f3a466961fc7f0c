// End-to-end tests: the real pi (spawned in RPC mode) with this package loaded, a mock model and
// Dotty's home services faked in-process. Run: npx vitest run -c vitest.e2e.config.mjs
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['__test__/e2e/**/*.e2e.test.mjs'],
    pool: 'forks',
    // Each file spawns its own pi processes; two files at a time suits a 2-core machine.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
    reporters: ['default'],
  },
});
