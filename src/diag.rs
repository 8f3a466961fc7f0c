//! Diagnostics: what the core says to the person running pi. Never on stdout: in pi's RPC mode
//! stdout is the protocol channel.
//!
//! **Where a line goes** (the one [`Sink`]): stderr, as `[dotty-pi-ext] <text>`, in RPC and print
//! mode (Dotty's robot reads pi's stderr as its log), in the operator's command line and in tests.
//! In pi's interactive terminal UI a raw stderr line lands on top of pi's screen, so there each line
//! goes once to pi's UI (`ctx.ui.notify`) instead. The entry can't know which until pi's
//! `session_start` hands it a context, and the core speaks before that (configuration warnings,
//! brain.db created): when pi's stdout is a terminal, lines are held from the entry's load
//! ([`hold`]) until [`attach`] says where pi shows them; the held ones then go there, in order.
//! Held lines are bounded ([`HOLD`]): past that they are dropped and counted.
//!
//! **stderr itself**: Node makes fd 2 non-blocking when it is a pipe, so a plain `eprintln!` can
//! fail with EAGAIN when the reader is slow, and `eprintln!` panics on failure. Lines are therefore
//! handed to one writer thread that waits for the pipe (poll) and never makes the caller wait; when
//! too many lines are queued, new ones are dropped rather than blocking a voice turn.

use crate::sync::lock;
use once_cell::sync::Lazy;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Says one line (a warning): on stderr as `[dotty-pi-ext] <text>`, or in pi's UI. Never blocks.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::diag::say($crate::diag::Level::Warning, format!($($arg)*))
    };
}

/// Says one line that reports, not warns (a file created, a debug trace): like [`diag!`], shown at
/// pi's `info` level.
#[macro_export]
macro_rules! diag_info {
    ($($arg:tt)*) => {
        $crate::diag::say($crate::diag::Level::Info, format!($($arg)*))
    };
}

/// Longest line written; user text inside a diagnostic can be a megabyte.
const MAX_LINE: usize = 2000;
const QUEUE: usize = 1024;
/// Lines held until pi says where they go (a start says a handful).
pub const HOLD: usize = 32;
/// Distinct texts remembered so that each is shown in pi's UI once.
const SHOWN: usize = 256;

/// What a line reports, when later lines may word it otherwise ("MemPalace is down: …" with another
/// last error): pi's UI shows one line per subject until [`over`] says the state it reported ended.
pub type Subject = &'static str;

static PENDING: AtomicUsize = AtomicUsize::new(0);
/// Lines dropped: stderr didn't keep up, or more than [`HOLD`] were held.
pub(crate) static DROPPED: AtomicUsize = AtomicUsize::new(0);

static WRITER: Lazy<Option<SyncSender<String>>> = Lazy::new(|| {
    let (tx, rx) = sync_channel::<String>(QUEUE);
    std::thread::Builder::new()
        .name("dotty-stderr".into())
        .spawn(move || {
            for line in rx {
                write_fd2(line.as_bytes());
                PENDING.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .ok()?;
    Some(tx)
});

/// How pi shows a line in its UI (`ctx.ui.notify`'s type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
}

impl Level {
    /// pi's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
        }
    }
}

/// Shows one line in pi's UI (the binding's `ctx.ui.notify`, called on the JS thread later).
pub type Notify = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// Where pi shows what the extension says, as the entry learnt it at `session_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// pi's interactive terminal UI: a line on stderr would be drawn over its screen.
    Terminal,
    /// RPC, JSON or print mode: stderr is the channel (Dotty's log).
    Stream,
}

impl Surface {
    /// The surface of a pi `session_start` context: `mode` (pi ≥ 1.x: `tui`, `rpc`, `json`,
    /// `print`) when pi says it; else (pi 0.7x) `hasUI`, true in the interactive and the RPC mode
    /// alike, and the themes its UI lists, which RPC mode's UI never has (`getAllThemes()` is `[]`).
    pub fn of(mode: Option<&str>, has_ui: bool, themes: usize) -> Surface {
        let terminal = match mode {
            Some(m) => m == "tui",
            None => has_ui && themes > 0,
        };
        if terminal {
            Surface::Terminal
        } else {
            Surface::Stream
        }
    }
}

enum Route {
    Stderr,
    /// Until pi says where lines go.
    Hold(Vec<(Level, Option<Subject>, String)>),
    Ui(Notify),
}

/// Where each line goes now, and the texts and subjects pi's UI has shown.
pub struct Sink {
    route: Route,
    shown: VecDeque<String>,
    subjects: Vec<Subject>,
}

impl Default for Sink {
    fn default() -> Self {
        Sink { route: Route::Stderr, shown: VecDeque::new(), subjects: Vec::new() }
    }
}

