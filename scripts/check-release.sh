#!/usr/bin/env bash
# Installs the packed release the way a user gets it and proves it loads, with no Rust toolchain on PATH:
#  1. x64: main tarball + linux-x64-gnu tarball into an empty folder -> the platform package is picked,
#     the smoke passes against the installed copy, and the real pi CLI loads it (`--mode rpc`, get_state,
#     the 7 tools registered, no load error on stderr).
#  2. main tarball alone (--omit=optional) -> requiring it prints what to do, and pi still starts.
#  3. arm64 (skip with CHECK_ARM64=0): main + linux-arm64-gnu tarball installed with npm's --cpu=arm64 --force into an
#     empty folder, then the smoke runs against that install under qemu with Debian's arm64 Node.
#  4. musl (skip with CHECK_MUSL=0): the main tarball with all four platform tarballs offered as optional
#     dependencies, installed with npm's --libc=musl: npm must pick linux-x64-musl alone; then the smoke and
#     the real pi load it in a real musl Node (scripts/musl/node.sh), which must map the musl .node. The same
#     with --cpu=arm64 --libc=musl: linux-arm64-musl alone, smoke in the aarch64 musl Node under qemu.
#     (And the same offer without --libc on this glibc host: linux-x64-gnu alone.)
#   bash scripts/check-release.sh [--pack]     (--pack: run scripts/pack-release.sh first; DIST as there)
# Installs use --offline: the tarballs are all it needs, so no registry is asked about our package names.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
[ "${1:-}" = --pack ] && bash scripts/pack-release.sh
DIST=$(cd "${DIST:-dist}" && pwd)
version=$(node -p "require('./package.json').version")
main_tgz="$DIST/dotty-pi-ext-$version.tgz"
PI_CLI="${PI_CLI:-$ROOT/node_modules/@earendil-works/pi-coding-agent/dist/cli.js}"
fail() { echo "check-release: FAIL $*" >&2; exit 1; }
for f in "$main_tgz" "$DIST"/dotty-pi-ext-linux-{x64,arm64}-{gnu,musl}-"$version".tgz "$PI_CLI"; do [ -f "$f" ] || fail "missing $f (run scripts/pack-release.sh; npm ci for pi)"; done

# PATH without any folder that has cargo, rustc or rustup in it.
clean=
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ] && continue
  clean="${clean:+$clean:}$d"
done
export PATH="$clean"
unset CARGO_HOME RUSTUP_HOME CARGO_TARGET_DIR
! command -v cargo >/dev/null && ! command -v rustc >/dev/null || fail "cargo/rustc still on PATH=$PATH"
echo "check-release: PATH without Rust: $PATH"

