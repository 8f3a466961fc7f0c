//! The MCP client against a fault-injecting server (`__test__/fixtures/fault_mcp_server.py`), over
//! stdio and Streamable HTTP. Timings go to stderr: `cargo test --no-default-features --test
//! mcp_fault -- --nocapture`.

#![allow(clippy::unwrap_used, reason = "a test: a panic is its failure report")]

use dotty_pi_ext::env::Secret;
use dotty_pi_ext::mcp::{CallResult, McpClient, McpConfig, McpError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("__test__/fixtures/fault_mcp_server.py").display().to_string()
}

fn stdio_cfg(flags: &[&str]) -> McpConfig {
    McpConfig {
        bin: "python3".into(),
        args: std::iter::once(fixture()).chain(flags.iter().map(|s| s.to_string())).collect(),
        timeout: Some(Duration::from_millis(3000)),
        init_timeout: Some(Duration::from_secs(15)),
        respawn_backoff: Duration::from_millis(50),
        kill_grace: Duration::from_secs(1),
        ..McpConfig::default()
    }
}

fn text(r: &CallResult) -> String {
    r.content.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect()
}

fn read_log(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn alive(pid: u32) -> bool {
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Waits (bounded) until `f` holds; polling is the only signal for another process's state.
async fn eventually(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn timing(what: &str, d: Duration) {
    eprintln!("TIMING {what}: {:.1} ms", d.as_secs_f64() * 1000.0);
}

// ---------------------------------------------------------------- stdio

/// A server whose `tools/list` pages on forever: the walk stops at a bound and keeps what came,
/// instead of holding up to 1000 pages of 4 MiB each (or failing the handshake).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_endless_tools_list_pages_are_bounded() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let c = McpClient::new(stdio_cfg(&["--endless-pages", "--log", log.path().to_str().unwrap()]));
    let tools = c.connect().await.unwrap();
    assert!((100..=1024).contains(&tools.len()), "{} tools kept", tools.len());
    assert_eq!(tools[0].name, "t0_0");
    let pages = read_log(log.path()).iter().filter(|m| m["method"] == "tools/list").count();
    assert!((2..=8).contains(&pages), "{pages} pages asked for");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_handshake_pages_tools_errors_and_env() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cfg = stdio_cfg(&["--pages", "--stderr-flood", "1000000", "--log", log.path().to_str().unwrap()]);
    cfg.child_env = vec![
        ("MEMPALACE_REMOTE_TOKEN".into(), "leak-me".into()),
        ("DOTTY_ADMIN_TOKEN".into(), "leak-me-too".into()),
        ("FIXTURE_MARK".into(), "seen".into()),
    ];
    cfg.remote_token = Some(Secret::new("leak-me"));
    cfg.remote_url = None;
    let c = McpClient::new(cfg);
    let t = Instant::now();
    // Concurrent callers share one handshake.
    let (a, b, d) = tokio::join!(c.connect(), c.connect(), c.connect());
    timing("fixture stdio handshake (3 concurrent connect)", t.elapsed());
    let tools = a.unwrap();
    assert_eq!(b.unwrap(), tools);
    assert_eq!(d.unwrap(), tools);
    assert_eq!(c.stats().spawns, 1);
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "big", "env", "sleep", "fail", "pid"], "both tools/list pages, in order");
    assert_eq!(
        tools[1].input_schema,
        json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]})
    );
    assert_eq!(tools[2].description, None);

    let r = c.call_tool("echo", json!({"text": "hi", "n": 1}), None).await.unwrap();
    assert_eq!(text(&r), r#"{"text": "hi", "n": 1}"#);
    assert!(!r.is_error);
    let e = c.call_tool("nope", json!({}), None).await.unwrap_err();
    assert_eq!(e.to_string(), "-32601 Unknown tool: nope");
    assert!(c.call_tool("fail", json!({}), None).await.unwrap().is_error);
    // The child never sees the bridge's token; it does see the rest of its environment.
    assert_eq!(text(&c.call_tool("env", json!({"name": "MEMPALACE_REMOTE_TOKEN"}), None).await.unwrap()), "null");
    assert_eq!(text(&c.call_tool("env", json!({"name": "DOTTY_ADMIN_TOKEN"}), None).await.unwrap()), "null");
    assert_eq!(text(&c.call_tool("env", json!({"name": "FIXTURE_MARK"}), None).await.unwrap()), "\"seen\"");
    assert_eq!(
        text(&c.call_tool("env", json!({"name": "HOME"}), None).await.unwrap()),
        serde_json::to_string(&std::env::var("HOME").ok()).unwrap()
    );
    assert_eq!(c.connect().await.unwrap().len(), 6, "connect is idempotent");
    assert_eq!(c.stats().spawns, 1);

    let entries = read_log(log.path());
    let methods: Vec<_> = entries.iter().map(|e| e["method"].as_str().unwrap_or("")).collect();
    assert_eq!(&methods[..4], ["initialize", "notifications/initialized", "tools/list", "tools/list"]);
    assert_eq!(entries[0]["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(entries[0]["params"]["clientInfo"]["name"], "dotty-pi-ext");
    assert_eq!(entries[3]["params"]["cursor"], "page2");
    assert!(!std::fs::read_to_string(format!("/proc/{}/cmdline", c.stats().child_pid.unwrap()))
        .unwrap()
        .contains("leak-me"));
    let pid = c.stats().child_pid.unwrap();
    let t = Instant::now();
    c.shutdown().await;
    timing("fixture stdio shutdown", t.elapsed());
    assert!(!alive(pid), "shutdown waits until the child is reaped");
    assert_eq!(c.call_tool("echo", json!({}), None).await.unwrap_err(), McpError::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_garbage_lines_are_skipped_and_3mb_reply_works() {
    let c = McpClient::new(stdio_cfg(&["--garbage"]));
    c.connect().await.unwrap();
    for i in 0..3 {
        assert_eq!(text(&c.call_tool("echo", json!({"i": i}), None).await.unwrap()), format!(r#"{{"i": {i}}}"#));
    }
    let t = Instant::now();
    let r = c.call_tool("big", json!({"bytes": 3_000_000}), None).await.unwrap();
    timing("fixture stdio 3 MB reply", t.elapsed());
    assert_eq!(text(&r).len(), 3_000_000);
    let big_arg = "y".repeat(3_000_000);
    assert_eq!(text(&c.call_tool("echo", json!({"s": big_arg}), None).await.unwrap()).len(), 3_000_000 + 9);
    assert_eq!(c.stats().spawns, 1);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_stalled_call_times_out_kills_child_rejects_others_and_respawns() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cfg = stdio_cfg(&["--log", log.path().to_str().unwrap()]);
    cfg.timeout = Some(Duration::from_millis(800));
    let c = McpClient::new(cfg);
    c.connect().await.unwrap();
    let pid = c.stats().child_pid.unwrap();
    let t = Instant::now();
    // The fixture answers in order: the echo queued behind the stalled sleep is pending too.
    let (stalled, queued) = tokio::join!(c.call_tool("sleep", json!({"ms": 30_000}), None), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.call_tool("echo", json!({}), None).await
    });
    let took = t.elapsed();
    timing("fixture stdio stall → timeout error", took);
    let e = stalled.unwrap_err();
    assert!(matches!(e, McpError::Timeout { ms: 800, .. }), "{e}");
    assert!(e.to_string().contains("timed out after 800 ms"));
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let q = queued.unwrap_err();
    assert!(matches!(q, McpError::Crashed(_)), "the other pending request is rejected too: {q}");
    eventually("the stalled child is killed", Duration::from_secs(5), || !alive(pid)).await;
    // (notifications/cancelled was queued too, but this single-threaded fixture, busy sleeping,
    // is killed before it reads it; the cancel and HTTP tests check that it arrives.)
    let t = Instant::now();
    let r = c.call_tool("pid", json!({}), None).await.unwrap();
    timing("fixture stdio respawn + call after stall-kill", t.elapsed());
    let new_pid: u32 = text(&r).parse().unwrap();
    assert_ne!(new_pid, pid);
    let s = c.stats();
    assert_eq!((s.spawns, s.respawns, s.timeouts), (2, 1, 1));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_crash_mid_call_then_respawn() {
    let c = McpClient::new(stdio_cfg(&["--die-after-calls", "1"]));
    assert!(c.call_tool("echo", json!({}), None).await.is_ok());
    let t = Instant::now();
    let e = c.call_tool("echo", json!({}), None).await.unwrap_err();
    timing("fixture stdio crash → error", t.elapsed());
    assert!(matches!(e, McpError::Crashed(_)), "{e}");
    assert!(e.to_string().contains("exit status: 3"), "{e}");
    assert!(e.to_string().contains("fixture: dying as asked"), "stderr tail quoted: {e}");
    let t = Instant::now();
    assert!(c.call_tool("echo", json!({}), None).await.is_ok(), "the next call respawns");
    timing("fixture stdio respawn after crash", t.elapsed());
    assert_eq!((c.stats().spawns, c.stats().respawns), (2, 1));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_sigkill_mid_call() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let c = McpClient::new(stdio_cfg(&["--log", log.path().to_str().unwrap()]));
    c.connect().await.unwrap();
    let pid = c.stats().child_pid.unwrap();
    let c2 = c.clone();
    let call = tokio::spawn(async move { c2.call_tool("sleep", json!({"ms": 20_000}), None).await });
    // The server has read the request (it logs what it reads): it may have acted on it, so the
    // call fails and is not retried. (Killed before it read it, the call is retried: see
    // stdio_call_right_after_sigkill_respawns_and_answers.)
    eventually("the server read the call", Duration::from_secs(5), || {
        read_log(log.path()).iter().any(|e| e["method"] == "tools/call")
    })
    .await;
    let t = Instant::now();
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let e = call.await.unwrap().unwrap_err();
    timing("fixture stdio SIGKILL mid-call → error", t.elapsed());
    assert!(e.to_string().contains("signal: 9"), "{e}");
    assert_eq!(c.stats().calls, 1, "not retried");
    let r = c.call_tool("pid", json!({}), None).await.unwrap();
    assert_ne!(text(&r).parse::<u32>().unwrap(), pid);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_budget_server_that_always_dies() {
    // The permanent latch (MEMPALACE_MCP_RETRY_MS=0): no try after the give-up.
    let c = McpClient::new(McpConfig { retry: None, ..stdio_cfg(&["--die-on-start"]) });
    let t = Instant::now();
    let e = c.connect().await.unwrap_err();
    timing("fixture stdio always-dying server → down (2 respawns, 50+100 ms backoff)", t.elapsed());
    assert!(matches!(e, McpError::Down { respawns: 2, .. }), "{e}");
    assert!(e.to_string().starts_with("MemPalace is down: gave up after 2 respawns"), "{e}");
    assert!(e.to_string().contains("refusing to start"), "{e}");
    let s = c.stats();
    assert_eq!((s.spawns, s.respawns, s.down), (3, 2, true));
    let t = Instant::now();
    let e2 = c.call_tool("echo", json!({}), None).await.unwrap_err();
    assert!(t.elapsed() < Duration::from_millis(20), "fails at once when down");
    assert_eq!(e2, e);
    assert_eq!(c.stats().spawns, 3);

    // MAX_RESPAWNS=0: fail-fast latch, one attempt.
    let mut cfg = stdio_cfg(&["--die-on-start"]);
    cfg.max_respawns = 0;
    let c = McpClient::new(cfg);
    assert!(matches!(c.connect().await.unwrap_err(), McpError::Down { respawns: 0, .. }));
    assert_eq!(c.stats().spawns, 1);

    // A command that doesn't exist: the same bounded respawn, then down.
    let c = McpClient::new(McpConfig { bin: "/nonexistent/mempalace-mcp".into(), ..stdio_cfg(&[]) });
    let e = c.call_tool("echo", json!({}), None).await.unwrap_err();
    assert!(e.to_string().contains("cannot start MemPalace: `/nonexistent/mempalace-mcp`"), "{e}");
    assert_eq!(c.stats().spawns, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_slow_handshake_call_waits_and_init_timeout() {
    let c = McpClient::new(stdio_cfg(&["--slow-handshake", "1200"]));
    let t = Instant::now();
    let (tools, call) = tokio::join!(c.connect(), c.call_tool("echo", json!({"x": 1}), None));
    timing("fixture stdio slow handshake (1200 ms) + waiting call", t.elapsed());
    assert_eq!(tools.unwrap().len(), 6);
    assert!(call.is_ok());
    assert_eq!(c.stats().spawns, 1);
    c.shutdown().await;

    let mut cfg = stdio_cfg(&["--slow-handshake", "5000"]);
    cfg.init_timeout = Some(Duration::from_millis(400));
    cfg.max_respawns = 1;
    let c = McpClient::new(cfg);
    let t = Instant::now();
    let e = c.connect().await.unwrap_err();
    timing("fixture stdio init timeout 400 ms ×2 attempts → down", t.elapsed());
    assert!(e.to_string().contains("timed out after 400 ms (initialize + tools/list)"), "{e}");
    assert_eq!((c.stats().spawns, c.stats().timeouts), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_cancel_sends_cancelled_and_keeps_the_server() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let c = McpClient::new(stdio_cfg(&["--log", log.path().to_str().unwrap()]));
    c.connect().await.unwrap();
    let pid = c.stats().child_pid;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let t = Instant::now();
    let (r, _) = tokio::join!(c.call_tool("sleep", json!({"ms": 1000}), Some(rx)), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        tx.send(()).unwrap();
    });
    assert_eq!(r.unwrap_err(), McpError::Cancelled);
    assert!(t.elapsed() < Duration::from_millis(600));
    // A dropped sender is not a cancellation.
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    drop(tx);
    assert!(c.call_tool("echo", json!({}), Some(rx)).await.is_ok());
    assert_eq!(c.stats().child_pid, pid, "a cancel does not restart the server");
    assert!(read_log(log.path())
        .iter()
        .any(|e| e["method"] == "notifications/cancelled" && e["params"]["reason"] == "cancelled by the caller"));
    c.shutdown().await;
}

// ---------------------------------------------------------------- HTTP

struct HttpFixture {
    _child: tokio::process::Child,
    url: String,
    log: tempfile::NamedTempFile,
}

async fn http_fixture(flags: &[&str]) -> HttpFixture {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = tokio::process::Command::new("python3")
        .arg(fixture())
        .arg("--http")
        .args(["--log", log.path().to_str().unwrap()])
        .args(flags)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).await.unwrap();
    let port = line.trim().strip_prefix("PORT=").unwrap_or_else(|| panic!("fixture said {line:?}"));
    HttpFixture { _child: child, url: format!("http://127.0.0.1:{port}/mcp"), log }
}

fn http_cfg(url: &str, token: Option<&str>) -> McpConfig {
    McpConfig { remote_url: Some(url.into()), remote_token: token.map(Secret::new), ..stdio_cfg(&[]) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_and_sse_with_token() {
    for sse in [false, true] {
        let f = http_fixture(if sse {
            &["--token", "tok-SECRET-1", "--sse", "--pages"]
        } else {
            &["--token", "tok-SECRET-1", "--pages"]
        })
        .await;
        let c = McpClient::new(http_cfg(&f.url, Some("tok-SECRET-1")));
        let t = Instant::now();
        assert_eq!(c.connect().await.unwrap().len(), 6);
        timing(&format!("fixture http handshake (sse={sse})"), t.elapsed());
        let t = Instant::now();
        let r = c.call_tool("echo", json!({"a": "b"}), None).await.unwrap();
        timing(&format!("fixture http echo round trip (sse={sse})"), t.elapsed());
        assert_eq!(text(&r), r#"{"a": "b"}"#);
        assert_eq!(c.call_tool("nope", json!({}), None).await.unwrap_err().to_string(), "-32601 Unknown tool: nope");
        assert_eq!(text(&c.call_tool("big", json!({"bytes": 3_000_000}), None).await.unwrap()).len(), 3_000_000);
        let t = Instant::now();
        let e = c.call_tool("big", json!({"bytes": 5 << 20}), None).await.unwrap_err();
        timing(&format!("fixture http 5 MiB reply → too large (sse={sse})"), t.elapsed());
        assert_eq!(e, McpError::TooLarge { cap: 4 << 20 }, "{e}");
        let log = read_log(f.log.path());
        assert!(log.iter().all(|e| e["auth"] == "Bearer tok-SECRET-1"));
        assert!(log
            .iter()
            .all(|e| e["accept"] == "application/json, text/event-stream" && e["ctype"] == "application/json"));
        assert_eq!(log[1]["method"], "notifications/initialized");
        assert_eq!(log[2]["proto"], "2025-06-18");
        assert_eq!(c.stats().spawns, 1);
        c.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_401_403_are_latched_and_never_show_the_token() {
    let f = http_fixture(&["--token", "right-token"]).await;
    for token in [Some("wrong-SECRET-token"), None] {
        let c = McpClient::new(http_cfg(&f.url, token));
        let e = c.connect().await.unwrap_err();
        assert_eq!(e, McpError::Unauthorized);
        assert_eq!(e.to_string(), "unauthorized (HTTP 401): MEMPALACE_REMOTE_TOKEN is missing or wrong");
        assert!(!format!("{e} {e:?} {:?}", c.config()).contains("SECRET"));
        let t = Instant::now();
        assert_eq!(c.call_tool("echo", json!({}), None).await.unwrap_err(), McpError::Unauthorized);
        assert!(t.elapsed() < Duration::from_millis(20));
        assert_eq!((c.stats().spawns, c.stats().down), (1, true));
    }
    let f = http_fixture(&["--status", "403"]).await;
    let c = McpClient::new(http_cfg(&f.url, Some("x")));
    assert_eq!(c.connect().await.unwrap_err(), McpError::Forbidden);
    assert_eq!(c.stats().spawns, 1);
}

/// A shared palace whose owner stops it and starts it again on the same port: the client gives
/// up, says when it tries again, fails calls at once until then, and is back on its own (the
/// background try, no call needed; the health check first, without the token) with its budget
/// reset. While the server stays away each try waits twice as long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_a_palace_that_went_away_is_tried_again_and_picked_up_on_its_own() {
    let f = http_fixture(&["--token", "tok-SECRET-2"]).await;
    let port = f.url.rsplit(':').next().unwrap().trim_end_matches("/mcp").to_string();
    let retry = Duration::from_millis(300);
    let cfg = McpConfig { max_respawns: 1, retry: Some(retry), ..http_cfg(&f.url, Some("tok-SECRET-2")) };
    let c = McpClient::new(cfg);
    c.connect().await.unwrap();
    let HttpFixture { _child: mut child, log, .. } = f;
    child.kill().await.unwrap();

    let e = c.call_tool("echo", json!({}), None).await.unwrap_err();
    let e = match e {
        McpError::Down { .. } => e,
        _ => c.call_tool("echo", json!({}), None).await.unwrap_err(),
    };
    assert!(matches!(e, McpError::Down { retry_in: Some(_), .. }), "{e}");
    assert!(e.to_string().contains("; next try in 1 s, or `/mempalace reconnect` now"), "{e}");
    let s = c.stats();
    assert!(s.down && s.next_try.is_some_and(|d| d <= retry), "{s:?}");
    let t = Instant::now();
    assert!(matches!(c.call_tool("echo", json!({}), None).await, Err(McpError::Down { .. })));
    assert!(t.elapsed() < Duration::from_millis(20), "fails at once before the next try");

    // Nobody there: the background tries fail and the wait doubles (300 ms, 600 ms, …).
    eventually("a doubled wait", Duration::from_secs(5), || c.stats().next_try.is_some_and(|d| d > retry)).await;
    assert!(c.stats().down);

    let back = http_fixture(&["--token", "tok-SECRET-2", "--port", &port]).await;
    eventually("back without a call", Duration::from_secs(10), || c.stats().connected).await;
    let s = c.stats();
    assert_eq!((s.down, s.next_try, s.handshakes), (false, None, 2), "{s:?}");
    assert_eq!(text(&c.call_tool("echo", json!({"k": 2}), None).await.unwrap()), r#"{"k": 2}"#);
    let seen = read_log(back.log.path());
    let probes: Vec<&Value> = seen.iter().filter(|m| m.get("get").is_some()).collect();
    assert!(!probes.is_empty() && probes.iter().all(|m| m["get"] == "/healthz" && m["auth"].is_null()), "{seen:?}");
    assert!(seen.iter().any(|m| m["method"] == "initialize"), "{seen:?}");
    drop(log);
    c.shutdown().await;
}

/// The same client with MEMPALACE_MCP_RETRY_MS=0 stays down: no try, no health check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_retry_off_is_the_permanent_latch() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let cfg = McpConfig { max_respawns: 0, retry: None, ..http_cfg(&url, None) };
    let c = McpClient::new(cfg);
    let e = c.connect().await.unwrap_err();
    assert!(matches!(e, McpError::Down { retry_in: None, .. }), "{e}");
    assert!(e.to_string().ends_with("`/mempalace reconnect` or a restart of pi tries again"), "{e}");
    let back = http_fixture(&["--port", &port.to_string()]).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // nothing to wait for: nothing may happen
    assert!(matches!(c.call_tool("echo", json!({}), None).await, Err(McpError::Down { .. })));
    assert_eq!((c.stats().next_try, c.stats().spawns), (None, 1));
    assert!(read_log(back.log.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_500_and_refused_count_as_crashes() {
    let f = http_fixture(&["--status", "500"]).await;
    let mut cfg = http_cfg(&f.url, None);
    cfg.max_respawns = 1;
    let c = McpClient::new(cfg);
    let e = c.connect().await.unwrap_err();
    assert!(e.to_string().contains("gave up after 1 respawns") && e.to_string().contains("HTTP 500"), "{e}");
    assert_eq!(c.stats().spawns, 2);

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let c = McpClient::new(http_cfg(&format!("http://127.0.0.1:{port}/mcp"), Some("SECRET-x")));
    let e = c.call_tool("echo", json!({}), None).await.unwrap_err();
    assert!(e.to_string().contains("cannot reach http://127.0.0.1"), "{e}");
    assert!(!e.to_string().contains("SECRET"));
    assert_eq!((c.stats().spawns, c.stats().respawns), (3, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_session_ids_and_expired_session() {
    let f = http_fixture(&["--session", "--expire-session-after", "2"]).await;
    let c = McpClient::new(http_cfg(&f.url, None));
    c.connect().await.unwrap();
    // Session requests: initialized (1), tools/list (2); the call (3) gets 404 → re-initialize once.
    let t = Instant::now();
    assert!(c.call_tool("echo", json!({"k": 1}), None).await.is_ok());
    timing("fixture http expired session → re-initialize + retry", t.elapsed());
    let log = read_log(f.log.path());
    let inits: Vec<_> = log.iter().filter(|e| e["method"] == "initialize").collect();
    assert_eq!(inits.len(), 2, "{log:?}");
    assert!(log.iter().filter(|e| e["method"] != "initialize").all(|e| e["session"].is_string()));
    let sessions: std::collections::HashSet<_> = log.iter().filter_map(|e| e["session"].as_str()).collect();
    assert_eq!(sessions.len(), 2);
    assert_eq!(c.stats().spawns, 1, "a re-initialized session is not a respawn");
    c.shutdown().await;
    assert!(read_log(f.log.path()).iter().any(|e| e["delete"].is_string()), "shutdown DELETEs the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_stalled_call_times_out_and_next_call_reconnects() {
    let f = http_fixture(&[]).await;
    let mut cfg = http_cfg(&f.url, None);
    cfg.timeout = Some(Duration::from_millis(800));
    let c = McpClient::new(cfg);
    c.connect().await.unwrap();
    let t = Instant::now();
    let e = c.call_tool("sleep", json!({"ms": 20_000}), None).await.unwrap_err();
    timing("fixture http stall → timeout error", t.elapsed());
    assert!(matches!(e, McpError::Timeout { ms: 800, .. }), "{e}");
    eventually("notifications/cancelled is posted", Duration::from_secs(5), || {
        read_log(f.log.path()).iter().any(|e| e["method"] == "notifications/cancelled")
    })
    .await;
    let t = Instant::now();
    assert!(c.call_tool("echo", json!({}), None).await.is_ok());
    timing("fixture http reconnect + call after stall", t.elapsed());
    let s = c.stats();
    assert_eq!((s.spawns, s.respawns, s.timeouts), (2, 1, 1));
    let _: Arc<McpClient> = c;
}

// ---------------------------------------------------------------- trust and limits

fn wrapper() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("__test__/fixtures/wrapped_mcp_server.sh").display().to_string()
}

/// Processes of group `pgid` still running (zombies hold nothing), from /proc.
fn live_in_group(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            let f: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
            f[0] != "Z" && f[2].parse::<u32>() == Ok(pgid)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_oversized_lines_fail_their_request_at_once_and_the_server_lives() {
    // The id first (as most servers write it) or last: either way the request is found.
    for flags in [&[][..], &["--id-last"][..]] {
        // A long timeout: the call must fail because of its size, long before it.
        let c = McpClient::new(McpConfig { timeout: Some(Duration::from_secs(30)), ..stdio_cfg(flags) });
        c.connect().await.unwrap();
        for mib in [16usize, 32] {
            let t = Instant::now();
            let e = c.call_tool("big", json!({"bytes": mib << 20}), None).await.unwrap_err();
            timing(&format!("fixture stdio {mib} MiB line {flags:?} → too large"), t.elapsed());
            assert_eq!(e, McpError::TooLarge { cap: 4 << 20 });
            assert!(e.to_string().contains("reply larger than 4 MiB"), "{e}");
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "failed at once, not at the 30 s timeout: {:?}",
                t.elapsed()
            );
        }
        assert_eq!(text(&c.call_tool("echo", json!({"after": 1}), None).await.unwrap()), r#"{"after": 1}"#);
        assert_eq!(c.stats().spawns, 1, "the server lives on");
        c.shutdown().await;
    }
    // MEMPALACE_MCP_MAX_MESSAGE_BYTES moves the cap.
    let c = McpClient::new(McpConfig { max_message_bytes: 1 << 20, ..stdio_cfg(&[]) });
    assert_eq!(
        c.call_tool("big", json!({"bytes": 2_000_000}), None).await.unwrap_err(),
        McpError::TooLarge { cap: 1 << 20 }
    );
    assert_eq!(text(&c.call_tool("big", json!({"bytes": 900_000}), None).await.unwrap()).len(), 900_000);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_ping_flood_is_killed_and_counted_against_the_budget() {
    let mut cfg = stdio_cfg(&["--ping-flood"]);
    cfg.max_respawns = 1;
    let c = McpClient::new(cfg);
    let t = Instant::now();
    let e = c.connect().await.unwrap_err();
    timing("fixture stdio ping flood → killed twice → down", t.elapsed());
    assert!(matches!(e, McpError::Down { respawns: 1, .. }), "{e}");
    assert!(e.to_string().contains("more than 64 unanswered"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3), "killed, not left to the init timeout: {:?}", t.elapsed());
    assert_eq!((c.stats().spawns, c.stats().down), (2, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_wrapper_script_is_killed_as_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("palace.lock");
    let mut cfg =
        McpConfig { bin: wrapper(), args: vec!["--lock-file".into(), lock.display().to_string()], ..stdio_cfg(&[]) };
    cfg.timeout = Some(Duration::from_millis(800));
    let c = McpClient::new(cfg);
    c.connect().await.unwrap();
    let leader = c.stats().child_pid.unwrap();
    let server: u32 = text(&c.call_tool("pid", json!({}), None).await.unwrap()).parse().unwrap();
    assert_ne!(server, leader, "the server is the wrapper's child");
    let mut group = live_in_group(leader);
    group.sort();
    assert_eq!(group, {
        let mut g = vec![leader, server];
        g.sort();
        g
    });
    let e = c.call_tool("sleep", json!({"ms": 30_000}), None).await.unwrap_err();
    assert!(matches!(e, McpError::Timeout { .. }), "{e}");
    // The next server takes the palace lock: it starts only once the old one is gone.
    let t = Instant::now();
    let next: u32 = text(&c.call_tool("pid", json!({}), None).await.unwrap()).parse().unwrap();
    timing("fixture stdio wrapped stall → group killed → respawn", t.elapsed());
    assert_ne!(next, server);
    assert_eq!(live_in_group(leader), Vec::<u32>::new(), "nothing of the old group is left");
    let leader2 = c.stats().child_pid.unwrap();
    c.shutdown().await;
    assert_eq!(live_in_group(leader2), Vec::<u32>::new(), "shutdown kills the whole group too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_call_right_after_sigkill_respawns_and_answers() {
    let c = McpClient::new(stdio_cfg(&[]));
    c.connect().await.unwrap();
    let mut took = Vec::new();
    for i in 0..20 {
        let pid = c.stats().child_pid.unwrap();
        // SAFETY: kill(2) takes two integers and touches no memory of ours.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        let t = Instant::now();
        let r = c.call_tool("pid", json!({}), None).await;
        took.push(t.elapsed());
        let got: u32 = text(&r.unwrap_or_else(|e| panic!("round {i}: {e}"))).parse().unwrap();
        assert_ne!(got, pid);
    }
    timing("fixture stdio SIGKILL → call (slowest of 20)", *took.iter().max().unwrap());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_redirects_are_not_followed() {
    let other = http_fixture(&[]).await;
    let port = other.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").to_string();
    let target = format!("http://mallory:loc-PASSWORD@127.0.0.1:{port}/mcp");
    let redirecting = http_fixture(&["--redirect-to", &target]).await;
    let mut cfg = http_cfg(&redirecting.url, Some("bearer-SECRET"));
    cfg.max_respawns = 0;
    let c = McpClient::new(cfg);
    let e = c.connect().await.unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(text.contains("HTTP 307, a redirect to http://127.0.0.1:"), "{text}");
    assert!(!text.contains("loc-PASSWORD") && !text.contains("mallory") && !text.contains("bearer-SECRET"), "{text}");
    assert_eq!(read_log(redirecting.log.path())[0]["auth"], "Bearer bearer-SECRET");
    assert!(read_log(other.log.path()).is_empty(), "nothing reached the other origin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_url_credentials_are_never_shown() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cfg = http_cfg(&format!("http://alice:pw-SECRET-9@127.0.0.1:{port}/mcp"), None);
    cfg.max_respawns = 0;
    let c = McpClient::new(cfg);
    let e = c.call_tool("echo", json!({}), None).await.unwrap_err();
    let text = format!("{e} {e:?} {:?} {}", c.config(), c.config().target());
    assert!(text.contains("cannot reach http://127.0.0.1:"), "{text}");
    assert!(!text.contains("pw-SECRET-9") && !text.contains("alice"), "{text}");
    // The credentials still work as basic auth where the server wants them.
    let f = http_fixture(&[]).await;
    let url = f.url.replace("http://", "http://alice:pw-SECRET-9@");
    let c = McpClient::new(http_cfg(&url, None));
    c.connect().await.unwrap();
    assert!(read_log(f.log.path())[0]["auth"].as_str().unwrap().starts_with("Basic "));
    c.shutdown().await;
}

#[test]
fn fixture_path_exists() {
    assert!(PathBuf::from(fixture()).exists());
}
