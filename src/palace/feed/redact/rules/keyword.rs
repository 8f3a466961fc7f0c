//! A value given to a name that says it is secret, as detect-secrets' keyword plugin finds it
//! (Yelp/detect-secrets, Apache-2.0): quoted after the name (`password = "…"`, `api_key: '…'`,
//! `secret := \`…\``, `char secrete[25] = "…";`, `password => "…"`, `setPassword("…")`), compared
//! with it (`if ("…" == password)`), or unquoted but made of symbols no name or code is made of
//! (`db_pass = m{{h}o)p${e]nob(ody…`). The `password=` rule of `ours` takes unquoted values of
//! a credential's alphabet; these take what a person types between quotes, spaces included.

use super::code::{is_code, is_version, wordy};
use super::ours::{is_reference, not_placeholder};
use super::{Check, Rule};

/// detect-secrets' denylist of names: a name that holds one of these says its value is secret.
const NAMES: &str = r"(?:api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contrase(?:\xC3\xB1|n)a)";

/// The words that gate these rules: one of them is in every name of [`NAMES`].
const WORDS: &[&str] = &["key", "pass", "pwd", "secret", "contrase"];

/// The longest value taken (a quoted passphrase, a line of symbols); longer is not a typed secret.
const MAX_VALUE: usize = 200;
/// How far a match reaches from its keyword: a name, its assignment and a value.
const REACH: usize = 2 * MAX_VALUE + 64;

