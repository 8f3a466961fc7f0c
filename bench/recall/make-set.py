#!/usr/bin/env python3
"""Makes the recall benchmark's labelled set (bench/recall/set.json) and the filler drawers of its
10,000-drawer palace (bench/recall/filler.txt.gz) from Debian's own metadata, text nobody in this
project wrote. Deterministic: the same inputs give the same files. Run once; the outputs are committed.

    python3 bench/recall/make-set.py DEP11_Components-amd64.yml.gz Packages.lz4

Inputs (Debian bookworm main; on a Debian machine after `apt-get update`, under /var/lib/apt/lists/):
  - AppStream DEP-11 components (`..._main_dep11_Components-amd64.yml.gz`): desktop applications with
    their English summary, description, categories and keywords;
  - the binary package index (`..._main_binary-amd64_Packages.lz4`, read with the `lz4` tool): each
    package's one-line synopsis.

What it makes:
  - drawers: 300 applications that are not games, one drawer each: "<Name>: <description>" (HTML
    paragraphs and list items flattened), wing "wing_software", room = the first category;
  - prompts with a known relevant drawer: 100 application summaries (e.g. "Tracker program for
    AHX/HVL") and 60 keyword prompts (an application's AppStream keywords, e.g. "tracker amiga"),
    each labelled with its drawer;
  - prompts with none: 100 summaries of games (no game is in the palace);
  - filler: 9,700 one-line package synopses ("<package>: <synopsis>") of packages that ship none of
    the applications above and are no games (so the prompts with no relevant drawer keep none), to
    grow the palace to 10,000 drawers.
"""
import gzip, hashlib, html, json, re, subprocess, sys

import yaml  # PyYAML (MemPalace's venv has it)

PALACE, SUMMARY_PROMPTS, KEYWORD_PROMPTS, NEGATIVES, FILLER = 300, 100, 60, 100, 9700


def rank(s):
    return hashlib.sha256(s.encode()).hexdigest()


def flat(desc):
    text = re.sub(r"</?(p|ul|ol)>", "\n", desc)
    text = re.sub(r"<li>", "\n- ", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = html.unescape(text)
    return re.sub(r"\s+", " ", text).strip()


def main(dep11, packages):
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with gzip.open(dep11, "rt", encoding="utf-8") as f:
        docs = list(yaml.load_all(f, Loader=loader))
    header = docs[0]
    apps, seen_summary = {}, set()
    for d in docs[1:]:
        if not d or d.get("Type") != "desktop-application":
            continue
        summary = (d.get("Summary") or {}).get("C", "").strip()
        desc = flat((d.get("Description") or {}).get("C", ""))
        name = (d.get("Name") or {}).get("C", "").strip()
        cats = d.get("Categories") or []
        if not summary or not name or len(desc) < 120 or not cats or summary.lower() in seen_summary:
            continue
        seen_summary.add(summary.lower())
        apps.setdefault(d["ID"], {"id": d["ID"], "package": d.get("Package"), "name": name, "summary": summary,
                                  "desc": desc, "cats": cats, "keywords": (d.get("Keywords") or {}).get("C") or []})
    is_game = lambda a: any("Game" in c for c in a["cats"])
    tools = sorted((a for a in apps.values() if not is_game(a)), key=lambda a: rank(a["id"]))
    games = sorted((a for a in apps.values() if is_game(a)), key=lambda a: rank("game:" + a["id"]))
    palace = tools[:PALACE]
    drawers = [{"key": a["id"], "wing": "wing_software", "room": a["cats"][0].lower(), "text": f'{a["name"]}: {a["desc"]}'}
               for a in palace]
    by_rank = sorted(palace, key=lambda a: rank("prompt:" + a["id"]))
    prompts = [{"kind": "summary", "prompt": a["summary"], "drawer": a["id"]} for a in by_rank[:SUMMARY_PROMPTS]]
    with_keywords = [a for a in sorted(palace, key=lambda a: rank("keywords:" + a["id"])) if len(a["keywords"]) >= 2]
    prompts += [{"kind": "keywords", "prompt": " ".join(a["keywords"][:4]), "drawer": a["id"]}
                for a in with_keywords[:KEYWORD_PROMPTS]]
    prompts += [{"kind": "unrelated", "prompt": a["summary"], "drawer": None} for a in games[:NEGATIVES]]

    shipped = {a["package"] for a in apps.values()}
    text = subprocess.run(["lz4cat", packages], check=True, capture_output=True).stdout.decode("utf-8", "replace")
    synopses = {}
    for stanza in text.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Description|Source|Section): (.*)$", stanza, re.M))
        pkg, syn = fields.get("Package"), fields.get("Description")
        # No games: the prompts with no relevant drawer are game summaries, and must stay so.
        game = fields.get("Section", "").endswith("games") or "game" in (syn or "").lower()
        if pkg and syn and not game and pkg not in shipped and fields.get("Source", pkg).split(" ")[0] not in shipped:
            synopses[pkg] = f"{pkg}: {syn.strip()}"
    filler = [synopses[p] for p in sorted(synopses, key=rank)[:FILLER]]

    out = {
        "about": "Labelled set of bench/recall.mjs (issue 29): a palace of real application descriptions and prompts "
                 "with a known relevant drawer or none. Made by bench/recall/make-set.py; do not edit by hand.",
        "source": f'Debian bookworm main: AppStream DEP-11 components ({header.get("Origin")}, {header.get("Time")}) '
                  "and the binary package index (synopses, for the filler).",
        "license": "AppStream metadata of each upstream project (metadata_license, mostly CC0-1.0, FSFAP or MIT) as "
                   "collected by Debian; package synopses from Debian's package index.",
        "drawers": drawers,
        "prompts": prompts,
    }
    with open("bench/recall/set.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with gzip.GzipFile("bench/recall/filler.txt.gz", "wb", mtime=0) as f:
        f.write(("\n".join(filler) + "\n").encode())
    print(f"{len(drawers)} drawers, {len(prompts)} prompts, {len(filler)} filler drawers", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:3])
