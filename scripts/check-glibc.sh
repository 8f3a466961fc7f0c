#!/usr/bin/env bash
# Fails when a built addon needs a newer glibc than the floor we ship for.
#   bash scripts/check-glibc.sh [--max 2.36] file.node...
# Default floor 2.36 = Raspberry Pi OS bookworm / Debian 12. Reads the ELF version references
# (`objdump -p`, works for x64 and aarch64 files alike) so only what the dynamic linker will demand counts.
set -euo pipefail
max=2.36
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --max) max="${2:?--max needs a version, e.g. 2.36}"; shift 2 ;;
    --max=*) max="${1#--max=}"; shift ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "check-glibc: no files given" >&2; exit 2; }
command -v objdump >/dev/null || { echo "check-glibc: objdump not found (apt-get install binutils)" >&2; exit 2; }

status=0
for f in "${files[@]}"; do
  if [ ! -f "$f" ]; then echo "check-glibc: FAIL $f: no such file" >&2; status=1; continue; fi
  refs=$(objdump -p "$f" | sed -n '/^Version References:/,/^$/p' | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -Vu || true)
  if [ -z "$refs" ]; then
    echo "check-glibc: FAIL $f: no GLIBC version references found (not a glibc-linked ELF?)" >&2; status=1; continue
  fi
  need=$(tail -1 <<<"$refs")
  if [ "$(printf '%s\n%s\n' "$need" "$max" | sort -V | tail -1)" != "$max" ]; then
    echo "check-glibc: FAIL $f needs GLIBC_$need > allowed $max; symbols above the floor:" >&2
    objdump -T "$f" | awk -v max="$max" '/\(GLIBC_/ { v=$0; sub(/.*\(GLIBC_/, "", v); sub(/\).*/, "", v); print v, $NF }' \
      | while read -r v sym; do
          [ "$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -1)" = "$max" ] || echo "    $sym@GLIBC_$v" >&2
        done
    status=1
  else
    echo "check-glibc: ok $f needs GLIBC_$need (<= $max)"
  fi
done
exit $status
