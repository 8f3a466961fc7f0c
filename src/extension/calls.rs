//! A tool call from start to answer: which half (voice or palace) answers it and on which path,
//! its cancellation, and a panic becoming an [`Error`].
//!
//! Two paths, one entry ([`Extension::call`]): the voice tools that only touch brain.db go from
//! the caller's thread (the JS thread) straight to a store thread, with no future (bench/README.md:
//! the hops through tokio cost more than the query); every other call runs as a future on the
//! background runtime. Either way the answer arrives once, through the caller's [`Done`].

use super::{spawn, Extension};
use crate::error::{Error, Kind};
use crate::palace::bridge::Bridge;
use crate::palace::connection::text_of;
use crate::palace::offer::to_pi_content;
use crate::sync::lock;
use crate::voice::{Tool, Voice};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// What a tool answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text blocks joined: for a voice tool, exactly the contract's reply.
    pub text: String,
    /// pi content blocks (`{type: "text", text}` or `{type: "image", data, mimeType}`).
    pub content: Vec<Value>,
}

impl ToolOutput {
    fn text(text: String) -> ToolOutput {
        ToolOutput { content: vec![json!({"type": "text", "text": text})], text }
    }
}

/// Where a call's answer goes: called once, on whichever thread finished the call (a store
/// thread, a runtime thread, or the canceller's).
pub type Done = Box<dyn FnOnce(Result<ToolOutput, Error>) + Send>;

/// How [`Extension::cancel`] stops a call in flight.
pub(super) enum Cancel {
    /// A call running as a future: this drops it.
    Future(tokio::sync::oneshot::Sender<()>),
    /// A direct call: cancelling answers it (CANCELLED) ahead of the store thread.
    Direct(Arc<AnswerOnce>),
}

/// A call's [`Done`], taken by the first to answer: the call (the reply) or `cancel` (CANCELLED);
/// the other finds it taken.
pub(super) struct AnswerOnce {
    name: String,
    done: Mutex<Option<Done>>,
}

impl AnswerOnce {
    fn new(name: &str, done: Done) -> Arc<AnswerOnce> {
        Arc::new(AnswerOnce { name: name.to_string(), done: Mutex::new(Some(done)) })
    }

    fn answer(&self, r: Result<ToolOutput, Error>) -> bool {
        let done = lock(&self.done).take();
        done.map(|d| d(r)).is_some()
    }
}

/// A call in progress, moved to wherever it finishes (the job on the store's thread, or the
/// future). However it ends, answered or dropped unanswered (by a panic there), the call is
/// untracked, then answered once.
struct CallInFlight {
    ext: &'static Extension,
    answer: Arc<AnswerOnce>,
    call_id: Option<u32>,
    /// What an answer that never came is put down to.
    unanswered: &'static str,
    answered: bool,
}

impl CallInFlight {
    fn new(ext: &'static Extension, answer: Arc<AnswerOnce>, call_id: Option<u32>, unanswered: &'static str) -> Self {
        CallInFlight { ext, answer, call_id, unanswered, answered: false }
    }

    fn finish(mut self, r: Result<ToolOutput, Error>) {
        self.untrack();
        self.answer.answer(r);
        self.answered = true;
    }

    fn untrack(&mut self) {
        if let Some(id) = self.call_id.take() {
            self.ext.untrack(id);
        }
    }
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        self.untrack();
        if self.answered {
            return;
        }
        let (name, why) = (&self.answer.name, self.unanswered);
        self.answer.answer(Err(Error::new(Kind::Internal, format!("internal error in {name}: {why}"))));
    }
}

impl Extension {
    /// Runs one tool with the model's arguments; `done` gets the answer. A voice tool answers
    /// with the contract's reply even for bad input or a service that is down; a MemPalace tool
    /// fails with the server's message when the server reports an error. `call_id`, when given,
    /// lets [`Extension::cancel`] abort the call (a store write already queued still lands).
    pub fn call(&'static self, name: &str, args: Value, call_id: Option<u32>, done: Done) {
        let answer = AnswerOnce::new(name, done);
        match (&self.voice, Tool::named(name)) {
            (Some(voice), Some(tool)) if tool.is_direct() => self.call_direct(voice, tool, &args, answer, call_id),
            _ => self.call_future(name, args, answer, call_id),
        }
    }

