// Issue 28: what the model writes through palace tools passes the feed's redactor before it is
// sent, against the REAL MemPalace 3.11.0. A token read in a `.env` and put in a drawer, a diary
// entry and a knowledge-graph fact: nothing of it in any file of the palace, the marker there, the
// model told kinds and counts (never the values), and `/mempalace status` and the doctor count it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// MEMPALACE_FEED_REDACT=off turning it off: src/palace/feed/redact/calls.rs's tests.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir } from './helpers/brain.mjs';
import { loadExtension, native } from './helpers/fake-pi.mjs';
import { stdioEnv } from './helpers/palace.mjs';
import { filesUnder, holding } from './helpers/redact.mjs';

const dir = tempDir('dotty-redact-writes-');
const env = { ...stdioEnv(dir), MEMPALACE_CONFIG_DIR: path.join(dir, 'mempalace-cfg'), DOTTY_VOICE_TOOLS: '0', MEMPALACE_FEED: '0', TOKENIZERS_PARALLELISM: 'false' };
// Made-up credentials of two formats (GitHub's classic PAT, an AWS access key id).
const PAT = 'ghp_R7vK2mQ9xT4wL8pZ3nB6yC1dF5hJ0sA2eG7u';
const AKIA = 'AKIAQ4MBX7NVRT2ZK3PL';
let ext;

beforeAll(async () => {
  Object.assign(process.env, env);
  ext = loadExtension();
  await native().palaceTools();
}, 90_000);
afterAll(async () => {
  await ext?.emit('session_shutdown', { reason: 'quit' });
});

describe('palace-tool writes are redacted before they are sent', () => {
  it('stores the marker, never the value, and tells the model what was replaced', async () => {
    const drawer = await native().callTool('mempalace_add_drawer', { wing: 'project', room: 'deploy', content: `The deploy token from .env is GITHUB_TOKEN=${PAT}; the old key ${AKIA}.` }, null);
    expect(drawer.text).toMatch(/secrets were redacted from this call's arguments before they were stored: 2 \(aws-access-token 1, github-pat 1\)/);
    expect(drawer.text).not.toContain(PAT);
    const diary = await native().callTool('mempalace_diary_write', { agent_name: 'pi', entry: `rotated ${PAT} today` }, null);
    expect(diary.text).toMatch(/: 1 \(github-pat 1\)/);
    const kg = await native().callTool('mempalace_kg_add', { subject: 'ci', predicate: 'uses_token', object: PAT }, null);
    expect(kg.text).toMatch(/: 1 \(github-pat 1\)/);
    // A read-only tool is not a write: its arguments go as they are (and nothing is said).
    const search = await native().callTool('mempalace_search', { query: 'deploy token' }, null);
    expect(search.text).toContain('[REDACTED:github-pat]');
    expect(search.text).not.toMatch(/secrets were redacted/);
  }, 120_000);

  it('leaves nothing of the values in any file of the palace, and the markers are there', async () => {
    await ext.emit('session_shutdown', { reason: 'quit' });
    const all = filesUnder(dir, (f) => !f.endsWith('.log'));
    for (const v of [PAT, AKIA, PAT.slice(4, 20), AKIA.slice(4)]) expect(holding(all, v, dir), v).toEqual([]);
    const chroma = all.find(([f]) => f.endsWith('chroma.sqlite3'));
    expect(chroma).toBeDefined();
    expect(chroma[1].toString('latin1')).toContain('[REDACTED:github-pat]');
  });

  it('counts the redacted writes in /mempalace status and the doctor', () => {
    const tally = JSON.parse(fs.readFileSync(path.join(env.PI_CODING_AGENT_DIR, 'mempalace-feed', 'tool-writes.json'), 'utf8'));
    expect(tally).toEqual({ calls: 3, redacted: { 'aws-access-token': 1, 'github-pat': 3 } });
    const doc = spawnSync(process.execPath, [path.join(root, 'bin/dotty-pi-ext.js'), 'doctor'], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 90_000 });
    expect(doc.stdout).toMatch(/feed redaction +on \(built-in rules\); .*palace-tool writes redacted 4 \(aws-access-token 1, github-pat 3\) in 3 calls/);
  }, 100_000);
});
