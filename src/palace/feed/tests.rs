//! The feed's tests: triggers, coalescing, debounce, the lock between processes, the built-in and
//! external exporters, remote feeding, bounds, and what is written.

use super::lock::FeedLock;
use super::outcome;
use super::*;
use serde_json::json;
use serde_json::Value;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use test_support::{session_jsonl, write_session, Behaviour, FakeCaller};
use tokio::sync::Semaphore;

const MINED: &str = r#"{"success": true, "mode": "convos", "dry_run": false, "output": "Drawers filed: 1"}"#;

fn config(agent: &Path, extra: &[(&str, &str)]) -> PalaceConfig {
    let mut map: HashMap<String, String> = HashMap::from([
        ("PI_CODING_AGENT_DIR".to_string(), agent.display().to_string()),
        // Never pick up a real exporter from the host.
        ("MEMPALACE_FEED_BIN".to_string(), "/nonexistent/mempalace-pi-session".to_string()),
        ("PATH".to_string(), "/nonexistent".to_string()),
    ]);
    for (k, v) in extra {
        map.insert(k.to_string(), v.to_string());
    }
    let (cfg, warnings) = PalaceConfig::from_lookup(&move |k: &str| map.get(k).cloned());
    assert!(warnings.is_empty(), "{warnings:?}");
    cfg
}

fn good() -> String {
    session_jsonl(&[("user", "hello there"), ("assistant", "hi, how can I help?")])
}

/// The stderr text of a failed outcome.
fn failed_text(o: FeedOutcome) -> Option<String> {
    match o {
        FeedOutcome::Failed(e) => Some(e.to_string()),
        _ => None,
    }
}

fn feeder(cfg: PalaceConfig, caller: &Arc<FakeCaller>) -> Feeder {
    Feeder::new(cfg, caller.clone() as Arc<dyn PalaceCaller>)
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[tokio::test]
async fn builtin_feed_mines_the_staging_folder_once() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let f = feeder(
        config(agent.path(), &[("MEMPALACE_FEED_WING", "wing_test"), ("MEMPALACE_FEED_MINE_TIMEOUT_MS", "4321")]),
        &caller,
    );

    let staging = agent.path().join("mempalace-feed/staging");
    assert_eq!(
        f.shutdown("quit").await,
        FeedOutcome::Fed { source: staging.display().to_string(), output: MINED.into(), redacted: Default::default() }
    );
    let calls = caller.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool, "mempalace_mine");
    assert_eq!(calls[0].args, json!({"source": staging.display().to_string(), "mode": "convos", "wing": "wing_test"}));
    assert_eq!(calls[0].timeout, Some(Duration::from_millis(4321)));
    assert!(staging.join("--work-project--/s1.jsonl").is_file());

    // Nothing changed: no second mine.
    assert_eq!(f.shutdown("new").await, FeedOutcome::NothingToFeed);
    assert_eq!(caller.calls().len(), 1);
    assert!(!f.is_feeding());
}

#[tokio::test]
async fn project_scope_files_each_session_into_its_project_s_wing() {
    let agent = tempfile::tempdir().unwrap();
    let session_of = |cwd: &str| good().replacen("/work/project", cwd, 1);
    write_session(agent.path(), "alpha", &session_of("/home/u/dev/alpha-app"));
    write_session(agent.path(), "beta", &session_of("/home/u/Beta Service"));
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let cfg = config(agent.path(), &[("MEMPALACE_SCOPE", "project")]);
    // This pi runs in alpha-app, whose trusted project file named another wing.
    let wing = Arc::new(crate::palace::scope::SessionWing::default());
    wing.set(crate::palace::scope::Wing {
        name: "alpha_shared".into(),
        chosen: crate::palace::scope::Chosen::ProjectFile,
        cwd: Some("/home/u/dev/alpha-app".into()),
        note: None,
    });
    let f = Feeder::for_wing(cfg, caller.clone() as Arc<dyn PalaceCaller>, wing);
    assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }));
    let staging = agent.path().join("mempalace-feed/staging");
    let mined: Vec<Value> = caller.calls().into_iter().map(|c| c.args).collect();
    let mine = |wing: &str| json!({"source": staging.join(wing).display().to_string(), "mode": "convos", "wing": wing});
    assert_eq!(mined, [mine("alpha_shared"), mine("beta_service")]);
    assert!(staging.join("alpha_shared/--work-project--/alpha.jsonl").is_file());
    assert!(staging.join("beta_service/--work-project--/beta.jsonl").is_file());
    assert_eq!(f.shutdown("new").await, FeedOutcome::NothingToFeed);
}

