// The recall benchmarks' child Node (bench/recall.mjs, bench/recall-scope.mjs): the labelled drawers
// filed into a palace through the addon, and pi's runner of before_agent_start for a prompt.
import fs from 'node:fs';
import path from 'node:path';
import { runNode } from '../../__test__/helpers/run-node.mjs';

/** `drawers`: [{key, wing, room, text}], written to `dir`/drawers.json for the child to read. */
export async function fileDrawers(dir, drawers, env, addedBy) {
  const input = path.join(dir, 'drawers.json');
  fs.writeFileSync(input, JSON.stringify(drawers));
  const r = await runNode(
    `const drawers = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(input)}, 'utf8'));
     const ids = {};
     for (const d of drawers) {
       const reply = await native.callTool('mempalace_add_drawer', { wing: d.wing, room: d.room, content: d.text, added_by: ${JSON.stringify(addedBy)} }, null);
       const text = reply.content?.[0]?.text ?? '';
       const id = (text.match(/"drawer_id":\\s*"([^"]+)"/) ?? [])[1];
       if (!id) throw new Error('add_drawer ' + d.key + ': ' + text.slice(0, 300));
       ids[d.key] = id;
     }
     await native.sessionShutdown('quit');
     return ids;`,
    env,
    { timeoutMs: 3600_000 },
  );
  if (r.error) throw new Error(`${r.error}\n${r.stderr.slice(-2000)}`);
  return r.result;
}

/** Child code: `run(prompt)` runs before_agent_start's handlers in order, as pi does, and resolves
 *  with the recall message (customType `mempalace-recall`), if any. */
export const RUN_PROMPT = `
  const run = async (prompt) => {
    const messages = [];
    for (const h of handlers.get('before_agent_start') ?? []) {
      const r = await h({ type: 'before_agent_start', prompt, systemPrompt: '' }, {});
      if (r?.message) messages.push(r.message);
    }
    return messages.find((m) => m.customType === 'mempalace-recall');
  };
`;
