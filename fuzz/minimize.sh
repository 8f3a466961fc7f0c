#!/usr/bin/env bash
# Shrinks corpus/<target> (all targets when none given) to the inputs that keep every coverage
# edge, hit counts ignored (libFuzzer's merge with -use_counters=0, what `cargo fuzz cmin` does
# with counters); the hand-made seed-* files are kept. Uses the binaries the last
# `cargo +nightly fuzz build --debug-assertions` (or run) built.
set -eu
cd "$(dirname "$0")"
bins=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release
[ $# -gt 0 ] || set -- jsonrpc tools sse fts_phrase session_jsonl turn_text songs text redact
for t in "$@"; do
  new=$(mktemp -d)
  cp corpus/"$t"/seed-* "$new"/ 2>/dev/null || true
  nice -n 10 "$bins/$t" -merge=1 -use_counters=0 -max_len=8192 -timeout=10 "$new" "corpus/$t" >"$new.log" 2>&1 || { cat "$new.log"; exit 1; }
  rm -rf "corpus/$t" && mkdir -p "corpus/$t" && cp "$new"/* "corpus/$t"/ && rm -rf "$new" "$new.log"
  echo "$t: $(ls "corpus/$t" | wc -l) files, $(du -sb "corpus/$t" | cut -f1) bytes"
done
