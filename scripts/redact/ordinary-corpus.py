#!/usr/bin/env python3
"""Writes __test__/fixtures/redact/ordinary.jsonl: one pi session (format v3) of ordinary coding
work that holds nothing secret, for the redactor's false-positive tests (zero redactions expected).

It is made from real material of this repository, so it looks like what a session really holds:
`git log` output (40-hex commit hashes) of the repo, `integrity: sha512-...` lines and resolved URLs
of package-lock.json, UUIDs, the base64 of a real PNG (a 64x64 image generated here with zlib), long
Rust identifiers and snippets of src/ (code that says `password`, `token`, `secret`, `api_key` as
names, not values), an environment dump of ordinary variables (`TOKENIZERS_PARALLELISM=false`,
`AWS_REGION=...`), and prose about passwords. Run from the repository root:

    python3 scripts/redact/ordinary-corpus.py
"""
import base64, json, random, struct, subprocess, uuid, zlib

rnd = random.Random(7)
git_log = subprocess.run(["git", "log", "-n", "25", "--format=%H %an %s"], capture_output=True, text=True).stdout
lock = json.load(open("package-lock.json"))
integrity = [f"  integrity: {p['integrity']}\n  resolved: {p.get('resolved', '')}" for p in list(lock["packages"].values())[1:40] if "integrity" in p]

def png(w=64, h=64):
    raw = b"".join(b"\x00" + bytes((x * 4 + y) % 256 for x in range(w * 3)) for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")

image = base64.b64encode(png()).decode()
uuids = "\n".join(str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(8))
env_dump = "\n".join([
    "TOKENIZERS_PARALLELISM=false", "AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=eu-west-1", "HOME=/home/dev",
    "NODE_ENV=development", "RUST_LOG=info", "CARGO_TERM_COLOR=always", "PI_CODING_AGENT_DIR=/home/dev/.pi/agent",
    "MEMPALACE_FEED_WING=wing_conversations", "SSH_AUTH_SOCK=/run/user/1000/keyring/ssh", "LANG=C.UTF-8",
])
# Lines 300-360 of what was src/env.rs (moved, unchanged, to src/env/reader.rs): the corpus stays the same.
code = open("src/env/reader.rs").read().split("\n")[154:214]
code2 = [
    'let password = read_password_from_prompt()?;',
    'if user.password_hash.is_empty() { return Err(AuthError::NoPassword); }',
    'const apiKey = process.env.OPENAI_API_KEY;',
    'token: Option<Secret>,',
    'password: "${DB_PASSWORD}"',
    'secret_key_base = ENV.fetch("SECRET_KEY_BASE")',
    'headers["Authorization"] = f"Bearer {token}"',
    'fn the_remote_token_is_sent_as_a_bearer_header_and_never_logged() {',
    'pub(crate) fn expose_the_secret_for_the_one_place_that_sends_it_over_the_wire(&self) -> &str {',
    'password_reset_token_expiry_minutes = 30',
]
long_ids = " ".join([
    "MemPalaceBridgeToolCacheInvalidationAfterHandshakeMismatch",
    "a_remote_palace_without_an_ssh_target_skips_feeding_silently_and_says_so_once",
    "com.example.platform.authentication.session.TokenRefreshScheduler",
    "k8s-production-eu-west-1-ingress-controller-7f9c6d5b8-x2k4p",
])
prose = ("The password reset flow sends an email with a one-time link; the password itself is never "
         "stored, only its argon2 hash. Rotate the token every 90 days and keep the secret in the vault, "
         "not in the repository. The API key field in the settings page is optional.")
turns = [
    ("user", "What changed recently? Show me the last commits."),
    ("call", "git log -n 25 --format='%H %an %s'"), ("result", git_log),
    ("assistant", "The last commit is " + git_log.split()[0] + "; the others are refactors of the palace bridge."),
    ("user", "Why does npm ci take so long? Here is part of the lockfile:\n" + "\n".join(integrity[:10])),
    ("call", "grep -n integrity package-lock.json | head -40"), ("result", "\n".join(integrity)),
    ("assistant", "Those `integrity: sha512-...` lines are checksums npm verifies; they are not the slow part."),
    ("user", "Give me a few UUIDs for the fixtures."), ("result", uuids),
    ("assistant", "Here they are:\n" + uuids),
    ("user", "Embed this icon inline: data:image/png;base64," + image),
    ("assistant", "Done: the data URL is data:image/png;base64," + image[:120] + "..."),
    ("call", "env | sort"), ("result", env_dump),
    ("assistant", "TOKENIZERS_PARALLELISM=false silences the tokenizers warning; nothing in that environment is sensitive."),
    ("call", "sed -n 300,360p src/env.rs"), ("result", "\n".join(code)),
    ("user", "Review this code:\n" + "\n".join(code2)),
    ("assistant", "The names " + long_ids + " are long but fine. " + prose),
    ("user", prose), ("assistant", "Agreed: the password should never appear in logs."),
]
lines = [{"type": "session", "version": 3, "id": str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
          "timestamp": "2026-01-02T09:00:00.000Z", "cwd": "/work/dotty-pi-ext"}]
parent, ts = None, 1767344400000
for i, (role, text) in enumerate(turns):
    ident = f"{rnd.getrandbits(32):08x}"
    ts += 1500
    if role == "user":
        msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
    elif role == "assistant":
        msg = {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "openai-completions",
               "provider": "mock", "model": "mock-model", "stopReason": "stop", "timestamp": ts}
    elif role == "call":
        msg = {"role": "assistant", "content": [{"type": "toolCall", "id": f"call_{i}", "name": "bash", "arguments": {"command": text}}],
               "api": "openai-completions", "provider": "mock", "model": "mock-model", "stopReason": "toolUse", "timestamp": ts}
    else:
        msg = {"role": "toolResult", "toolCallId": f"call_{i - 1}", "toolName": "bash", "content": [{"type": "text", "text": text}],
               "isError": False, "timestamp": ts}
    lines.append({"type": "message", "id": ident, "parentId": parent, "timestamp": "2026-01-02T09:00:01.000Z", "message": msg})
    parent = ident
with open("__test__/fixtures/redact/ordinary.jsonl", "w") as f:
    for l in lines:
        f.write(json.dumps(l, separators=(",", ":")) + "\n")
