#!/usr/bin/env bash
# Starts the REAL MemPalace MCP server over HTTP on 127.0.0.1, offline, in the background.
#
#   MEMPALACE_PALACE=/tmp/x/palace MEMPALACE_MCP_HTTP_TOKEN=secret scripts/mempalace/start-http.sh [PORT]
#
# PORT defaults to a free one. Prints URL=..., PID=... and exits once /healthz answers (about 1.5 s).
# Stop it with: kill <PID>. The endpoint is POST <URL> only; replies are plain JSON (no SSE, no session id).
# With MEMPALACE_MCP_HTTP_TOKEN set, every request needs "Authorization: Bearer <token>" (else 401).
# On a loopback bind the Host header must be 127.0.0.1, localhost or ::1, else 403.
set -euo pipefail
ROOT="${MEMPALACE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/mempalace-test}"
[ -x "$ROOT/venv/bin/mempalace" ] || { echo "mempalace not installed under $ROOT: run install.sh" >&2; exit 127; }
export HOME="$ROOT/home" MEMPALACE_CONFIG_DIR="${MEMPALACE_CONFIG_DIR:-$ROOT/cfg}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PALACE="${MEMPALACE_PALACE:-$ROOT/palace-http}"
PORT="${1:-$("$ROOT/venv/bin/python" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')}"
LOG="${MEMPALACE_HTTP_LOG:-$(dirname "$PALACE")/mempalace-http.log}"
mkdir -p "$MEMPALACE_CONFIG_DIR" "$(dirname "$PALACE")"
# `mempalace serve` execs the server, so $! is the server's PID. The token travels in the environment only.
nohup "$ROOT/venv/bin/mempalace" serve --host 127.0.0.1 --port "$PORT" --palace "$PALACE" >"$LOG" 2>&1 </dev/null &
PID=$!
for _ in $(seq 1 150); do
  if "$ROOT/venv/bin/python" -c "import urllib.request,sys;urllib.request.urlopen('http://127.0.0.1:$PORT/healthz',timeout=1)" 2>/dev/null; then
    echo "URL=http://127.0.0.1:$PORT/mcp"; echo "PID=$PID"; exit 0
  fi
  kill -0 "$PID" 2>/dev/null || { echo "server exited; log:" >&2; cat "$LOG" >&2; exit 1; }
  sleep 0.2
done
echo "server did not become healthy; log:" >&2; cat "$LOG" >&2; kill "$PID" 2>/dev/null || true; exit 1