#[tokio::test]
async fn a_failed_mine_is_retried_by_the_next_trigger() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(r#"{"success": false, "error": "mine already running"}"#.into()));
    let f = feeder(config(agent.path(), &[]), &caller);
    assert_eq!(failed_text(f.shutdown("quit").await).as_deref(), Some("mempalace_mine: mine already running"));
    caller.set("mempalace_mine", Behaviour::Fail("Peer MCP writer active".into()));
    assert_eq!(failed_text(f.shutdown("quit").await).as_deref(), Some("mempalace_mine: Peer MCP writer active"));
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let last = || -> Value {
        serde_json::from_slice(&std::fs::read(outcome::path(&agent.path().join("mempalace-feed"))).unwrap()).unwrap()
    };
    assert_eq!(
        (last()["outcome"].clone(), last()["detail"].clone()),
        (json!("failed"), json!("mempalace_mine: Peer MCP writer active"))
    );
    assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }));
    assert_eq!(last()["outcome"], "fed");
    assert_eq!(f.shutdown("quit").await, FeedOutcome::NothingToFeed);
    assert_eq!((last()["outcome"].clone(), last()["reason"].clone()), (json!("nothing"), json!("quit")));
    assert_eq!(caller.calls_to("mempalace_mine").len(), 3);
}

#[tokio::test]
async fn disabled_or_remote_without_target_does_nothing() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    for off in [("MEMPALACE_FEED", "0"), ("MEMPALACE_BRIDGE", "0")] {
        let f = feeder(config(agent.path(), &[off]), &caller);
        assert_eq!(f.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::Disabled));
        assert_eq!(f.settled().await, FeedOutcome::Skipped(SkipReason::Disabled));
    }
    let f = feeder(config(agent.path(), &[("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp")]), &caller);
    assert_eq!(f.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::NoSshTarget));
    assert!(caller.calls().is_empty());
    assert!(!agent.path().join("mempalace-feed").exists(), "nothing staged");
}

#[tokio::test]
async fn remote_feed_rsyncs_then_mines_the_remote_path() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("rsync.args");
    script(bin.path(), "rsync", &format!("for a in \"$@\"; do echo \"$a\"; done > '{}'", log.display()));
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let cfg = config(
        agent.path(),
        &[
            ("MEMPALACE_REMOTE_URL", "http://172.17.0.1:8765/mcp"),
            ("MEMPALACE_PI_SSH_TARGET", "me@palace-host"),
            ("MEMPALACE_PI_SSH_CONFIG", "/etc/ssh/pi_config"),
            ("PATH", &bin.path().display().to_string()),
        ],
    );
    let f = feeder(cfg, &caller);
    assert!(
        matches!(f.shutdown("quit").await, FeedOutcome::Fed { ref source, .. } if source == "~/.mempalace/inbox/pi-sessions")
    );
    let args: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect();
    assert_eq!(args[2], "ssh -o BatchMode=yes -F '/etc/ssh/pi_config'");
    assert_eq!(args[4], format!("{}/", agent.path().join("mempalace-feed/staging").display()));
    assert_eq!(args[5], "me@palace-host:.mempalace/inbox/pi-sessions/");
    assert_eq!(caller.calls()[0].args["source"], "~/.mempalace/inbox/pi-sessions");

    // A failing rsync fails the feed without mining.
    write_session(agent.path(), "s2", &good());
    script(bin.path(), "rsync", "echo 'ssh: connect to host palace-host port 22: Connection refused' >&2; exit 255");
    let out = f.shutdown("quit").await;
    assert!(matches!(&out, FeedOutcome::Failed(e) if e.to_string().contains("Connection refused")), "{out:?}");
    assert_eq!(caller.calls().len(), 1);
}

