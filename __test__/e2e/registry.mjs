// An npm registry on 127.0.0.1 port 0 that serves the release's own tarballs, so a test can run
// `npm install` the way a user does (npm reads each optional dependency's packument, keeps the one
// whose os/cpu/libc fit, and fetches only its tarball) without the public registry. It follows the
// registry's read protocol: `GET /<name>` (the packument: every version's manifest with `dist`),
// `GET /<name>/-/<file>.tgz`; anything else is 404. Every request is recorded.
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';

/** `tarballs`: paths of npm tarballs. */
export async function startRegistry(tarballs) {
  const byName = new Map();
  for (const tgz of tarballs) {
    const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tgz, 'package/package.json'], { encoding: 'utf8' }));
    const bytes = fs.readFileSync(tgz);
    byName.set(manifest.name, { manifest, bytes, file: `${manifest.name}-${manifest.version}.tgz` });
  }
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split('?')[0]);
    requests.push(url);
    const [, name, dash, file] = url.match(/^\/([^/]+)(?:\/(-)\/([^/]+))?$/) ?? [];
    const pkg = byName.get(name);
    if (!pkg || (dash && file !== pkg.file)) { res.writeHead(404, { 'content-type': 'application/json' }); return res.end('{"error":"not found"}'); }
    if (dash) { res.writeHead(200, { 'content-type': 'application/octet-stream' }); return res.end(pkg.bytes); }
    const { manifest, bytes } = pkg;
    const dist = {
      tarball: `${base}/${name}/-/${pkg.file}`,
      integrity: `sha512-${crypto.createHash('sha512').update(bytes).digest('base64')}`,
      shasum: crypto.createHash('sha1').update(bytes).digest('hex'),
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ name, 'dist-tags': { latest: manifest.version }, versions: { [manifest.version]: { ...manifest, dist } } }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: `${base}/`,
    requests,
    /** The tarballs npm fetched (not just looked up). */
    fetched: () => requests.filter((r) => r.includes('/-/')).map((r) => r.split('/-/')[1]),
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
