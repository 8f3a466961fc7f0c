// A container image without a CA bundle (distroless, a `-slim` Debian image without ca-certificates, a
// trimmed Alpine), on this machine: a command run in a private mount namespace where the folders
// OpenSSL looks in for CA certificates (/etc/ssl, /etc/pki) are empty read-only tmpfs. As root (CI)
// `unshare -m`; otherwise `unshare -r -m` (a user namespace), where the kernel allows it. Nothing
// outside that process sees the change.
import { spawnSync } from 'node:child_process';

const HIDE = 'for d in /etc/ssl /etc/pki; do if [ -d "$d" ]; then mount -t tmpfs -o ro,size=4k none "$d" || exit 97; fi; done; exec "$@"';

let prefix;
/** The command prefix (`[cmd, ...args]`) that runs what follows it without a CA store. */
export function withoutCaStore() {
  if (prefix) return prefix;
  for (const flags of [['-m'], ['-r', '-m']]) {
    const probe = spawnSync('unshare', [...flags, 'sh', '-c', HIDE, 'sh', 'sh', '-c', 'test -z "$(ls -A /etc/ssl 2>/dev/null)"'], { encoding: 'utf8' });
    if (probe.status === 0) return (prefix = ['unshare', ...flags, 'sh', '-c', HIDE, 'sh']);
  }
  throw new Error('cannot hide the CA store: neither `unshare -m` nor `unshare -r -m` works here (root, or user namespaces, are needed)');
}
