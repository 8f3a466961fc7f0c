#!/usr/bin/env bash
# Proof on musl (Alpine's libc), on this glibc Debian machine:
#  x64:   the voice contract tests (vitest.musl.config.mjs: memory-tools, trust-voice, services-tools,
#         turn-log, play-song…, and libc.test.mjs, which checks the mapped .node is the musl one and its
#         ELF) run by vitest inside a real musl Node 24 (scripts/musl/node.sh x64).
#  arm64: __test__/arm64/smoke.cjs with the linux-arm64-musl addon in the aarch64 musl Node 24, under
#         qemu-user (scripts/musl/node.sh arm64), against a brain.db fixture it writes to.
# The pi RPC end-to-end on musl is __test__/e2e/voice.e2e.test.mjs's '0.74.0@musl' target (npm test).
#   bash scripts/musl-check.sh [x64|arm64|all] [vitest args…]      (default all)
# vitest on musl needs the musl builds of vite 8's native bindings (rolldown, lightningcss): fetched
# once with `npm pack` into ~/.cache/dotty-pi-ext/musl-deps/ and found through NODE_PATH, so
# node_modules (npm ci, glibc) is untouched. better-sqlite3 (the tests' independent SQLite) is built by
# npm ci for the host's Node: the tests run it in that Node (DOTTY_TEST_SQLITE_NODE).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
which=${1:-all}; [ $# -gt 0 ] && shift
fail() { echo "musl-check: FAIL $*" >&2; exit 1; }

deps_dir() { # arch -> a folder with node_modules/ holding vite's musl bindings
  local arch=$1 rd lc dir fetch
  rd=$(node -p "require('./node_modules/rolldown/package.json').version")
  lc=$(node -p "require('./node_modules/lightningcss/package.json').version")
  dir="$HOME/.cache/dotty-pi-ext/musl-deps/$arch-rolldown$rd-lightningcss$lc"
  if [ ! -f "$dir/.complete" ]; then
    echo "musl-check: fetching @rolldown/binding-linux-$arch-musl@$rd, lightningcss-linux-$arch-musl@$lc (npm pack)" >&2
    rm -rf "$dir" && mkdir -p "$dir/node_modules/@rolldown"
    fetch=$(mktemp -d)
    (cd "$fetch" && npm pack --silent "@rolldown/binding-linux-$arch-musl@$rd" "lightningcss-linux-$arch-musl@$lc" >/dev/null)
    mkdir -p "$fetch/a" "$fetch/b"
    tar xzf "$fetch"/rolldown-binding-linux-$arch-musl-*.tgz -C "$fetch/a" && mv "$fetch/a/package" "$dir/node_modules/@rolldown/binding-linux-$arch-musl"
    tar xzf "$fetch"/lightningcss-linux-$arch-musl-*.tgz -C "$fetch/b" && mv "$fetch/b/package" "$dir/node_modules/lightningcss-linux-$arch-musl"
    rm -rf "$fetch"
    touch "$dir/.complete"
  fi
  echo "$dir"
}

x64() {
  local bin=dotty-pi-ext.linux-x64-musl.node node deps
  [ -f "$bin" ] || fail "no $bin here; build it: bash scripts/build-musl.sh x64"
  bash scripts/check-musl.sh "$bin"
  node=$(bash scripts/musl/node.sh x64)
  deps=$(deps_dir x64)
  echo "musl-check: vitest in $("$node" -p '`Node ${process.version} (${process.report.getReport().header.glibcVersionRuntime ? "glibc" : "musl"})`') ($node)" >&2
  env -u NODE_OPTIONS NODE_PATH="$deps/node_modules" DOTTY_TEST_SQLITE_NODE="$(command -v node)" DOTTY_EXPECT_LIBC=musl \
    "$node" node_modules/vitest/vitest.mjs run -c vitest.musl.config.mjs "$@"
}

arm64() {
  local bin=dotty-pi-ext.linux-arm64-musl.node node work py t0 t1
  [ -f "$bin" ] || fail "no $bin here; build it: bash scripts/build-musl.sh arm64"
  bash scripts/check-musl.sh "$bin"
  node=$(bash scripts/musl/node.sh arm64)
  work=$(mktemp -d /tmp/dotty-musl-arm64.XXXXXX)
  trap 'rm -rf "$work"' RETURN
  py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
  seed='The lighthouse keeper on the hill is called Maud'
  python3 "$ROOT/scripts/smoke-brain.py" seed "$work/brain.db" "$ROOT/brain-schema.sql" "$seed"
  echo "musl-check: arm64 smoke in $("$node" -p '`Node ${process.version} ${process.arch} (${process.report.getReport().header.glibcVersionRuntime ? "glibc" : "musl"})`') under qemu ($node)" >&2
  t0=$(date +%s%N)
  env -u NODE_OPTIONS SMOKE_EXPECT_ARCH=arm64 SMOKE_EXPECT_LIBC=musl DOTTY_BRAIN_DB="$work/brain.db" SMOKE_SEEDED_FACT="$seed" \
    SMOKE_MCP_PYTHON="$py" SMOKE_MCP_CHILD_ELF=0x3e "$node" __test__/arm64/smoke.cjs
  t1=$(date +%s%N)
  python3 "$ROOT/scripts/smoke-brain.py" check "$work/brain.db" "$seed" musl-check
  echo "musl-check: arm64 musl smoke ok ($(( (t1 - t0) / 1000000 )) ms under qemu)"
}

case "$which" in
  x64) x64 "$@" ;;
  arm64) arm64 ;;
  all) x64 "$@"; arm64 ;;
  *) fail "unknown '$which' (x64, arm64 or all)" ;;
esac