#[tokio::test]
async fn external_exporter_is_preferred_when_on_path() {
    let agent = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let args = bin.path().join("args");
    script(
        bin.path(),
        "mempalace-pi-session",
        &format!("echo \"$@\" > '{}'\necho MINE_SOURCE=/srv/export", args.display()),
    );
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let cfg = config(
        agent.path(),
        &[("MEMPALACE_FEED_BIN", "mempalace-pi-session"), ("PATH", &bin.path().display().to_string())],
    );
    let f = feeder(cfg, &caller);
    assert_eq!(
        f.shutdown("fork").await,
        FeedOutcome::Fed { source: "/srv/export".into(), output: MINED.into(), redacted: Default::default() }
    );
    assert_eq!(std::fs::read_to_string(&args).unwrap().trim(), "--prepare --reason fork --wing wing_conversations");
    assert_eq!(
        caller.calls()[0].args,
        json!({"source": "/srv/export", "mode": "convos", "wing": "wing_conversations"})
    );
}

#[tokio::test]
async fn a_feed_is_bounded_by_prepare_plus_mine_timeouts() {
    let agent = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let hang = script(bin.path(), "hang", "exec sleep 30");
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Hang);
    let cfg = config(
        agent.path(),
        &[
            ("MEMPALACE_FEED_BIN", hang.to_str().unwrap()),
            ("MEMPALACE_FEED_PREPARE_TIMEOUT_MS", "200"),
            ("MEMPALACE_FEED_MINE_TIMEOUT_MS", "200"),
        ],
    );
    let t0 = Instant::now();
    let out = feeder(cfg, &caller).shutdown("quit").await;
    assert!(matches!(&out, FeedOutcome::Failed(e) if e.to_string().contains("timed out")), "{out:?}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(caller.calls().is_empty());

    // The mine hangs: cut at the mine timeout.
    write_session(agent.path(), "s1", &good());
    let cfg = config(agent.path(), &[("MEMPALACE_FEED_MINE_TIMEOUT_MS", "200")]);
    let t0 = Instant::now();
    let out = feeder(cfg, &caller).shutdown("quit").await;
    let took = t0.elapsed();
    assert!(matches!(&out, FeedOutcome::Failed(e) if e.to_string().contains("timed out")), "{out:?}");
    assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn the_second_process_loses_the_lock_quietly() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let gate = Arc::new(Semaphore::new(0));
    let caller_a = Arc::new(FakeCaller::new());
    caller_a.set("mempalace_mine", Behaviour::Gated(gate.clone(), MINED.into()));
    let caller_b = Arc::new(FakeCaller::new());
    caller_b.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let a = feeder(config(agent.path(), &[]), &caller_a);
    let b = feeder(config(agent.path(), &[]), &caller_b);

    let running = tokio::spawn({
        let a = a.clone();
        async move { a.shutdown("quit").await }
    });
    caller_a.called.notified().await; // A holds the lock and is mining.
    assert_eq!(b.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::Locked));
    assert!(caller_b.calls().is_empty());
    gate.add_permits(1);
    assert!(matches!(running.await.unwrap(), FeedOutcome::Fed { .. }));
    // Released: B can feed now (nothing new, but it got the lock).
    assert_eq!(b.shutdown("quit").await, FeedOutcome::NothingToFeed);

    // An unrelated holder of the lock file (another pi) blocks both.
    let held = FeedLock::try_acquire(&agent.path().join("mempalace-feed.lock")).unwrap().unwrap();
    assert!(FeedLock::try_acquire(&agent.path().join("mempalace-feed.lock")).unwrap().is_none());
    assert_eq!(a.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::Locked));
    drop(held);
}

