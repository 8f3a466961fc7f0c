// LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024;
// https://github.com/snap-research/locomo) for bench/recall-locomo.mjs: its conversations read from a
// fetched copy (never committed), each written as pi session files, and what counts as a hit.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

/** LoCoMo's question categories, by their number in the data (the names; some later work
 *  swaps the names of 1 and 4). 5 is adversarial: the conversation holds no answer. */
export const CATEGORIES = { 1: 'single-hop', 2: 'temporal', 3: 'open-domain', 4: 'multi-hop', 5: 'adversarial' };

/** The conversations of a fetched copy: `locomo10.json` (an array of samples, the repository's
 *  README), the folder of per-conversation files (`data/multimodal_dialog/locomo10_v2/<n>.json`,
 *  what its `data/locomo10.zip` holds), or that zip. → [{id: 'conv-<n>', speakers, sessions: [[turn]], qa}]. */
export function readLocomo(where) {
  let samples;
  if (where.endsWith('.zip')) {
    const out = fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', 'locomo-'));
    const r = spawnSync('unzip', ['-q', '-o', where, '-d', out], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`unzip ${where} failed`);
    const json = spawnSync('find', [out, '-name', '*.json'], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);
    const whole = json.find((f) => path.basename(f) === 'locomo10.json');
    return readLocomo(whole ?? path.dirname(json[0]));
  }
  if (fs.statSync(where).isDirectory()) {
    samples = fs.readdirSync(where).filter((f) => /^\d+\.json$/.test(f)).sort()
      .map((f) => ({ sample_id: `conv-${f.replace('.json', '')}`, conversation: JSON.parse(fs.readFileSync(path.join(where, f), 'utf8')) }))
      .map((s) => ({ ...s, qa: s.conversation.qa }));
  } else {
    samples = JSON.parse(fs.readFileSync(where, 'utf8'));
  }
  return samples.map((s) => {
    const c = s.conversation;
    const sessions = Object.keys(c)
      .map((k) => k.match(/^session_(\d+)$/))
      .filter((m) => m && Array.isArray(c[m[0]]))
      .sort((a, b) => Number(a[1]) - Number(b[1]))
      .map((m) => c[m[0]]);
    return { id: s.sample_id, speakers: [c.speaker_a, c.speaker_b], sessions, qa: s.qa };
  });
}

/** A pi session file (JSONL, version 3) for one LoCoMo session: the first speaker as the user, the
 *  other as the assistant, each turn's text as it is (no names, no image captions). */
export function sessionFile(conv, index) {
  const id = `10c0a000-0000-4000-8000-${String(Number(conv.id.replace(/\D/g, '')) * 1000 + index).padStart(12, '0')}`;
  const start = Date.parse('2026-01-01T10:00:00.000Z') + index * 86_400_000;
  const lines = [{ type: 'session', version: 3, id, timestamp: new Date(start).toISOString(), cwd: `/work/${conv.id}` }];
  let parentId = null;
  conv.sessions[index].forEach((turn, i) => {
    const ts = start + i * 1000;
    const text = turn.text;
    const message = turn.speaker === conv.speakers[0]
      ? { role: 'user', content: [{ type: 'text', text }], timestamp: ts }
      : { role: 'assistant', content: [{ type: 'text', text }], api: 'openai-completions', provider: 'mock', model: 'mock-model', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: 'stop', timestamp: ts };
    const entryId = `t${String(index).padStart(3, '0')}${String(i).padStart(4, '0')}`;
    lines.push({ type: 'message', id: entryId, parentId, timestamp: new Date(ts).toISOString(), message });
    parentId = entryId;
  });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

/** Text as the hit test compares it: lower case, every run of characters that are not letters or
 *  digits one space (MemPalace's normalizer and the recall message fold quotes and whitespace). */
export const normalized = (s) => ` ${String(s).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()} `;

/** The evidence turns' texts of a question (`evidence`: LoCoMo dialogue ids such as `D1:3`). */
export function evidenceTexts(conv, q) {
  const byId = new Map(conv.sessions.flat().map((t) => [t.dia_id, t.text]));
  return (q.evidence ?? []).flatMap((e) => String(e).split(/[;,\s]+/)).map((e) => byId.get(e.trim())).filter(Boolean);
}

/** A hit: `text` (a recall message, or a search result's drawer) holds the whole text of one of
 *  the evidence turns, both normalized. */
export const holdsEvidence = (text, evidence) => {
  const t = normalized(text);
  return evidence.some((e) => normalized(e).trim().length > 0 && t.includes(normalized(e)));
};
