#!/usr/bin/env python3
"""Regenerates src/palace/feed/redact/gitleaks-rules.json, the well-known credential formats the
transcript redactor uses, from gitleaks' own generated config (MIT, see
src/palace/feed/redact/LICENSE-gitleaks):

    python3 scripts/redact/vendor-gitleaks.py path/to/gitleaks-v8.30.1.toml

(the `config/gitleaks.toml` of gitleaks v8.30.1, commit 83d9cd684c87d95d656c1458ef04895a7f1cbd8e;
the file is an input, not part of this repository). `--check` compares the toml with the vendored
file instead and lists every difference (exit 1 if any): the test of "the vendored rules equal
v8.30.1's".

Kept per rule, as upstream has it: id, regex, secret group, keywords (the prefilter, lowercased as
gitleaks lowercases them), minimum entropy, and the allowlists (regexes and stopwords, with their
target: the secret, the match or the line). Kept once: the global allowlist's regexes and
stopwords, which gitleaks applies to every rule and so does the redactor (to its own rules too).

Differences from upstream, kept on purpose (a transcript has no file path):
- path allowlists, and the path half of an `AND` allowlist, are dropped: an `AND` allowlist that
  needs a path never holds for a transcript, so it is dropped whole; a path-only allowlist never
  applies.
- rules restricted to a file path (`path = ...`: `pkcs12-file`, and `freemius-secret-key`,
  `hashicorp-tf-password`, `kubernetes-secret-yaml`, `nuget-config-password`, whose regex gitleaks
  runs only on a `.php`, `.tf`, Kubernetes YAML or `nuget.config` file) are dropped: gitleaks never
  runs them on text without that path, and a transcript has none.
Nothing else differs. How matching is done on top of the same data (also documented in
docs/trust.md): a rule without a secret group whose first group is structural (named, or repeated:
`jwt-base64`, `microsoft-teams-webhook`) redacts its whole match; two rules with the same regex
(`bittrex-access-key`, `bittrex-secret-key`) are told apart by the word of their id in the match;
`generic-api-key` also refuses code (calls, member chains, identifiers of words), file names of
words and digests or fingerprints (after `sha256`, `GPG`, `integrity`, …), which it fires on in
real files its allowlists don't know (src/palace/feed/redact/rules.rs, `not_code`).
Written compact and sorted by id, so a regeneration diffs.
"""
import json
import sys
import tomllib

OUT = "src/palace/feed/redact/gitleaks-rules.json"
SOURCE = "gitleaks v8.30.1 (commit 83d9cd684c87d95d656c1458ef04895a7f1cbd8e), config/gitleaks.toml"


def allow(a):
    regexes, stop = a.get("regexes") or [], a.get("stopwords") or []
    if not regexes and not stop:
        return None  # a path-only allowlist
    if (a.get("condition") or "or").lower() == "and" and a.get("paths"):
        return None  # needs a path to hold: never for a transcript
    return {"target": a.get("regexTarget") or "secret", "regexes": regexes, "stopwords": stop}


def convert(cfg):
    out = []
    for r in sorted(cfg["rules"], key=lambda r: r["id"]):
        if r.get("path"):
            continue  # runs only on files whose path matches: a transcript has none
        allows = [x for x in (allow(a) for a in r.get("allowlists") or []) if x]
        rule = {"id": r["id"], "regex": r["regex"], "keywords": [k.lower() for k in r.get("keywords") or []]}
        if r.get("secretGroup"):
            rule["secretGroup"] = r["secretGroup"]
        if r.get("entropy"):
            rule["entropy"] = r["entropy"]
        if allows:
            rule["allow"] = allows
        out.append(rule)
    g = cfg.get("allowlist") or {}
    glob = [{"target": g.get("regexTarget") or "secret", "regexes": g.get("regexes") or [], "stopwords": g.get("stopwords") or []}]
    return {"source": SOURCE, "global": glob, "rules": out}


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    cfg = tomllib.load(open(args[0], "rb"))
    new = convert(cfg)
    if "--check" in sys.argv:
        old = json.load(open(OUT))
        diffs = []
        o, n = {r["id"]: r for r in old["rules"]}, {r["id"]: r for r in new["rules"]}
        for i in sorted(set(o) | set(n)):
            if i not in o:
                diffs.append(f"{i}: upstream only")
            elif i not in n:
                diffs.append(f"{i}: vendored only")
            else:
                for k in sorted(set(o[i]) | set(n[i])):
                    if o[i].get(k) != n[i].get(k):
                        diffs.append(f"{i}: {k} differs: vendored {json.dumps(o[i].get(k))[:200]} upstream {json.dumps(n[i].get(k))[:200]}")
        if old.get("global") != new["global"]:
            diffs.append("global allowlist differs")
        print("\n".join(diffs) or "the vendored rules equal upstream's", file=sys.stderr)
        sys.exit(1 if diffs else 0)
    json.dump(new, open(OUT, "w"), separators=(",", ":"))
    print(f"{len(new['rules'])} rules", file=sys.stderr)


main()
