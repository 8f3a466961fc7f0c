use super::learn::worth_learning;
use super::*;
use serde_json::Value;

/// The made-up secrets of every kind (shared with the contract and e2e tests).
const SECRETS: &str = include_str!("../../../../__test__/fixtures/redact/secrets.json");
/// Ordinary coding sessions that hold nothing secret (how it was made: its `about`).
const ORDINARY: &str = include_str!("../../../../__test__/fixtures/redact/ordinary.jsonl");

struct Sample {
    kind: String,
    value: String,
    text: String,
    env: Option<String>,
}

fn samples() -> Vec<Sample> {
    let v: Value = serde_json::from_str(SECRETS).unwrap();
    v["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Sample {
            kind: s["kind"].as_str().unwrap().into(),
            value: s["value"].as_str().unwrap().into(),
            text: s["text"].as_str().unwrap().into(),
            env: s.get("env").and_then(Value::as_str).map(String::from),
        })
        .collect()
}

/// The redactor of a process whose environment holds the samples' env secrets (and ordinary
/// variables that must not count); built once for all the tests.
fn redactor() -> &'static Redactor {
    static R: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
    R.get_or_init(build_redactor)
}

fn build_redactor() -> Redactor {
    let mut env: Vec<(String, String)> = samples().into_iter().filter_map(|s| Some((s.env?, s.value))).collect();
    env.push(("TOKENIZERS_PARALLELISM".into(), "false".into()));
    env.push(("AWS_REGION".into(), "eu-west-1-long".into()));
    env.push(("GOOGLE_APPLICATION_CREDENTIALS".into(), "/home/u/creds.json".into()));
    env.push(("HOME".into(), "/home/someone-long".into()));
    env.push(("MEMPALACE_REMOTE_URL".into(), "http://pi:Url-Pass-99x@palace.lan:8765/mcp".into()));
    let (r, w) = Redactor::build(&Sources { env, patterns_file: None });
    assert!(w.is_empty(), "{w:?}");
    r
}

#[test]
fn every_kind_is_redacted_in_text_with_its_marker() {
    let r = redactor();
    for s in samples() {
        let text = s.text.replace("{v}", &s.value);
        let mut counts = Counts::new();
        let out = r.redact_str(&text, &mut counts).unwrap_or_else(|| panic!("{} not found in {text:?}", s.kind));
        assert!(!out.contains(&s.value), "{}: {out}", s.kind);
        assert!(out.contains(&format!("[REDACTED:{}]", s.kind)), "{}: {out}", s.kind);
        assert_eq!(counts.get(&s.kind), Some(&1), "{}: {counts:?}", s.kind);
        // What is around the secret stays.
        let before = s.text.split("{v}").next().unwrap();
        assert!(out.starts_with(before.trim_end_matches(['\'', ' '])), "{}: {out}", s.kind);
    }
}

#[test]
fn a_url_password_of_the_environment_is_matched_exactly_anywhere() {
    let r = redactor();
    let mut c = Counts::new();
    let out = r.redact_str("the palace password is Url-Pass-99x, typed alone", &mut c).unwrap();
    assert_eq!(out, "the palace password is [REDACTED:url-password], typed alone");
    // Ordinary variables of the environment are not secrets: a region, a path, `false`.
    for plain in ["eu-west-1-long", "/home/u/creds.json", "false", "/home/someone-long"] {
        assert_eq!(r.redact_str(&format!("value {plain} here"), &mut c), None, "{plain}");
    }
}

#[test]
fn names_that_say_secret() {
    for n in [
        "MY_SERVICE_TOKEN",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "OPENAI_API_KEY",
        "AWS_SESSION_TOKEN",
        "X_PRIVATE_KEY",
        "SVC_CREDENTIALS",
        "DOTTY_ADMIN_TOKEN",
        "MEMPALACE_REMOTE_TOKEN",
        "PGPASSWD",
    ] {
        assert!(secret_name(n), "{n}");
    }
    for n in ["HOME", "PATH", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "TERM", "KEYBOARD"] {
        assert!(!secret_name(n), "{n}");
    }
    // TOKENIZERS_PARALLELISM's name says token, but `false` is shorter than MIN_EXACT.
    assert!(secret_name("TOKENIZERS_PARALLELISM") && !exact_worthy("false"));
}

