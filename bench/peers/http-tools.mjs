// The yardstick for the HTTP tools: Node's own fetch (undici, keep-alive), as the production
// TypeScript extension called dotty-behaviour and llama-swap, with the contract's request bodies,
// timeouts and reply shaping. Not product code.
import { strip, take } from './text.cjs';

const SYSTEM = "Answer the user's question concisely in 1-2 sentences. Be precise.";

export function createHttpTools({
  behaviourUrl = 'http://127.0.0.1:8090',
  behaviourTimeoutMs = 3000,
  thinkerUrl = 'http://localhost:8080/v1/chat/completions',
  thinkerTimeoutS = 30,
  thinkerModel = 'qwen3.6:27b-think',
} = {}) {
  const base = behaviourUrl.replace(/\/$/, '');

  async function take_photo() {
    try {
      const r = await fetch(`${base}/api/voice/take_photo`, { signal: AbortSignal.timeout(behaviourTimeoutMs) });
      if (!r.ok) { await r.arrayBuffer(); throw new Error(`HTTP ${r.status}`); }
      const d = (await r.json())?.description;
      if (typeof d === 'string' && d) return d;
      throw new Error('no description');
    } catch (e) {
      process.stderr.write(`take_photo: ${e.message}\n`);
      return "(I can't see anything fresh right now)";
    }
  }

  async function think_hard({ question } = {}) {
    const q = strip(question ?? '');
    if (!q) return '(empty question)';
    const body = JSON.stringify({
      model: thinkerModel,
      messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: q }],
      max_tokens: 200, temperature: 0.3, stream: false, chat_template_kwargs: { enable_thinking: false },
    });
    try {
      const r = await fetch(thinkerUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(thinkerTimeoutS * 1000) });
      if (!r.ok) { await r.arrayBuffer(); throw new Error(`HTTP ${r.status}`); }
      const msg = (await r.json())?.choices?.[0]?.message;
      if (!msg) throw new Error('no choices[0].message');
      if (msg.content != null && typeof msg.content !== 'string') throw new Error('content is not a string');
      return take(strip(msg.content ?? ''), 500);
    } catch (e) {
      if (e?.name === 'TimeoutError') return "(I'm slow today, try again in a moment)";
      process.stderr.write(`think_hard: ${e.message}\n`);
      return '(thinking failed)';
    }
  }

  const tools = { take_photo, think_hard };
  return { tools, async callTool(name, params) { return { text: await tools[name](params ?? {}) }; } };
}
