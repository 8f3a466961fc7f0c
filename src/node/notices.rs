//! Where what the core says goes (`crate::diag`): held while pi loads, pi's notify in its
//! terminal UI, stderr elsewhere.

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

/// Called by the entry first, while pi loads it: when pi's stdout is a terminal
/// (`process.stdout.isTTY`), pi may draw its interactive UI there, so what the core says waits for
/// `speakThrough` (held, bounded) instead of going to stderr.
#[napi]
pub fn hold_notices(stdout_is_terminal: bool) {
    crate::diag::hold(stdout_is_terminal)
}

/// What pi's `session_start` context says of its UI: `mode` (pi >= 1.x), `hasUI`, and how many
/// themes `ctx.ui.getAllThemes()` lists.
#[napi(object)]
pub struct UiFacts {
    pub mode: Option<String>,
    pub has_ui: bool,
    pub themes: u32,
}

/// `notify(level, text)`: pi's `ctx.ui.notify`, called on the JS thread; never keeps Node alive.
type NotifyFn = ThreadsafeFunction<FnArgs<(String, String)>, (), FnArgs<(String, String)>, Status, false, true>;

/// pi's `session_start`: where what the core says goes from now on. In pi's interactive terminal
/// UI each line goes once to `notify(level, text)` (`level`: `info` or `warning`); elsewhere to
/// stderr, as before. The lines held since `holdNotices` go there first. Returns whether it is the
/// terminal UI.
#[napi(ts_args_type = "facts: UiFacts, notify: (level: 'info' | 'warning', text: string) => void")]
pub fn speak_through(facts: UiFacts, notify: NotifyFn) -> bool {
    let surface = crate::diag::Surface::of(facts.mode.as_deref(), facts.has_ui, facts.themes as usize);
    let notify: crate::diag::Notify = std::sync::Arc::new(move |level, text| {
        // A full queue or a Node that is exiting: the line is lost, never waited for.
        let args = (level.as_str().to_string(), text.to_string()).into();
        let _ = notify.call(args, ThreadsafeFunctionCallMode::NonBlocking);
    });
    crate::diag::attach(surface, notify);
    surface == crate::diag::Surface::Terminal
}

/// What the core says goes to stderr again (pi's terminal UI stopped: `session_shutdown` on quit).
#[napi]
pub fn notices_to_stderr() {
    crate::diag::detach()
}

/// The process is exiting (`process.on('exit')`): lines still held are written to stderr now.
#[napi]
pub fn release_notices() {
    crate::diag::release()
}

/// Says `text` as the core's own lines are said (a warning: stderr as `[dotty-pi-ext] <text>`, or
/// once in pi's terminal UI): what the entry itself has to say goes through the same sink.
#[napi]
pub fn warn(text: String) {
    crate::diag::say(crate::diag::Level::Warning, text)
}