#[test]
fn jsonl_lines_stay_valid_json_with_the_same_entries() {
    let r = redactor();
    let s = samples();
    let header = r#"{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let mut input = format!("{header}\n");
    for (i, x) in s.iter().enumerate() {
        let text = x.text.replace("{v}", &x.value);
        // In chat text, in a tool call's arguments, in a tool result, and in a key.
        let entry = match i % 3 {
            0 => {
                serde_json::json!({"type":"message","id":i,"message":{"role":"user","content":[{"type":"text","text":text}]}})
            }
            1 => {
                serde_json::json!({"type":"message","id":i,"message":{"role":"assistant","content":[{"type":"toolCall","name":"bash","arguments":{"command":text}}]}})
            }
            _ => {
                serde_json::json!({"type":"message","id":i,"message":{"role":"toolResult","content":[{"type":"text","text":text}],"details":{text.clone(): 1.5}}})
            }
        };
        input.push_str(&entry.to_string());
        input.push('\n');
    }
    input.push_str("{not json, but AKIAZ7QX3MPL4VNRT2WB is here}\r\n");
    let mut counts = Counts::new();
    let out = r.redact_jsonl(input.as_bytes(), &mut counts).unwrap();
    let out = String::from_utf8(out).unwrap();
    for x in &s {
        assert!(!out.contains(&x.value), "{} survived", x.kind);
        // A JSON-escaped form (the PEM block's newlines) is gone too.
        let escaped = serde_json::to_string(&x.value).unwrap();
        assert!(!out.contains(escaped.trim_matches('"')), "{} survived escaped", x.kind);
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (input.split('\n').collect(), out.split('\n').collect());
    assert_eq!(a.len(), b.len());
    assert_eq!(a[0], b[0], "a line without secrets is kept byte for byte");
    for (x, y) in a.iter().zip(&b) {
        match (serde_json::from_str::<Value>(x), serde_json::from_str::<Value>(y)) {
            (Ok(vx), Ok(vy)) => assert_eq!(shape(&vx), shape(&vy), "same entries"),
            (Err(_), Err(_)) => {}
            other => panic!("validity changed: {other:?}"),
        }
    }
    assert!(out.ends_with("{not json, but [REDACTED:aws-access-token] is here}\r\n"), "{out}");
    let total: u64 = counts.values().sum();
    assert!(total >= s.len() as u64, "{counts:?}");
}

/// A value's structure: the same keys (in order) and types, strings and keys left out.
fn shape(v: &Value) -> String {
    match v {
        Value::Object(m) => format!("{{{}}}", m.values().map(shape).collect::<Vec<_>>().join(",")),
        Value::Array(a) => format!("[{}]", a.iter().map(shape).collect::<Vec<_>>().join(",")),
        Value::String(_) => "s".into(),
        other => other.to_string(),
    }
}

#[test]
fn ordinary_sessions_have_nothing_redacted() {
    let r = redactor();
    let mut counts = Counts::new();
    let out = r.redact_jsonl(ORDINARY.as_bytes(), &mut counts);
    if let Some(out) = out {
        let out = String::from_utf8_lossy(&out);
        let first = out.lines().zip(ORDINARY.lines()).find(|(a, b)| a != b);
        panic!("false positives {counts:?}: {first:?}");
    }
    assert!(counts.is_empty());
}

#[test]
fn a_broken_user_pattern_is_one_warning_and_the_rest_apply() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("redact.txt");
    std::fs::write(&file, "# internal ticket ids are secret\nACME-[0-9]{6}\n\n([unclosed\ncorp-(secret-[a-z]{4})\n")
        .unwrap();
    let (r, w) = Redactor::build(&Sources { env: Vec::new(), patterns_file: Some(file.clone()) });
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("line 4") && w[0].contains("still appl") && !w[0].contains("unclosed"), "{w:?}");
    let mut c = Counts::new();
    let out = r.redact_str("ACME-123456 and corp-secret-abcd and AKIAZ7QX3MPL4VNRT2WB", &mut c).unwrap();
    assert_eq!(out, "[REDACTED:user-pattern] and corp-[REDACTED:user-pattern] and [REDACTED:aws-access-token]");
    // A missing file: one line, the built-in rules still apply.
    let (r, w) = Redactor::build(&Sources { env: Vec::new(), patterns_file: Some(d.path().join("nope")) });
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(r.redact_str("AKIAZ7QX3MPL4VNRT2WB", &mut c).is_some());
}

