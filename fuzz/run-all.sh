#!/usr/bin/env bash
# Runs fuzz targets one after another (never two at once), each for SECONDS (default 610) of wall
# time, niced; logs to runs/<target>.log and a summary line per target to runs/summary.txt.
# Usage: fuzz/run-all.sh [SECONDS] [target...]   (no targets: all, in the order below)
# Afterwards, shrink the corpora with ./minimize.sh.
set -u
cd "$(dirname "$0")"
secs=${1:-610}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(jsonrpc tools sse fts_phrase session_jsonl turn_text songs text redact)
mkdir -p runs
# The summary line of a finished run: executions, libFuzzer's last status line, crash files.
summarize() {
  local t=$1 start=$2 rc=$3 log=runs/$1.log
  local done cov crashes
  done=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1)
  crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  echo "$t start=$start end=$(date -u +%FT%TZ) rc=$rc | $done | $cov | artifacts=$crashes" >>runs/summary.txt
}
[ "${SUMMARIZE_ONLY:-}" ] && { summarize "$SUMMARIZE_ONLY" "$START" "$RC"; exit; }
for t in "${targets[@]}"; do
  start=$(date -u +%FT%TZ)
  nice -n 10 cargo +nightly fuzz run --debug-assertions "$t" "corpus/$t" -- \
    -max_total_time="$secs" -max_len=8192 -timeout=10 -print_final_stats=1 >"runs/$t.log" 2>&1
  summarize "$t" "$start" $?
done
