//! How a tool call's promise is settled from the thread that answered it: one threadsafe function
//! for the whole process and a queue of answers, instead of napi-rs's deferred, which creates a
//! threadsafe function (a libuv handle, a cleanup hook, a mutex) for every call and closes it again
//! after (bench/README.md, issue 38: what one call's time goes to).
//!
//! An answer is queued; only the answer that finds the queue empty wakes the JS thread, so answers
//! that finish while the JS thread is busy or not yet awake are settled together, in the order they
//! were queued, in one wake-up. The threadsafe function keeps Node's loop alive only while a call is
//! in flight (it is referenced by the first call and unreferenced when the last is settled, both on
//! the JS thread), as a deferred of its own did. It is made for the first environment that calls;
//! a call from another one (a worker thread) is settled the old way, by a deferred of its own.

use crate::extension::{Done, ToolOutput};
use crate::sync::lock;
use napi::bindgen_prelude::*;
use napi::sys;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// What a call answered, as the core says it.
type Answer = std::result::Result<ToolOutput, crate::error::Error>;

/// The process's settler: its threadsafe function and the answers waiting for the JS thread.
struct Settler {
    /// The environment it was made in: the only one whose promises it settles.
    env: usize,
    tsfn: usize,
    queue: Mutex<Queue>,
    /// Calls made and not yet settled. Read and written on the JS thread only.
    in_flight: AtomicUsize,
    /// Threads about to call the threadsafe function (see [`Settler::queue_answer`]).
    calling: AtomicUsize,
    /// The environment is being torn down: the function is released or about to be.
    closed: AtomicBool,
}

/// The answers waiting, oldest first; `closed` once the environment is being torn down (nothing
/// is queued or woken after that).
struct Queue {
    answers: Vec<(Promise, Answer)>,
    closed: bool,
}

/// A promise's deferred handle. Only ever used on the JS thread (created there, settled in the
/// threadsafe function's callback, which runs there); in between it is an opaque value.
struct Promise(sys::napi_deferred);

// SAFETY: the handle is not touched off the JS thread (see `Promise`); other threads only move it.
unsafe impl Send for Promise {}

static SETTLER: OnceLock<Option<Settler>> = OnceLock::new();

/// Times the JS thread was woken to settle calls (each settles every answer queued by then).
static WAKEUPS: AtomicUsize = AtomicUsize::new(0);

/// [`WAKEUPS`] so far (`stats().promiseWakeups`: fewer than the calls when answers were batched).
pub(super) fn wakeups() -> usize {
    WAKEUPS.load(Ordering::Relaxed)
}

/// Starts a call whose promise this module settles: `start(done)` must hand `done` the answer
/// once, from any thread. Returns the promise to give JS.
pub(super) fn call<'env>(env: &'env Env, start: impl FnOnce(Done)) -> Result<PromiseRaw<'env, super::ToolReply>> {
    let settler = match SETTLER.get_or_init(|| Settler::new(env)) {
        Some(s) if s.env == env.raw() as usize => s,
        _ => return call_with_own_deferred(env, start),
    };
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the JS thread, with this call's live env; both out-pointers are valid.
    check_status!(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) })?;
    if settler.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
        // SAFETY: JS thread, the settler's own env and threadsafe function (still open: its env is alive).
        unsafe { sys::napi_ref_threadsafe_function(env.raw(), settler.tsfn as sys::napi_threadsafe_function) };
    }
    let pending = Unanswered { settler, promise: Some(Promise(deferred)) };
    start(Box::new(move |answer| pending.answer(answer)));
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// A call's promise until its answer is queued. Dropped unanswered (the core lost the answer, which
/// it never should: see `CallInFlight`), it is answered INTERNAL, so that no promise hangs and the
/// loop is never kept alive by a call that can't end.
struct Unanswered {
    settler: &'static Settler,
    promise: Option<Promise>,
}

impl Unanswered {
    fn answer(mut self, answer: Answer) {
        if let Some(promise) = self.promise.take() {
            self.settler.queue_answer(promise, answer);
        }
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(promise) = self.promise.take() {
            let lost = crate::error::Error::new(
                crate::error::Kind::Internal,
                "internal error: the call ended without an answer",
            );
            self.settler.queue_answer(promise, Err(lost));
        }
    }
}