#[test]
fn redaction_is_a_fixpoint_and_counts_each_value_once() {
    let r = redactor();
    let all: String = samples().iter().map(|s| s.text.replace("{v}", &s.value) + "\n").collect();
    let mut c = Counts::new();
    let once = r.redact_str(&all, &mut c).unwrap();
    assert_eq!(r.redact_str(&once, &mut Counts::new()), None, "{once}");
    // Multi-byte text around a secret stays whole.
    let s = format!("clé→{}←fin", samples()[0].value);
    assert_eq!(r.redact_str(&s, &mut c).unwrap(), "clé→[REDACTED:aws-access-token]←fin");
}

#[test]
fn the_debug_form_never_shows_a_value() {
    let r = redactor();
    let shown = format!("{r:?}");
    assert!(samples().iter().all(|s| !shown.contains(&s.value)), "{shown}");
}

#[test]
fn a_value_found_in_context_is_redacted_where_it_is_repeated_bare() {
    let r = redactor();
    let bare = "Zq8Lw3Xv7Rt2Nb5Mk9Pd4Hs6Jf1Gc0Ya8Ue3Io7W"; // 40 characters, no format of its own
    let header = r#"{"type":"session","version":3}"#;
    let result = serde_json::json!({"type":"message","message":{"role":"toolResult","content":[{"type":"text","text":format!("AWS_SECRET_ACCESS_KEY={bare}")}]}});
    let reply = serde_json::json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":format!("Your key {bare} is the old one.")}]}});
    // The bare repeat comes first: the file is learned whole before anything is written.
    let input = format!("{header}\n{reply}\n{result}\n");
    let mut c = Counts::new();
    let out = String::from_utf8(r.redact_jsonl(input.as_bytes(), &mut c).unwrap()).unwrap();
    assert!(!out.contains(bare), "{out}");
    assert!(out.contains("Your key [REDACTED:generic-api-key] is the old one."), "{out}");
    assert_eq!(c.get("generic-api-key"), Some(&2), "{c:?}");
    // Alone, a bare value is not a secret (it could be any identifier).
    assert_eq!(r.redact_str(&format!("Your key {bare} is the old one."), &mut Counts::new()), None);
}

// ---- Defects found with material nobody in this project wrote (issue 28). ----

/// Redacts one JSONL line (as a file of one line) with the built-in rules.
fn jsonl_line(r: &Redactor, line: &str) -> (String, Counts) {
    let mut c = Counts::new();
    let out = r.redact_jsonl(format!("{line}\n").as_bytes(), &mut c).map(|b| String::from_utf8(b).unwrap());
    (out.unwrap_or_else(|| format!("{line}\n")).trim_end_matches('\n').to_string(), c)
}

/// How many markers `s` holds, per kind (an index suffix `#2` counted under its kind).
fn markers(s: &str) -> Counts {
    let mut c = Counts::new();
    for part in s.split("[REDACTED:").skip(1) {
        if let Some(k) = part.split(']').next() {
            *c.entry(k.split('#').next().unwrap().to_string()).or_default() += 1;
        }
    }
    c
}

