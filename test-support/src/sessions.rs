//! pi session JSONL fixtures, for the unit tests (`palace::feed::export`, `palace::feed`) and the
//! integration tests (`tests/palace_real.rs`).

use serde_json::{json, Value};
use std::path::Path;

/// A pi session JSONL file (format v3) with these `(role, text)` messages; `toolResult` and
/// `thinking` entries are added around them like a real session has.
pub fn session_jsonl(messages: &[(&str, &str)]) -> String {
    let mut lines = vec![json!({
        "type": "session", "version": 3, "id": "0b5c3f5e-7c1a-4a63-9a55-2f2a6f0c1d11",
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/project"
    })
    .to_string()];
    let mut parent: Value = Value::Null;
    for (i, (role, text)) in messages.iter().enumerate() {
        let id = format!("{:08x}", i + 1);
        let ts = 1_767_225_600_000u64 + i as u64 * 1000;
        let message = match *role {
            "user" => json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}),
            "assistant" => json!({
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": text}],
                "api": "openai-completions", "provider": "mock", "model": "mock-model",
                "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": ts
            }),
            "toolResult" => json!({
                "role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
                "content": [{"type": "text", "text": text}], "isError": false, "timestamp": ts
            }),
            "assistantToolCall" => json!({
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": text}}],
                "api": "openai-completions", "provider": "mock", "model": "mock-model",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "toolUse", "timestamp": ts
            }),
            other => panic!("fixture role {other}"),
        };
        lines.push(
            json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", "message": message})
                .to_string(),
        );
        parent = Value::String(id);
    }
    lines.join("\n") + "\n"
}

/// Writes a session file under `<agent_dir>/sessions/--work-project--/<name>.jsonl`.
pub fn write_session(agent_dir: &Path, name: &str, content: &str) -> std::path::PathBuf {
    let dir = agent_dir.join("sessions").join("--work-project--");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}.jsonl"));
    std::fs::write(&p, content).unwrap();
    p
}