/// The keyword rules, with their keywords.
pub(super) fn keyword() -> Vec<(Rule, Vec<String>)> {
    // The match starts at the name's secret word, not at the name's start (`my_password_secure`):
    // a leading class would make every letter of a line a place a match may begin. The whole name
    // is read back from the bytes before the value (`name_of`).
    let name = format!(r"{NAMES}[a-z0-9_]*");
    // Unbounded repeats, bounded by the checks (`MAX_VALUE`) and by `REACH`: a counted repeat
    // (`{1,200}`) multiplies the states of the regex's DFA by its count, and on a line dense with
    // quotes the DFA's cache would be rebuilt again and again.
    let quoted = r#"(?:"([^"\n]+)"|'([^'\n]+)'|`([^`\n]+)`)"#;
    // The assignment is required: without it a name's own closing quote would open a "value"
    // (`privateKey` is not a [`KeyObject`]); a value after spaces alone ends a statement (`;`).
    // One regex for the three forms that begin with the name (one scan of a line, not three),
    // tried in this order at each name: a quoted value after an assignment, a quoted value after
    // spaces that ends a statement, an unquoted value of symbols. [`name_value`] tells them apart.
    let after = r#"["'`\]]{0,2}[ \t]*(?:\[[0-9]*\])?[ \t]*(?:===?|!==?|:=|=>|=|:|\.assign\()[ \t]*@?"#;
    let soup = r#"["'\]]{0,2}[ \t]*(?::=|=>|=|:)[ \t]*([^\s"'`]{5,}[^\s"'`,;])"#;
    let named = format!(r#"(?i){name}(?:{after}{quoted}|[ \t]+{quoted}[ \t]*;|{soup})"#);
    let before = format!(r#"(?i){quoted}[ \t]*[!=]={{1,2}}[ \t]*[a-z0-9_.]*{NAMES}"#);
    let rule = |pattern: &str, check: Check| {
        Rule::own("password-assignment", pattern, false, Some(check), REACH).map(|r| Rule { name_first: true, ..r })
    };
    // A config file's line (`aws_secret_access_key: value with quotes and spaces`): the name
    // begins the line and its value, words and spaces included, runs to the line's end.
    // Anchored at the line's start, so a log's `[db] password: (from env)` is not even a match;
    // the first of the value's bytes refuses a quote (the rule above), a comment, a block, a
    // reference, and it has a blank before the line's end (one word is the other rules').
    let config = format!(
        r#"(?im)^[ \t]*(?:-[ \t]+|export[ \t]+)?[a-z0-9_.-]*?{name}[ \t]*(?::|=)[ \t]*([^\s"'`#|>&*!\[{{(<$%@][^ \t\r\n]*[ \t][^\r\n]*)"#
    );
    let words: Vec<String> = WORDS.iter().map(|s| s.to_string()).collect();
    let line_rule = |pattern: &str, check: Check| {
        Rule::own("password-assignment", pattern, false, Some(check), REACH)
            .map(|r| Rule { line_start: Some(config_line), ..r })
    };
    [rule(&named, name_value), rule(&before, compared_secret), line_rule(&config, config_secret)]
        .into_iter()
        .flatten()
        .map(|r| (r, words.clone()))
        .collect()
}

/// The name a value is given to: the identifier before the assignment and its quotes.
fn name_of(before: &[u8]) -> Vec<u8> {
    let end = before.iter().rposition(|b| b.is_ascii_alphanumeric() || *b == b'_').map_or(0, |i| i + 1);
    let start = before[..end]
        .iter()
        .rposition(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')))
        .map_or(0, |i| i + 1);
    // camelCase is words too (`usernamePasswordInOptions`): a `_` at each hump, then lowercase.
    let mut name = Vec::new();
    for (i, b) in before[start..end].iter().enumerate() {
        if i > 0 && b.is_ascii_uppercase() && before[start + i - 1].is_ascii_lowercase() {
            name.push(b'_');
        }
        name.push(b.to_ascii_lowercase());
    }
    name
}

/// Names that hold a secret's word but name something about it, not it (`password_hint`,
/// `secret_name`, `api_key_header`).
fn names_about_it(name: &[u8]) -> bool {
    const ABOUT: &[&[u8]] = &[
        b"hint",
        b"label",
        b"placeholder",
        b"prompt",
        b"text",
        b"message",
        b"msg",
        b"title",
        b"help",
        b"description",
        b"desc",
        b"error",
        b"field",
        b"name",
        b"id",
        b"file",
        b"path",
        b"env",
        b"var",
        b"length",
        b"len",
        b"policy",
        b"type",
        b"format",
        b"url",
        b"ref",
        b"arn",
        b"version",
        b"header",
        b"param",
        b"input",
        b"confirm",
        b"question",
        b"reset",
        b"forgot",
        b"old",
        b"options",
        b"option",
        b"opts",
        b"config",
        b"settings",
        b"algorithm",
        b"alg",
        b"kind",
        b"mode",
        b"size",
        b"bits",
        b"method",
        b"scheme",
        b"source",
        b"provider",
        b"store",
        b"encoding",
        b"prefix",
        b"suffix",
        b"schema",
    ];
    name.split(|b| matches!(b, b'_' | b'.' | b'-')).any(|part| ABOUT.contains(&part))
}

/// A key's value is made by a machine: one lowercase word or slug that reads as words
/// (`apiKey: "gitlab-duo"`, a provider's name) is a label. A password may be words.
fn a_label_for_a_key(name: &[u8], s: &[u8]) -> bool {
    let key = name.windows(3).any(|w| w == b"key") && !name.windows(4).any(|w| w == b"pass" || w == b"secr");
    key && s.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')) && wordy(s)
}

/// Words that a quoted value of a secret's name is when it is not one: a type, a flag, a state.
fn a_type_or_flag(s: &[u8]) -> bool {
    const WORDS: &[&str] = &[
        "string",
        "str",
        "text",
        "bool",
        "boolean",
        "number",
        "int",
        "integer",
        "float",
        "object",
        "any",
        "array",
        "list",
        "dict",
        "map",
        "bytes",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "hidden",
        "visible",
        "default",
        "blank",
        "n/a",
        "tbd",
        "todo",
        "secret",
        "password",
        "function",
        "undefined",
        "symbol",
        "bigint",
        "value",
        "data",
    ];
    WORDS.iter().any(|w| s.eq_ignore_ascii_case(w.as_bytes()))
}

/// What names the secret in it (`"Forgot your password?"`, `"Your API key"`): a label, not a value.
fn names_a_secret(s: &[u8]) -> bool {
    let lower = s.to_ascii_lowercase();
    ["pass", "secret", "key", "pwd", "token", "contrase"]
        .iter()
        .any(|w| lower.windows(w.len()).any(|x| x == w.as_bytes()))
}

fn value_is_secret(s: &[u8]) -> bool {
    let trimmed = s.trim_ascii();
    if s.len() > MAX_VALUE {
        return false;
    }
    // A constant's name (`"STRING_VALUE"`), a marker of a redaction, an ellipsis (`"sk-..."`), a
    // command that fetches it (`"!op read …"`).
    let constant =
        trimmed.contains(&b'_') && trimmed.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_');
    let elided = trimmed.ends_with(b"...") || trimmed.ends_with("\u{2026}".as_bytes());
    !trimmed.is_empty()
        && not_placeholder(trimmed)
        && !is_reference(trimmed)
        && !a_type_or_flag(trimmed)
        && !is_version(trimmed)
        && ![&b" = "[..], b" == ", b" != ", b" || ", b" && "]
            .iter()
            .any(|op| trimmed.windows(op.len()).any(|w| w == *op))
        && !names_a_secret(trimmed)
        && !constant
        && !elided
        && !trimmed.starts_with(b"!")
        && !trimmed.to_ascii_lowercase().starts_with(b"[redacted")
        && !(trimmed.contains(&b'%') && trimmed.windows(2).any(|w| w[0] == b'%' && b"sdif(".contains(&w[1])))
        && !((trimmed.starts_with(b"/") || trimmed.starts_with(b"~") || trimmed.starts_with(b"./")) && wordy(trimmed))
}

/// A value after a secret's name: quoted (the bytes before it end with its quote) or not.
fn name_value(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    if before.last().is_some_and(|b| matches!(b, b'"' | b'\'' | b'`')) {
        quoted_secret(s, before, after)
    } else {
        soup_secret(s, before, after)
    }
}

/// A quoted value after a secret's name.
fn quoted_secret(s: &[u8], before: &[u8], _after: &[u8]) -> bool {
    let name = name_of(before);
    value_is_secret(s) && !names_about_it(&name) && !a_label_for_a_key(&name, s.trim_ascii())
}

/// A line that may be a config file's line of a secret's name: blanks, `- ` or `export `, then a
/// name holding one of the rule's words, then `:` or `=` (the regex decides the rest).
fn config_line(line: &[u8]) -> bool {
    let mut rest = line.trim_ascii_start();
    for lead in [&b"- "[..], b"export "] {
        if let Some(r) = rest.strip_prefix(lead) {
            rest = r.trim_ascii_start();
        }
    }
    let len = rest.iter().position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-') || *b >= 0x80));
    let Some(len) = len.filter(|n| *n > 0) else { return false };
    if !matches!(rest[len..].trim_ascii_start().first(), Some(b':' | b'=')) {
        return false;
    }
    let name = &rest[..len];
    WORDS.iter().any(|w| name.windows(w.len()).any(|x| x.eq_ignore_ascii_case(w.as_bytes())))
}

/// A config file's value of words after a secret's name that begins its line (indented, a YAML
/// list's item or after `export`): a one-word value is the other rules' to judge, a comment,
/// a block or a reference is not a value, and words that name the secret are a description.
fn config_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    // The regex placed the name at the line's start, with only the assignment after it, and
    // refused a value that begins as a quote, a comment, a block or a reference does.
    let value = s.trim_ascii();
    value.contains(&b' ')
        && !value.starts_with(b"//")
        // Code: a call (`Type.Optional(…)`) or a statement's or a literal's end.
        && !value.windows(2).any(|w| (w[0].is_ascii_alphanumeric() || w[0] == b'_') && w[1] == b'(')
        && !matches!(value[value.len() - 1], b',' | b';' | b'{' | b'(' | b'[')
        // An expression (`napi_key_skip_symbols = 1 << 4`) and a value before a comment
        // (`CLOUDFLARE_API_KEY=...   # or use /login`) are not a value of words.
        && value.windows(2).filter(|w| w[0].is_ascii_alphabetic() && w[1].is_ascii_alphabetic()).count() >= 2
        && ![&b"<<"[..], b">>", b"&&", b"||", b" #", b"\t#"].iter().any(|op| value.windows(op.len()).any(|w| w == *op))
        && value_is_secret(value)
        && !names_about_it(&name_of(before))
        && !is_code(value, before, after)
}

/// A quoted value compared with a secret's name.
fn compared_secret(s: &[u8], _before: &[u8], _after: &[u8]) -> bool {
    value_is_secret(s)
}

/// An unquoted value of symbols: three kinds of bracket, sign or punctuation that no name, number,
/// path or call is made of together, brackets that don't pair up as code's do, and not code.
fn soup_secret(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    let signs = |set: &[u8]| s.iter().any(|b| set.contains(b));
    let kinds = [
        signs(b"{}"),
        signs(b"()"),
        signs(b"[]"),
        signs(b"<>"),
        signs(b"$#@!^*?"),
        signs(b",.:;"),
        s.iter().any(|b| *b >= 0x80),
    ];
    let symbols = kinds.iter().filter(|k| **k).count();
    // Code opens before it closes (`Zeroizing::new([0u8`, `f(a)[0]`) and calls by name at its
    // start (`Type.Optional(`, `readEnv(`) or reads a member (`credential.access`); a typed
    // password closes what it never opened.
    let call = s
        .iter()
        .position(|b| *b == b'(')
        .is_some_and(|i| i > 0 && s[..i].iter().all(|b| b.is_ascii_alphanumeric() || b"_.:$".contains(b)));
    let member = s
        .windows(3)
        .any(|w| w[0].is_ascii_alphabetic() && w[1] == b'.' && (w[2].is_ascii_alphabetic() || w[2] == b'_'));
    symbols >= 3
        && s.len() >= 6
        && !member
        && (misclosed(s) || !s.iter().any(|b| b"()[]{}<>".contains(b)))
        && !call
        && !s.windows(2).any(|w| w == b"::")
        && value_is_secret(s)
        && !names_about_it(&name_of(before))
        && !is_code(s, before, after)
        && !matches!(s[0], b'[' | b'(' | b'{' | b'&' | b'*')
}

/// True when `s` closes a bracket it never opened, or closes one with another's closer.
fn misclosed(s: &[u8]) -> bool {
    let mut stack = Vec::new();
    for b in s {
        match b {
            b'(' | b'[' | b'{' | b'<' => stack.push(*b),
            b')' | b']' | b'}' | b'>' => {
                let open = match b {
                    b')' => b'(',
                    b']' => b'[',
                    b'}' => b'{',
                    _ => b'<',
                };
                if stack.pop() != Some(open) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finds(line: &str) -> Vec<String> {
        super::super::secrets_found(keyword().iter().map(|(r, _)| r), line)
    }

    #[test]
    fn quoted_compared_and_symbol_values_are_found() {
        assert_eq!(keyword().len(), 3);
        let soup = "m{{h}o)p${e]nob(ody[finds>-_$#thisone}}";
        for (line, secret) in [
            ("password = \"value with quotes and spaces\"", "value with quotes and spaces"),
            ("api_key: 'hunter and friends'", "hunter and friends"),
            (&format!("if (db_pass !== \"{soup}\") {{"), soup),
            (&format!("if (\"{soup}\" === my_private_key) {{"), soup),
            (&format!("char secrete[25] = \"{soup}\";"), soup),
            (&format!("password = @\"{soup}\";"), soup),
            (&format!("db_pass := {soup},"), soup),
            (&format!("secret: {soup}'"), soup),
            ("secrete = \"A,.:-\u{a8}@*\u{bf}?!\"", "A,.:-\u{a8}@*\u{bf}?!"),
            ("secrete := A,.:-\u{a8}@*\u{bf}?!", "A,.:-\u{a8}@*\u{bf}?!"),
            ("aws_secret_access_key: value with quotes and spaces", "value with quotes and spaces"),
            ("[default]\n  db_password = correct horse battery staple\n", "correct horse battery staple"),
            ("  - api_key: two words", "two words"),
            ("export  API_KEY=two words", "two words"),
        ] {
            assert!(finds(line).iter().any(|f| f == secret), "{line}: {:?}", finds(line));
        }
    }

    #[test]
    fn a_window_that_begins_inside_a_line_is_not_a_lines_start() {
        let line = "[db] password: correct horse battery staple";
        let at = line.find("password").unwrap_or(0);
        let mut hits = Vec::new();
        for (r, _) in keyword() {
            r.find_in(line.as_bytes(), at, line.len(), &mut hits);
        }
        assert!(hits.is_empty(), "{hits:?}");
        let config = "[db]\npassword: correct horse battery staple";
        let at = config.find("password").unwrap_or(0);
        for (r, _) in keyword() {
            r.find_in(config.as_bytes(), at, config.len(), &mut hits);
        }
        assert_eq!(hits.iter().map(|h| &config[h.start..h.end]).collect::<Vec<_>>(), ["correct horse battery staple"]);
    }

    #[test]
    fn labels_types_and_code_are_not_secrets() {
        for line in [
            "\"password\": \"Password\"",
            "\"forgot_password\": \"Forgot your password?\"",
            "\"password_hint\": \"Use the dog's name\"",
            "api_key: \"Your API key\"",
            "password: \"string\"",
            "secret = \"${SECRET}\"",
            "password = \"%s\" % pw",
            "private_key = \"~/.ssh/id_rsa\"",
            "password = \"\"",
            "kwargs.get(\"password\", \"default\")",
            "secret: Option<Vec<u8>>,",
            "password = getPassword(user, [a], {b})",
            "secret_name = \"db-credentials\"",
            "password: foo.bar(x)[0]",
            "api_key: https://vault/x?y#z",
            "If `privateKey` is not a [`KeyObject`][], this",
            "return typeof this._options.apiKey === 'function';",
            "{ type: \"api_key\", source: credential ? \"stored credential\" }",
            "apiKey = readEnv('AZURE_OPENAI_API_KEY'), apiVersion = readEnv('OPENAI_API_VERSION')",
            "while data['password'] != data['confirm']:",
            "'password': config.get(server, 'password'),",
            "const streamOptions = { ...options, apiKey: \"gitlab-duo\", headers };",
            "- CI: Use `$PWD` instead of `$(pwd)` in run-dock",
            "let mut secret = Zeroizing::new([0u8; 5]);",
            "let b3 = ObserveSecretBox::new([u128::MAX; 10]);",
            " * //     SecretKey: \"STRING_VALUE\",",
            "apiKey: Type.Optional(Type.String({ minLength: 1 })),",
            "\"apiKey\": \"sk-...\"",
            "\"apiKey\": \"!op read 'op://vault/item/credential'\"",
            "\"oauth-client-secret\": \"value\",",
            "if (sanitized.password) sanitized.password = '[REDACTED]';",
            "export type GenerateSecretAlgorithm = 'HS256' | 'HS384'",
            "const usernamePasswordInOptions = \"username\" in options && \"password\" in options",
            "return{apiKey:credential.access,baseUrl:getBaseUrl(credential.access,c)}}",
            "apiKey===void 0&&(apiKey=opts.profile!=null?null:readEnv(\"ANTHROPIC_API_KEY\")",
            "secret: the name of the Kubernetes secret",
            "password: ${{ secrets.DB_PASSWORD }}",
            "api_key: # set in CI",
            "password: !vault |",
            "The password: is read from the vault",
            "password_hint: the dog's name",
            "password: (from env)",
            "  napi_key_skip_symbols = 1 << 4",
            "export CLOUDFLARE_API_KEY=...           # or use /login",
        ] {
            assert!(finds(line).is_empty(), "{line}: {:?}", finds(line));
        }
    }
}
