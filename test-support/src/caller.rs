//! A fake palace caller that answers as told per tool and records every call: what the palace
//! logic's unit tests talk to instead of an MCP client.

use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

/// How the fake answers calls to one tool.
#[derive(Clone)]
pub enum Behaviour {
    Reply(String),
    Fail(String),
    /// Never answers.
    Hang,
    /// Answers `Reply` once a permit is added to the semaphore.
    Gated(Arc<Semaphore>, String),
}

/// A call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub tool: String,
    pub args: Value,
    pub timeout: Option<Duration>,
}

/// Why a call failed, for the library's `PalaceError` (`Tool` and `TimedOut`).
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The tool failed with this message (also: no behaviour was set for the tool).
    Tool(String),
    /// No answer within the call's timeout.
    TimedOut(Duration),
}

pub struct FakeCaller {
    behaviours: Mutex<HashMap<String, Behaviour>>,
    calls: Mutex<Vec<Call>>,
    /// Notified (one permit stored) on every call.
    pub called: Notify,
    /// What the caller's `down_reason` answers.
    pub down: Mutex<Option<String>>,
}

impl Default for FakeCaller {
    fn default() -> Self {
        Self::new()
    }
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

    /// A call to `tool`: recorded (and `called` notified) now, answered by the returned future as
    /// the tool's behaviour says. Like the MCP client's caller, it owns the bound it is given: past
    /// `timeout`, [`Fault::TimedOut`].
    pub fn answer<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Pin<Box<dyn Future<Output = Result<String, Fault>> + Send + 'a>> {
        self.calls.lock().unwrap().push(Call { tool: tool.to_string(), args, timeout });
        self.called.notify_one();
        let b = self.behaviours.lock().unwrap().get(tool).cloned();
        let answer = async move {
            match b {
                None => Err(Fault::Tool(format!("Unknown tool: {tool}"))),
                Some(Behaviour::Reply(t)) => Ok(t),
                Some(Behaviour::Fail(e)) => Err(Fault::Tool(e)),
                Some(Behaviour::Hang) => std::future::pending().await,
                Some(Behaviour::Gated(sem, t)) => {
                    let _p = sem.acquire().await.map_err(|e| Fault::Tool(e.to_string()))?;
                    Ok(t)
                }
            }
        };
        Box::pin(async move {
            match timeout {
                None => answer.await,
                Some(after) => tokio::time::timeout(after, answer).await.unwrap_or(Err(Fault::TimedOut(after))),
            }
        })
    }
}
