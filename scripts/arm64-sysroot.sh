#!/usr/bin/env bash
# Builds (once) an arm64 sysroot holding Debian's arm64 Node (bookworm: 18.x, N-API 9) and its libraries,
# for running the arm64 addon under qemu-user on an x64 host. Prints the sysroot path on stdout.
#   ARM64_SYSROOT=/var/cache/dotty-arm64-sysroot bash scripts/arm64-sysroot.sh
# Idempotent: host packages and the sysroot are only installed/extracted when missing; delete the folder
# (or set ARM64_SYSROOT_REFRESH=1) to rebuild it. Everything comes from Debian's archive via apt.
set -euo pipefail
SYSROOT="${ARM64_SYSROOT:-/var/cache/dotty-arm64-sysroot}"
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
log() { echo "arm64-sysroot: $*" >&2; }
updated=
apt_update() { [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }; }

# 1. host side: qemu-user (static, so it needs nothing from the sysroot) and binfmt for spawned children.
need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v update-binfmts >/dev/null || need+=(binfmt-support)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"; apt_update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# binfmt lets an arm64 node spawn arm64 children (the MCP bridge will); best effort inside containers.
if [ -d /proc/sys/fs/binfmt_misc ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  [ -e /proc/sys/fs/binfmt_misc/register ] || $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
  $SUDO update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || log "warning: could not register binfmt for qemu-aarch64 (arm64 children won't start)"
fi

# 2. the sysroot: nodejs:arm64 with its whole arm64 dependency closure, plus the arch-all node-* modules
#    Debian's node loads at startup (acorn, cjs-module-lexer, undici and its deps) - it aborts without them.
if [ -x "$SYSROOT/usr/bin/node" ] && [ -f "$SYSROOT/.complete" ] && [ -z "${ARM64_SYSROOT_REFRESH:-}" ]; then
  echo "$SYSROOT"; exit 0
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "dpkg --add-architecture arm64"; $SUDO dpkg --add-architecture arm64; updated=
fi
apt_update
pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
         --no-enhances nodejs:arm64 | grep -v '^ ' | grep -E ':arm64$|^node-' | sort -u)
[ -n "$pkgs" ] || { log "FAIL: apt-cache found no nodejs:arm64 dependencies"; exit 1; }
debs="$SYSROOT.debs"
rm -rf "$SYSROOT" "$debs"; mkdir -p "$SYSROOT" "$debs"
log "downloading $(wc -w <<<"$pkgs") packages into $debs"
# apt-get download runs as _apt when root; give it a writable folder
chmod 777 "$debs"
(cd "$debs" && apt-get download -qq $pkgs)
for d in "$debs"/*.deb; do dpkg -x "$d" "$SYSROOT"; done
rm -rf "$debs"
[ -x "$SYSROOT/usr/bin/node" ] || { log "FAIL: no usr/bin/node in $SYSROOT"; exit 1; }
ver=$(qemu-aarch64-static -L "$SYSROOT" "$SYSROOT/usr/bin/node" -p 'process.version + " " + process.arch + " napi " + process.versions.napi')
log "sysroot ready at $SYSROOT: node $ver"
echo "$ver" > "$SYSROOT/.complete"
echo "$SYSROOT"
