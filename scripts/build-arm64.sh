#!/usr/bin/env bash
# Cross-builds the linux-arm64-gnu addon (Raspberry Pi OS bookworm, glibc 2.36) on an x64 Debian host:
#   bash scripts/build-arm64.sh            -> ./dotty-pi-ext.linux-arm64-gnu.node (+ native.js/native.d.ts)
# Extra arguments go to `napi build` (e.g. `-o dist`).
#
# Toolchain choice: Debian's cross gcc (gcc-aarch64-linux-gnu + libc6-dev-arm64-cross).
#  - It comes from the same registry as everything else here (apt), is signed and versioned by Debian,
#    and needs no npm pins (napi's --use-napi-cross needs @napi-rs/cross-toolchain + lzma pins and a
#    -D__ARM_ARCH=8 workaround for ring) and no extra PyPI binaries (zig + cargo-zigbuild).
#  - Its sysroot is bookworm's glibc 2.36, i.e. the Pi's own. The binary links only the symbol versions it
#    uses (measured floor: see scripts/check-glibc.sh output), which stays <= 2.36 by construction, and
#    scripts/check-glibc.sh enforces it. zig (target aarch64-unknown-linux-gnu.2.17) would lower the floor
#    to 2.17; nobody runs this on a pre-bookworm Pi, so we don't pay for a second C toolchain.
# Idempotent: installs only what is missing. Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
need_apt=()
command -v aarch64-linux-gnu-gcc >/dev/null || need_apt+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || need_apt+=(libc6-dev-arm64-cross)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "build-arm64: installing ${need_apt[*]}" >&2
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if ! rustup target list --installed | grep -qx "$TARGET"; then
  echo "build-arm64: rustup target add $TARGET" >&2
  rustup target add "$TARGET"
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
# cc-rs (bundled SQLite, ring) finds aarch64-linux-gnu-gcc by itself; naming it keeps that explicit.
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
exec npx napi build --platform --release --target "$TARGET" --js native.js --dts native.d.ts "$@"
