#!/usr/bin/env python3
"""The brain.db of the qemu smokes (scripts/arm64-check.sh, scripts/musl-check.sh), with the host's sqlite:

    python3 scripts/smoke-brain.py seed  <brain.db> <brain-schema.sql> <fact>   # as ZeroClaw leaves it: schema, WAL, one fact
    python3 scripts/smoke-brain.py check <brain.db> <fact> <label>              # exactly the fact, the smoke's fact and its turn
"""
import sqlite3
import sys

# What __test__/arm64/smoke.cjs writes after the seed: its remembered fact and its turn row.
SMOKE_ROWS = [
    ('The arm64 smoke test is fond of quokkas', 'core', 'voice', 0.7),
    ('user: arm64 zebra hello | assistant: yo from qemu', 'conversation', 'voice', 0.3),
]


def seed(db, schema, fact):
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    c.executescript(open(schema).read())
    c.execute("INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) "
              "VALUES ('00000000-0000-4000-8000-000000000001', 'seed_1', ?, 'core', '2025-01-01T00:00:00Z', "
              "'2025-01-01T00:00:00Z', 'default', 0.5)", (fact,))
    c.commit()
    c.close()


def check(db, fact, label):
    rows = sqlite3.connect(db).execute(
        "SELECT content, category, namespace, importance FROM memories ORDER BY rowid").fetchall()
    want = [(fact, 'core', 'default', 0.5), *SMOKE_ROWS]
    if rows != want:
        sys.exit(f"{label}: FAIL brain.db rows\n  got  {rows}\n  want {want}")
    print(f"{label}: brain.db holds exactly the {len(rows)} expected rows")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"seed": seed, "check": check}[cmd](*args)
