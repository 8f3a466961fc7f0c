//! The palace: transport, a handshake of its own (the MCP client directly, never the bridge, so
//! the tool cache is not written), its time and tool count, the tool cache's age and whether it
//! matches the live list, and the feed's state.
//!
//! Bounded: the handshake gets the configured init timeout, capped at `cap`.

use super::Check;
use crate::mcp::{McpClient, McpConfig, McpError};
use crate::palace::{cache, PalaceConfig};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
            let admitted = crate::palace::tools::admit(tools);
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
            // The client gives up at once (no respawns here): say the cause, not the give-up.
            let why = match &e {
                McpError::Down { last, .. } => last.clone(),
                other => other.to_string(),
            };
            if matches!(e, McpError::Timeout { .. }) || why.contains("timed out") {
                out.push(stalled(limit));
            } else {
                let fix = match &mcp.remote_url {
                    Some(_) if why.contains("401") => "set MEMPALACE_REMOTE_TOKEN to the token the shared palace was started with",
                    Some(_) => "start the shared palace (mempalace serve) and check MEMPALACE_REMOTE_URL and MEMPALACE_REMOTE_TOKEN",
                    None => "install MemPalace so MEMPALACE_MCP_BIN runs (or set it and MEMPALACE_MCP_ARGS), or set MEMPALACE_BRIDGE=0",
                };
                out.push(Check::fail("palace handshake", format!("failed after {ms} ms: {why}"), fix));
            }
            None
        }
    };
    client.shutdown().await;
    out.push(cache_check(pal, mcp, live.as_deref()));
    out.push(feed_check(pal));
    out
}

fn stalled(limit: Duration) -> Check {
    Check::fail(
        "palace handshake",
        format!("no answer within {} ms: the palace stalls", limit.as_millis()),
        "restart the MemPalace server (a stuck server or a lock held by another writer); run with MEMPALACE_EXT_DEBUG=1 to see its stderr",
    )
}

fn age(ms: u64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let s = now.saturating_sub(ms) / 1000;
    match s {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

fn cache_check(pal: &PalaceConfig, mcp: &McpConfig, live: Option<&[crate::mcp::ToolInfo]>) -> Check {
    let path = pal.tools_cache_path();
    let key = match &mcp.remote_url {
        Some(u) => cache::key_for_url(u),
        None => cache::key_for_command(&mcp.bin, &mcp.args),
    };
    let shown = path.display();
    let saved = std::fs::read(&path)
        .ok()
        .filter(|b| b.len() as u64 <= cache::MAX_CACHE_BYTES)
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("savedAtMs").and_then(serde_json::Value::as_u64));
    match cache::load(&path, &key) {
        Ok(None) => Check::ok(
            "palace tool cache",
            format!("none for this server at {shown} (pi writes it after its first handshake)"),
        ),
        Err(why) => Check::warn(
            "palace tool cache",
            format!("{shown} is ignored: {why}"),
            format!("delete {shown}; pi rewrites it after the next handshake"),
        ),
        Ok(Some(cached)) => {
            let age = saved.map_or("unknown age".into(), |ms| format!("{} old", age(ms)));
            let names = |l: &[crate::mcp::ToolInfo]| {
                l.iter().map(|t| t.name.clone()).collect::<std::collections::BTreeSet<_>>()
            };
            match live {
                Some(live) if names(live) != names(&cached) || live != cached.as_slice() => Check::warn(
                    "palace tool cache",
                    format!("{} tools, {age}, stale: differs from the server's {} tools", cached.len(), live.len()),
                    format!("start pi once (it rewrites the cache after the handshake) or delete {shown}"),
                ),
                _ => Check::ok(
                    "palace tool cache",
                    format!(
                        "{} tools, {age}{}",
                        cached.len(),
                        if live.is_some() { ", matches the server" } else { "" }
                    ),
                ),
            }
        }
    }
}

fn feed_check(pal: &PalaceConfig) -> Check {
    if !pal.feed {
        return Check::ok("palace feed", "off (MEMPALACE_FEED=0)");
    }
    if pal.remote && pal.ssh_target.is_none() {
        return Check::warn(
            "palace feed",
            "remote palace without MEMPALACE_PI_SSH_TARGET: transcripts are not fed",
            "set MEMPALACE_PI_SSH_TARGET to the palace host (user@host) or MEMPALACE_FEED=0",
        );
    }
    let exporter = match crate::palace::process::resolve_bin(&pal.feed_bin, pal.search_path.as_deref()) {
        Some(p) => format!("external exporter {}", p.display()),
        None => "built-in exporter".into(),
    };
    let state = pal.feed_dir().join("state.json");
    let last = std::fs::metadata(&state)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
    let sessions = std::fs::read(&state)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("sessions").and_then(|s| s.as_object()).map(|s| s.len()));
    let outcome = match (last, sessions) {
        (Some(ms), Some(n)) => format!("last successful feed {} ago ({n} sessions recorded)", age(ms)),
        (Some(_), None) => "state file unreadable (the next feed re-exports everything)".into(),
        _ => "no feed recorded yet".into(),
    };
    let summary = format!("on, {exporter}, wing {}; {outcome}", pal.feed_wing);
    match last_outcome(pal) {
        Some(Last { at_ms, outcome, detail, .. }) if outcome == "failed" => Check::warn(
            "palace feed",
            format!("{summary}; the last feed ({} ago) failed: {detail}", age(at_ms)),
            "fix what the failure names, then `npx dotty-pi-ext feed` (or the next session end) feeds again",
        ),
        Some(Last { at_ms, outcome, reason, .. }) => {
            Check::ok("palace feed", format!("{summary}; the last feed ({reason}, {} ago): {outcome}", age(at_ms)))
        }
        None => Check::ok("palace feed", summary),
    }
}

