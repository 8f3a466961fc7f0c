#!/usr/bin/env bash
# Debian's build of musl's libc.so (which is also musl's dynamic loader), for one architecture:
#   bash scripts/musl/libc.sh [x64|arm64] [trixie|bookworm]   -> prints the absolute path of libc.so
#   trixie: musl 1.2.5 (Alpine 3.20+; runs the musl Node, which needs DT_RELR: >= 1.2.4)
#   bookworm: musl 1.2.3 (Alpine 3.17/3.18): scripts/check-musl.sh --against it measures the floor.
# Fetched with `apt-get download` through a throwaway apt configuration (its own sources list, lists
# and cache: the system's apt setup is not touched), unpacked with dpkg-deb -x into
# ~/.cache/dotty-pi-ext/musl-node (MUSL_NODE_CACHE). Progress on stderr. Idempotent, offline once cached.
set -euo pipefail
arch=${1:-x64}; suite=${2:-trixie}
case "$arch" in
  x64) deb_arch=amd64; triple=x86_64-linux-musl ;;
  arm64) deb_arch=arm64; triple=aarch64-linux-musl ;;
  *) echo "musl/libc.sh: unknown arch '$arch' (x64 or arm64)" >&2; exit 2 ;;
esac
case "$suite" in trixie|bookworm) ;; *) echo "musl/libc.sh: unknown suite '$suite' (trixie or bookworm)" >&2; exit 2 ;; esac
CACHE=${MUSL_NODE_CACHE:-$HOME/.cache/dotty-pi-ext/musl-node}
dir="$CACHE/musl-$suite-$deb_arch"
# trixie ships it in usr/lib/<triple>/, bookworm in lib/<triple>/ (merged-/usr before the move).
find_lib() { for l in "$1/usr/lib/$triple/libc.so" "$1/lib/$triple/libc.so"; do [ -f "$l" ] && { echo "$l"; return 0; }; done; return 1; }
if [ -f "$dir/.complete" ]; then find_lib "$dir"; exit 0; fi
echo "musl/libc.sh: fetching Debian $suite's musl ($deb_arch) with apt-get download" >&2
mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.fetch-musl-$suite-$deb_arch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
apt="$tmp/apt"; mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/sources.list.d" "$apt/preferences.d"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" >"$apt/sources.list"
host_arch=$(dpkg --print-architecture)
aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
         -o "Dir::Etc::PreferencesParts=$apt/preferences.d" -o "Dir::State::Lists=$apt/lists"
         -o "Dir::Cache=$apt/cache" -o "Dir::State::status=/dev/null"
         -o "APT::Architecture=$host_arch" -o "APT::Architectures::=$host_arch" -o "APT::Architectures::=$deb_arch"
         -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -qq)
apt-get "${aptopts[@]}" update >&2
(cd "$tmp" && apt-get "${aptopts[@]}" download "musl:$deb_arch" >&2)
deb=$(ls "$tmp"/musl_*.deb)
dpkg-deb -x "$deb" "$tmp/x"
find_lib "$tmp/x" >/dev/null || { echo "musl/libc.sh: no libc.so for $triple in $deb" >&2; exit 1; }
dpkg-deb -f "$deb" Version >"$tmp/x/.version"
touch "$tmp/x/.complete"
rm -rf "$dir" && mv "$tmp/x" "$dir"
echo "musl/libc.sh: musl $(cat "$dir/.version") ($suite, $deb_arch) in $dir" >&2
find_lib "$dir"
