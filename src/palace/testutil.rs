//! Test doubles: a fake [`PalaceCaller`] that records calls, and pi session JSONL fixtures.

use super::PalaceCaller;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

#[derive(Clone)]
pub enum Behaviour {
    Reply(String),
    Fail(String),
    /// Never answers.
    Hang,
    /// Answers `Reply` once a permit is added to the semaphore.
    Gated(Arc<Semaphore>, String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub tool: String,
    pub args: Value,
    pub timeout: Option<Duration>,
}

pub struct FakeCaller {
    behaviours: Mutex<HashMap<String, Behaviour>>,
    calls: Mutex<Vec<Call>>,
    /// Notified (one permit stored) on every call.
    pub called: Notify,
    /// What [`PalaceCaller::down_reason`] answers.
    pub down: Mutex<Option<String>>,
}

impl FakeCaller {
    pub fn new() -> Self {
        FakeCaller { behaviours: Mutex::new(HashMap::new()), calls: Mutex::new(Vec::new()), called: Notify::new(), down: Mutex::new(None) }
    }
    pub fn set(&self, tool: &str, b: Behaviour) {
        self.behaviours.lock().unwrap().insert(tool.to_string(), b);
    }
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
    pub fn calls_to(&self, tool: &str) -> Vec<Call> {
        self.calls().into_iter().filter(|c| c.tool == tool).collect()
    }
}

impl PalaceCaller for FakeCaller {
    fn down_reason(&self) -> Option<String> {
        self.down.lock().unwrap().clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>> {
        self.calls.lock().unwrap().push(Call { tool: tool.to_string(), args, timeout });
        self.called.notify_one();
        let b = self.behaviours.lock().unwrap().get(tool).cloned();
        Box::pin(async move {
            match b {
                None => Err(format!("Unknown tool: {tool}")),
                Some(Behaviour::Reply(t)) => Ok(t),
                Some(Behaviour::Fail(e)) => Err(e),
                Some(Behaviour::Hang) => std::future::pending().await,
                Some(Behaviour::Gated(sem, t)) => {
                    let _p = sem.acquire().await.map_err(|e| e.to_string())?;
                    Ok(t)
                }
            }
        })
    }
}

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