work=$(mktemp -d /tmp/dotty-release-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
install_into() { # dir, npm args...
  local dir=$1; shift
  mkdir -p "$dir" && echo '{"name":"consumer","version":"1.0.0","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --offline --no-audit --no-fund --loglevel=error "$@" >"$dir/npm.log" 2>&1) \
    || { cat "$dir/npm.log" >&2; fail "npm install $* in $dir"; }
}

# 1. x64
t0=$(date +%s%N)
install_into "$work/x64" "$main_tgz" "$DIST/dotty-pi-ext-linux-x64-gnu-$version.tgz"
pkg="$work/x64/node_modules/dotty-pi-ext"
[ -f "$work/x64/node_modules/dotty-pi-ext-linux-x64-gnu/dotty-pi-ext.linux-x64-gnu.node" ] || fail "x64 platform package not installed"
[ -f "$work/x64/node_modules/dotty-pi-ext-linux-x64-gnu/LICENSE-gitleaks" ] || fail "the x64 platform package lacks LICENSE-gitleaks (the rules its binary embeds)"
[ ! -e "$work/x64/node_modules/dotty-pi-ext-linux-arm64-gnu" ] || fail "the arm64 package got installed on x64"
ls "$pkg"/*.node >/dev/null 2>&1 && fail "the main package carries a .node file"
for t in memory_lookup remember recall_person remember_person think_hard take_photo play_song; do [ -f "$pkg/src/tools/$t.ts" ] || fail "the install lacks src/tools/$t.ts (production's direct calls)"; done
(cd "$work/x64" && SMOKE_PACKAGE_DIR="$pkg" node "$ROOT/__test__/arm64/smoke.cjs" >"$work/x64/smoke.log" 2>&1) \
  || { cat "$work/x64/smoke.log" >&2; fail "smoke against the x64 install"; }
tail -1 "$work/x64/smoke.log" | sed 's/^/check-release: x64 install /'
node "$ROOT/scripts/pi-load-check.cjs" "$PI_CLI" "$pkg"
t1=$(date +%s%N)
echo "check-release: x64 install + smoke + pi load: $(( (t1 - t0) / 1000000 )) ms"

# 2. no platform package: a clear message, and pi must still start (loading never throws)
install_into "$work/bare" --omit=optional "$main_tgz"
msg=$(cd "$work/bare" && node -e 'require("dotty-pi-ext")' 2>&1)
grep -q 'to fix: install the optional dependency dotty-pi-ext-linux-x64-gnu' <<<"$msg" \
  && grep -q 'npm run build' <<<"$msg" || fail "no actionable message without a binary; got:
$msg"
echo "check-release: without a binary it says: $(grep 'to fix' <<<"$msg")"
PI_CHECK_EXPECT_NO_BINARY=1 node "$ROOT/scripts/pi-load-check.cjs" "$PI_CLI" "$work/bare/node_modules/dotty-pi-ext"

# 3. arm64 install, exercised under qemu
if [ "${CHECK_ARM64:-1}" != 0 ]; then
  t0=$(date +%s%N)
  # npm checks a tarball named on the command line against the real cpu even with --cpu=arm64, hence --force
  # (it only lifts that EBADPLATFORM; the checks below still demand exactly the arm64 package).
  install_into "$work/arm64" --cpu=arm64 --os=linux --libc=glibc --force "$main_tgz" "$DIST/dotty-pi-ext-linux-arm64-gnu-$version.tgz"
  pkg="$work/arm64/node_modules/dotty-pi-ext"
  [ -f "$work/arm64/node_modules/dotty-pi-ext-linux-arm64-gnu/dotty-pi-ext.linux-arm64-gnu.node" ] || fail "arm64 platform package not installed"
  [ ! -e "$work/arm64/node_modules/dotty-pi-ext-linux-x64-gnu" ] || fail "the x64 package got installed for arm64"
  SYSROOT=$(bash "$ROOT/scripts/arm64-sysroot.sh")
  (cd "$work/arm64" && QEMU_LD_PREFIX="$SYSROOT" SMOKE_EXPECT_ARCH=arm64 SMOKE_PACKAGE_DIR="$pkg" \
     qemu-aarch64-static -L "$SYSROOT" "$SYSROOT/usr/bin/node" "$ROOT/__test__/arm64/smoke.cjs" >"$work/arm64/smoke.log" 2>&1) \
    || { cat "$work/arm64/smoke.log" >&2; fail "smoke against the arm64 install under qemu"; }
  tail -1 "$work/arm64/smoke.log" | sed 's/^/check-release: arm64 install under qemu /'
  t1=$(date +%s%N)
  echo "check-release: arm64 install + qemu smoke: $(( (t1 - t0) / 1000000 )) ms"
fi
# 4. Offered all four platform packages (optional dependencies, as the main package's own are), npm picks the one
# for the libc/cpu it is told; the musl ones then load in a real musl Node.
offer_all() { # dir, npm args...: a consumer offering every platform tarball as an optional dependency
  local dir=$1; shift
  mkdir -p "$dir"
  node - "$dir/package.json" "$main_tgz" "$DIST" "$version" <<'JS'
const fs = require('fs');
const [file, main, dist, version] = process.argv.slice(2);
const optionalDependencies = {};
for (const t of ['linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl']) optionalDependencies[`dotty-pi-ext-${t}`] = `file:${dist}/dotty-pi-ext-${t}-${version}.tgz`;
fs.writeFileSync(file, JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, dependencies: { 'dotty-pi-ext': `file:${main}` }, optionalDependencies }, null, 2));
JS
  (cd "$dir" && npm install --offline --no-audit --no-fund --loglevel=error "$@" >"$dir/npm.log" 2>&1) \
    || { cat "$dir/npm.log" >&2; fail "npm install $* in $dir"; }
}
only_platform() { # dir, the one platform package that must be there
  local got
  got=$(cd "$1/node_modules" && ls -d dotty-pi-ext-* 2>/dev/null | tr '\n' ' ')
  [ "$got" = "dotty-pi-ext-$2 " ] || fail "offered all four platform packages, npm installed: ${got:-none}; want dotty-pi-ext-$2 alone"
  [ -f "$1/node_modules/dotty-pi-ext-$2/dotty-pi-ext.$2.node" ] && [ -f "$1/node_modules/dotty-pi-ext-$2/LICENSE-gitleaks" ] \
    || fail "dotty-pi-ext-$2 lacks its binary or LICENSE-gitleaks"
  echo "check-release: offered all four, npm $3 picked dotty-pi-ext-$2 alone"
}
offer_all "$work/all-gnu"
only_platform "$work/all-gnu" linux-x64-gnu "(this glibc host)"
if [ "${CHECK_MUSL:-1}" != 0 ]; then
  t0=$(date +%s%N)
  MUSL_NODE=$(bash "$ROOT/scripts/musl/node.sh" x64)
  offer_all "$work/musl" --libc=musl
  only_platform "$work/musl" linux-x64-musl "--libc=musl"
  pkg="$work/musl/node_modules/dotty-pi-ext"
  bash "$ROOT/scripts/check-musl.sh" "$work/musl/node_modules/dotty-pi-ext-linux-x64-musl/dotty-pi-ext.linux-x64-musl.node"
  (cd "$work/musl" && SMOKE_EXPECT_LIBC=musl SMOKE_PACKAGE_DIR="$pkg" "$MUSL_NODE" "$ROOT/__test__/arm64/smoke.cjs" >"$work/musl/smoke.log" 2>&1) \
    || { cat "$work/musl/smoke.log" >&2; fail "smoke against the musl install in the musl Node"; }
  tail -1 "$work/musl/smoke.log" | sed 's/^/check-release: x64 musl install, musl Node /'
  PI_CHECK_EXPECT_ADDON=dotty-pi-ext.linux-x64-musl.node "$MUSL_NODE" "$ROOT/scripts/pi-load-check.cjs" "$PI_CLI" "$pkg"
  t1=$(date +%s%N)
  echo "check-release: x64 musl install + smoke + pi load in a musl Node: $(( (t1 - t0) / 1000000 )) ms"
  if [ "${CHECK_ARM64:-1}" != 0 ]; then
    t0=$(date +%s%N)
    MUSL_NODE_ARM64=$(bash "$ROOT/scripts/musl/node.sh" arm64)
    offer_all "$work/musl-arm64" --cpu=arm64 --libc=musl
    only_platform "$work/musl-arm64" linux-arm64-musl "--cpu=arm64 --libc=musl"
    pkg="$work/musl-arm64/node_modules/dotty-pi-ext"
    (cd "$work/musl-arm64" && SMOKE_EXPECT_ARCH=arm64 SMOKE_EXPECT_LIBC=musl SMOKE_PACKAGE_DIR="$pkg" "$MUSL_NODE_ARM64" "$ROOT/__test__/arm64/smoke.cjs" >"$work/musl-arm64/smoke.log" 2>&1) \
      || { cat "$work/musl-arm64/smoke.log" >&2; fail "smoke against the arm64 musl install in the aarch64 musl Node under qemu"; }
    tail -1 "$work/musl-arm64/smoke.log" | sed 's/^/check-release: arm64 musl install, musl Node under qemu /'
    t1=$(date +%s%N)
    echo "check-release: arm64 musl install + qemu smoke: $(( (t1 - t0) / 1000000 )) ms"
  fi
fi
echo "check-release: ok"
