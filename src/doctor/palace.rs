//! The palace: transport, a handshake of its own (the MCP client directly, never the bridge, so
//! the tool cache is not written), its time and tool count, the tool cache's age and whether it
//! matches the live list, and the feed's state.
//!
//! Bounded: the handshake gets the configured init timeout, capped at `cap`.

use super::Check;
use crate::mcp::{McpClient, McpConfig, McpError};
use crate::palace::feed::export;
use crate::palace::feed::{LastFeed, Ran, SkipReason};
use crate::palace::files::age;
use crate::palace::{offer::cache, PalaceConfig};
use std::time::{Duration, Instant};

pub async fn check(pal: &PalaceConfig, mcp: &McpConfig, cap: Duration) -> Vec<Check> {
    if let Some(off) = &pal.off {
        return vec![Check::ok("palace", format!("bridge off ({off})"))];
    }
    let mut out = Vec::new();
    let transport = match &mcp.remote_url {
        Some(_) => format!(
            "Streamable HTTP to {}{}",
            mcp.target(),
            if mcp.remote_token.is_some() { " with a bearer token" } else { "" }
        ),
        None => format!("stdio child `{}`", mcp.target()),
    };
    out.push(Check::ok("palace transport", transport));
    let limit = mcp.init_timeout.map_or(cap, |t| t.min(cap));
    let mut cfg = mcp.clone();
    cfg.init_timeout = Some(limit);
    cfg.max_respawns = 0;
    let client = McpClient::new(cfg);
    let t0 = Instant::now();
    let live = tokio::time::timeout(limit + Duration::from_secs(2), client.connect()).await;
    let ms = t0.elapsed().as_millis();
    let live = match live {
        Ok(Ok(tools)) => {
            let admitted = crate::palace::offer::tools::admit(tools, &crate::voice::Tool::names());
            let server = client.server_info().map_or("server info not given".into(), |i| {
                let field = |k: &str| {
                    i.get(k)
                        .and_then(serde_json::Value::as_str)
                        .map(|s| crate::text::first_chars(s, 64).to_string())
                        .unwrap_or_else(|| "?".into())
                };
                format!("server {} {}", field("name"), field("version"))
            });
            out.push(Check::ok("palace handshake", format!("{ms} ms, {} tools, {server}", admitted.tools.len())));
            Some(admitted.tools)
        }
        Err(_) => {
            out.push(stalled(limit));
            None
        }
        Ok(Err(e)) => {
            out.push(failed(&e, mcp.remote_url.is_some(), ms, limit));
            None
        }
    };
    client.shutdown().await;
    out.push(cache_check(pal, mcp, live.as_deref()));
    out.push(feed_check(pal));
    out.push(redaction_check(pal));
    out
}

/// The handshake's failure after `ms` and what to do about it. The client gives up at once (no
/// respawns here): the check says the cause, not the give-up.
fn failed(e: &McpError, remote: bool, ms: u128, limit: Duration) -> Check {
    let cause = e.cause();
    if matches!(cause, McpError::Timeout { .. }) {
        return stalled(limit);
    }
    let fix = match cause {
        McpError::Unauthorized if remote => {
            "set MEMPALACE_REMOTE_TOKEN to the token the shared palace was started with"
        }
        _ if remote => {
            "start the shared palace (mempalace serve) and check MEMPALACE_REMOTE_URL and MEMPALACE_REMOTE_TOKEN"
        }
        _ => {
            "install MemPalace so MEMPALACE_MCP_BIN runs (or set it and MEMPALACE_MCP_ARGS), or set MEMPALACE_BRIDGE=0"
        }
    };
    Check::fail("palace handshake", format!("failed after {ms} ms: {cause}"), fix)
}

fn stalled(limit: Duration) -> Check {
    Check::fail(
        "palace handshake",
        format!("no answer within {} ms: the palace stalls", limit.as_millis()),
        "restart the MemPalace server (a stuck server or a lock held by another writer); run with MEMPALACE_EXT_DEBUG=1 to see its stderr",
    )
}

