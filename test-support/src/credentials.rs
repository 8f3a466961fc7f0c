//! A held-out corpus of credentials for the redactor (issue 33): real-world credential shapes in
//! the places people paste them, with random values drawn from each format's whole alphabet, put in
//! pi sessions in every placement a secret reaches a palace by. Written from the formats' own
//! documentation (AWS's credentials file, dotenv, Compose, `kubectl get secret -o yaml`, netrc,
//! npmrc, pip.conf, database URLs, curl, HTTP headers, OpenSSH and OpenPGP armour, JWT), never from
//! the redactor's rules: a secret no rule names on its own is exactly what it is here to catch.
//!
//! Two seeds: [`TUNING`] is the set a rule change may be looked at against; [`HELD_OUT`] is the set
//! it is judged on, never printed case by case while tuning (`bench/redact_heldout.rs` prints both).

use serde_json::{json, Value};

/// The seed of the set rule changes were looked at against.
pub const TUNING: u64 = 0x7475_6e69_6e67;
/// The seed of the set a change is judged on.
pub const HELD_OUT: u64 = 0x0068_656c_646f_7574;
/// A second held-out seed, added after the first had been read while tuning (issue 33's third
/// pass): no rule change has been looked at against it.
pub const FRESH: u64 = 0x0066_7265_7368_2133;

/// Where a secret is in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// Pasted by the user into their message.
    UserPaste,
    /// Quoted by the assistant in its reply.
    AssistantQuote,
    /// Printed by a tool (`cat`, `kubectl`, …) as its output.
    ToolOutput,
    /// Written by the model as a tool call's argument (a `write`, a `bash` command).
    ToolCallArgument,
    /// Said bare later in the session, after it was seen in its context (a tool's output).
    BareRepeat,
}

impl Placement {
    pub const ALL: [Placement; 5] = [
        Placement::UserPaste,
        Placement::AssistantQuote,
        Placement::ToolOutput,
        Placement::ToolCallArgument,
        Placement::BareRepeat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Placement::UserPaste => "user paste",
            Placement::AssistantQuote => "assistant quote",
            Placement::ToolOutput => "tool output",
            Placement::ToolCallArgument => "tool-call argument",
            Placement::BareRepeat => "bare repeat",
        }
    }
}