impl Sink {
    /// Says `text` (about `subject`, if given): `stderr` takes a finished stderr line (with its
    /// prefix and newline). pi's UI shows a text once, and one line per subject.
    pub fn say(&mut self, level: Level, subject: Option<Subject>, text: String, stderr: &dyn Fn(String)) {
        let text = cut(text);
        let notify = match &mut self.route {
            Route::Stderr => return stderr(format!("[dotty-pi-ext] {text}\n")),
            Route::Hold(held) => {
                if held.len() < HOLD {
                    held.push((level, subject, text));
                } else {
                    DROPPED.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            Route::Ui(notify) => notify.clone(),
        };
        let new = match subject {
            Some(s) if self.subjects.contains(&s) => false,
            Some(s) => {
                self.subjects.push(s);
                true
            }
            None => self.first_time(&text),
        };
        if new {
            notify(level, &text);
        }
    }

    /// The state `subject` reported is over: the next line about it is news again.
    pub fn over(&mut self, subject: Subject) {
        self.subjects.retain(|s| *s != subject);
    }

    /// Whether pi's UI has not shown `text` yet (then it counts as shown).
    fn first_time(&mut self, text: &str) -> bool {
        if self.shown.iter().any(|t| t == text) {
            return false;
        }
        if self.shown.len() == SHOWN {
            self.shown.pop_front();
        }
        self.shown.push_back(text.to_string());
        true
    }

    /// pi's stdout is a terminal (`terminal`), so pi may draw its UI there: hold lines until
    /// [`Sink::attach`]. Also on `/reload`, when a new context is to come. Elsewhere nothing changes.
    pub fn hold(&mut self, terminal: bool) {
        if terminal && !matches!(self.route, Route::Hold(_)) {
            self.route = Route::Hold(Vec::new());
        }
    }

    /// pi said where it shows lines: on a [`Surface::Terminal`] through `notify`, else on stderr.
    /// The held lines go there first, in order.
    pub fn attach(&mut self, surface: Surface, notify: Notify, stderr: &dyn Fn(String)) {
        let held = match std::mem::replace(&mut self.route, Route::Stderr) {
            Route::Hold(held) => held,
            _ => Vec::new(),
        };
        if surface == Surface::Terminal {
            self.route = Route::Ui(notify);
        }
        for (level, subject, text) in held {
            self.say(level, subject, text, stderr);
        }
    }

    /// Back to stderr (pi's terminal UI is gone, or the process ends), held lines first.
    pub fn detach(&mut self, stderr: &dyn Fn(String)) {
        let none: Notify = Arc::new(|_, _| {});
        self.attach(Surface::Stream, none, stderr);
    }
}

static SINK: Lazy<Mutex<Sink>> = Lazy::new(|| Mutex::new(Sink::default()));

/// Says one line where lines go now (the macros [`diag!`] and [`diag_info!`]).
pub fn say(level: Level, text: String) {
    lock(&SINK).say(level, None, text, &emit);
}

/// Says one line about `subject` (a warning): on stderr each time, in pi's UI once until [`over`].
pub fn say_about(subject: Subject, text: String) {
    lock(&SINK).say(Level::Warning, Some(subject), text, &emit);
}

/// The state lines about `subject` reported is over (the palace is up again).
pub fn over(subject: Subject) {
    lock(&SINK).over(subject);
}

/// The entry is loading in pi: when pi's stdout is a terminal (`stdout_is_terminal`, the entry's
/// `process.stdout.isTTY`), lines wait for [`attach`].
pub fn hold(stdout_is_terminal: bool) {
    lock(&SINK).hold(stdout_is_terminal);
}

/// pi's `session_start` said where it shows lines (see [`Sink::attach`]).
pub fn attach(surface: Surface, notify: Notify) {
    lock(&SINK).attach(surface, notify, &emit);
}

/// Lines go to stderr again (pi's terminal UI stopped: `session_shutdown` on quit).
pub fn detach() {
    lock(&SINK).detach(&emit);
}

/// The process is exiting: held lines are written to stderr now, on this thread (the writer
/// thread may not get to run again).
pub fn release() {
    lock(&SINK).detach(&|line: String| write_fd2(line.as_bytes()));
}

/// Cuts an over-long text at a character boundary, keeping it one line.
fn cut(mut text: String) -> String {
    if text.len() > MAX_LINE {
        text.truncate(crate::text::floor_char_boundary(&text, MAX_LINE));
        text.push('…');
    }
    text
}

/// Queues a finished line (with its newline) for stderr.
fn emit(line: String) {
    match &*WRITER {
        Some(tx) => {
            PENDING.fetch_add(1, Ordering::SeqCst);
            if tx.try_send(line).is_err() {
                PENDING.fetch_sub(1, Ordering::SeqCst);
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        None => write_fd2(line.as_bytes()),
    }
}

/// Waits (at most `limit`) until queued lines are written; used at shutdown.
pub fn flush(limit: Duration) {
    let t0 = Instant::now();
    while PENDING.load(Ordering::SeqCst) > 0 && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// write(2) on fd 2 until done, waiting for a full non-blocking pipe; gives up on a real error.
fn write_fd2(mut buf: &[u8]) {
    while !buf.is_empty() {
        // SAFETY: writing a valid, live byte slice to fd 2.
        let n = unsafe { libc::write(2, buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            buf = &buf[n as usize..];
            continue;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) => {
                let mut pfd = libc::pollfd { fd: 2, events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 1000) };
            }
            _ => return,
        }
    }
}

/// Renders an error with its whole `source()` chain, outermost first, joined with ": " (reqwest's
/// `Display` hides the cause). A cause whose text is already there (an error that prints its
/// source itself) is not said twice. The one renderer of a cause chain: stderr lines and the JS
/// error's message ([`crate::error::Error::from_chain`]) both use it.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

/// The innermost cause of an error: the short reason a person can act on
/// ("Connection refused (os error 111)" rather than "error sending request for url ...").
pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = err;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::{Level, Notify, Sink, Surface, HOLD};
    use std::cell::RefCell;
    use std::sync::{Arc, Mutex};

    /// A sink's two outlets, recorded: stderr lines, and what pi's UI was asked to show.
    #[derive(Default)]
    struct Outlets {
        stderr: RefCell<Vec<String>>,
        ui: Arc<Mutex<Vec<(Level, String)>>>,
    }

    impl Outlets {
        fn notify(&self) -> Notify {
            let ui = self.ui.clone();
            Arc::new(move |level, text: &str| ui.lock().unwrap().push((level, text.to_string())))
        }
        fn ui(&self) -> Vec<(Level, String)> {
            self.ui.lock().unwrap().clone()
        }
    }

    fn say(sink: &mut Sink, out: &Outlets, level: Level, text: &str) {
        sink.say(level, None, text.into(), &|l| out.stderr.borrow_mut().push(l));
    }

    #[test]
    fn pi_s_ui_shows_one_line_per_subject_until_its_state_is_over_stderr_every_one() {
        let (mut sink, out) = (Sink::default(), Outlets::default());
        let about = |sink: &mut Sink, text: &str| {
            sink.say(Level::Warning, Some("down"), text.into(), &|l| out.stderr.borrow_mut().push(l))
        };
        about(&mut sink, "MemPalace is down: gave up (last error: crashed (exit status: 3))");
        about(&mut sink, "MemPalace is down: gave up (last error: crashed)");
        assert_eq!(out.stderr.borrow().len(), 2, "stderr is a log: each line, as before");
        sink.hold(true);
        sink.attach(Surface::Terminal, out.notify(), &|l| out.stderr.borrow_mut().push(l));
        about(&mut sink, "MemPalace is down: gave up (last error: crashed (exit status: 3))");
        about(&mut sink, "MemPalace is down: gave up (last error: crashed)");
        sink.over("down");
        about(&mut sink, "MemPalace is down: gave up (last error: crashed)");
        assert_eq!(
            out.ui(),
            [
                (Level::Warning, "MemPalace is down: gave up (last error: crashed (exit status: 3))".to_string()),
                (Level::Warning, "MemPalace is down: gave up (last error: crashed)".to_string()),
            ]
        );
        assert_eq!(out.stderr.borrow().len(), 2);
    }

    #[test]
    fn without_a_terminal_every_line_goes_to_stderr_at_once_as_today() {
        let (mut sink, out) = (Sink::default(), Outlets::default());
        sink.hold(false);
        say(&mut sink, &out, Level::Info, "created a new brain.db at /h/brain.db (none existed)");
        say(&mut sink, &out, Level::Warning, "MemPalace is down");
        say(&mut sink, &out, Level::Warning, "MemPalace is down");
        assert_eq!(
            *out.stderr.borrow(),
            [
                "[dotty-pi-ext] created a new brain.db at /h/brain.db (none existed)\n",
                "[dotty-pi-ext] MemPalace is down\n",
                "[dotty-pi-ext] MemPalace is down\n"
            ]
        );
        // RPC mode's session_start changes nothing.
        sink.attach(Surface::Stream, out.notify(), &|l| out.stderr.borrow_mut().push(l));
        say(&mut sink, &out, Level::Warning, "later");
        assert_eq!(out.stderr.borrow().last().unwrap(), "[dotty-pi-ext] later\n");
        assert!(out.ui().is_empty());
    }

    #[test]
    fn in_pi_s_terminal_ui_held_lines_and_later_ones_go_to_the_ui_once_each_never_to_stderr() {
        let (mut sink, out) = (Sink::default(), Outlets::default());
        sink.hold(true);
        say(&mut sink, &out, Level::Info, "created a new brain.db at /h/brain.db (none existed)");
        say(&mut sink, &out, Level::Warning, "a warning");
        assert!(out.stderr.borrow().is_empty() && out.ui().is_empty(), "held until session_start");
        sink.attach(Surface::Terminal, out.notify(), &|l| out.stderr.borrow_mut().push(l));
        say(&mut sink, &out, Level::Warning, "MemPalace is down");
        say(&mut sink, &out, Level::Warning, "a warning");
        say(&mut sink, &out, Level::Warning, "MemPalace is down");
        assert_eq!(
            out.ui(),
            [
                (Level::Info, "created a new brain.db at /h/brain.db (none existed)".to_string()),
                (Level::Warning, "a warning".to_string()),
                (Level::Warning, "MemPalace is down".to_string()),
            ]
        );
        assert!(out.stderr.borrow().is_empty());
        // pi's UI stops (quit): stderr again, as it was.
        sink.detach(&|l| out.stderr.borrow_mut().push(l));
        say(&mut sink, &out, Level::Warning, "mempalace feed (quit) failed: x");
        assert_eq!(*out.stderr.borrow(), ["[dotty-pi-ext] mempalace feed (quit) failed: x\n"]);
    }

    #[test]
    fn held_lines_go_to_stderr_in_order_when_pi_turns_out_not_to_draw_a_ui_and_are_bounded() {
        let (mut sink, out) = (Sink::default(), Outlets::default());
        sink.hold(true);
        let dropped = super::DROPPED.load(std::sync::atomic::Ordering::Relaxed);
        for i in 0..HOLD + 3 {
            say(&mut sink, &out, Level::Warning, &format!("line {i}"));
        }
        assert!(super::DROPPED.load(std::sync::atomic::Ordering::Relaxed) >= dropped + 3);
        sink.attach(Surface::Stream, out.notify(), &|l| out.stderr.borrow_mut().push(l));
        let lines = out.stderr.borrow().clone();
        assert_eq!(lines.len(), HOLD);
        assert_eq!(lines[0], "[dotty-pi-ext] line 0\n");
        assert_eq!(lines[HOLD - 1], format!("[dotty-pi-ext] line {}\n", HOLD - 1));
        assert!(out.ui().is_empty());
    }

    #[test]
    fn a_reload_holds_again_until_its_session_start() {
        let (mut sink, out) = (Sink::default(), Outlets::default());
        sink.hold(true);
        sink.attach(Surface::Terminal, out.notify(), &|l| out.stderr.borrow_mut().push(l));
        sink.hold(true);
        say(&mut sink, &out, Level::Warning, "during the reload");
        assert!(out.ui().is_empty());
        sink.attach(Surface::Terminal, out.notify(), &|l| out.stderr.borrow_mut().push(l));
        assert_eq!(out.ui(), [(Level::Warning, "during the reload".to_string())]);
        assert!(out.stderr.borrow().is_empty());
    }

    #[test]
    fn the_surface_is_pi_s_mode_when_pi_says_it_else_a_ui_with_themes() {
        assert_eq!(Surface::of(Some("tui"), true, 0), Surface::Terminal);
        for mode in ["rpc", "json", "print"] {
            assert_eq!(Surface::of(Some(mode), true, 5), Surface::Stream, "{mode}");
        }
        // pi 0.7x: no mode; RPC mode's UI has hasUI true and lists no themes; print mode has no UI.
        assert_eq!(Surface::of(None, true, 2), Surface::Terminal);
        assert_eq!(Surface::of(None, true, 0), Surface::Stream);
        assert_eq!(Surface::of(None, false, 0), Surface::Stream);
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let line = super::cut("é".repeat(5000));
        assert!(line.len() <= super::MAX_LINE + "…".len());
        assert!(line.ends_with("é…"));
        assert_eq!(super::cut("short".into()), "short");
    }

    #[test]
    fn a_chain_is_said_outermost_first_without_repeating_a_cause() {
        #[derive(Debug)]
        struct Wraps(&'static str, std::io::Error);
        impl std::fmt::Display for Wraps {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for Wraps {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.1)
            }
        }
        let e = Wraps("sending the request", std::io::Error::other("connection refused"));
        assert_eq!(super::chain(&e), "sending the request: connection refused");
        let e = Wraps("sending the request (connection refused)", std::io::Error::other("connection refused"));
        assert_eq!(super::chain(&e), "sending the request (connection refused)");
        assert_eq!(super::root_cause(&e), "connection refused");
    }
}
