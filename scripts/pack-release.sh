#!/usr/bin/env bash
# Release shape: copies the built binaries into npm/<triple>/ and `npm pack`s each platform package and the
# main package into $DIST (default dist/). All four binaries are required: linux-x64-gnu, linux-arm64-gnu,
# linux-x64-musl, linux-arm64-musl. Fails, naming each missing one and the command that builds it, when a
# binary is missing (or, with --build, builds the missing ones first), when a glibc one needs glibc > 2.36,
# when a musl one needs more than Alpine has (scripts/check-musl.sh), or when the versions don't line up.
# optionalDependencies: the packed main package.json gets one entry per platform package at the same version,
# written into a staged copy (what `napi prepublish` does at publish time). They are not committed to the
# repo's package.json on purpose: `npm ci` refuses a lock that can't resolve them, and they can't resolve
# until the platform packages are published. If package.json does list them, they must match.
#   bash scripts/pack-release.sh [--build]   (after `npm run build`, `bash scripts/build-arm64.sh`, `bash scripts/build-musl.sh`)
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=$(mkdir -p "${DIST:-dist}" && cd "${DIST:-dist}" && pwd)
TRIPLES=(linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl)
fail() { echo "pack-release: FAIL $*" >&2; exit 1; }
build_cmd() {
  case "$1" in
    linux-x64-gnu) echo "npm run build" ;;
    linux-arm64-gnu) echo "bash scripts/build-arm64.sh" ;;
    linux-x64-musl) echo "bash scripts/build-musl.sh x64" ;;
    linux-arm64-musl) echo "bash scripts/build-musl.sh arm64" ;;
  esac
}

missing=()
for t in "${TRIPLES[@]}"; do [ -f "dotty-pi-ext.$t.node" ] || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ] && [ "${1:-}" = --build ]; then
  for t in "${missing[@]}"; do echo "pack-release: building $t: $(build_cmd "$t")" >&2; $(build_cmd "$t") >&2; done
  missing=()
  for t in "${TRIPLES[@]}"; do [ -f "dotty-pi-ext.$t.node" ] || missing+=("$t"); done
fi
if [ ${#missing[@]} -gt 0 ]; then
  for t in "${missing[@]}"; do echo "pack-release: FAIL missing dotty-pi-ext.$t.node (build it: $(build_cmd "$t"))" >&2; done
  fail "${#missing[@]} of ${#TRIPLES[@]} binaries missing; a release ships all of them (or run: bash scripts/pack-release.sh --build)"
fi
bash scripts/check-glibc.sh --max "${GLIBC_MAX:-2.36}" dotty-pi-ext.linux-x64-gnu.node dotty-pi-ext.linux-arm64-gnu.node
bash scripts/check-musl.sh dotty-pi-ext.linux-x64-musl.node dotty-pi-ext.linux-arm64-musl.node

# Same version everywhere, and the main package depends (optionally) on every platform package at it.
node - "${TRIPLES[@]}" <<'JS' || exit 1
const main = require('./package.json');
const problems = [];
for (const t of process.argv.slice(2)) {
  const p = require(`./npm/${t}/package.json`);
  const name = `${main.name}-${t}`;
  if (p.name !== name) problems.push(`npm/${t}/package.json name ${p.name} != ${name}`);
  if (p.version !== main.version) problems.push(`npm/${t}/package.json version ${p.version} != ${main.version} (npx napi version syncs them)`);
  if (p.main !== `${main.napi.binaryName}.${t}.node`) problems.push(`npm/${t}/package.json main ${p.main}`);
  const have = (main.optionalDependencies || {})[name];
  if (have !== undefined && have !== main.version) problems.push(`package.json optionalDependencies["${name}"] is ${JSON.stringify(have)}, want "${main.version}"`);
}
if (problems.length) { console.error('pack-release: FAIL\n  ' + problems.join('\n  ')); process.exit(1); }
JS

rm -f "$DIST"/*.tgz
for t in "${TRIPLES[@]}"; do
  # The binary embeds gitleaks' rules (src/palace/feed/redact/): their MIT notice travels with it.
  cp "dotty-pi-ext.$t.node" src/palace/feed/redact/LICENSE-gitleaks "npm/$t/"
  (cd "npm/$t" && npm pack --silent --pack-destination "$DIST" >/dev/null)
done
# The main package: the files `npm pack` would take, staged with its released package.json
# (scripts/release-manifest.cjs: the optionalDependencies filled in, no devDependencies).
stage="$DIST/.stage-main"
rm -rf "$stage" && mkdir -p "$stage"
npm pack --dry-run --json 2>/dev/null | node -e '
  for (const f of JSON.parse(require("fs").readFileSync(0, "utf8"))[0].files) console.log(f.path)' \
  | while read -r f; do mkdir -p "$stage/$(dirname "$f")" && cp "$f" "$stage/$f"; done
node scripts/release-manifest.cjs "$stage/package.json" "${TRIPLES[@]}"
(cd "$stage" && npm pack --silent --pack-destination "$DIST" >/dev/null)
rm -rf "$stage"

# What went in: the .node only in its platform tarball, the loader and entry only in the main one.
version=$(node -p "require('./package.json').version")
main_tgz="$DIST/dotty-pi-ext-$version.tgz"
[ -f "$main_tgz" ] || fail "npm pack made no $main_tgz"
# (listings go through a variable: `tar | grep -q` under pipefail fails when grep stops reading early)
listing=$(tar tzf "$main_tgz")
! grep -q '\.node$' <<<"$listing" || fail "$main_tgz contains a .node binary"
for f in package/index.js package/native.js package/package.json; do grep -qx "$f" <<<"$listing" || fail "$main_tgz lacks $f"; done
# production's direct-call modules (docs/voice-tools.md, "Direct calls") and their package.json, nothing else from src/
for t in memory_lookup remember recall_person remember_person think_hard take_photo play_song; do grep -qx "package/src/tools/$t.ts" <<<"$listing" || fail "$main_tgz lacks src/tools/$t.ts"; done
grep -qx package/src/tools/package.json <<<"$listing" || fail "$main_tgz lacks src/tools/package.json (the modules' type)"
[ "$(grep -c '^package/src/' <<<"$listing")" = 8 ] || fail "$main_tgz holds other files from src/: $(grep '^package/src/' <<<"$listing" | tr '\n' ' ')"
optdeps=$(tar xzOf "$main_tgz" package/package.json | node -e 'console.log(JSON.stringify(JSON.parse(require("fs").readFileSync(0, "utf8")).optionalDependencies))')
for t in "${TRIPLES[@]}"; do
  grep -q "\"dotty-pi-ext-$t\":\"$version\"" <<<"$optdeps" || fail "$main_tgz optionalDependencies lack dotty-pi-ext-$t@$version: $optdeps"
done
echo "pack-release: main optionalDependencies $optdeps"
for t in "${TRIPLES[@]}"; do
  tgz="$DIST/dotty-pi-ext-$t-$version.tgz"
  listing=$(tar tzf "$tgz")
  grep -qx "package/dotty-pi-ext.$t.node" <<<"$listing" || fail "$tgz lacks dotty-pi-ext.$t.node"
done
ls -l "$DIST"/*.tgz | awk '{print "pack-release: " $5 "\t" $NF}'