#[tokio::test]
async fn overlapping_triggers_coalesce() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let gate = Arc::new(Semaphore::new(0));
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Gated(gate.clone(), MINED.into()));
    let f = feeder(config(agent.path(), &[]), &caller);

    let settled = tokio::spawn({
        let f = f.clone();
        async move { f.settled().await }
    });
    caller.called.notified().await;
    assert!(f.is_feeding());
    // A shutdown (and another settled) while the feed runs join it. `join!` polls in order,
    // so both have joined before the third branch lets the mine finish.
    let (b, c, ()) = tokio::join!(f.shutdown("quit"), f.settled(), async { gate.add_permits(1) });
    let a = settled.await.unwrap();
    assert!(matches!(a, FeedOutcome::Fed { .. }), "{a:?}");
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(caller.calls_to("mempalace_mine").len(), 1);
}

#[tokio::test]
async fn settled_is_debounced_but_shutdown_is_not() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let f = feeder(config(agent.path(), &[("MEMPALACE_FEED_DEBOUNCE_MS", "3600000")]), &caller);
    assert!(matches!(f.settled().await, FeedOutcome::Fed { .. }), "the first settled counts");
    write_session(agent.path(), "s2", &good());
    assert_eq!(f.settled().await, FeedOutcome::Skipped(SkipReason::Debounced));
    assert_eq!(caller.calls().len(), 1);
    assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }), "shutdown ignores the debounce");
    assert_eq!(caller.calls().len(), 2);
    // pi compacting: at once too (the turns about to be summarised away go to the palace first).
    write_session(agent.path(), "s2b", &good());
    assert!(matches!(f.compacting().await, FeedOutcome::Fed { .. }), "compaction ignores the debounce");
    assert_eq!(caller.calls().len(), 3);
    assert!(outcome::path(&agent.path().join("mempalace-feed")).is_file());

    // Debounce 0: every settled feeds.
    let f = feeder(config(agent.path(), &[("MEMPALACE_FEED_DEBOUNCE_MS", "0")]), &caller);
    write_session(agent.path(), "s3", &good());
    let out = f.settled().await;
    assert!(matches!(out, FeedOutcome::Fed { .. }), "{out:?}");
    write_session(agent.path(), "s4", &good());
    let out = f.settled().await;
    assert!(matches!(out, FeedOutcome::Fed { .. }), "{out:?}");
    assert_eq!(caller.calls().len(), 5);
}

#[tokio::test]
async fn a_palace_that_is_down_costs_no_work_and_feeding_resumes_when_it_is_back() {
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let bin = tempfile::tempdir().unwrap();
    let ran = bin.path().join("ran");
    let exporter = script(bin.path(), "exp", &format!("touch '{}'\necho MINE_SOURCE=/x", ran.display()));
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    *caller.down.lock().unwrap() = Some("cannot start MemPalace".into());
    let f = feeder(config(agent.path(), &[("MEMPALACE_FEED_DEBOUNCE_MS", "0")]), &caller);
    for _ in 0..3 {
        assert_eq!(f.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::PalaceDown));
        assert_eq!(f.settled().await, FeedOutcome::Skipped(SkipReason::PalaceDown));
    }
    assert!(!agent.path().join("mempalace-feed").exists(), "no staging copies");
    assert!(!agent.path().join("mempalace-feed.lock").exists(), "not even the lock");
    let ext = feeder(config(agent.path(), &[("MEMPALACE_FEED_BIN", exporter.to_str().unwrap())]), &caller);
    assert_eq!(ext.shutdown("quit").await, FeedOutcome::Skipped(SkipReason::PalaceDown));
    assert!(!ran.exists(), "no exporter run");
    assert!(caller.calls().is_empty());
    // Back: the next trigger feeds.
    *caller.down.lock().unwrap() = None;
    assert!(matches!(f.settled().await, FeedOutcome::Fed { .. }));
}