/// A call from an environment that isn't the settler's: napi-rs's deferred, as before.
fn call_with_own_deferred<'env>(
    env: &'env Env,
    start: impl FnOnce(Done),
) -> Result<PromiseRaw<'env, super::ToolReply>> {
    let (deferred, promise) = env.create_deferred()?;
    start(Box::new(move |r: Answer| {
        deferred.resolve(move |env| r.map(super::ToolReply::from).map_err(|e| super::js_error(&env, e)))
    }));
    Ok(PromiseRaw::new(env.raw(), promise.raw()))
}

impl Settler {
    /// The threadsafe function, unreferenced (no call in flight yet), and a hook that closes it
    /// when `env` is torn down. `None` (calls then settle the old way) when Node refuses either.
    fn new(env: &Env) -> Option<Settler> {
        let mut name = ptr::null_mut();
        let mut tsfn = ptr::null_mut();
        // SAFETY: JS thread, live env; the name is a valid UTF-8 C string of the given length; the
        // callback's context is unused (the settler is a static).
        let made = unsafe {
            sys::napi_create_string_utf8(env.raw(), c"dotty-pi-ext settle".as_ptr(), 19, &mut name)
                == sys::Status::napi_ok
                && sys::napi_create_threadsafe_function(
                    env.raw(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                    name,
                    0,
                    1,
                    ptr::null_mut(),
                    None,
                    ptr::null_mut(),
                    Some(settle_queued),
                    &mut tsfn,
                ) == sys::Status::napi_ok
        };
        if !made {
            return None;
        }
        // SAFETY: JS thread; the threadsafe function was just made in this env.
        unsafe { sys::napi_unref_threadsafe_function(env.raw(), tsfn) };
        // SAFETY: JS thread, live env; the hook takes no argument.
        let hooked = unsafe { sys::napi_add_env_cleanup_hook(env.raw(), Some(close_on_teardown), ptr::null_mut()) };
        if hooked != sys::Status::napi_ok {
            // SAFETY: the threadsafe function is ours and nothing else holds it yet.
            unsafe { sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::abort) };
            return None;
        }
        Some(Settler {
            env: env.raw() as usize,
            tsfn: tsfn as usize,
            queue: Mutex::new(Queue { answers: Vec::new(), closed: false }),
            in_flight: AtomicUsize::new(0),
            calling: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        })
    }

