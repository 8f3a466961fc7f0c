#!/usr/bin/env python3
"""detect-secrets' own positive test cases (Yelp/detect-secrets, Apache-2.0), for the redactor's
held-out corpus: every line its plugin tests say must be flagged. Run on an unpacked checkout of
detect-secrets (its `tests/` and `detect_secrets/` importable; needs pytest, pyyaml, requests,
responses, unidiff):

    python3 scripts/redact/detect-secrets-cases.py /path/to/detect-secrets <commit> \
        > __test__/fixtures/redact/detect-secrets-cases.json

Each test module of tests/plugins/ is imported with `pytest.mark.parametrize` recording its cases;
a case is kept when its expected outcome says a secret is there: a `should_flag`-like argument that
is True, or an expected secret (the keyword tests' `expected_secret`) that is a non-empty string. The
secret is that expected value when the test names it, else the whole line (a line flagged as a
whole). Nothing here was written or chosen by this project; the output is committed as data.
"""
import importlib
import json
import os
import sys
import types

root, commit = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
os.chdir(root)

import pytest  # noqa: E402

recorded = []


def parametrize(argnames, argvalues, *a, **k):
    names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
    recorded.append((names, list(argvalues)))

    def deco(f):
        return f

    return deco


pytest.mark.parametrize = parametrize

FLAG_NAMES = {"should_flag", "should_find", "is_secret", "expected", "expected_result", "flag"}
cases = []
plugins = os.path.join(root, "tests", "plugins")
for fname in sorted(os.listdir(plugins)):
    if not fname.endswith("_test.py"):
        continue
    mod = "tests.plugins." + fname[:-3]
    recorded.clear()
    try:
        m = importlib.import_module(mod)
    except Exception as e:  # a module that can't be imported here is said, not hidden
        print(f"skip {fname}: {e}", file=sys.stderr)
        continue
    seen = set()
    # A line that is a template (`'"{secret}"'`) is formatted with the module's own secrets, the
    # values of a `secret` argument of another parametrize (high_entropy_strings' class-level one).
    module_secrets = [
        v[names.index("secret")]
        for names, values in recorded
        if "secret" in names
        for v in values
        if isinstance(v, (tuple, list)) and isinstance(v[names.index("secret")], str)
    ]
    for names, values in recorded:
        li = next((names.index(n) for n in ("line", "payload", "token") if n in names), 0)
        si = next((names.index(n) for n in ("expected_secret", "secret") if n in names), None)
        fi = next((i for i, n in enumerate(names) if n in FLAG_NAMES), None)
        for v in values:
            v = list(v) if isinstance(v, (tuple, list)) else [v]
            if li >= len(v) or not isinstance(v[li], str):
                continue
            line = v[li]
            secret = v[si] if si is not None and si < len(v) else None
            if si is not None:
                flagged = isinstance(secret, str) and secret != ""
            elif fi is not None and fi < len(v):
                flagged = v[fi] is True
            else:
                flagged = len(v) >= 2 and v[-1] is True
            if not flagged or (fname, line) in seen:
                continue
            seen.add((fname, line))
            if "{secret}" in line and secret is None:
                for s in module_secrets:
                    cases.append({"plugin": fname[:-8], "line": line.replace("{secret}", s), "secret": s})
                continue
            cases.append({"plugin": fname[:-8], "line": line, "secret": secret if isinstance(secret, str) else None})

json.dump(
    {
        "about": f"Positive test cases of Yelp/detect-secrets' plugin tests (tests/plugins/*_test.py) at {commit}, "
        "extracted by scripts/redact/detect-secrets-cases.py. Apache License 2.0, Copyright (c) 2018 Yelp, Inc. "
        "(see detect-secrets-LICENSE). secret: the value the test says is found (null: the line is flagged as a whole).",
        "cases": cases,
    },
    sys.stdout,
    indent=1,
    ensure_ascii=False,
)
print()