/// One case: a session, the format and placement, and the secret values that must not survive.
#[derive(Debug, Clone)]
pub struct Case {
    pub format: &'static str,
    pub placement: Placement,
    pub session: Vec<u8>,
    pub secrets: Vec<String>,
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// `n` characters of `alphabet`.
    pub fn from(&mut self, alphabet: &str, n: usize) -> String {
        let a: Vec<char> = alphabet.chars().collect();
        (0..n).map(|_| a[self.below(a.len())]).collect()
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";

fn alnum() -> String {
    format!("{UPPER}{LOWER}{DIGITS}")
}
fn b64() -> String {
    format!("{UPPER}{LOWER}{DIGITS}+/")
}
fn b64url() -> String {
    format!("{UPPER}{LOWER}{DIGITS}-_")
}
/// What a password manager's generator draws from, the symbols a shell or a URL doesn't mind.
fn password_chars() -> String {
    format!("{UPPER}{LOWER}{DIGITS}-_.+/=!@%^*~")
}

/// Base64 of `n` random bytes (standard alphabet, padded).
fn base64_of(rng: &mut Rng, n: usize) -> String {
    let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
    base64(&bytes)
}

/// Base64 of `s`'s bytes (standard alphabet, padded).
fn b64_text(s: &str) -> String {
    base64(s.as_bytes())
}

/// Base64 of `bytes` (standard alphabet, padded).
fn base64(bytes: &[u8]) -> String {
    let t: Vec<char> = b64().chars().collect();
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let v =
            (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(t[((v >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A password as people make them: a generator's, a service's prefix and a random tail, or words
/// and digits with a symbol.
fn password(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => {
            let n = 16 + rng.below(17);
            rng.from(&password_chars(), n)
        }
        1 => format!("{}-{}", rng.pick(&["pg", "rd", "db", "mq", "app", "svc"]), rng.from(&alnum(), 20)),
        2 => {
            let n = 24 + rng.below(9);
            rng.from(&alnum(), n)
        }
        _ => format!("{}{}{}", rng.from(&b64url(), 12), rng.pick(&["!", "#", "%", "+", "="]), rng.from(&alnum(), 8)),
    }
}

/// One block of text in a format, and the secrets in it. `rng` draws the values.
type Format = fn(&mut Rng) -> (String, Vec<String>);

fn aws_credentials(rng: &mut Rng) -> (String, Vec<String>) {
    let id = format!("AKIA{}", rng.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
    let key = rng.from(&b64(), 40);
    let text = format!(
        "[default]\naws_access_key_id = {id}\naws_secret_access_key = {key}\nregion = {}\n",
        rng.pick(&["eu-west-1", "us-east-1", "ap-southeast-2"])
    );
    (text, vec![id, key])
}

fn dotenv(rng: &mut Rng) -> (String, Vec<String>) {
    let db = password(rng);
    let redis = format!("rd-{}", rng.from(&alnum(), 20));
    let api = rng.from(&alnum(), 32);
    let session = rng.from(HEX, 64);
    let text = format!(
        "NODE_ENV=production\nPORT=3000\nDB_HOST=db.internal\nDB_USER=app\nDB_PASSWORD={db}\nREDIS_PASSWORD={redis}\nSTRIPE_API_KEY={api}\nSESSION_SECRET={session}\nLOG_LEVEL=info\n"
    );
    (text, vec![db, redis, api, session])
}

fn compose_environment(rng: &mut Rng) -> (String, Vec<String>) {
    let pg = password(rng);
    let root = password(rng);
    let text = format!(
        "services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_USER=app\n      - POSTGRES_PASSWORD={pg}\n  mysql:\n    image: mysql:8\n    environment:\n      MYSQL_ROOT_PASSWORD: {root}\n      MYSQL_DATABASE: app\n"
    );
    (text, vec![pg, root])
}

fn kubectl_secret(rng: &mut Rng) -> (String, Vec<String>) {
    let (a, b) = (12 + rng.below(20), 24 + rng.below(24));
    let pw = base64_of(rng, a);
    let token = base64_of(rng, b);
    let text = format!(
        "apiVersion: v1\ndata:\n  password: {pw}\n  token: {token}\n  username: YWRtaW4=\nkind: Secret\nmetadata:\n  name: app-credentials\n  namespace: default\ntype: Opaque\n"
    );
    (text, vec![pw, token])
}

fn netrc(rng: &mut Rng) -> (String, Vec<String>) {
    let pw = password(rng);
    let host = rng.pick(&["api.github.com", "git.example.org", "ftp.internal.lan"]);
    (format!("machine {host}\n  login deploy\n  password {pw}\n"), vec![pw])
}

fn npmrc_pip(rng: &mut Rng) -> (String, Vec<String>) {
    let npm = format!("npm_{}", rng.from(&alnum(), 36));
    let legacy = format!(
        "{}-{}-{}-{}-{}",
        rng.from(HEX, 8),
        rng.from(HEX, 4),
        rng.from(HEX, 4),
        rng.from(HEX, 4),
        rng.from(HEX, 12)
    );
    let pip = rng.from(&b64url(), 32);
    let text = format!(
        "//registry.npmjs.org/:_authToken={npm}\n//npm.internal.lan/:_authToken={legacy}\n# ~/.config/pip/pip.conf\n[global]\nindex-url = https://__token__:{pip}@pypi.internal.lan/simple\n"
    );
    (text, vec![npm, legacy, pip])
}

fn database_url(rng: &mut Rng) -> (String, Vec<String>) {
    let a = rng.from(&format!("{UPPER}{LOWER}{DIGITS}-_.~"), 20);
    let b = rng.from(&alnum(), 24);
    let c = rng.from(&format!("{UPPER}{LOWER}{DIGITS}-_"), 18);
    let text = format!(
        "DATABASE_URL=postgres://app:{a}@db.internal:5432/app\nMONGO_URI=mongodb+srv://svc:{b}@cluster0.mongodb.net/prod?retryWrites=true\nREDIS_URL=redis://:{c}@cache:6379/0\n"
    );
    (text, vec![a, b, c])
}

fn curl_user(rng: &mut Rng) -> (String, Vec<String>) {
    let pw = password(rng);
    let text = format!("curl -sS -u admin:{pw} https://jenkins.internal.lan/api/json\n");
    (text, vec![pw])
}

fn auth_headers(rng: &mut Rng) -> (String, Vec<String>) {
    let bearer = rng.from(&format!("{}-._~+/", alnum()), 40);
    let basic = b64_text(&format!("ci:{}", rng.from(&alnum(), 20)));
    let key = rng.from(&alnum(), 32);
    let text = format!(
        "> GET /v1/items HTTP/1.1\n> Host: api.example.com\n> Authorization: Bearer {bearer}\n> Accept: */*\ncurl -H 'Authorization: Basic {basic}' https://nexus.lan/\ncurl -H \"X-API-Key: {key}\" https://api.example.com/v2/\n"
    );
    (text, vec![bearer, basic, key])
}

fn ssh_private_key(rng: &mut Rng) -> (String, Vec<String>) {
    let body: Vec<String> = (0..6).map(|_| rng.from(&b64(), 70)).collect();
    let text = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
        body.join("\n")
    );
    (text, body)
}

fn pgp_private_key(rng: &mut Rng) -> (String, Vec<String>) {
    let body: Vec<String> = (0..5).map(|_| rng.from(&b64(), 64)).collect();
    let text = format!(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQVYBGV{}\n{}\n={}\n-----END PGP PRIVATE KEY BLOCK-----\n",
        rng.from(&alnum(), 10),
        body.join("\n"),
        rng.from(&b64(), 4)
    );
    (text, body)
}

fn jwt(rng: &mut Rng) -> (String, Vec<String>) {
    let header = b64_text(r#"{"alg":"HS256","typ":"JWT"}"#).trim_end_matches('=').replace('+', "-").replace('/', "_");
    let (sub, iat) = (rng.from(DIGITS, 8), 1_700_000_000 + rng.below(10_000_000));
    let payload = b64_text(&format!(r#"{{"sub":"{sub}","iat":{iat}}}"#))
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_");
    let sig = rng.from(&b64url(), 43);
    let token = format!("{header}.{payload}.{sig}");
    (format!("token={token}\n"), vec![token])
}

/// Every format, by name.
pub const FORMATS: &[(&str, Format)] = &[
    ("aws credentials", aws_credentials),
    (".env", dotenv),
    ("compose environment", compose_environment),
    ("kubectl secret yaml", kubectl_secret),
    (".netrc", netrc),
    (".npmrc / pip.conf", npmrc_pip),
    ("database URL", database_url),
    ("curl -u", curl_user),
    ("Authorization header", auth_headers),
    ("SSH private key", ssh_private_key),
    ("PGP private key", pgp_private_key),
    ("JWT", jwt),
];

/// A pi session's JSON lines.
fn lines(entries: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    out.push_str(
        &json!({"type":"session","version":3,"id":"h","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}).to_string(),
    );
    out.push('\n');
    for e in entries {
        out.push_str(&json!({"type":"message","message":e}).to_string());
        out.push('\n');
    }
    out.into_bytes()
}

fn user(text: &str) -> Value {
    json!({"role":"user","content":[{"type":"text","text":text}]})
}
fn assistant(text: &str) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":text}]})
}
fn call(name: &str, args: Value) -> Value {
    json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":name,"arguments":args}]})
}
fn output(text: &str) -> Value {
    json!({"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":text}]})
}

/// The session of `text` (holding `secrets`) in `placement`.
fn session(format: &str, placement: Placement, text: &str, secrets: &[String], rng: &mut Rng) -> Vec<u8> {
    let file = match format {
        "aws credentials" => "~/.aws/credentials",
        ".env" => ".env",
        "compose environment" => "docker-compose.yml",
        ".netrc" => "~/.netrc",
        ".npmrc / pip.conf" => "~/.npmrc",
        _ => "notes.txt",
    };
    match placement {
        Placement::UserPaste => {
            lines(&[user(&format!("This fails with 401, here is my config:\n{text}\nwhat is wrong?"))])
        }
        Placement::AssistantQuote => lines(&[
            user("why does the deploy fail?"),
            assistant(&format!("Your {file} has this:\n\n```\n{text}```\n\nThe second line looks wrong.")),
        ]),
        Placement::ToolOutput => {
            lines(&[user("check the config"), call("bash", json!({"command": format!("cat {file}")})), output(text)])
        }
        Placement::ToolCallArgument => lines(&[
            user("write the config for me"),
            call("write", json!({"path": file, "content": text})),
            output("Successfully wrote the file"),
        ]),
        Placement::BareRepeat => {
            let s = &secrets[rng.below(secrets.len())];
            lines(&[
                user("check the config"),
                call("bash", json!({"command": format!("cat {file}")})),
                output(text),
                assistant(&format!("The value `{s}` is the one the service rejects; rotate it and try again.")),
            ])
        }
    }
}

/// The corpus of `seed`: `per` cases of every format in every placement.
pub fn corpus(seed: u64, per: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for (name, make) in FORMATS {
        for placement in Placement::ALL {
            for _ in 0..per {
                let (text, secrets) = make(&mut rng);
                let session = session(name, placement, &text, &secrets, &mut rng);
                out.push(Case { format: name, placement, session, secrets });
            }
        }
    }
    out
}

/// Each format's text as a person or a model would write it into a palace tool's argument (a
/// drawer's content, a diary entry, a fact's object): (format, text, its secrets), `per` a format.
pub fn texts(seed: u64, per: usize) -> Vec<(&'static str, String, Vec<String>)> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for (name, make) in FORMATS {
        for _ in 0..per {
            let (text, secrets) = make(&mut rng);
            out.push((*name, text, secrets));
        }
    }
    out
}

/// How many of a case's secrets are still in `redacted` (a secret counts as left when any of its
/// bytes' run survives whole, as written in JSON: the value itself, or its JSON-escaped form).
pub fn left(case: &Case, redacted: &[u8]) -> Vec<String> {
    case.secrets
        .iter()
        .filter(|s| {
            let escaped = serde_json::to_string(s).unwrap_or_default();
            let escaped = escaped.trim_matches('"');
            contains(redacted, s.as_bytes()) || contains(redacted, escaped.as_bytes())
        })
        .cloned()
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// detect-secrets' own positive test cases (`__test__/fixtures/redact/detect-secrets-cases.json`):
/// (plugin, line, the secret the test names or None for a line flagged whole).
pub fn detect_secrets_cases(json_text: &str) -> Vec<(String, String, Option<String>)> {
    let v: Value = serde_json::from_str(json_text).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["plugin"].as_str().unwrap().to_string(),
                c["line"].as_str().unwrap().to_string(),
                c["secret"].as_str().map(String::from),
            )
        })
        .collect()
}

/// A session with `line` printed by a tool.
pub fn tool_output_session(line: &str) -> Vec<u8> {
    lines(&[user("check"), call("bash", json!({"command": "cat config"})), output(line)])
}

/// The three real secrets [`build_log`] plants (a GitHub token, an AWS secret access key line, a
/// Slack bot token).
pub const LOG_SECRETS: [&str; 3] = [
    "ghp_Q7mZ2xK9vB4nR8tL1wY6cJ3fH5dS0aP2eU7i",
    "kU8/p3Qz+Xw2Lr9Vt6Yb1Nm4Hs7Jd0Fg5Ce8Ra2T",
    "xoxb-2301847563-4812093756-Zq9Wm3Lx7Vp2Ks8Hd4Ry6Tb1",
];

/// A build log of about `bytes` bytes, the way a CI job prints it (timestamps, URLs, `token=<unset>`,
/// `key_id=<number>`, `secret_ref=vault:kv/app#N`, `password: (from env)`, `sha256:<hex>`), with
/// [`LOG_SECRETS`] planted in it once each: nothing else in it is a secret.
pub fn build_log(bytes: usize) -> String {
    let mut rng = Rng::new(0x6c6f67);
    let mut out = String::with_capacity(bytes + 256);
    let mut n = 0usize;
    while out.len() < bytes {
        n += 1;
        let ts = format!("2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z", 1 + n % 28, n % 24, n % 60, (n * 7) % 60, n % 1000);
        let line = match n % 8 {
            0 => format!(
                "{ts} [fetch] GET https://registry.npmjs.org/pkg-{n}/-/pkg-{n}-1.{}.0.tgz 200 {}ms\n",
                n % 30,
                n % 900
            ),
            1 => format!("{ts} [auth] token=<unset> key_id={} using anonymous access\n", 100_000 + n),
            2 => format!("{ts} [config] secret_ref=vault:kv/app#{} resolved at deploy time\n", n % 97),
            3 => format!("{ts} [db] password: (from env) user=ci host=db-{}.internal\n", n % 5),
            4 => format!("{ts} [cache] layer sha256:{} pulled\n", rng.from(HEX, 64)),
            5 => format!("{ts} [build] Compiling crate-{n} v0.{}.{} (/build/src/crate-{n})\n", n % 9, n % 13),
            6 => format!("{ts} [test] test module_{n}::case_{} ... ok\n", n % 50),
            _ => format!("{ts} [env] API_TOKEN=${{API_TOKEN}} PASSWORD=*** SECRET_KEY=changeme DB_PASS=null\n"),
        };
        out.push_str(&line);
        // One each at a quarter, a half and three quarters of the log, whatever its size.
        let len = out.len();
        let quarter = |k: usize| len >= bytes * k / 4 && len - line.len() < bytes * k / 4;
        if quarter(1) {
            out.push_str(&format!("{ts} [git] remote: using GH_TOKEN {}\n", LOG_SECRETS[0]));
        }
        if quarter(2) {
            out.push_str(&format!("{ts} [aws] aws_secret_access_key = {}\n", LOG_SECRETS[1]));
        }
        if quarter(3) {
            out.push_str(&format!("{ts} [notify] SLACK_BOT_TOKEN={}\n", LOG_SECRETS[2]));
        }
    }
    out
}

/// A pi session whose one `bash` output is `text`, on one JSON line.
pub fn one_output_session(text: &str) -> Vec<u8> {
    lines(&[user("build it"), call("bash", json!({"command": "make ci"})), output(text)])
}