#[test]
fn a_structural_group_redacts_the_whole_match() {
    let r = Redactor::builtin();
    // jwt.io's example token, base64-encoded (gitleaks' jwt-base64 sample shape).
    let b64 = "ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5LmV5SnpkV0lpT2lJeE1qTTBOVFkzT0Rrd0lpd2libUZ0WlNJNklrcHZhRzRnUkc5bElpd2lhV0YwSWpveE5URTJNak01TURJeWZRLlNmbEt4d1JKU01lS0tGMlFUNGZ3cE1lSmYzNlBPazZ5SlZfYWRRc3N3NWM=";
    let mut c = Counts::new();
    assert_eq!(r.redact_str(&format!("payload {b64} end"), &mut c).unwrap(), "payload [REDACTED:jwt-base64] end");
    let hook = "https://contoso.webhook.office.com/webhookb2/9f1c2a3b-4d5e-6f70-8a9b-0c1d2e3f4a5b@72f988bf-86f1-41af-91ab-2d7cd011db47/IncomingWebhook/3f9a8c7d6e5b4a39281706f5e4d3c2b1/0c8f7e6d-5c4b-3a29-1807-f6e5d4c3b2a1";
    assert_eq!(r.redact_str(&format!("hook: {hook}"), &mut c).unwrap(), "hook: [REDACTED:microsoft-teams-webhook]");
}

#[test]
fn a_marker_is_never_scanned_again_and_counts_equal_markers() {
    let r = Redactor::builtin();
    // Text that already holds markers (a transcript quoting a redacted one) stays as it is.
    for s in [
        "redis://[REDACTED:url-password]@cache.internal:6379/0",
        "postgres://app:[REDACTED:url-password]@db:5432/x",
        "Authorization: Bearer [REDACTED:bearer-token]",
    ] {
        assert_eq!(r.redact_str(s, &mut Counts::new()), None, "{s}");
    }
    let s = "redis://[REDACTED:url-password]@cache:6379 and mysql://root:Pw-9f2kQ7x@db/x";
    let mut c = Counts::new();
    let out = r.redact_str(s, &mut c).unwrap();
    assert!(!out.contains("[REDACTED:[REDACTED"), "{out}");
    assert_eq!(out, "redis://[REDACTED:url-password]@cache:6379 and mysql://root:[REDACTED:url-password]@db/x");
    assert_eq!(c, markers(&out.replacen("[REDACTED:url-password]", "", 1)));
}

#[test]
fn code_and_type_names_are_not_learned_or_redacted() {
    let r = Redactor::builtin();
    // @noble/hashes' pbkdf2.d.ts: a parameter typed `password: Uint8Array`, the type used again.
    let dts = "export declare function pbkdf2(hash: CHash, password: Uint8Array, salt: Uint8Array, opts: Pbkdf2Opt): Uint8Array;";
    let line =
        serde_json::json!({"type":"message","message":{"role":"toolResult","content":[{"type":"text","text":dts}]}});
    let (out, c) = jsonl_line(&r, &line.to_string());
    assert!(c.is_empty(), "{c:?}: {out}");
    // CPython 3.11's http/server.py (CGIHTTPRequestHandler.run_cgi).
    for code in [
        r#"authorization = self.headers.get("authorization")"#,
        "authorization = authorization.split()",
        "authorization = base64.decodebytes(authorization).decode('ascii')",
        "authorization = authorization.split(':')",
        "let password = Zeroizing::new(String::new());",
        "password = win32api.RegEnumKey(key, i)",
        r#""@inquirer/password": "^4.0.10","#,
    ] {
        assert_eq!(r.redact_str(code, &mut Counts::new()), None, "{code}");
    }
}