fn cache_check(pal: &PalaceConfig, mcp: &McpConfig, live: Option<&[crate::mcp::ToolInfo]>) -> Check {
    let path = pal.tools_cache_path();
    let shown = path.display();
    match cache::load(&path, &cache::key(mcp), &crate::voice::Tool::names()) {
        Ok(None) => Check::ok(
            "palace tool cache",
            format!("none for this server at {shown} (pi writes it after its first handshake)"),
        ),
        Err(why) => Check::warn(
            "palace tool cache",
            format!("{shown} is ignored: {why}"),
            format!("delete {shown}; pi rewrites it after the next handshake"),
        ),
        Ok(Some(cache::Cached { tools: cached, saved_at_ms, .. })) => {
            let how_old = format!("{} old", age(saved_at_ms));
            let names = |l: &[crate::mcp::ToolInfo]| {
                l.iter().map(|t| t.name.clone()).collect::<std::collections::BTreeSet<_>>()
            };
            match live {
                Some(live) if names(live) != names(&cached) || live != cached.as_slice() => Check::warn(
                    "palace tool cache",
                    format!("{} tools, {how_old}, stale: differs from the server's {} tools", cached.len(), live.len()),
                    format!("start pi once (it rewrites the cache after the handshake) or delete {shown}"),
                ),
                _ => Check::ok(
                    "palace tool cache",
                    format!(
                        "{} tools, {how_old}{}",
                        cached.len(),
                        if live.is_some() { ", matches the server" } else { "" }
                    ),
                ),
            }
        }
    }
}

/// Whether what is fed is redacted, and what the last feed replaced (counts per kind).
fn redaction_check(pal: &PalaceConfig) -> Check {
    let line = crate::palace::feed::redaction_line(pal);
    match crate::palace::feed::unredacted_warning(pal) {
        Some(why) => Check::warn(
            "feed redaction",
            format!("{line}; {why}"),
            "unset MEMPALACE_FEED_REDACT=off (and, for a remote palace, use the built-in exporter)",
        ),
        None => Check::ok("feed redaction", line),
    }
}

