#!/usr/bin/env bash
# Fails when a musl addon needs anything Alpine doesn't have (the musl twin of check-glibc.sh):
#   bash scripts/check-musl.sh [--against <musl libc.so>]... file.node...
# Reads the ELF (readelf), never a load: musl's loader treats libc.so.6 as itself, so a glibc binary
# can appear to load on musl. Per file:
#  - it is a shared object for the architecture its name says (x64 / arm64), with no PT_INTERP;
#  - NEEDED only musl's libc (libc.musl-<arch>.so.1 or libc.so) and libgcc_s.so.1 (Alpine's
#    libgcc, which node:alpine images carry); no libc.so.6, ld-linux, libpthread/libdl/libm.so.N
#    (glibc's split libraries), no hashed vendored SONAME (libfoo-1a2b3c4d.so);
#  - no GLIBC_ / GCC_ symbol versions (musl has no symbol versioning);
#  - with --against: every undefined dynamic symbol is defined by that musl libc.so (repeatable:
#    each one is a musl version the binary must run on; that is how the floor is measured).
# Prints, per file, what it needs at run time.
set -euo pipefail
files=(); against=()
while [ $# -gt 0 ]; do
  case "$1" in
    --against) against+=("${2:?--against needs a musl libc.so}"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "check-musl: no files given" >&2; exit 2; }
command -v readelf >/dev/null || { echo "check-musl: readelf not found (apt-get install binutils)" >&2; exit 2; }

status=0
for f in "${files[@]}"; do
  ok=1
  bad() { echo "check-musl: FAIL $f: $*" >&2; status=1; ok=; }
  if [ ! -f "$f" ]; then bad "no such file"; continue; fi
  case "$f" in
    *x64-musl*) want_machine='Advanced Micro Devices X86-64'; arch=x86_64 ;;
    *arm64-musl*) want_machine='AArch64'; arch=aarch64 ;;
    *) bad "not named *.linux-{x64,arm64}-musl.node"; continue ;;
  esac
  hdr=$(readelf -h "$f" 2>&1) || { bad "not an ELF file"; continue; }
  grep -q "Machine: *$want_machine" <<<"$hdr" || { bad "machine is $(sed -n 's/.*Machine: *//p' <<<"$hdr"), want $want_machine"; continue; }
  grep -q 'Type: *DYN' <<<"$hdr" || bad "not a shared object (a cdylib on musl needs -C target-feature=-crt-static)"
  ! readelf -l "$f" | grep -q 'INTERP' || bad "has a PT_INTERP (an executable, not a loadable .node)"
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || bad "no NEEDED entries (not dynamically linked against musl?)"
  has_libc=
  for n in $needed; do
    case "$n" in
      "libc.musl-$arch.so.1"|libc.so) has_libc=1 ;;
      libgcc_s.so.1) ;;
      libc.so.6|ld-linux*|libpthread.so.*|libdl.so.*|libm.so.*|librt.so.*|libutil.so.*) bad "NEEDED $n is glibc's" ;;
      *-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].so*) bad "NEEDED $n is a hashed vendored SONAME (Alpine has no such file)" ;;
      *) bad "NEEDED $n is not part of Alpine's base (musl, libgcc)" ;;
    esac
  done
  [ -n "$has_libc" ] || bad "does not NEED musl's libc (libc.musl-$arch.so.1 or libc.so)"
  vers=$(readelf -V "$f" | grep -o '\(GLIBC\|GCC\)_[0-9][0-9.]*' | sort -Vu | tr '\n' ' ' || true)
  [ -z "$vers" ] || bad "symbol versions $vers(glibc/libgcc's; musl has none)"
  undef=$(readelf --dyn-syms -W "$f" | awk '$7 == "UND" && $8 != "" { sub(/@.*/, "", $8); print $8 }' | sort -u)
  for libc in "${against[@]}"; do
    defined=$(readelf --dyn-syms -W "$libc" | awk '$7 != "UND" && $8 != "" { sub(/@.*/, "", $8); print $8 }' | sort -u)
    # napi_* come from Node itself; weak references may stay unresolved.
    weak=$(readelf --dyn-syms -W "$f" | awk '$7 == "UND" && $5 == "WEAK" { sub(/@.*/, "", $8); print $8 }' | sort -u)
    missing=$(comm -23 <(grep -v '^napi_' <<<"$undef") <(printf '%s\n%s\n' "$defined" "$weak" | sort -u) | tr '\n' ' ')
    if [ -n "$missing" ]; then bad "symbols not in $libc: $missing"; else echo "check-musl: ok $f resolves all $(grep -vc '^napi_' <<<"$undef") libc symbols against $libc"; fi
  done
  [ -z "$ok" ] || echo "check-musl: ok $f ($arch) NEEDED: $(tr '\n' ' ' <<<"$needed")(napi_* from Node)"
done
exit $status
