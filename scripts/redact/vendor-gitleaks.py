#!/usr/bin/env python3
"""Regenerates src/palace/feed/redact/gitleaks-rules.json, the well-known credential formats the
transcript redactor uses, from gitleaks' rule set (MIT, see src/palace/feed/redact/LICENSE-gitleaks).

Source: the `keyspoor` crate on crates.io ships gitleaks v8.30.1's `config/gitleaks.toml` transformed
to JSON (src/builtin_rules.json, its THIRD_PARTY_NOTICES names the gitleaks commit and hashes). We
take it from there because crates.io is the registry this project can reach:

    cargo fetch   # in a scratch crate with `keyspoor = "=0.1.4"` as its only dependency
    python3 scripts/redact/vendor-gitleaks.py ~/.cargo/registry/src/*/keyspoor-0.1.4/src/builtin_rules.json

Kept per rule: id, regex, secret group, keywords (the prefilter), minimum entropy, and the
allowlists that look at the secret, the match or the line (path allowlists and path-only rules
don't apply to a transcript: dropped). Written compact and sorted by id, so a regeneration diffs.
"""
import json
import sys

src = json.load(open(sys.argv[1]))
out = []
for r in sorted(src["rules"], key=lambda r: r["id"]):
    if r.get("path"):
        continue  # a rule about file names, not content
    allow = []
    for a in r.get("allowlist") or []:
        regexes, stop = a.get("regexes") or [], a.get("stopwords") or []
        if not regexes and not stop:
            continue
        if (a.get("condition") or "or").lower() == "and" and a.get("paths"):
            continue  # needs a path to hold: never for a transcript
        allow.append({"target": a.get("target") or "secret", "regexes": regexes, "stopwords": stop})
    rule = {"id": r["id"], "regex": r["pattern"], "keywords": [k.lower() for k in r.get("keywords") or []]}
    if r.get("secret_group"):
        rule["secretGroup"] = r["secret_group"]
    if r.get("min_entropy"):
        rule["entropy"] = r["min_entropy"]
    if allow:
        rule["allow"] = allow
    out.append(rule)
json.dump({"source": "gitleaks v8.30.1 (commit 83d9cd684c87d95d656c1458ef04895a7f1cbd8e), config/gitleaks.toml, via the keyspoor 0.1.4 crate's builtin_rules.json", "rules": out},
          open("src/palace/feed/redact/gitleaks-rules.json", "w"), separators=(",", ":"))
print(f"{len(out)} rules", file=sys.stderr)
