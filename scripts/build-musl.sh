#!/usr/bin/env bash
# Builds the musl addons (Alpine: production's node:25.9-alpine3.23) on this glibc x64 Debian host:
#   bash scripts/build-musl.sh [x64|arm64|all]   (default all)
#     -> ./dotty-pi-ext.linux-x64-musl.node, ./dotty-pi-ext.linux-arm64-musl.node (+ native.js/native.d.ts)
# Extra arguments after the first go to `napi build`.
#
# Toolchain choice: zig (PyPI `ziglang`) driven by cargo-zigbuild (PyPI `cargo-zigbuild`), for both.
#  - One toolchain for x64 and arm64, from a package registry, pinned; zig ships musl's headers and
#    crt files for every architecture, so there is no per-arch cross gcc to find.
#  - Rust's cdylib on musl must be `-C target-feature=-crt-static` (else it is not a loadable shared
#    object), and then Rust links `-lgcc_s` for unwinding. Debian's musl-tools (x64 only) has no musl
#    libgcc_s, so that link fails (linking the hashed copy vendored in a Node wheel "works" but leaves a
#    NEEDED on libgcc_s-<hash>.so.1 that Alpine doesn't have). zig answers -lgcc_s with its own
#    libunwind, linked statically: the .node NEEDS musl's libc alone (scripts/check-musl.sh checks).
#  - napi-rs's --use-napi-cross toolchains are gnu-only.
# Installs what is missing (idempotent): rustup targets, a venv with ziglang + cargo-zigbuild under
# ~/.cache/dotty-pi-ext/zigbuild (ZIGBUILD_VENV). Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}; [ $# -gt 0 ] && shift
ZIG_VERSION=0.17.0
ZIGBUILD_VERSION=0.24.0
VENV=${ZIGBUILD_VENV:-$HOME/.cache/dotty-pi-ext/zigbuild}
case "$which" in
  x64) targets=(x86_64-unknown-linux-musl) ;;
  arm64) targets=(aarch64-unknown-linux-musl) ;;
  all) targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl) ;;
  *) echo "build-musl: unknown '$which' (x64, arm64 or all)" >&2; exit 2 ;;
esac

stamp="$VENV/.installed-zig$ZIG_VERSION-zigbuild$ZIGBUILD_VERSION"
if [ ! -f "$stamp" ]; then
  echo "build-musl: installing ziglang==$ZIG_VERSION cargo-zigbuild==$ZIGBUILD_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "ziglang==$ZIG_VERSION" "cargo-zigbuild==$ZIGBUILD_VERSION" >&2
  # `zig` itself on PATH (napi's -x says it wants it; cargo-zigbuild would also find `python3 -m ziglang`).
  printf '#!/bin/sh\nexec "%s/bin/python3" -m ziglang "$@"\n' "$VENV" >"$VENV/bin/zig" && chmod +x "$VENV/bin/zig"
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" || { echo "build-musl: rustup target add $t" >&2; rustup target add "$t" >&2; }
done

# `napi build` adds `-C target-feature=-crt-static` to RUSTFLAGS for musl targets by itself (a cdylib
# on musl must link libc dynamically); scripts/check-musl.sh checks the result is a shared object.
for t in "${targets[@]}"; do
  t0=$(date +%s)
  npx napi build --platform --release --target "$t" -x --js native.js --dts native.d.ts "$@"
  echo "build-musl: $t built in $(( $(date +%s) - t0 )) s" >&2
done