    /// A tool that only touches brain.db: its arguments are checked here, on the caller's thread,
    /// and its work is queued to a store thread, which answers.
    fn call_direct(
        &'static self,
        voice: &Voice,
        tool: Tool,
        args: &Value,
        answer: Arc<AnswerOnce>,
        call_id: Option<u32>,
    ) {
        if let Some(id) = call_id {
            lock(&self.cancels).insert(id, Cancel::Direct(answer.clone()));
        }
        let call = CallInFlight::new(self, answer, call_id, "the store's thread gave no answer");
        // A panic in the argument checks answers INTERNAL (through `CallInFlight`'s drop) as a
        // panic inside a future does.
        let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            voice.start(tool, args, move |text| call.finish(Ok(ToolOutput::text(text))))
        }));
        if let Err(panic) = started {
            crate::diag!("{}: {}", tool.name(), panic_text(&panic));
        }
    }

    /// Any other call: a future on the background runtime.
    fn call_future(&'static self, name: &str, args: Value, answer: Arc<AnswerOnce>, call_id: Option<u32>) {
        let cancelled = call_id.map(|id| self.track(id));
        let call = CallInFlight::new(self, answer, call_id, "the call ended without an answer");
        let name = name.to_string();
        spawn(async move {
            let r = self.answer(&name, args, cancelled).await;
            call.finish(r);
        });
    }

    async fn answer(
        &self,
        name: &str,
        args: Value,
        cancelled: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Result<ToolOutput, Error> {
        match (&self.voice, Tool::named(name), &self.bridge) {
            (Some(voice), Some(tool), _) => call_voice(voice, tool, args, cancelled).await,
            (_, _, Some(bridge)) => call_palace(bridge, name, args, cancelled).await,
            _ => Err(Error::unknown_tool(name)),
        }
    }

    /// Registers a cancellable call; the receiver fires when [`Extension::cancel`] is called.
    fn track(&self, call_id: u32) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        lock(&self.cancels).insert(call_id, Cancel::Future(tx));
        rx
    }

    fn untrack(&self, call_id: u32) {
        lock(&self.cancels).remove(&call_id);
    }

    /// Cancels a call in flight (pi's AbortSignal fired). False when that call already finished.
    pub fn cancel(&self, call_id: u32) -> bool {
        let entry = lock(&self.cancels).remove(&call_id);
        match entry {
            Some(Cancel::Future(tx)) => tx.send(()).is_ok(),
            Some(Cancel::Direct(answer)) => {
                let name = answer.name.clone();
                answer.answer(Err(Error::cancelled(&name)))
            }
            None => false,
        }
    }

    pub(crate) fn calls_in_flight(&self) -> usize {
        lock(&self.cancels).len()
    }
}

async fn call_voice(
    voice: &Voice,
    tool: Tool,
    args: Value,
    cancelled: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<ToolOutput, Error> {
    use futures_util::FutureExt;
    let name = tool.name();
    // A panic inside a tool becomes an error here instead of taking pi down. Cancelling drops the
    // call: an HTTP request is aborted; a store write already queued for the writer threads still lands.
    let call = std::panic::AssertUnwindSafe(voice.call(tool, &args)).catch_unwind();
    let outcome = match cancelled {
        None => call.await,
        Some(cancelled) => tokio::select! {
            r = call => r,
            _ = cancelled => return Err(Error::cancelled(name)),
        },
    };
    match outcome {
        Ok(text) => Ok(ToolOutput::text(text)),
        Err(panic) => Err(Error::new(Kind::Internal, format!("internal error in {name}: {}", panic_text(&panic)))),
    }
}

/// What a caught panic said.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

async fn call_palace(
    bridge: &Bridge,
    name: &str,
    args: Value,
    cancelled: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<ToolOutput, Error> {
    match bridge.call(name, args, cancelled).await {
        Ok(r) if r.is_error => Err(Error::new(Kind::ServerError, text_of(&r))),
        Ok(r) => Ok(ToolOutput { text: text_of(&r), content: to_pi_content(&r) }),
        Err(crate::mcp::McpError::Cancelled) => Err(Error::cancelled(name)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaked() -> &'static Extension {
        Box::leak(Box::new(Extension::new(None, None, Some(crate::palace::config::BridgeOff::Switch))))
    }

    /// A direct call registered as `call_direct` registers it; its answers arrive on the receiver.
    fn direct(
        ext: &'static Extension,
        id: u32,
    ) -> (CallInFlight, std::sync::mpsc::Receiver<Result<ToolOutput, Error>>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let answer = AnswerOnce::new("memory_lookup", Box::new(move |r| tx.send(r).unwrap()));
        lock(&ext.cancels).insert(id, Cancel::Direct(answer.clone()));
        (CallInFlight::new(ext, answer, Some(id), "the store's thread gave no answer"), rx)
    }

    #[test]
    fn a_cancelled_direct_call_answers_cancelled_once_and_its_late_reply_is_dropped() {
        let ext = leaked();
        let (call, rx) = direct(ext, 7);
        assert_eq!(ext.calls_in_flight(), 1);
        assert!(ext.cancel(7));
        assert!(!ext.cancel(7), "cancelled twice");
        call.finish(Ok(ToolOutput::text("(no memories found)".into()))); // the store thread finishing afterwards
        let answers: Vec<_> = rx.iter().collect();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].as_ref().unwrap_err().kind, Kind::Cancelled);
        assert_eq!(ext.calls_in_flight(), 0);
    }

    #[test]
    fn a_direct_call_answers_once_untracks_and_a_job_dropped_unanswered_is_internal() {
        let ext = leaked();
        let (call, rx) = direct(ext, 1);
        call.finish(Ok(ToolOutput::text("(remembered)".into())));
        assert_eq!(rx.iter().map(|r| r.unwrap().text).collect::<Vec<_>>(), vec!["(remembered)"]);
        assert!(!ext.cancel(1), "a finished call is not in flight");
        let (call, rx) = direct(ext, 2);
        drop(call); // a panic on the store's thread drops the job uncalled
        let answers: Vec<_> = rx.iter().collect();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].as_ref().unwrap_err().kind, Kind::Internal);
        assert_eq!(ext.calls_in_flight(), 0);
    }

    #[tokio::test]
    async fn a_tool_nobody_has_is_bad_arguments_and_leaves_no_call_tracked() {
        let ext = leaked();
        let (tx, rx) = tokio::sync::oneshot::channel();
        ext.call("nope", Value::Null, Some(7), Box::new(move |r| drop(tx.send(r))));
        let e = rx.await.unwrap().unwrap_err();
        assert_eq!((e.code(), e.message.as_str()), ("BAD_ARGUMENTS", "unknown tool: nope"));
        assert_eq!(ext.calls_in_flight(), 0);
        assert!(!ext.cancel(7), "a finished call can't be cancelled");
    }
}
