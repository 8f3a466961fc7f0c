// In-process stand-ins for the home services that can't be installed here (dotty-behaviour,
// llama-swap, xiaozhi-server's admin API). Each listens on port 0 (or a UNIX socket), records every
// request, and answers through a handler the test sets, including the failure answers of the contract.
import http from 'node:http';

/**
 * Starts an HTTP server. `routes` maps "METHOD /path" to `(req, res, body) => void`; the handler can be
 * swapped later with `server.route(key, fn)`. Unknown routes answer 404. `port`: listen there instead
 * of any free port (a service coming back where it was).
 */
export async function startService(routes = {}, { socketPath, port: wanted = 0 } = {}) {
  const table = new Map(Object.entries(routes));
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url, 'http://x');
      const body = Buffer.concat(chunks).toString('utf8');
      const entry = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body, rawUrl: req.url };
      requests.push(entry);
      const handler = table.get(`${req.method} ${url.pathname}`);
      if (!handler) return json(res, 404, { error: 'not found' });
      handler(req, res, entry);
    });
  });
  await new Promise((resolve) => (socketPath ? server.listen(socketPath, resolve) : server.listen(wanted, '127.0.0.1', resolve)));
  const port = socketPath ? undefined : server.address().port;
  return {
    port,
    url: port ? `http://127.0.0.1:${port}` : undefined,
    requests,
    route: (key, fn) => table.set(key, fn),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export function json(res, status, value) {
  const body = typeof value === 'string' ? value : JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** A handler answering `status` (302, 307...) with a Location on `target`: whatever follows it lands there. */
export const redirect = (status, target) => (req, res) => { res.writeHead(status, { location: target }); res.end(); };

/**
 * A handler streaming a 200 JSON body of `prefix` + `bytes` × 'x' + `suffix` in 64 KiB chunks with
 * backpressure, so the test process never holds it whole. `length`: send Content-Length (else
 * chunked). A client that hangs up early just ends the stream.
 */
export function bigBody(prefix, bytes, suffix, { length }) {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  return (req, res) => {
    const total = Buffer.byteLength(prefix) + bytes + Buffer.byteLength(suffix);
    res.writeHead(200, { 'content-type': 'application/json', ...(length ? { 'content-length': total } : {}) });
    res.on('error', () => {});
    res.write(prefix);
    let sent = 0;
    const pump = () => {
      while (sent < bytes && !res.destroyed) {
        const n = Math.min(chunk.length, bytes - sent);
        sent += n;
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end(suffix);
    };
    pump();
  };
}

/** A handler that never answers (the request stays open until the client gives up). */
export const stall = () => {};

/** A port on which nothing listens (bound, then closed): connections to it are refused. */
export async function deadPort() {
  const s = http.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** Resolves once `requests` holds at least `n` entries (an event to await, not a sleep). */
export async function waitForRequests(service, n, timeoutMs = 5000) {
  const t0 = Date.now();
  while (service.requests.length < n) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`expected ${n} requests, saw ${service.requests.length}`);
    await new Promise((r) => setImmediate(r));
  }
}
