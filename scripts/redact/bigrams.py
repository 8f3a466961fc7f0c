#!/usr/bin/env python3
"""The letter pairs of words of code and prose, for the redactor's test of random characters
(src/palace/feed/redact/rules.rs, COMMON_BIGRAMS): the most frequent lower-case letter pairs of the
words (camel case split) of Python 3.11's standard library, the first 1,500 files os.walk gives,
until they cover 97 % of all pairs. Prints them space-separated.

    python3 scripts/redact/bigrams.py [/usr/lib/python3.11]
"""
import collections
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "/usr/lib/python3.11"
c = collections.Counter()
n = 0
for top, _dirs, files in os.walk(root):
    for f in files:
        if not f.endswith(".py"):
            continue
        try:
            text = open(os.path.join(top, f), encoding="utf8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for w in re.findall(r"[A-Za-z]+", text):
            for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", w):
                p = p.lower()
                for i in range(len(p) - 1):
                    c[p[i : i + 2]] += 1
        n += 1
        if n > 1500:
            break
total = sum(c.values())
acc, keep = 0, []
for pair, k in c.most_common():
    if acc / total >= 0.97:
        break
    keep.append(pair)
    acc += k
print(" ".join(sorted(keep)))
