// The README's first command: `npm start` runs pi with the extension on the embedded default
// (a brain.db created under $HOME where none exists), headless here with `-- --mode rpc`.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, schemaOf, tempDir } from '../helpers/brain.mjs';

describe('npm start', () => {
  it('starts pi with the extension and creates the default brain.db', async () => {
    const home = tempDir('dotty-start-');
    const child = spawn('npm', ['start', '--silent', '--', '--mode', 'rpc', '--no-session'], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: home, PI_OFFLINE: '1', PI_TELEMETRY: '0', MEMPALACE_MCP_RESPAWN_BACKOFF_MS: '10' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '', err = '';
    child.stderr.on('data', (d) => (err += d));
    const response = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no get_state response; stderr: ${err}`)), 60_000);
      child.stdout.on('data', (d) => {
        out += d;
        const line = out.split('\n').find((l) => l.includes('"id":"s1"'));
        if (line) { clearTimeout(timer); resolve(JSON.parse(line)); }
      });
    });
    const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
    child.stdin.write('{"id":"s1","type":"get_state"}\n');
    expect(await response).toMatchObject({ id: 's1', type: 'response', command: 'get_state', success: true });
    const db = path.join(home, '.pi/memory/brain.db');
    // Both happen in the background after pi's session_start: brain.db is created (the line is
    // written once the file is in place), and with no palace on this machine's PATH the bridge
    // gives up (after its respawns) with one line. Either may come first.
    const onStderr = (re, what) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} on stderr: ${err}`)), 30_000);
      const check = () => { if (re.test(err)) { clearTimeout(timer); child.stderr.off('data', check); resolve(); } };
      child.stderr.on('data', check);
      check();
    });
    await Promise.all([onStderr(/mempalace/i, 'MemPalace verdict'), onStderr(/created a new brain\.db/, 'brain.db line')]);
    child.stdin.end();
    expect(await exited).toBe(0);
    // stdout is pi's protocol channel: nothing but JSON lines on it.
    for (const line of out.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
    expect(fs.existsSync(db)).toBe(true);
    expect(schemaOf(db).map((r) => r.name)).toContain('memories_fts');
    expect(err).toContain(`created a new brain.db at ${db}`);
    expect(err.split('\n').filter((l) => /mempalace/i.test(l))).toHaveLength(1);
  }, 90_000);
});
