//! Formats gitleaks has no rule for (it scans code; we scan what a terminal and a model said): a
//! URL's password, `.netrc`, `curl -u`, `Authorization:` and `Bearer`, a `password=` assignment and
//! a random value of a key that names a credential; and the checks that refuse their matches when
//! the value is a placeholder, a reference to a secret kept elsewhere, or code.

use super::code::{is_code, is_digest, is_file_name, is_version, wordy};
use super::random::random_token;
use super::{reach, Check, Rule};

/// How the two assignment rules begin: at the credential's word of the name (see
/// [`Rule::name_first`]).
const NAME_FIRST: &str = "(?i)(?:";

/// Formats gitleaks has no rule for (it scans code, we scan what a terminal and a model said).
pub(super) fn ours() -> Vec<(Rule, Vec<String>)> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rule = |kind: &str, pattern: &str, check: Option<Check>| {
        Rule::own(kind, pattern, true, check, reach(pattern))
            .map(|r| Rule { name_first: pattern.starts_with(NAME_FIRST), ..r })
    };
    [
        // scheme://user:password@host: the password (the user name stays).
        (
            rule(
                "url-password",
                r"\b(?:[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s/:@'`]{1,256}|(?i:redis|rediss|postgres|postgresql|mysql|mariadb|mongodb|mongodb\+srv|amqp|amqps)://):([^\s/@'`]{1,256})@[a-zA-Z0-9\[]",
                Some(url_secret),
            ),
            words(&["://"]),
        ),
        // ~/.netrc: `machine <host> login <user> password <secret>`, on one line or several.
        (
            rule("netrc-password", r"(?i)\bmachine\s+\S+(?:\s+(?:login|account)\s+\S+)*\s+password\s+(\S{1,256})", Some(url_secret)),
            words(&["machine"]),
        ),
        // curl -u user:password, wget --user=u --password=p is the assignment rule's.
        (
            rule("curl-user-password", r#"(?:^|[\s'"])(?:-u|--user)(?:[ \t]+|=)['"]?[^\s:'"]{1,64}:([^\s'"]{1,256})"#, Some(user_password)),
            words(&["-u", "--user"]),
        ),
        // token: <value>, X-API-Key: <value>, STRIPE_API_KEY=<value>: a random value of a key that
        // names a credential (gitleaks' generic rule leaves out base64's `+` and `/`).
        (
            rule(
                "key-assignment",
                r#"(?i)(?:token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([A-Za-z0-9+/_.~=-]{16,512})"#,
                Some(random_secret),
            ),
            words(&["token", "key", "credential"]),
        ),
        // Authorization: Bearer <token> / Basic <b64> / <token>, in headers, curl and code.
        (
            rule(
                "authorization-header",
                r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate)\s+)?([A-Za-z0-9._~+/=:-]{8,})"#,
                Some(header_secret),
            ),
            words(&["authorization"]),
        ),
        (rule("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)", Some(header_secret)), words(&["bearer"])),
        // password=..., SECRET: ..., "passwd": "..." (a .env line, a config file, a command line).
        (
            rule(
                "password-assignment",
                r#"(?i)(?:password|passwd|pwd|passphrase|secret)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([^\s"'`,;<>(){}\[\]]{6,200})"#,
                Some(assigned_secret),
            ),
            words(&["password", "passwd", "pwd", "passphrase", "secret"]),
        ),
    ]
    .into_iter()
    .filter_map(|(r, w)| r.map(|r| (r, w)))
    .collect()
}

/// Not a placeholder: `$VAR`, `${VAR}`, `<token>`, `***`, `xxxx`, `...`, or a word that names what
/// belongs there (`scheme://user:password@host` in documentation).
pub(super) fn not_placeholder(s: &[u8]) -> bool {
    let first = s.first().copied().unwrap_or(b'$');
    let count = |c: u8| s.iter().filter(|b| **b == c).count();
    let placeholder = match first {
        b'$' => true,
        // `<token>`, `<unset>`, `<your-token>`; `{{ var }}`, `{VAR}`; `%VAR%`, `%s`.
        b'<' => s.contains(&b'>'),
        b'{' => s.contains(&b'}'),
        b'%' => percent_slot(s),
        // `***`, `*****abc`: mostly stars.
        b'*' => count(b'*') * 2 >= s.len(),
        _ => false,
    };
    // AWS's documentation marks its made-up keys so (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`).
    if placeholder || s.windows(7).any(|w| w == b"EXAMPLE") {
        return false;
    }
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "pass",
        "secret",
        "token",
        "changeme",
        "example",
        "placeholder",
        "your-password",
        "redacted",
        "null",
        "none",
        "nil",
        "unset",
        "empty",
        "undefined",
    ];
    if WORDS.iter().any(|w| s.eq_ignore_ascii_case(w.as_bytes())) {
        return false;
    }
    let distinct = {
        let mut seen = [false; 256];
        s.iter().for_each(|b| seen[*b as usize] = true);
        seen.iter().filter(|x| **x).count()
    };
    distinct > 2
}

