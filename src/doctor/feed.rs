//! `dotty-pi-ext feed`: what a feed would send (dry run, read-only) and what one did.

use crate::palace::feed::export::passes_quality_gate;
use crate::palace::feed::{FeedOutcome, SkipReason};
use crate::palace::PalaceConfig;
use crate::process_group::resolve_bin;
use std::path::{Path, PathBuf};

/// Why nothing is fed while pi's own MCP writes the palace.
pub(crate) const PI_MCP_WRITES: &str =
    "pi's own MCP writes the palace; this bridge only reads it through a read-only twin, which can't mine";

/// [`plan`] for this process's environment (`feed --dry-run`).
pub fn plan_from_env() -> String {
    plan(&crate::config::Config::from_env().palace)
}

/// The dry run: which exporter, which sessions pass the quality gate, where they would go.
/// Reads only; stages, runs and sends nothing.
/// The wing a feed files into, as the plan and doctor say it: `MEMPALACE_FEED_WING`, or under
/// project scope each session's project wing.
pub(crate) fn wing_of(pal: &PalaceConfig) -> String {
    match pal.scope {
        crate::palace::scope::Scope::Global => pal.feed_wing.clone(),
        crate::palace::scope::Scope::Project => "of each session's project (MEMPALACE_SCOPE=project)".into(),
    }
}

pub fn plan(pal: &PalaceConfig) -> String {
    // pi's own MCP runs the palace: the bridge stepped aside, and says for which entry.
    if let Some(off @ crate::palace::config::BridgeOff::PiMcp { .. }) = &pal.off {
        return format!("feeding is off ({off}): nothing would be sent");
    }
    match SkipReason::of_config(pal) {
        Some(SkipReason::NoSshTarget) => {
            return "remote palace without MEMPALACE_PI_SSH_TARGET: nothing would be sent".into()
        }
        Some(SkipReason::PiMcpWrites) => return format!("feeding is off ({PI_MCP_WRITES}): nothing would be sent"),
        Some(_) => return "feeding is off (MEMPALACE_BRIDGE=0 or MEMPALACE_FEED=0): nothing would be sent".into(),
        None => {}
    }
    let mut out = format!("redaction: {}\n", crate::palace::feed::redaction_line(pal));
    if let Some(bin) = resolve_bin(&pal.feed_bin, pal.search_path.as_deref()) {
        out.push_str(&format!(
            "would run the external exporter: {} --prepare --reason cli --wing {}\n",
            bin.display(),
            wing_of(pal)
        ));
    } else {
        let sessions = sessions(&pal.sessions_dir());
        let good: Vec<&(PathBuf, u64, bool)> = sessions.iter().filter(|s| s.2).collect();
        out.push_str(&format!(
            "sessions in {}: {} files, {} pass the quality gate\n",
            pal.sessions_dir().display(),
            sessions.len(),
            good.len()
        ));
        // The redaction the staged copies would get, counted on the sessions as they are now.
        let redactor = crate::palace::feed::redact::for_feed(pal);
        let mut would = crate::palace::feed::redact::Counts::new();
        for (p, size, _) in &good {
            out.push_str(&format!(
                "  would stage {} ({size} bytes) unless unchanged since the last feed\n",
                p.strip_prefix(pal.sessions_dir()).unwrap_or(p).display()
            ));
            if let (Some(r), Ok(bytes)) = (&redactor, std::fs::read(p)) {
                r.redact_jsonl(&bytes, &mut would);
            }
        }
        out.push_str(&format!("staging folder: {}\n", pal.feed_dir().join("staging").display()));
        if redactor.is_some() {
            out.push_str(&format!(
                "redaction: would replace {} in those sessions\n",
                crate::palace::feed::redact::describe(&would)
            ));
        }
    }
    if let Some(t) = &pal.ssh_target {
        out.push_str(&format!("would rsync the staged sessions to {t}:{}\n", pal.remote_path));
    }
    out.push_str(&format!(
        "would call mempalace_mine (wing {}, timeout {} ms)\n",
        wing_of(pal),
        pal.mine_timeout.as_millis()
    ));
    out.push_str("dry run: nothing was written or sent");
    out
}

/// Every `*.jsonl` under `dir` (path, size, passes the quality gate).
fn sessions(dir: &Path) -> Vec<(PathBuf, u64, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
                let size = e.metadata().map_or(0, |m| m.len());
                let good = size <= 64 << 20 && std::fs::read(&p).is_ok_and(|b| passes_quality_gate(&b));
                out.push((p, size, good));
            }
        }
    }
    out.sort();
    out
}

/// What a feed did, in one line, and whether that is a success.
pub fn describe(o: &FeedOutcome) -> (String, bool) {
    match o {
        FeedOutcome::Fed { source, output, redacted } => (
            format!(
                "fed {source} to the palace: {}\nredacted: {}",
                crate::text::first_chars(output.trim(), 400),
                crate::palace::feed::redact::describe(redacted)
            ),
            true,
        ),
        FeedOutcome::NothingToFeed => ("nothing to feed: no session changed since the last feed".into(), true),
        FeedOutcome::Skipped(SkipReason::Disabled) => {
            ("feeding is off (MEMPALACE_BRIDGE=0 or MEMPALACE_FEED=0)".into(), true)
        }
        FeedOutcome::Skipped(SkipReason::NoSshTarget) => {
            ("skipped: remote palace without MEMPALACE_PI_SSH_TARGET".into(), false)
        }
        FeedOutcome::Skipped(SkipReason::Debounced) => ("skipped: a feed ran moments ago".into(), true),
        FeedOutcome::Skipped(SkipReason::Locked) => {
            ("skipped: another process (pi?) is feeding right now".into(), false)
        }
        FeedOutcome::Skipped(SkipReason::PalaceDown) => {
            ("skipped: the palace can't be reached (see `dotty-pi-ext doctor`)".into(), false)
        }
        FeedOutcome::Skipped(SkipReason::PiMcpWrites) => (format!("feeding is off ({PI_MCP_WRITES})"), true),
        FeedOutcome::Failed(why) => (format!("feed failed: {why}"), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_lists_sessions_and_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let agent = d.path().join("agent");
        let s = agent.join("sessions/--work--");
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("a.jsonl"), "{\"type\":\"session\",\"version\":3}\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n").unwrap();
        std::fs::write(s.join("b.jsonl"), "junk\n").unwrap();
        let a = agent.display().to_string();
        let get = move |k: &str| match k {
            "PI_CODING_AGENT_DIR" => Some(a.clone()),
            "MEMPALACE_FEED_BIN" => Some("/nonexistent/exporter".into()),
            _ => None,
        };
        let pal = PalaceConfig::from_lookup(&get).0;
        let before: Vec<_> = walk(d.path());
        let p = plan(&pal);
        assert!(p.contains("2 files, 1 pass"), "{p}");
        assert!(p.contains("would stage --work--/a.jsonl"), "{p}");
        assert_eq!(walk(d.path()), before);
    }

    fn walk(p: &Path) -> Vec<PathBuf> {
        let mut v = vec![];
        for e in std::fs::read_dir(p).unwrap().flatten() {
            v.push(e.path());
            if e.file_type().unwrap().is_dir() {
                v.extend(walk(&e.path()));
            }
        }
        v.sort();
        v
    }
}
