#!/usr/bin/env python3
"""Writes the hand-made seed inputs of every fuzz target into fuzz/corpus/<target>/ (seed-*).

Realistic inputs: real MCP lines as MemPalace 3.11.0 writes them (Python's json.dumps, ", " and
": " separators), its real tool list (__test__/fixtures/mempalace-3.11.0-tools.json), SSE events as
a Streamable HTTP server sends them, pi session JSONL (format v3, like test-support/src/sessions.rs),
agent_end messages like pi's, song names. Run once before the first fuzzing; the committed corpora
are these plus what the fuzzer found, minimized with `cargo fuzz cmin`.
"""
import json, os, pathlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
TOOLS = json.load(open(ROOT / "__test__/fixtures/mempalace-3.11.0-tools.json"))["tools"]


def write(target, items):
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(items):
        if isinstance(data, str):
            data = data.encode()
        (d / f"seed-{i:03}").write_bytes(data)


def py(v):
    return json.dumps(v)  # MemPalace is Python: ", " and ": " separators, non-ASCII escaped


def js(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)  # pi / Node's JSON.stringify


# --- fts_phrase: the query, then other rows after 0xFF bytes
Q = [
    "dentist appointment", 'say "hi"', "a OR b*", "NEAR(dentist appointment, 3)", "content: tuesday", "^start",
    "(grandma) AND cookies", "café au lait", "Café", "日本語のテキスト", "emoji 😀 test", "AND", "-x", '"', '""', "*", "",
    "   ", "what's my dog's name?", "Bob's birthday is 3/4", "e\u0301cole", "x\u00a0y", "a\u0000b", "{col}: x",
]
fts = [q for q in Q]
fts += [
    b"dentist appointment\xffthe dentist appointment is on tuesday\xffappointment dentist\xffdentist",
    b"a OR b\xffa\xffb\xffa or b",
    b"cook*\xffcookies\xffcook",
    "caf\u00e9\xffcafe".encode() + b"\xffcafe latte",
    b"\"hi\"\xffsay hi\xff\"",
]
write("fts_phrase", fts)

# --- text: [n, max], then the text
T = [
    "  hi \n\t", "\u001c\u0085\u00a0x\u3000\u2028\u2029\u001f", "\u200bx\ufeff", "   ", "😀😀😀", "é", "e\u0301x",
    "Song.MP3", "a.b.mp3", "noext", ".mp3", "I remember you told me about the dentist on Tuesday.",
    "🎈" * 60, "ñ" * 40, "\u180e mongolian vowel separator\u180e", "\x0b\x0cform\x1d",
]
write("text", [bytes([n, m]) + t.encode() for t, (n, m) in zip(T, [(5, 5), (1, 3), (2, 200), (0, 0), (2, 2), (5, 1), (1, 2), (4, 7),
                                                                    (3, 4), (9, 9), (0, 3), (20, 23), (10, 50), (3, 4), (7, 10), (2, 2)])])

# --- jsonrpc: [cap/16, chunk sizes x3], then the stream of lines
init = py({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": False}},
                                                   "serverInfo": {"name": "mempalace", "version": "3.11.0"}}})