/// A slot of a template that begins with `%`: `%VAR%` (Windows), `%s`, `%(name)s`; not a random
/// value that happens to start with `%` and hold another (`%ng2N~U~L=/6A%oBhkp`).
fn percent_slot(s: &[u8]) -> bool {
    let name = |t: &[u8]| !t.is_empty() && t.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    s.len() <= 3
        || s[1..].iter().position(|b| *b == b'%').is_some_and(|i| name(&s[1..1 + i]))
        || (s.starts_with(b"%(") && s.iter().position(|b| *b == b')').is_some_and(|i| name(&s[2..i])))
}

/// A URL's password: not a placeholder, and not one the text says is missing.
pub(super) fn url_secret(s: &[u8], _before: &[u8], _after: &[u8]) -> bool {
    not_placeholder(s)
}

/// An `Authorization:` header's or `Bearer` token's value: not a placeholder, not code, not words.
pub(super) fn header_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    not_placeholder(s) && (random_token(s) || (!is_code(s, before, after) && !wordy(s)))
}

/// A reference to a secret kept elsewhere, not the secret: a secret manager's or a file's
/// (`vault:kv/app#3`, `op://vault/item/field`, `arn:aws:secretsmanager:…`, `env:DB_PASSWORD`).
pub(super) fn is_reference(s: &[u8]) -> bool {
    const SCHEMES: &[&[u8]] = &[
        b"vault:",
        b"op://",
        b"arn:",
        b"ssm:",
        b"sm://",
        b"secretsmanager:",
        b"gcpsm:",
        b"azurekv:",
        b"keyvault:",
        b"env:",
        b"file:",
        b"k8s:",
        b"secret:",
        b"ref+",
    ];
    SCHEMES.iter().any(|p| s.len() > p.len() && s[..p.len()].eq_ignore_ascii_case(p))
}

/// A value of a key that names a credential (`token:`, `X-API-Key:`): random characters that are
/// not a placeholder, a reference or code.
pub(super) fn random_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    // An environment variable's key is made by a machine: long, of two kinds of characters at
    // least, and not words (`STRIPE_API_KEY=kHIM9LlriWaV9Eyc8oggCc7L4hRhrett`).
    if env_name(before)
        && s.len() >= 16
        && env_value(s)
        && !is_call_or_member(s, after)
        && !is_digest(s, before)
        && !is_version(s)
    {
        let kinds = [
            s.iter().any(u8::is_ascii_lowercase),
            s.iter().any(u8::is_ascii_uppercase),
            s.iter().any(u8::is_ascii_digit),
        ];
        if kinds.iter().filter(|k| **k).count() >= 2 && super::random::entropy(s) >= 3.0 {
            return true;
        }
    }
    not_placeholder(s)
        && !is_reference(s)
        && random_token(s)
        && !is_digest(s, before)
        && !is_file_name(s)
        && !is_version(s)
        && !(after.first() == Some(&b'(') || before.ends_with(b"->") || before.ends_with(b"::"))
}

/// `-u user:password`: a secret unless a placeholder or a reference, or a `user:group` pair of
/// another command's `-u` (`docker run -u node:node`, `-u 1000:1000`, `-u app:staff`).
pub(super) fn user_password(s: &[u8], before: &[u8], _after: &[u8]) -> bool {
    let user = before.strip_suffix(b":").unwrap_or(before);
    let user = &user[user.iter().rposition(|b| b.is_ascii_whitespace() || b"'\"=".contains(b)).map_or(0, |i| i + 1)..];
    let group =
        s.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_')) && s.len() <= 16;
    not_placeholder(s) && !is_reference(s) && s != user && (!group || random_token(s))
}