#[tokio::test]
async fn what_the_feed_writes_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let agent = tempfile::tempdir().unwrap();
    write_session(agent.path(), "s1", &good());
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let f = feeder(config(agent.path(), &[]), &caller);
    assert!(matches!(f.shutdown("quit").await, FeedOutcome::Fed { .. }));
    let mode = |p: PathBuf| {
        std::fs::metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
    };
    let a = agent.path();
    assert_eq!(mode(a.join("mempalace-feed.lock")), 0o600);
    assert_eq!(mode(a.join("mempalace-feed")), 0o700);
    assert_eq!(mode(a.join("mempalace-feed/staging")), 0o700);
    assert_eq!(mode(a.join("mempalace-feed/staging/--work-project--")), 0o700);
    assert_eq!(mode(a.join("mempalace-feed/staging/--work-project--/s1.jsonl")), 0o600);
    assert_eq!(mode(a.join("mempalace-feed/state.json")), 0o600);
}

#[tokio::test]
async fn a_local_external_export_is_redacted_in_place_before_the_mine_and_the_counts_are_kept() {
    let agent = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let export = bin.path().join("export");
    std::fs::create_dir_all(export.join("sub")).unwrap();
    let key = "AKIAZ7QX3MPL4VNRT2WB";
    std::fs::write(export.join("sub/s.jsonl"), session_jsonl(&[("user", &format!("key {key}")), ("assistant", "ok")]))
        .unwrap();
    std::fs::write(export.join("notes.md"), format!("AWS key: {key}\n")).unwrap();
    script(bin.path(), "mempalace-pi-session", &format!("echo MINE_SOURCE={}", export.display()));
    let caller = Arc::new(FakeCaller::new());
    caller.set("mempalace_mine", Behaviour::Reply(MINED.into()));
    let cfg = config(
        agent.path(),
        &[("MEMPALACE_FEED_BIN", "mempalace-pi-session"), ("PATH", &bin.path().display().to_string())],
    );
    assert_eq!(unredacted_warning(&cfg), None, "a local external export is redacted");
    let out = feeder(cfg, &caller).shutdown("quit").await;
    let FeedOutcome::Fed { redacted, .. } = &out else { panic!("{out:?}") };
    assert_eq!(redacted.get("aws-access-token"), Some(&2), "{redacted:?}");
    for f in ["sub/s.jsonl", "notes.md"] {
        let text = std::fs::read_to_string(export.join(f)).unwrap();
        assert!(!text.contains(key) && text.contains("[REDACTED:aws-access-token]"), "{f}: {text}");
    }
    let last = outcome::LastFeed::read(&agent.path().join("mempalace-feed")).unwrap();
    assert_eq!(last.redacted, *redacted);
    assert_eq!(
        redaction_line(&config(agent.path(), &[])),
        "on (built-in rules); last feed redacted 2 (aws-access-token 2)"
    );
}

#[test]
fn transcripts_fed_unredacted_are_said_at_load() {
    let agent = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    script(bin.path(), "mempalace-pi-session", "echo MINE_SOURCE=/x");
    let path = bin.path().display().to_string();
    let remote = [("MEMPALACE_REMOTE_URL", "http://palace:8765/mcp"), ("MEMPALACE_PI_SSH_TARGET", "me@palace")];
    let external = [("MEMPALACE_FEED_BIN", "mempalace-pi-session"), ("PATH", path.as_str())];
    let line = unredacted_warning(&config(agent.path(), &[remote[0], remote[1], external[0], external[1]])).unwrap();
    assert!(line.contains("leave unredacted") && line.contains("mempalace-pi-session"), "{line}");
    // The built-in exporter redacts before the rsync: nothing to say.
    assert_eq!(unredacted_warning(&config(agent.path(), &remote)), None);
    let off = unredacted_warning(&config(agent.path(), &[("MEMPALACE_FEED_REDACT", "off")])).unwrap();
    assert!(off.contains("MEMPALACE_FEED_REDACT=off") && off.contains("unsafe for a shared palace"), "{off}");
    // Feeding off: no line.
    assert_eq!(
        unredacted_warning(&config(agent.path(), &[("MEMPALACE_FEED", "0"), ("MEMPALACE_FEED_REDACT", "off")])),
        None
    );
}