fn feed_check(pal: &PalaceConfig) -> Check {
    match SkipReason::of_config(pal) {
        Some(SkipReason::NoSshTarget) => {
            return Check::warn(
                "palace feed",
                "remote palace without MEMPALACE_PI_SSH_TARGET: transcripts are not fed",
                "set MEMPALACE_PI_SSH_TARGET to the palace host (user@host) or MEMPALACE_FEED=0",
            )
        }
        Some(SkipReason::PiMcpWrites) => {
            return Check::ok("palace feed", format!("off ({})", crate::doctor::feed::PI_MCP_WRITES))
        }
        Some(_) => return Check::ok("palace feed", "off (MEMPALACE_FEED=0)"),
        None => {}
    }
    let exporter = match crate::process_group::resolve_bin(&pal.feed_bin, pal.search_path.as_deref()) {
        Some(p) => format!("external exporter {}", p.display()),
        None => "built-in exporter".into(),
    };
    let outcome = match export::recorded(&pal.feed_dir()) {
        Some(export::Recorded { at_ms, sessions: Some(n) }) => {
            format!("last successful feed {} ago ({n} sessions recorded)", age(at_ms))
        }
        Some(export::Recorded { sessions: None, .. }) => {
            "state file unreadable (the next feed re-exports everything)".into()
        }
        None => "no feed recorded yet".into(),
    };
    let summary = format!("on, {exporter}, wing {}; {outcome}", crate::doctor::feed::wing_of(pal));
    match LastFeed::read(&pal.feed_dir()) {
        Some(LastFeed { at_ms, ran: Ran::Failed, detail, .. }) => Check::warn(
            "palace feed",
            format!("{summary}; the last feed ({} ago) failed: {detail}", age(at_ms)),
            "fix what the failure names, then `npx dotty-pi-ext feed` (or the next session end) feeds again",
        ),
        Some(LastFeed { at_ms, ran, reason, .. }) => {
            Check::ok("palace feed", format!("{summary}; the last feed ({reason}, {} ago): {ran}", age(at_ms)))
        }
        None => Check::ok("palace feed", summary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn fixture(extra: &[&str], agent: &std::path::Path) -> (PalaceConfig, McpConfig) {
        let server = concat!(env!("CARGO_MANIFEST_DIR"), "/__test__/fixtures/fault_mcp_server.py");
        let mut args = vec![server.to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let vars: std::collections::HashMap<String, String> = [
            ("MEMPALACE_MCP_BIN", "python3".to_string()),
            ("MEMPALACE_MCP_ARGS", args.join(" ")),
            ("PI_CODING_AGENT_DIR", agent.display().to_string()),
            ("MEMPALACE_MCP_INIT_TIMEOUT_MS", "1500".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let get = move |k: &str| vars.get(k).cloned();
        (PalaceConfig::from_lookup(&get).0, McpConfig::from_lookup(&get).0)
    }

    #[tokio::test]
    async fn healthy_then_stale_cache_then_stalled_and_nothing_written() {
        let d = tempfile::tempdir().unwrap();
        let (pal, mcp) = fixture(&[], d.path());
        let r = check(&pal, &mcp, Duration::from_secs(10)).await;
        assert!(r.iter().all(|c| c.status == Status::Ok), "{r:#?}");
        assert!(r[1].detail.contains("tools, server fault-fixture 1"), "{}", r[1].detail);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "doctor wrote into the agent dir");

        let key = cache::key(&mcp);
        let old = vec![crate::mcp::ToolInfo {
            name: "gone_tool".into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            annotations: None,
        }];
        cache::save(&pal.tools_cache_path(), &key, &old, &Default::default(), &crate::voice::Tool::names()).unwrap();
        let r = check(&pal, &mcp, Duration::from_secs(10)).await;
        let c = r.iter().find(|c| c.name == "palace tool cache").unwrap();
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.detail.contains("stale"));

        let (pal, mcp) = fixture(&["--slow-handshake", "60000"], d.path());
        let t0 = Instant::now();
        let r = check(&pal, &mcp, Duration::from_secs(10)).await;
        assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
        let c = r.iter().find(|c| c.name == "palace handshake").unwrap();
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.detail.contains("stalls"), "{}", c.detail);
    }

    #[tokio::test]
    async fn a_missing_server_names_the_cause_and_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let (pal, mut mcp) = fixture(&[], d.path());
        mcp.bin = "/nonexistent/mempalace-mcp".into();
        let r = check(&pal, &mcp, Duration::from_secs(10)).await;
        let c = r.iter().find(|c| c.name == "palace handshake").unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("cannot start MemPalace") && !c.detail.contains("reconnect"), "{}", c.detail);
        assert!(c.fix.as_deref().unwrap().contains("MEMPALACE_MCP_BIN"));
    }

    /// The advice follows the error's variant, also behind the client's give-up: a wrong token
    /// (401, latched at once) asks for the token, a server error (500, given up on) for the server.
    #[tokio::test]
    async fn a_remote_palace_gets_the_advice_of_its_error() {
        use tokio::io::AsyncBufReadExt;
        let d = tempfile::tempdir().unwrap();
        let handshake = |flags: &'static [&'static str], token: &'static str| {
            let agent = d.path().to_path_buf();
            async move {
                let server = concat!(env!("CARGO_MANIFEST_DIR"), "/__test__/fixtures/fault_mcp_server.py");
                let mut child = tokio::process::Command::new("python3")
                    .arg(server)
                    .arg("--http")
                    .args(flags)
                    .stdout(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .unwrap();
                let mut line = String::new();
                tokio::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).await.unwrap();
                let url = format!("http://127.0.0.1:{}/mcp", line.trim().trim_start_matches("PORT="));
                let vars: std::collections::HashMap<&str, String> = [
                    ("MEMPALACE_REMOTE_URL", url),
                    ("MEMPALACE_REMOTE_TOKEN", token.to_string()),
                    ("PI_CODING_AGENT_DIR", agent.display().to_string()),
                    ("MEMPALACE_MCP_INIT_TIMEOUT_MS", "3000".into()),
                ]
                .into_iter()
                .collect();
                let get = move |k: &str| vars.get(k).cloned();
                let (pal, mcp) = (PalaceConfig::from_lookup(&get).0, McpConfig::from_lookup(&get).0);
                let r = check(&pal, &mcp, Duration::from_secs(10)).await;
                r.into_iter().find(|c| c.name == "palace handshake").unwrap()
            }
        };
        let c = handshake(&["--token", "right"], "wrong").await;
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.detail.contains("unauthorized (HTTP 401)"), "{}", c.detail);
        assert!(c.fix.as_deref().unwrap().starts_with("set MEMPALACE_REMOTE_TOKEN to the token"), "{c:?}");
        let c = handshake(&["--status", "500"], "t").await;
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.detail.contains("MemPalace crashed: HTTP 500") && !c.detail.contains("gave up"), "{}", c.detail);
        assert!(c.fix.as_deref().unwrap().starts_with("start the shared palace"), "{c:?}");
    }

    #[test]
    fn the_last_feed_that_failed_is_a_warning_with_its_reason() {
        let d = tempfile::tempdir().unwrap();
        let (pal, _) = fixture(&[], d.path());
        assert_eq!(feed_check(&pal).status, Status::Ok);
        let write = |reason: &str, ran, detail: &str| {
            let last = LastFeed {
                at_ms: crate::palace::files::now_ms(),
                reason: reason.into(),
                ran,
                detail: detail.into(),
                redacted: Default::default(),
            };
            last.write(&pal.feed_dir()).unwrap();
        };
        write("quit", Ran::Failed, "mempalace_mine: Peer MCP writer active");
        let c = feed_check(&pal);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.detail.contains("failed: mempalace_mine: Peer MCP writer active"), "{}", c.detail);
        write("settled", Ran::Fed, "/x");
        let c = feed_check(&pal);
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail.contains("the last feed (settled,") && c.detail.ends_with(": fed"), "{}", c.detail);
        std::fs::write(crate::palace::feed::outcome_path(&pal.feed_dir()), "\"not an outcome\"").unwrap();
        assert_eq!(feed_check(&pal).status, Status::Ok);
    }
}