/// An environment variable's name (`POSTGRES_PASSWORD`, `STRIPE_API_KEY`): capitals, digits and
/// `_`, right before the assignment. Code seldom assigns a name of code to one, so its value is
/// judged as a value, not as an identifier (`MYSQL_ROOT_PASSWORD: MSsosq6WDoRkzsll`).
fn env_name(before: &[u8]) -> bool {
    let b = before.trim_ascii_end();
    let b = b.strip_suffix(b":=").or_else(|| b.strip_suffix(b"=")).or_else(|| b.strip_suffix(b":")).unwrap_or(b);
    let b = b.trim_ascii_end();
    let b = b.strip_suffix(b"\"").or_else(|| b.strip_suffix(b"'")).unwrap_or(b);
    let start =
        b.iter().rposition(|c| !(c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')).map_or(0, |i| i + 1);
    let name = &b[start..];
    // Where an environment is set: a line of its own (`.env`, Compose's `- NAME=`, YAML's
    // `NAME: value`), `export`, Dockerfile's `ENV`, `docker run -e`, `env`; not a constant of code
    // (`pub const NAME: Type = …`, `const NAME = …`).
    let line = &b[..start];
    let line = &line[line.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1)..];
    let line = line.trim_ascii();
    let line = line.strip_suffix(b"\"").or_else(|| line.strip_suffix(b"'")).unwrap_or(line).trim_ascii_end();
    let last = &line[line.iter().rposition(|c| c.is_ascii_whitespace()).map_or(0, |i| i + 1)..];
    let setting = line.is_empty()
        || [&b"-"[..], b"export", b"ENV", b"-e", b"--env", b"env", b"set", b"--build-arg", b"ARG"].contains(&last);
    setting && name.len() >= 4 && name[0].is_ascii_uppercase() && !name.ends_with(b"_FILE") && !name.ends_with(b"_PATH")
}

/// Code that an upper-case name is given in a source file: a call (`getpass.getpass(`) or a
/// member chain of identifiers (`token.ERRORTOKEN`, `exports.CONNECTION_TOKEN_CHARS`).
fn is_call_or_member(s: &[u8], after: &[u8]) -> bool {
    let ident = |p: &[u8]| {
        p.first().is_some_and(|f| f.is_ascii_alphabetic() || *f == b'_')
            && p.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    after.first() == Some(&b'(') || (s.contains(&b'.') && s.split(|b| *b == b'.').all(ident))
}

/// A value given to an environment variable that names a secret: anything but a placeholder, a
/// reference, a word of the list, a number, a path or another variable's name.
fn env_value(s: &[u8]) -> bool {
    let constant = s.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_');
    let path = (s.starts_with(b"/") || s.starts_with(b"~/") || s.starts_with(b"./"))
        && s.iter().all(|b| b.is_ascii_alphanumeric() || b"/._-~".contains(b) && (*b != b'~' || s.starts_with(b"~/")))
        && wordy(s);
    let lower = s.to_ascii_lowercase();
    let word =
        ["true", "false", "null", "none", "required", "optional", "changeme"].iter().any(|w| lower == w.as_bytes());
    s.len() >= 8
        && not_placeholder(s)
        && !is_reference(s)
        && !constant
        && !path
        && !word
        && !s.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        && !lower.starts_with(b"[redacted")
}

/// The value of a `password=` assignment is a secret, unless it is code or a placeholder: an
/// identifier or a call (`getPassword()`, `config.db.password`, `Zeroizing::new(`), a word
/// (`required`, `true`), a path (`/etc/x`, a cloud secret manager's `projects/p/secrets/s`), a
/// version (`"@inquirer/password": "^4.0.10"`), or a number. A secret has a digit or a symbol, and
/// isn't only letters and dots.
pub(super) fn assigned_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    if !not_placeholder(s) || is_reference(s) {
        return false;
    }
    if env_name(before) {
        return env_value(s) && !is_call_or_member(s, after);
    }
    // A path (`/etc/x`, `~/.pgpass`, `./secrets/db`), unless what follows the slash is no words.
    if (s.starts_with(b"/") || s.starts_with(b"~") || s.starts_with(b"./")) && (wordy(s) || !random_token(s)) {
        return false;
    }
    // Random characters are a secret whatever symbol they start or hold (`=AyLBh5…`, `2DkpC+jT/…`):
    // code is made of words.
    if random_token(s.strip_prefix(b"=").unwrap_or(s)) {
        return true;
    }
    // A reference, a path or a deref (`secret_key: &HpkePrivateKey`, `Secrets::Aes128Gcm`), a
    // hexadecimal literal (`ExtendedMasterSecret => 0x0017`).
    let hex = s.len() > 2 && s[..2].eq_ignore_ascii_case(b"0x") && s[2..].iter().all(u8::is_ascii_hexdigit);
    if matches!(s[0], b'&' | b':' | b'=' | b'|' | b'!' | b'?' | b'*') || hex {
        return false;
    }
    if is_code(s, before, after) || is_version(s) || (s.iter().filter(|b| **b == b'/').count() >= 2 && wordy(s)) {
        return false;
    }
    let letters_only = s.iter().all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b'-'));
    let digits_only = s.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    let lower = s.to_ascii_lowercase();
    let word = ["true", "false", "null", "none", "undefined", "required", "optional", "redacted", "hidden", "changeme"]
        .iter()
        .any(|w| lower == w.as_bytes());
    !(letters_only || digits_only || word || lower.starts_with(b"[redacted"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_that_are_code_are_not_secrets() {
        for s in [
            "getPassword",
            "config.db.password",
            "true",
            "required",
            "$DB_PASSWORD",
            "${PW}",
            "<password>",
            "/etc/x",
            "12345678",
            "********",
        ] {
            assert!(!assigned_secret(s.as_bytes(), b"", b""), "{s}");
        }
        for s in ["hunter2hunter2", "Xy7!pQ9#", "s3cr3t-v4lue"] {
            assert!(assigned_secret(s.as_bytes(), b"", b""), "{s}");
        }
        // Given to an environment variable, a value is judged as a value, not as a name of code.
        for s in ["MSsosq6WDoRkzsll", "cV_FydibQSdFMwBCFa", "_c58IARY+zHrp1sQ", "/kvnYVBVdp~oau4.BTK_cei"] {
            assert!(!assigned_secret(s.as_bytes(), b"x.password = ", b"") || s.starts_with('_'), "{s} as code");
            assert!(assigned_secret(s.as_bytes(), b"  - POSTGRES_PASSWORD=", b""), "{s}");
            assert!(assigned_secret(s.as_bytes(), b"MYSQL_ROOT_PASSWORD: ", b""), "{s}");
        }
        for s in ["${POSTGRES_PASSWORD}", "/run/secrets/db/password", "DB_PASSWORD", "changeme", "12345678"] {
            assert!(!assigned_secret(s.as_bytes(), b"POSTGRES_PASSWORD=", b""), "{s}");
        }
        assert!(random_secret(b"kHIM9LlriWaV9Eyc8oggCc7L4hRhrett", b"STRIPE_API_KEY=", b""));
        // curl's user:password, not another command's user:group.
        assert!(assigned_secret(b"/bRNiK/zR3YCQXuLwzuQ214", b"POSTGRES_PASSWORD=", b""));
        assert!(assigned_secret(b"%ng2N~U~L=/6A%oBhkp", b"DB_PASSWORD=", b""));
        assert!(user_password(b"%dT/.PYBeHr5ab%y!3rER!xBmCc7", b"curl -sS -u admin:", b""));
        for s in ["%DB_PASSWORD%", "%s", "%(password)s"] {
            assert!(!not_placeholder(s.as_bytes()), "{s}");
        }
        assert!(!assigned_secret(b"_bindgen_ty_3", b"pub const DEVCONF_STABLE_SECRET: ", b""));
        assert!(!assigned_secret(b"getpass.getpass", b"    PASSWD = ", b"(\"IMAP password"));
        assert!(!random_secret(b"exports.CONNECTION_TOKEN_CHARS", b"    CONNECTION_TOKEN_CHARS: ", b","));
        assert!(assigned_secret(b"Zq8Lw3Xv7Rt2", b"docker run -e DB_PASSWORD=", b""));
        assert!(user_password(b"Drky9NGzIour+NiUA3I1l", b"curl -sS -u admin:", b""));
        for (s, before) in [("node", "docker run -u node:"), ("1000", "-u 1000:"), ("staff", "-u app:")] {
            assert!(!user_password(s.as_bytes(), before.as_bytes(), b""), "{s}");
        }
        // A URL's placeholder password is not one; a real-looking one is.
        assert!(!not_placeholder(b"password") && !not_placeholder(b"Secret") && not_placeholder(b"p%40ss-9"));
    }
}
