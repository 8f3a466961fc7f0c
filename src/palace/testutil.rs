//! Test doubles: a fake [`PalaceCaller`] that records calls; the pi session JSONL fixtures (shared
//! with the integration tests) are in `fixtures.rs`.

#[path = "fixtures.rs"]
mod fixtures;
pub use fixtures::{session_jsonl, write_session};

use super::{PalaceCaller, PalaceError};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
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
        FakeCaller {
            behaviours: Mutex::new(HashMap::new()),
            calls: Mutex::new(Vec::new()),
            called: Notify::new(),
            down: Mutex::new(None),
        }
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
    ) -> Pin<Box<dyn Future<Output = Result<String, PalaceError>> + Send + 'a>> {
        self.calls.lock().unwrap().push(Call { tool: tool.to_string(), args, timeout });
        self.called.notify_one();
        let b = self.behaviours.lock().unwrap().get(tool).cloned();
        let answer = async move {
            match b {
                None => Err(PalaceError::Tool(format!("Unknown tool: {tool}"))),
                Some(Behaviour::Reply(t)) => Ok(t),
                Some(Behaviour::Fail(e)) => Err(PalaceError::Tool(e)),
                Some(Behaviour::Hang) => std::future::pending().await,
                Some(Behaviour::Gated(sem, t)) => {
                    let _p = sem.acquire().await.map_err(|e| PalaceError::Tool(e.to_string()))?;
                    Ok(t)
                }
            }
        };
        // Like the MCP client's caller, it owns the bound it is given.
        Box::pin(async move {
            match timeout {
                None => answer.await,
                Some(after) => tokio::time::timeout(after, answer)
                    .await
                    .unwrap_or_else(|_| Err(PalaceError::TimedOut { tool: tool.to_string(), after })),
            }
        })
    }
}
