// A scripted OpenAI-compatible chat-completions server for driving the real pi end to end.
// Listens on 127.0.0.1 port 0, answers `POST /v1/chat/completions` (stream: true) with SSE chunks the
// way llama.cpp / llama-swap do: `delta.reasoning_content` (thinking), `delta.content` (text),
// `delta.tool_calls` + finish_reason "tool_calls". Every request body is recorded, parsed.
//
// A plan (what the model "says" for one request):
//   { thinking?: string | string[],   // reasoning deltas, sent first (a string is cut into ~4 deltas)
//     text?: string | string[],       // content deltas (before the tool calls, like real models)
//     toolCalls?: [{ name, arguments: object | string, id? }],
//     finishReason?: string,          // default "tool_calls" when toolCalls, else "stop"
//     status?: number, errorBody?: any // answer with an HTTP error instead of a stream
//   }
// Plans come from a queue (`enqueue`), or, when the queue is empty, from `setResponder(fn)`, a
// function of the parsed request body (and the recorded entry) returning a plan (or a promise of one).
import http from 'node:http';

export async function startMockModel({ responder } = {}) {
  const queue = [];
  const requests = [];
  const errors = [];
  const waiters = new Set();
  let respond = responder ?? null;
  let nextId = 1;

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end('{"error":"not found"}');
      }
      let body;
      try { body = JSON.parse(raw); } catch (e) { errors.push(`bad JSON request: ${e.message}`); res.writeHead(400); return res.end(); }
      const entry = { index: requests.length, body, receivedAt: performance.now(), url: req.url, headers: req.headers };
      requests.push(entry);
      for (const w of waiters) w();
      let plan;
      try {
        plan = queue.length ? queue.shift() : respond ? await respond(body, entry) : undefined;
        if (typeof plan === 'function') plan = await plan(body, entry);
      } catch (e) { errors.push(`responder threw: ${e.stack ?? e}`); }
      if (!plan) {
        errors.push(`request #${entry.index} had no plan (queue empty, no responder)`);
        plan = { text: '(mock model: no plan for this request)' };
      }
      entry.plan = plan;
      if (plan.status) {
        res.writeHead(plan.status, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(plan.errorBody ?? { error: { message: `mock error ${plan.status}` } }));
      }
      writeStream(res, plan, `chatcmpl-mock-${nextId++}`, body.model);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();

  return {
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    errors,
    /** Plans for the next requests, in order. */
    enqueue(...plans) { queue.push(...plans); },
    get pending() { return queue.length; },
    /** Drops the plans not asked for yet and returns them. */
    clearQueue() { return queue.splice(0); },
    setResponder(fn) { respond = fn; },
    /** Resolves once at least `n` requests have arrived (bounded). */
    waitForRequests(n, timeoutMs = 10_000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => { if (requests.length >= n) { cleanup(); resolve(); } };
        const timer = setTimeout(() => { cleanup(); reject(new Error(`mock model: expected ${n} requests, saw ${requests.length}`)); }, timeoutMs);
        const cleanup = () => { clearTimeout(timer); waiters.delete(check); };
        waiters.add(check);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function split(s, parts = 4) {
  if (Array.isArray(s)) return s;
  const cps = [...s];
  const size = Math.max(1, Math.ceil(cps.length / parts));
  const out = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''));
  return out;
}

function writeStream(res, plan, id, model = 'mock-model') {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const created = Math.floor(Date.now() / 1000);
  const send = (delta, finish_reason = null, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`);
  send({ role: 'assistant', content: '' });
  for (const d of plan.thinking ? split(plan.thinking) : []) send({ reasoning_content: d });
  for (const d of plan.text ? split(plan.text) : []) send({ content: d });
  (plan.toolCalls ?? []).forEach((tc, index) => {
    const args = typeof tc.arguments === 'string' ? tc.arguments : JSON.stringify(tc.arguments ?? {});
    const cut = Math.floor(args.length / 2); // arguments arrive in two pieces, as from a real server
    const callId = tc.id ?? `call_${id.slice(-6)}_${index}`;
    send({ tool_calls: [{ index, id: callId, type: 'function', function: { name: tc.name, arguments: args.slice(0, cut) } }] });
    send({ tool_calls: [{ index, function: { arguments: args.slice(cut) } }] });
  });
  send({}, plan.finishReason ?? (plan.toolCalls?.length ? 'tool_calls' : 'stop'));
  res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** The `role: "tool"` messages of a request body. */
export function toolMessages(body) {
  return (body.messages ?? []).filter((m) => m.role === 'tool');
}

/** The last message of a request body (after a tool call: the tool's reply). */
export function lastMessage(body) {
  const m = body.messages ?? [];
  return m[m.length - 1];
}

/** The text of the last user message of a request body. */
export function lastUserText(body) {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  const u = users[users.length - 1];
  if (!u) return undefined;
  return typeof u.content === 'string' ? u.content : u.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}