tools_list = py({"jsonrpc": "2.0", "id": 2, "result": {"tools": TOOLS[:3]}})
call = py({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": json.dumps({"total_drawers": 12, "wings": {"dotty": 3}}, indent=2)}], "isError": False}})
err = py({"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "Unknown tool: nope"}})
parse_err = py({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
ping = py({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
roots = py({"jsonrpc": "2.0", "id": 7, "method": "roots/list", "params": {}})
log = py({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "mined 3 files"}})
progress = js({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 50, "total": 100}})
rpc = [
    bytes([255, 3, 7, 64]) + (init + "\n" + tools_list + "\n").encode(),
    bytes([255, 1, 1, 1]) + (call + "\r\n" + err + "\r\n").encode(),
    bytes([8, 5, 13, 2]) + (log + "\n" + ping + "\n" + call + "\n").encode(),
    bytes([20, 9, 9, 9]) + (parse_err + "\n\n" + roots + "\nnot json at all {{{\n" + progress).encode(),
    bytes([4, 2, 3, 5]) + ('{"jsonrpc":"2.0","result":{"id":99,"t":"\\"id\\":5,"},"id" : 7 }\n{"method":"ping","params":{"id":1},"id":"a,}b"}\n').encode(),
    bytes([3, 1, 2, 3]) + (' [{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","id":7,"result":1}]').encode(),
    bytes([100, 4, 4, 4]) + ('{"jsonrpc": "2.0", "id": 12, "result": {"content": [{"type": "text", "text": "' + "x" * 3000 + '"}]}}\nnext\n').encode(),
    bytes([9, 1, 1, 1]) + b'[1]\n{"x":1}\n{"id":1,"id":2,"result":null}\n{"jsonrpc":"2.0","id":3,"result":null}\n[null,"ping"]\n',
    bytes([6, 5, 6, 7]) + b'{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}\n{"id":-1,"error":{"code":1.5,"message":7}}\n{"id":1.0,"result":[]}\n',
]
write("jsonrpc", rpc)

# --- sse: [cap/8, chunk sizes x3], then the event stream
ev = "event: message\ndata: " + init + "\n\n"
sse = [
    bytes([255, 5, 9, 30]) + ev.encode(),
    bytes([255, 1, 2, 3]) + (": keep-alive\n\nid: 1\nevent: message\ndata: " + call + "\r\n\r\n").encode(),
    bytes([255, 7, 7, 7]) + b'data: {"a":\ndata:1}\n\nretry: 3000\ndata: x\n\ndata: tail',
    bytes([40, 3, 3, 3]) + b"data\ndata:\n\ndataX: no\ndata:  two spaces\n\n",
    bytes([255, 2, 4, 8]) + b"\xef\xbb\xbfdata: after a BOM\n\n",
    bytes([255, 1, 1, 1]) + b"data: cr only\rdata: more\r\rdata: crlf\r\n\r\n",
    bytes([2, 1, 1, 1]) + b"data: 0123456789012345678901234567890123456789\n\n",
    bytes([255, 16, 16, 16]) + ("event: message\ndata: " + log + "\n\nevent: message\ndata: " + err + "\n\n").encode(),
]
write("sse", sse)


# --- session_jsonl: pi session files (format v3), like test-support/src/sessions.rs
def session(msgs, header=None):
    lines = [js(header or {"type": "session", "version": 3, "id": "0b5c3f5e-7c1a-4a63-9a55-2f2a6f0c1d11",
                           "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/project"})]
    parent = None
    for i, (role, text) in enumerate(msgs):
        ts = 1767225600000 + i * 1000
        if role == "user":
            m = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}
        elif role == "assistant":
            m = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": text}],
                 "api": "openai-completions", "provider": "mock", "model": "mock-model", "stopReason": "stop", "timestamp": ts}
        elif role == "toolResult":
            m = {"role": "toolResult", "toolCallId": "call_1", "toolName": "bash", "content": [{"type": "text", "text": text}],
                 "isError": False, "timestamp": ts}
        elif role == "plain":
            m = {"role": "user", "content": text, "timestamp": ts}
        else:
            m = {"role": "assistant", "content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": text}}],
                 "stopReason": "toolUse", "timestamp": ts}
        lid = f"{i + 1:08x}"
        lines.append(js({"type": "message", "id": lid, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", "message": m}))
        parent = lid
    return "\n".join(lines) + "\n"


write("session_jsonl", [
    session([("user", "hello there"), ("assistant", "hi, how can I help?")]),
    session([("user", "run ls"), ("call", "ls"), ("toolResult", "a b"), ("assistant", "two files")]),
    session([("user", "hello")]),
    session([("user", "run ls"), ("call", "ls"), ("toolResult", "a b")]),
    session([("user", "  "), ("assistant", "hi")]),
    session([("plain", "plain"), ("assistant", "ok")], {"type": "session", "version": 1, "id": "x", "timestamp": "t", "cwd": "/"}),
    session([("user", "x"), ("assistant", "y")]).replace('"version":3,', ""),
    js({"type": "model_change", "provider": "mock"}) + "\n" + session([("user", "a"), ("assistant", "b")]),
    session([("user", "caf\u00e9 \u2014 \u65e5\u672c"), ("assistant", "\u3000")]),
    session([("user", "tab\there"), ("assistant", "done")]).replace("\n", "\r\n"),
    b"",
    b"\xff\x00\n",
])

# --- tools: tools/list pages, bare arrays, cache files
def cache(tools, key="stdio:mempalace-mcp"):
    return py({"format": "dotty-pi-ext/mempalace-tools-cache", "version": 1, "key": key, "savedAtMs": 1767225600000, "tools": tools})


small = [{"name": "mempalace_status", "description": "Palace overview", "inputSchema": {"type": "object", "properties": {}}}]
write("tools", [
    py({"tools": TOOLS[:4]}),
    py({"tools": TOOLS[20:24], "nextCursor": ""}),
    py(TOOLS[34:36]),
    cache(TOOLS[:3]),
    cache(small),
    cache(small, key="http:http://172.17.0.1:8765/mcp"),
    py({"tools": [{"name": "bash", "inputSchema": {}}, {"name": "remember"}, {"name": "two words"}, {"name": "s", "inputSchema": {"type": "string"}},
                  {"name": 7}, {"description": "no name"}, {"name": "ok", "inputSchema": None}, {"name": "ok"}, {"name": "x" * 65},
                  {"name": "t", "inputSchema": {"type": ["object"]}}, {"name": "u", "description": "\u00e9" * 40}]}),
    cache([{"name": "bash", "inputSchema": {}}]),
    py({"format": "dotty-pi-ext/mempalace-tools-cache", "version": 2, "key": "k", "savedAtMs": 1, "tools": []}),
    b'{"format": "dotty-pi-ext/mempalace-tools-cache", "vers',
])

# --- turn_text: agent_end messages
def turn(user, *assistant, ts=1):
    return [{"role": "user", "content": user, "timestamp": ts}] + [{"role": "assistant", "content": a, "timestamp": ts} for a in assistant]


write("turn_text", [js(m) for m in [
    [{"role": "user", "content": "an older prompt", "timestamp": 1}, {"role": "assistant", "content": [{"type": "text", "text": "older answer"}]}]
    + turn([{"type": "text", "text": " What can "}, {"type": "image", "data": "iVBOR", "mimeType": "image/png"}, {"type": "text", "text": "you see? "}],
           [{"type": "thinking", "thinking": "The user wants a photo."}, {"type": "text", "text": "Let me look. "},
            {"type": "toolCall", "id": "t1", "name": "take_photo", "arguments": {}}], ts=2)
    + [{"role": "toolResult", "toolCallId": "t1", "toolName": "take_photo", "content": [{"type": "text", "text": "A red ball."}]},
       {"role": "assistant", "content": [{"type": "thinking", "thinking": "describe it"}, {"type": "text", "text": "I see a red ball! "}]}],
    turn("🎈" * 50, [{"type": "text", "text": "ñ" * 100}]),
    turn("Hello?", [{"type": "toolCall", "id": "y", "name": "take_photo", "arguments": {}}]),
    turn("Plain?", "a plain string answer", [{"type": "text", "text": "blocks count"}]),
    [], "not a list", [1, None, "x", {"role": "assistant", "content": [{"type": "text", "text": "no user"}]}],
    turn("\u3000\u001c", [{"type": "text", "text": "\u0085"}], ts=None),
    turn("again", [{"type": "text", "text": "same"}], ts="2026-01-01T00:00:00Z"),
]])

# --- songs: the spoken name, then the catalogue, one file per line
write("songs", [
    "happy birthday\nHappy Birthday Song.mp3\nhappy.mp3\nHappy Birthday.mp3",
    "twinkle twinkle\ntwinkle twinkle little star.mp3\ntwinkle.mp3\nlittle star.wav",
    "abc\nabcd.mp3\nabce.mp3",
    "play me little star please\ntwinkle.mp3\nlittle star.wav",
    "  lullaby.mp3 \nLullaby.ogg", ".mp3\nLullaby.ogg", "   \nx.mp3", "rock\nLullaby.ogg",
    "hé\nhééxxx.mp3\nhéé.mp3x", "Zed\nA.mp3\nB.Song.mp3\nc\nD.mp3\nE.mp3\nF.mp3",
    "ΣΑΣ\nσας.mp3\nΣΑΣ.mp3", "İstanbul\ni̇stanbul.mp3", "x\n.mp3\n\nx",
])

# --- redact: session lines holding the made-up secrets of every kind (__test__/fixtures/redact/
# secrets.json) in chat text, tool calls and results, escaped forms, the process's own secret
# (fuzz/src/redact.rs SECRET), a text line, and the ordinary corpus's lines (nothing to redact).
SAMPLES = json.load(open(ROOT / "__test__/fixtures/redact/secrets.json"))["samples"]
SECRET = "fz-Q7mX2vK9pL4w"
redact = []
for i, s in enumerate(SAMPLES):
    text = s["text"].replace("{v}", s["value"])
    role = ["user", "call", "toolResult"][i % 3]
    redact.append(session([(role, text), ("assistant", "I see " + s["value"])]))
redact += [
    session([("user", "token " + SECRET), ("assistant", "ok")]),
    js({"type": "message", "message": {"role": "user", "content": "\\u0041KIA in JSON: " + "AKIA" + "Z7QX3MPL4VNRT2WB"}}).replace("AKIA", "\\u0041KIA", 1) + "\n",
    "not json: postgres://u:Pa55-word-x1@db/app and " + SECRET + "\r\n",
    js({"k": {"api_key=sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2": [1, 2.5, None, True]}}) + "\n",
    "".join(l + "\n" for l in (ROOT / "__test__/fixtures/redact/ordinary.jsonl").read_text().splitlines()[:6]),
]
write("redact", redact)
