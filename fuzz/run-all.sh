#!/usr/bin/env bash
# Runs fuzz targets one after another (never two at once), each for SECONDS (default 610) of wall
# time, niced; logs to runs/<target>.log and a summary line per target to runs/summary.txt.
# Usage: fuzz/run-all.sh [SECONDS] [target...]   (no targets: all, in the order below)
set -u
cd "$(dirname "$0")"
secs=${1:-610}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(text songs turn_text session_jsonl sse jsonrpc fts_phrase tools)
mkdir -p runs
for t in "${targets[@]}"; do
  log=runs/$t.log
  start=$(date -u +%FT%TZ)
  nice -n 10 cargo +nightly fuzz run --debug-assertions "$t" "corpus/$t" -- \
    -max_total_time="$secs" -max_len=8192 -timeout=10 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1)
  crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  echo "$t start=$start end=$(date -u +%FT%TZ) rc=$rc | $runs | $cov | artifacts=$crashes" >>runs/summary.txt
  # Keep the committed corpus small: only inputs that add coverage.
  nice -n 10 cargo +nightly fuzz cmin --debug-assertions "$t" "corpus/$t" -- -max_len=8192 -timeout=10 >"runs/$t.cmin.log" 2>&1
  echo "$t cmin rc=$? files=$(ls "corpus/$t" | wc -l) bytes=$(du -sb "corpus/$t" | cut -f1)" >>runs/summary.txt
done
