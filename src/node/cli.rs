//! The operator's command line (bin/dotty-pi-ext.js): thin conversions to `crate::doctor`.

use super::ext;
use napi_derive::napi;

/// `doctor`: the rendered report (`json`: the JSON shape) and its exit status (0/1/2).
#[napi(object)]
pub struct DoctorOutput {
    pub text: String,
    pub exit_code: i32,
}

/// Runs every read-only check against this process's environment. `color`: ANSI colours.
#[napi]
pub async fn doctor(
    json: bool,
    color: bool,
    node_version: Option<String>,
    node_exec_path: Option<String>,
) -> DoctorOutput {
    let host = crate::doctor::Host { node_version, node_exec_path, cwd: std::env::current_dir().ok() };
    let (text, exit_code) = crate::doctor::report(&host, json, color).await;
    DoctorOutput { text, exit_code }
}

/// `clean-turns [--dry-run] [--backup PATH|none]`: rewrites brain.db's polluted conversation rows
/// (src/voice/clean_turns.rs), on a blocking thread.
#[napi]
pub async fn clean_turns(dry_run: bool, backup: Option<String>) -> DoctorOutput {
    let (text, exit_code) = crate::doctor::clean_turns(dry_run, backup.as_deref()).await;
    DoctorOutput { text, exit_code }
}

/// `feed --dry-run`: what a feed would stage and send; reads only.
#[napi]
pub fn feed_plan() -> String {
    crate::doctor::feed::plan_from_env()
}

/// `feed`: connects to the palace and runs the transcript feed once. `ok` false: it failed or
/// could not run.
#[napi(object)]
pub struct FeedResult {
    pub text: String,
    pub ok: bool,
}

#[napi]
pub async fn feed_once() -> FeedResult {
    let (text, ok) = match ext().feed_once().await {
        Some(outcome) => crate::doctor::feed::describe(&outcome),
        None => (ext().bridge_off(), true),
    };
    FeedResult { text, ok }
}