/// The last feed that ran, in a few words (for `/mempalace status`).
pub(crate) fn last_feed_line(pal: &PalaceConfig) -> String {
    match last_outcome(pal) {
        None => "none recorded".into(),
        Some(Last { at_ms, outcome, reason, detail }) if detail.is_empty() => {
            format!("{outcome} ({reason}, {} ago)", age(at_ms))
        }
        Some(Last { at_ms, outcome, reason, detail }) => format!("{outcome} ({reason}, {} ago): {detail}", age(at_ms)),
    }
}

/// What `<agentDir>/mempalace-feed/last-outcome.json` says of the last feed that ran.
struct Last {
    at_ms: u64,
    reason: String,
    outcome: String,
    detail: String,
}

fn last_outcome(pal: &PalaceConfig) -> Option<Last> {
    let path = pal.feed_dir().join(crate::palace::feed::LAST_OUTCOME_FILE);
    // A small file of ours; anything else (huge, not JSON) is treated as absent.
    if std::fs::metadata(&path).ok()?.len() > 64 * 1024 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(|x| crate::text::first_chars(x, 300).to_string());
    Some(Last {
        at_ms: v.get("atMs")?.as_u64()?,
        reason: s("reason")?,
        outcome: s("outcome")?,
        detail: s("detail").unwrap_or_default(),
    })
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

        let key = cache::key_for_command(&mcp.bin, &mcp.args);
        let old = vec![crate::mcp::ToolInfo {
            name: "gone_tool".into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
        }];
        cache::save(&pal.tools_cache_path(), &key, &old).unwrap();
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

    #[test]
    fn the_last_feed_that_failed_is_a_warning_with_its_reason() {
        let d = tempfile::tempdir().unwrap();
        let (pal, _) = fixture(&[], d.path());
        assert_eq!(feed_check(&pal).status, Status::Ok);
        let write = |v: serde_json::Value| {
            std::fs::create_dir_all(pal.feed_dir()).unwrap();
            std::fs::write(pal.feed_dir().join(crate::palace::feed::LAST_OUTCOME_FILE), v.to_string()).unwrap();
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        write(
            serde_json::json!({"atMs": now, "reason": "quit", "outcome": "failed", "detail": "mempalace_mine: Peer MCP writer active"}),
        );
        let c = feed_check(&pal);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.detail.contains("failed: mempalace_mine: Peer MCP writer active"), "{}", c.detail);
        write(serde_json::json!({"atMs": now, "reason": "settled", "outcome": "fed", "detail": "/x"}));
        let c = feed_check(&pal);
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail.contains("the last feed (settled,") && c.detail.ends_with(": fed"), "{}", c.detail);
        write(serde_json::json!("not an outcome"));
        assert_eq!(feed_check(&pal).status, Status::Ok);
    }
}
