#!/usr/bin/env bash
# Runs the REAL MemPalace MCP server on stdio (one JSON-RPC message per line), offline.
# Use it as the server command of an MCP client; `exec` keeps this script's PID = the server's PID.
#
#   MEMPALACE_PALACE=/tmp/x/palace scripts/mempalace/start-stdio.sh [--read-only]
#
# stdout carries JSON-RPC only; logs go to stderr. Give each palace its own parent folder: MemPalace writes
# hallways.json and tunnels.json next to the palace. Run install.sh first.
set -euo pipefail
ROOT="${MEMPALACE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/mempalace-test}"
[ -x "$ROOT/venv/bin/mempalace-mcp" ] || { echo "mempalace not installed under $ROOT: run install.sh" >&2; exit 127; }
export HOME="$ROOT/home"                       # model cache, locks and hub registry live here
export MEMPALACE_CONFIG_DIR="${MEMPALACE_CONFIG_DIR:-$ROOT/cfg}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export MEMPALACE_HUB_FORWARD="${MEMPALACE_HUB_FORWARD:-0}"   # never proxy silently to a running `mempalace serve`
PALACE="${MEMPALACE_PALACE:-$ROOT/palace}"
mkdir -p "$MEMPALACE_CONFIG_DIR" "$(dirname "$PALACE")"
exec "$ROOT/venv/bin/mempalace-mcp" --palace "$PALACE" "$@"