#[test]
fn a_line_the_parser_refuses_keeps_its_escapes() {
    let r = Redactor::builtin();
    // A lone surrogate: serde_json refuses the line; the secret is still redacted inside its string.
    let line =
        r#"{"text":"lone \ud800: run \"db --password=Hunter2x9\" AKIAZ7QX3MPL4VNRT2WB","n":0.023481000000000002}"#;
    let (out, c) = jsonl_line(&r, line);
    assert_eq!(
        out,
        r#"{"text":"lone \ud800: run \"db --password=[REDACTED:password-assignment]\" [REDACTED:aws-access-token]","n":0.023481000000000002}"#
    );
    assert_eq!((c.get("aws-access-token"), c.get("password-assignment")), (Some(&1), Some(&1)));
    // Nesting deeper than serde's 128.
    let deep = format!("{}\"AKIAZ7QX3MPL4VNRT2WB \\\"x\\\"\"{}", "[".repeat(200), "]".repeat(200));
    let (out, _) = jsonl_line(&r, &deep);
    assert_eq!(out, format!("{}\"[REDACTED:aws-access-token] \\\"x\\\"\"{}", "[".repeat(200), "]".repeat(200)));
}

#[test]
fn two_secret_keys_of_one_object_stay_two_entries() {
    let r = Redactor::builtin();
    let line = r#"{"AKIAZ7QX3MPL4VNRT2WB":1,"AKIAQ4MBX7NVRT2ZK3PL":2,"other":3}"#;
    let (out, c) = jsonl_line(&r, line);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 3, "{out}");
    assert_eq!(out, r#"{"[REDACTED:aws-access-token]":1,"[REDACTED:aws-access-token#2]":2,"other":3}"#);
    assert_eq!(c.get("aws-access-token"), Some(&2));
}

#[test]
fn only_string_bytes_change_in_a_line() {
    let r = Redactor::builtin();
    let line = r#"{"usage":{"cost":0.023481000000000002,"big":1.0e+30,"neg":-0.0,"int":12345678901234567890},"text":"key AKIAZ7QX3MPL4VNRT2WB","esc":"caf\u00e9 \/ \t"}"#;
    let (out, _) = jsonl_line(&r, line);
    assert_eq!(out, line.replace("AKIAZ7QX3MPL4VNRT2WB", "[REDACTED:aws-access-token]"));
}

