#!/usr/bin/env python3
"""True-positive samples for every vendored gitleaks rule, generated from the rule's own regex the
way gitleaks' own test samples are (its `secrets.NewSecret(regex)`): a random string the regex
matches, checked with Python's `re` against the rule (RE2 syntax converted: inline flags dropped,
POSIX classes spelled out) and against the rule's minimum entropy (a string the rule refuses is no
sample of it), with the rule's first keyword put in front when the match holds none.
Writes them (never committed: made-up credentials) for the redactor's measurement test:

    python3 scripts/redact/rule-samples.py [samples-per-rule] > /tmp/dotty-rule-samples.json
    cargo test --lib redact::corpus::rule_samples -- --ignored --nocapture
"""
import json
import random
import re
import string
import sys

try:
    import re._parser as sre_parse
    import re._constants as C
except ImportError:  # Python < 3.11
    import sre_parse
    import sre_constants as C

POSIX = {"alnum": "A-Za-z0-9", "alpha": "A-Za-z", "digit": "0-9", "xdigit": "0-9A-Fa-f", "upper": "A-Z", "lower": "a-z"}


def to_python(rx):
    rx = re.sub(r"\[\[:(\w+):\]\]", lambda m: "[" + POSIX[m.group(1)] + "]", rx)
    rx = re.sub(r"\[:(\w+):\]", lambda m: POSIX[m.group(1)], rx)
    rx = rx.replace("(?i)", "").replace("(?-i:", "(?:").replace("(?i:", "(?:").replace("(?s)", "").replace("\\z", "\\Z")
    return rx


WORD = string.ascii_letters + string.digits + "_"
PRINT = string.ascii_letters + string.digits + "_-.+/="


def gen(items, rnd):
    out = []
    for op, av in items:
        if op == C.LITERAL:
            out.append(chr(av))
        elif op == C.NOT_LITERAL:
            out.append(rnd.choice([c for c in "ab1" if ord(c) != av]))
        elif op == C.ANY:
            out.append(rnd.choice(string.ascii_letters))
        elif op == C.IN:
            out.append(pick_in(av, rnd))
        elif op == C.BRANCH:
            out.append(gen(rnd.choice(av[1]), rnd))
        elif op == C.SUBPATTERN:
            out.append(gen(av[3], rnd))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            hi = lo + 8 if hi == C.MAXREPEAT else hi
            n = lo if hi - lo > 20 and lo > 0 else (rnd.randint(lo, hi) if hi - lo <= 20 else lo)
            out.append("".join(gen(sub, rnd) for _ in range(n)))
        elif op in (C.AT, C.ASSERT, C.ASSERT_NOT, C.GROUPREF):
            pass
        elif op == C.CATEGORY:
            out.append(cat(av, rnd))
    return "".join(out)


def cat(c, rnd):
    if c == C.CATEGORY_DIGIT:
        return rnd.choice(string.digits)
    if c == C.CATEGORY_SPACE:
        return " "
    if c == C.CATEGORY_WORD:
        return rnd.choice(WORD)
    return rnd.choice("!#%&")


def pick_in(items, rnd):
    chars = set()
    neg = False
    for op, av in items:
        if op == C.NEGATE:
            neg = True
        elif op == C.LITERAL:
            chars.add(chr(av))
        elif op == C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op == C.CATEGORY:
            chars.update({C.CATEGORY_DIGIT: string.digits, C.CATEGORY_WORD: WORD, C.CATEGORY_SPACE: " "}.get(av, ""))
    if neg:
        chars = set(PRINT) - chars
    # Printable, and not a quote or space when there is another choice (a secret, not its frame).
    pool = sorted(c for c in chars if c.isprintable()) or sorted(chars)
    return rnd.choice(pool)


def entropy(s):
    from math import log2
    n = len(s)
    return -sum(s.count(c) / n * log2(s.count(c) / n) for c in set(s)) if n else 0.0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rules = json.load(open("src/palace/feed/redact/gitleaks-rules.json"))["rules"]
    out = {}
    for r in rules:
        rx = to_python(r["regex"])
        try:
            parsed = sre_parse.parse(rx)
            prog = re.compile(rx, re.I if r["regex"].startswith("(?i)") or "(?i)" in r["regex"] else 0)
        except Exception as e:  # noqa: BLE001
            print(f"{r['id']}: can't convert ({e})", file=sys.stderr)
            continue
        rnd = random.Random(r["id"])
        samples = []
        for _ in range(n * 50):
            if len(samples) >= n:
                break
            s = gen(list(parsed), rnd)
            m = prog.search(s)
            if not m:
                continue
            g = r.get("secretGroup") or next((i for i in range(1, (m.lastindex or 0) + 1) if m.group(i)), 0)
            secret = m.group(g) if g else m.group(0)
            if r.get("entropy") and entropy(secret) < r["entropy"]:
                continue  # the rule itself refuses it (gitleaks too): not a sample of it
            text = s if any(k in s.lower() for k in r["keywords"]) else f"{r['keywords'][0]} {s}"
            samples.append({"text": text, "secret": secret})
        out[r["id"]] = samples
        if len(samples) < n:
            print(f"{r['id']}: {len(samples)} samples", file=sys.stderr)
    json.dump(out, sys.stdout)


main()
