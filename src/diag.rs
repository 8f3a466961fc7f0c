//! Diagnostics go to stderr, never stdout: in pi's RPC mode stdout is the protocol channel.

/// Writes one `[dotty-pi-ext]`-prefixed line on stderr.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        eprintln!("[dotty-pi-ext] {}", format_args!($($arg)*))
    };
}

/// Renders an error with its whole `source()` chain (reqwest's `Display` hides the cause).
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
pub fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = err;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