#[test]
fn the_vendored_rules_are_gitleaks_v8_30_1_and_kinds_are_the_rule_s_own() {
    // Spot checks of the differences there were (scripts/redact/vendor-gitleaks.py --check compares
    // the whole file with upstream's generated config).
    let file: Value = serde_json::from_str(include_str!("gitleaks-rules.json")).unwrap();
    let rule = |id: &str| file["rules"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(rule("airtable-personnal-access-token")["keywords"], serde_json::json!(["airtable"]));
    assert!(rule("generic-api-key")["regex"].as_str().unwrap().contains(r"(?:[ \t\w.-]{0,20})"));
    assert!(file["global"][0]["regexes"].as_array().unwrap().len() > 5, "the global allowlist, once");
    let r = Redactor::builtin();
    let kinds = |s: &str| {
        let mut c = Counts::new();
        r.redact_str(s, &mut c);
        c.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(kinds("bittrex_secret_key = \"5f8d3a2b1c4e6f7a9b0c1d2e3f4a5b6c\""), ["bittrex-secret-key"]);
    assert_eq!(kinds("BITTREX_ACCESS_KEY=5f8d3a2b1c4e6f7a9b0c1d2e3f4a5b6c"), ["bittrex-access-key"]);
    assert_eq!(kinds("gem source https://cafebabe:deadbeef@gems.contribsys.com/"), ["sidekiq-sensitive-url"]);
}

#[test]
fn code_of_real_sources_is_not_a_secret() {
    let r = Redactor::builtin();
    for code in [
        // libsqlite3-sys 0.40's sqlite3ext.h, linux-raw-sys 0.12's bindings, CPython's distutils.
        "#define sqlite3_column_bytes16         sqlite3_api->column_bytes16",
        "pub const DEVCONF_STABLE_SECRET: _bindgen_ty_3 = _bindgen_ty_3::DEVCONF_STABLE_SECRET;",
        "pub const NL80211_KEY_MAX: nl80211_key_attributes = nl80211_key_attributes::NL80211_KEY_MAX;",
        "        RegEnumKey = win32api.RegEnumKey",
        // gitleaks' own false-positive samples of its generic rule (cmd/generate/config/rules/generic.go).
        "secret_length = X25519.secret_length",
        "key_length = XSalsa20.key_length",
        "KeyPair = X25519.KeyPair",
        "BlindKeySignatures = Ed25519.BlindKeySignatures",
        "            keyPressed = kVK_Return.u16",
        r#"LLM_SECRET_NAME = "NEXUS-GPT4-API-KEY""#,
        "PuttyPassword=0",
        "IceSSL.KeyFile=s_rsa1024_priv.pem",
        // windows-sys 0.61's Certificates/mod.rs, caught by the issue-33 rules at first.
        "pub const XCN_BCRYPT_SECRET_AGREEMENT_INTERFACE: AlgorithmType = 4i32;",
    ] {
        assert_eq!(r.redact_str(code, &mut Counts::new()), None, "{code}");
    }
}

#[test]
fn rust_and_type_annotations_are_not_passwords() {
    let r = Redactor::builtin();
    // rustls 0.23's and ring 0.17's sources.
    for code in [
        "        secret_key: &HpkePrivateKey,",
        "            16 => ConnectionTrafficSecrets::Aes128Gcm { key, iv },",
        "        ExtendedMasterSecret => 0x0017,",
        "            SecretKind::ClientEarlyTrafficSecret,",
        "    ///     -in rsa-2048-private-key.pem > rsa-2048-private-key.pk8",
    ] {
        assert_eq!(r.redact_str(code, &mut Counts::new()), None, "{code}");
    }
    // Real assignments still are.
    for s in ["DB_PASSWORD=Xk9#mQ2$vL7p", "password: \"s3cr3t-Pa55\"", "api_secret = 9f8e7d6c5b4a39281706f5e4"] {
        assert!(r.redact_str(s, &mut Counts::new()).is_some(), "{s}");
    }
}

#[test]
fn code_and_digests_of_the_real_file_corpus_are_not_secrets() {
    let r = Redactor::builtin();
    // Lines as found in node_modules (@mistralai/mistralai, google-auth-library, @anthropic-ai/sdk,
    // pi's bundle, @types/node, readable-stream's README, pi-ai's manifest) and /usr/share/doc.
    for line in [
        "        const password = security?.basic.password;",
        "    client_secret: ClientSecret$inboundSchema,",
        "            const clientSecret = this.#clientAuthentication.clientSecret || '';",
        "return oauth?{clientId:oauth.clientId,clientSecret:oauth.clientSecret===void 0?void 0:x}",
        "    const workSecret = opts?.workSecret || readEnv('ANTHROPIC_WORK_SECRET');",
        "case\"heading\":{let headingLevel=token.depth,headingPrefix=`${\"#\".repeat(headingLevel)} `",
        "     *   Public key ping-sha256: pL1+qb9HTMRZJmuC/bB/ZI9d302BYrrqiVuRyW+DGrU=",
        "  - Release GPG key: 3ABC01543F22DD2239285CDD818674489FBC127E",
        r#"{"qwen-token-plan.json":"600e61f7dfad9833ea1c2c31018d2bd544297ad3158b96953c8a70f9ed6ec693"}"#,
        "attribute's value **SHOULD** be `https://REDACTED:REDACTED@www.example.com/`.",
    ] {
        assert_eq!(r.redact_str(line, &mut Counts::new()), None, "{line}");
    }
}

#[test]
fn a_password_of_words_is_learned_and_code_words_are_not() {
    assert!(worth_learning(b"hunter2-zyoPobsar2"));
    assert!(worth_learning(b"Zq8Lw3Xv7Rt2Nb5Mk9Pd4Hs6Jf1Gc0Ya8Ue3Io7W"));
    for v in ["Uint8Array", "self.headers.get", "nl80211_key_attributes", "ConnectionTrafficSecrets"] {
        assert!(!worth_learning(v.as_bytes()), "{v}");
    }
}