    /// Queues an answer (any thread) and, when the queue was empty, wakes the JS thread to settle
    /// everything queued by then. After teardown the answer is dropped: its promise is gone.
    ///
    /// The JS thread is woken with the queue unlocked: woken on this core, it may run at once in
    /// this thread's place, and it takes the queue's lock first thing (bench/README.md, issue 14:
    /// a lock held across the wake-up costs two more switches). `calling` keeps teardown from
    /// releasing the threadsafe function while a thread is between its check and its call.
    fn queue_answer(&self, promise: Promise, answer: Answer) {
        self.calling.fetch_add(1, Ordering::SeqCst);
        let wake = {
            let mut q = lock(&self.queue);
            if !q.closed {
                q.answers.push((promise, answer));
            }
            !q.closed && q.answers.len() == 1
        };
        crate::stages::mark(crate::stages::Stage::Woken);
        if wake && !self.closed.load(Ordering::SeqCst) {
            // SAFETY: the threadsafe function is open: teardown sets `closed`, then waits for
            // `calling` to drop to 0 before it releases the function. Nonblocking: the queue is unbounded.
            unsafe {
                sys::napi_call_threadsafe_function(
                    self.tsfn as sys::napi_threadsafe_function,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
        }
        self.calling.fetch_sub(1, Ordering::SeqCst);
    }

    /// On the JS thread: settles every answer queued, oldest first.
    fn settle_all(&self, env: sys::napi_env) {
        let answers = std::mem::take(&mut lock(&self.queue).answers);
        let settled = answers.len();
        for (promise, answer) in answers {
            settle_one(env, promise, answer);
        }
        if settled > 0 && self.in_flight.fetch_sub(settled, Ordering::Relaxed) == settled {
            // SAFETY: JS thread, the settler's env, the function still open (we are in its callback).
            unsafe { sys::napi_unref_threadsafe_function(env, self.tsfn as sys::napi_threadsafe_function) };
        }
    }
}

/// Resolves `promise` with the reply object (or rejects it with the error), in a handle scope of
/// its own so that a long batch doesn't pile up handles.
fn settle_one(env: sys::napi_env, promise: Promise, answer: Answer) {
    let mut scope = ptr::null_mut();
    // SAFETY: JS thread (the threadsafe function's callback), live env.
    let scoped = unsafe { sys::napi_open_handle_scope(env, &mut scope) } == sys::Status::napi_ok;
    let js = Env::from_raw(env);
    let value = match answer {
        Ok(out) => reply_value(env, out).map(|v| (true, v)),
        Err(e) => {
            // SAFETY: as above.
            unsafe { ToNapiValue::to_napi_value(env, super::js_error(&js, e)) }.map(|v| (false, v))
        }
    };
    // SAFETY: JS thread; the deferred was made in this env and is settled exactly once (here).
    unsafe {
        match value {
            Ok((true, v)) => sys::napi_resolve_deferred(env, promise.0, v),
            Ok((false, v)) => sys::napi_reject_deferred(env, promise.0, v),
            Err(e) => match ToNapiValue::to_napi_value(env, e) {
                Ok(v) => sys::napi_reject_deferred(env, promise.0, v),
                Err(_) => sys::napi_reject_deferred(env, promise.0, ptr::null_mut()),
            },
        };
        if scoped {
            sys::napi_close_handle_scope(env, scope);
        }
    }
}

/// The reply object `{text, content}` of [`super::ToolReply`]. A reply of one text block (every
/// voice tool's) is made by hand with its text made once as a JS string and used twice; any other
/// goes through the general conversion.
fn reply_value(env: sys::napi_env, out: ToolOutput) -> Result<sys::napi_value> {
    if !is_one_text_block(&out) {
        // SAFETY: JS thread, live env: the conversion makes JS values there.
        return unsafe { ToNapiValue::to_napi_value(env, super::ToolReply::from(out)) };
    }
    let (mut text, mut kind, mut block, mut content, mut reply) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: JS thread, live env; every out-pointer is valid, the string lengths are the byte
    // lengths of valid UTF-8, the property names are C strings.
    unsafe {
        check_status!(sys::napi_create_string_utf8(env, out.text.as_ptr().cast(), out.text.len() as isize, &mut text))?;
        check_status!(sys::napi_create_string_utf8(env, c"text".as_ptr(), 4, &mut kind))?;
        check_status!(sys::napi_create_object(env, &mut block))?;
        check_status!(sys::napi_set_named_property(env, block, c"type".as_ptr(), kind))?;
        check_status!(sys::napi_set_named_property(env, block, c"text".as_ptr(), text))?;
        check_status!(sys::napi_create_array_with_length(env, 1, &mut content))?;
        check_status!(sys::napi_set_element(env, content, 0, block))?;
        check_status!(sys::napi_create_object(env, &mut reply))?;
        check_status!(sys::napi_set_named_property(env, reply, c"text".as_ptr(), text))?;
        check_status!(sys::napi_set_named_property(env, reply, c"content".as_ptr(), content))?;
    }
    Ok(reply)
}

/// `content` is exactly `[{"type": "text", "text": <text>}]`, keys in that order.
fn is_one_text_block(out: &ToolOutput) -> bool {
    match &out.content[..] {
        [serde_json::Value::Object(block)] => {
            let mut keys = block.iter();
            matches!(keys.next(), Some((k, serde_json::Value::String(t))) if k == "type" && t == "text")
                && matches!(keys.next(), Some((k, serde_json::Value::String(t))) if k == "text" && *t == out.text)
                && keys.next().is_none()
        }
        _ => false,
    }
}

/// The threadsafe function's callback (JS thread): settles what is queued. A null env means the
/// function is being drained at teardown: nothing can be settled then.
unsafe extern "C" fn settle_queued(
    env: sys::napi_env,
    _js: sys::napi_value,
    _context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() {
        return;
    }
    crate::stages::mark(crate::stages::Stage::Settling);
    WAKEUPS.fetch_add(1, Ordering::Relaxed);
    if let Some(Some(settler)) = SETTLER.get() {
        settler.settle_all(env);
    }
    crate::stages::mark(crate::stages::Stage::Settled);
}

/// The settler's environment is going away: no more answers are queued or woken for, and the
/// threadsafe function is released.
unsafe extern "C" fn close_on_teardown(_arg: *mut c_void) {
    if let Some(Some(settler)) = SETTLER.get() {
        {
            let mut q = lock(&settler.queue);
            q.closed = true;
            q.answers.clear();
        }
        settler.closed.store(true, Ordering::SeqCst);
        // A thread that saw `closed` false may be calling the function right now: it is done
        // within microseconds (the call only queues and signals).
        while settler.calling.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        // SAFETY: ours, released once; no thread calls it after this (`closed`, `calling`).
        unsafe {
            sys::napi_release_threadsafe_function(
                settler.tsfn as sys::napi_threadsafe_function,
                sys::ThreadsafeFunctionReleaseMode::abort,
            )
        };
    }
}
