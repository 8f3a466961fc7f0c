// The hooks of an e2e suite that runs one pi at a time against the mock model, in a temp folder.
import fs from 'node:fs';
import { beforeAll, afterAll } from 'vitest';
import { startMockModel } from './mock-model.mjs';

/**
 * Before the tests: the mock model starts and the project folder exists. After them: the pi still
 * running (a failed step's) and the mock close, the suite's figures line is printed, and `dir` goes
 * (unless E2E_KEEP_TMP). Returns the holder of the mock (`hooks.mock`, set once beforeAll ran).
 */
export function piSuiteHooks({ dir, project, currentPi, report }) {
  const hooks = { mock: undefined };
  beforeAll(async () => {
    hooks.mock = await startMockModel();
    fs.mkdirSync(project, { recursive: true });
  }, 30_000);
  afterAll(async () => {
    const pi = currentPi();
    if (pi?.alive) await pi.close(5_000);
    await hooks.mock?.close();
    console.log(report());
    if (!process.env.E2E_KEEP_TMP) fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);
  return hooks;
}
