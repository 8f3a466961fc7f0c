//! Formats gitleaks has no rule for (it scans code; we scan what a terminal and a model said): a
//! URL's password, `.netrc`, `curl -u`, `Authorization:` and `Bearer`, a `password=` assignment and
//! a random value of a key that names a credential; and the checks that refuse their matches when
//! the value is a placeholder, a reference to a secret kept elsewhere, or code.

use super::code::{is_code, is_digest, is_file_name, is_version, wordy};
use super::gitleaks::global_allow;
use super::random::random_token;
use super::{compile, reach, Check, Rule};
use std::sync::Arc;

/// Formats gitleaks has no rule for (it scans code, we scan what a terminal and a model said).
pub(super) fn ours() -> Vec<(Rule, Vec<String>)> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rule = |kind: &str, pattern: &str, check: Option<Check>, priority: u8| {
        compile(pattern).ok().map(|regex| Rule {
            kind: Arc::from(kind),
            regex,
            secret_group: Some(1),
            entropy: None,
            allow: global_allow(),
            check,
            priority,
            whole: false,
            twin_word: None,
            reach: reach(pattern),
        })
    };
    [
        // scheme://user:password@host: the password (the user name stays).
        (
            rule(
                "url-password",
                r"\b(?:[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s/:@'`]{1,256}|(?i:redis|rediss|postgres|postgresql|mysql|mariadb|mongodb|mongodb\+srv|amqp|amqps)://):([^\s/@'`]{1,256})@[a-zA-Z0-9\[]",
                Some(url_secret),
                2,
            ),
            words(&["://"]),
        ),
        // ~/.netrc: `machine <host> login <user> password <secret>`, on one line or several.
        (
            rule("netrc-password", r"(?i)\bmachine\s+\S+(?:\s+(?:login|account)\s+\S+)*\s+password\s+(\S{1,256})", Some(url_secret), 2),
            words(&["machine"]),
        ),
        // curl -u user:password, wget --user=u --password=p is the assignment rule's.
        (
            rule("curl-user-password", r#"(?:^|[\s'"])(?:-u|--user)(?:[ \t]+|=)['"]?[^\s:'"]{1,64}:([^\s'"]{1,256})"#, Some(assigned_secret), 2),
            words(&["-u", "--user"]),
        ),
        // token: <value>, X-API-Key: <value>, STRIPE_API_KEY=<value>: a random value of a key that
        // names a credential (gitleaks' generic rule leaves out base64's `+` and `/`).
        (
            rule(
                "key-assignment",
                r#"(?i)\b[a-z0-9_.-]{0,40}(?:token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([A-Za-z0-9+/_.~=-]{16,512})"#,
                Some(random_secret),
                2,
            ),
            words(&["token", "key", "credential"]),
        ),
        // Authorization: Bearer <token> / Basic <b64> / <token>, in headers, curl and code.
        (
            rule(
                "authorization-header",
                r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate)\s+)?([A-Za-z0-9._~+/=:-]{8,})"#,
                Some(header_secret),
                2,
            ),
            words(&["authorization"]),
        ),
        (rule("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)", Some(header_secret), 2), words(&["bearer"])),
        // password=..., SECRET: ..., "passwd": "..." (a .env line, a config file, a command line).
        (
            rule(
                "password-assignment",
                r#"(?i)\b[a-z0-9_.-]{0,40}(?:password|passwd|pwd|passphrase|secret)[a-z0-9_.-]{0,40}["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([^\s"'`,;<>(){}\[\]]{6,200})"#,
                Some(assigned_secret),
                2,
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
        b'%' => count(b'%') >= 2 || s.len() <= 3,
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
    not_placeholder(s)
        && !is_reference(s)
        && random_token(s)
        && !is_digest(s, before)
        && !is_file_name(s)
        && !is_version(s)
        && !(after.first() == Some(&b'(') || before.ends_with(b"->") || before.ends_with(b"::"))
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
        // A URL's placeholder password is not one; a real-looking one is.
        assert!(!not_placeholder(b"password") && !not_placeholder(b"Secret") && not_placeholder(b"p%40ss-9"));
    }
}
