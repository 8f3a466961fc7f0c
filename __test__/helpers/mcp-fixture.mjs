// The MCP fault fixture (../fixtures/fault_mcp_server.py) serving Streamable HTTP, and what stands
// in front of a palace on another machine: a TLS front with a CA of its own (openssl CLI), or a plain
// front on a non-loopback address of this machine.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { root } from './brain.mjs';

export const fixture = path.join(root, '__test__/fixtures/fault_mcp_server.py');

/**
 * Starts the fixture over HTTP with `args` (see its argparse flags); resolves once it listens with
 * {proc, port, exited}: `exited` resolves when the process ends.
 */
export function startFixtureHttp(args = []) {
  const proc = spawn('python3', [fixture, '--http', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/PORT=(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]), exited });
    });
    proc.on('error', reject);
    exited.then((code) => reject(new Error(`the fixture exited (${code}) before listening`)));
  });
}

/**
 * A front on `host` (port 0) forwarding every request as is to 127.0.0.1:`targetPort`; TLS when
 * `tls` ({key, cert}) is given. Resolves with {url, close()}: `url` is the MCP endpoint through it.
 */
export async function startFront(targetPort, { host = '127.0.0.1', tls } = {}) {
  const forward = (req, res) => {
    const up = http.request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  };
  const server = tls ? https.createServer(tls, forward) : http.createServer(forward);
  await new Promise((resolve) => server.listen(0, host, resolve));
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `${tls ? 'https' : 'http'}://${shownHost}:${server.address().port}/mcp`,
    close: () => { server.closeAllConnections(); return new Promise((resolve) => server.close(resolve)); },
  };
}

/** An IPv4 address of this machine that is not loopback (a "remote" host the warning is about). */
export function nonLoopbackAddress() {
  const found = Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('this machine has no non-loopback IPv4 address to stand for a remote palace');
  return found.address;
}

/**
 * A certificate authority of its own and a server certificate it signed for 127.0.0.1 and
 * localhost, made with the openssl CLI in `dir`. Returns the paths {ca, key, cert}.
 */
export function makeCerts(dir) {
  const p = (f) => path.join(dir, f);
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', '2', '-subj', '/CN=dotty-pi-ext test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=localhost');
  fs.writeFileSync(p('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', p('server.csr'), '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial', '-out', p('server.crt'), '-days', '2', '-extfile', p('server.ext'));
  return { ca: p('ca.crt'), key: p('server.key'), cert: p('server.crt') };
}

/**
 * A self-signed server certificate for 127.0.0.1 and localhost (no CA vouches for it), made with the
 * openssl CLI in `dir`. Returns the paths {key, cert}.
 */
export function makeSelfSigned(dir) {
  const p = (f) => path.join(dir, f);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', p('self.key'), '-out', p('self.crt'),
    '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-addext', 'basicConstraints=CA:FALSE',
    '-addext', 'extendedKeyUsage=serverAuth'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  return { key: p('self.key'), cert: p('self.crt') };
}
