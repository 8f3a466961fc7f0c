"""Files the filler drawers of bench/recall.mjs's 10,000-drawer palace (one per stdin line) in
batches, with MemPalace's own collection, drawer-id recipe and metadata, as its mempalace_add_drawer
files a drawer that fits one chunk; one by one over MCP the 9,700 take about an hour here.
Run with MemPalace's Python, the palace in MEMPALACE_PALACE and no server open on it:

    MEMPALACE_PALACE=<palace> <venv>/bin/python bench/recall/fill.py WING ROOM < lines.txt
"""
import os
import sys
from datetime import datetime

# mempalace.mcp_server points fd 1 at stderr when imported (stdout is its JSON-RPC channel): the
# count at the end goes to a copy of the real stdout taken first.
out = os.fdopen(os.dup(1), "w")

from mempalace.ids import ID_RECIPE, make_drawer_id_from_content
from mempalace.mcp_server import _get_collection

wing, room = sys.argv[1:3]
lines = [line for line in sys.stdin.read().split("\n") if line.strip()]
col = _get_collection(create=True)
if col is None:
    sys.exit("no palace collection (is MEMPALACE_PALACE set?)")
now = datetime.now().isoformat()
meta = {"wing": wing, "room": room, "source_file": "", "added_by": "recall-bench", "filed_at": now,
        "last_modified": now, "id_recipe": ID_RECIPE, "chunk_index": 0}
for i in range(0, len(lines), 500):
    batch = lines[i:i + 500]
    col.upsert(ids=[make_drawer_id_from_content(wing, room, t) for t in batch], documents=batch,
               metadatas=[dict(meta) for _ in batch])
    print(f"[recall bench] {i + len(batch)} filler drawers", file=sys.stderr, flush=True)
print(col.count(), file=out)
