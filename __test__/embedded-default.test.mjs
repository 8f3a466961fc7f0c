// Where brain.db comes from: the embedded default is created; an explicit path never is. Also the
// configuration's failure modes, each in a process of its own (configuration is read once).
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { readRows, schemaOf, tempDir, makeBrain } from './helpers/brain.mjs';
import { runNode } from './helpers/run-node.mjs';

describe('brain.db location', () => {
  it('creates brain.db with the production schema at the default path, once', async () => {
    const home = tempDir();
    const r = await runNode(`return [await ext.text('remember', { fact: 'first boot' }), await ext.text('memory_lookup', { query: 'first boot' }), native.stats()];`, { HOME: home });
    const file = path.join(home, '.pi/memory/brain.db');
    expect(r.result[0]).toBe('(remembered)');
    expect(r.result[1]).toBe('first boot');
    expect(r.result[2]).toMatchObject({ brainFilesCreated: 1, brainDb: file, stateCreations: 1 });
    expect(r.stderr).toContain(`created a new brain.db at ${file}`);
    expect(r.stdout).toBe('');
    const reference = path.join(tempDir(), 'ref.db');
    makeBrain(reference);
    expect(schemaOf(file)).toEqual(schemaOf(reference));
    // A second start finds it and creates nothing.
    const again = await runNode(`return [await ext.text('memory_lookup', { query: 'first boot' }), native.stats().brainFilesCreated];`, { HOME: home });
    expect(again.result).toEqual(['first boot', 0]);
    expect(again.stderr).not.toContain('created a new brain.db');
  });

  it('never creates a missing file at an explicitly configured path', async () => {
    const file = path.join(tempDir(), 'sub', 'brain.db');
    const r = await runNode(
      `return [await ext.text('memory_lookup', { query: 'x' }), await ext.text('remember', { fact: 'x' }), await ext.text('recall_person', { name: 'Ada' }), await ext.text('memory_lookup', { query: 'y' })];`,
      { DOTTY_BRAIN_DB: file, HOME: tempDir() },
    );
    expect(r.result).toEqual(['(no memories found)', '(remember failed)', '(nothing remembered about Ada)', '(no memories found)']);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(path.dirname(file))).toBe(false);
    // Said once on stderr, not once per call.
    expect(r.stderr.match(/brain\.db not found at/g)).toHaveLength(1);
  });

  it('answers as unavailable for a file that is not a database', async () => {
    const file = path.join(tempDir(), 'brain.db');
    fs.writeFileSync(file, 'this is not sqlite'.repeat(100));
    const r = await runNode(`return [await ext.text('memory_lookup', { query: 'x' }), await ext.text('remember', { fact: 'x' })];`, { DOTTY_BRAIN_DB: file });
    expect(r.result).toEqual(['(no memories found)', '(remember failed)']);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe('this is not sqlite'.repeat(100));
  });
});

describe('configuration', () => {
  it('reports malformed values once on stderr and uses the defaults', async () => {
    const r = await runNode(`return native.stats();`, {
      HOME: tempDir(),
      XIAOZHI_HTTP_PORT: 'eighty',
      DOTTY_BEHAVIOUR_TIMEOUT_MS: '-1',
      VOICE_THINKER_TIMEOUT: 'soon',
      PERSON_MEMORY_MAX_FACTS: 'many',
      XIAOZHI_ADMIN_TIMEOUT_MS: '1e3',
    });
    expect(r.code).toBe(0);
    expect(r.result.voiceEnabled).toBe(true);
    for (const v of ['XIAOZHI_HTTP_PORT', 'DOTTY_BEHAVIOUR_TIMEOUT_MS', 'VOICE_THINKER_TIMEOUT', 'PERSON_MEMORY_MAX_FACTS', 'XIAOZHI_ADMIN_TIMEOUT_MS']) {
      expect(r.stderr.split(v).length - 1, v).toBe(1);
    }
    expect(r.stdout).toBe('');
  });

  it('DOTTY_VOICE_TOOLS=0 registers no tools and logs nothing', async () => {
    const home = tempDir();
    const r = await runNode(`await ext.emit('agent_end', { messages: [{ role: 'user', content: 'hi' }] }); return [...ext.tools.keys()];`, { HOME: home, DOTTY_VOICE_TOOLS: '0' });
    expect(r.result).toEqual([]);
    expect(fs.existsSync(path.join(home, '.pi'))).toBe(false);
  });

  it('never writes to stdout, whatever happens', async () => {
    const home = tempDir();
    const r = await runNode(
      `for (const n of ext.tools.keys()) await ext.text(n, { query: 'q', fact: 'f', name: 'n', question: 'q' });
       await ext.emit('agent_end', { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'text', text: 'yo' }] }] });
       return 'done';`,
      { HOME: home, DOTTY_BEHAVIOUR_URL: 'http://127.0.0.1:1', VOICE_THINKER_URL: 'http://127.0.0.1:1/v1', XIAOZHI_HOST: '127.0.0.1', XIAOZHI_HTTP_PORT: '1' },
    );
    expect(r.result).toBe('done');
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('think_hard');
    expect(readRows(path.join(home, '.pi/memory/brain.db')).map((x) => [x.content, x.namespace])).toEqual([['f', 'voice'], ['f', 'person_pending:n'], ['user: hi | assistant: yo', 'voice']]);
  });
});
