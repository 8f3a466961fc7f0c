//! detect-secrets' credential formats (Yelp/detect-secrets' plugins, Apache-2.0) that gitleaks
//! names only beside a keyword or only with an entropy floor: an Artifactory token, an AWS key id,
//! a Discord bot token, a Mailchimp key, a Telegram bot token, a Twilio key, SoftLayer and Cloudant
//! credentials, GitLab's token prefixes, a JWT without its signature, an npm auth token, an OpenAI
//! key, a PyPI token. Each is a credential by its form alone, as detect-secrets takes it: no
//! entropy floor (a made-up `AKIAZZZZZZZZZZZZZZZZ` in a README is redacted as a key's form, which
//! costs nothing in a palace). A rule with no keywords is gated by its own regex (see
//! [`super::Gate`]): its tokens begin with two letters that prose is full of (`AP`, `AC`).

use super::{reach, Gate, Rule};

/// The assignment of detect-secrets' `build_assignment_regex`: `=`, `:`, `:=`, `=>`, `::` or
/// spaces, the key and the value optionally quoted.
const ASSIGN: &str = r#"["'\]]{0,2}[ \t]*(?::=|::|=>|=|:|[ \t])[ \t]*["']?"#;

/// detect-secrets' formats, each with its gate: its keywords (lowercase), or a regex cheaper than
/// the rule's own that every string holding one of its tokens matches.
pub(super) fn plugins() -> Vec<(Rule, Gate)> {
    // Priority 2: after gitleaks' own rule of the same span (its kind names the format more
    // precisely).
    let rule =
        |kind: &str, pattern: &str, check: Option<super::Check>| Rule::own(kind, pattern, true, check, reach(pattern));
    let words = |w: &[&str]| Gate::Keywords(w.iter().map(|s| s.to_string()).collect());
    let softlayer = format!(
        r"(?i)(?:softlayer|\bsl)[_-]?(?:api)?[_-]?(?:key|pwd|password|pass|token){ASSIGN}(?-i:([a-z0-9]{{64}}))\b"
    );
    let cloudant = format!(
        r"(?i)(?:cloudant|\bclou|\bcl)[_-]?(?:api)?(?:key|pwd|pw|password|pass|token){ASSIGN}(?-i:([0-9a-f]{{64}}|[a-z]{{24}}))\b"
    );
    [
        // Artifactory: an API token (`AKC…`) or an encrypted password (`AP<hex digit>…`).
        (
            rule(
                "artifactory-token",
                r#"(?:^|[\s=:"'])(AKC[a-zA-Z0-9]{10,128}|AP[0-9A-F][a-zA-Z0-9]{8,128})(?:$|[\s"',;])"#,
                Some(not_a_word),
            ),
            // Its literal prefixes make the regex its own fast gate (`AP` + a hex digit is in prose
            // too often for keywords).
            Gate::Regex(r"AKC[a-zA-Z0-9]{10}|AP[0-9A-F][a-zA-Z0-9]{8}"),
        ),
        (
            rule("aws-access-key-id", r"\b((?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16})\b", None),
            words(&["a3t", "abia", "acca", "akia", "asia"]),
        ),
        (
            rule("aws-secret-access-key", r#"(?i)aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['"]((?-i:[0-9a-zA-Z/+]{40}))['"]"#, None),
            words(&["aws"]),
        ),
        // A bot token: the user id in base64 (`MT…`, `Nz…`, `OD…`), a timestamp, an HMAC.
        // Gated by its two dots (a search for a literal), not by its first letter (any letter).
        (
            rule("discord-bot-token", r"\b([a-zA-Z0-9_-]{0,2}[MNO][a-zA-Z0-9_-]{23,25}\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27,38})", None),
            Gate::Regex(r"\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}"),
        ),
        (rule("mailchimp-api-key", r"\b([0-9a-z]{32}-us[0-9]{1,2})\b", None), words(&["-us"])),
        (rule("telegram-bot-token", r"\b([0-9]{8,10}:AA[0-9A-Za-z_-]{33})(?:[^0-9A-Za-z_-]|$)", None), words(&[":aa"])),
        (rule("twilio-key", r"\b((?:AC|SK)[a-z0-9]{32})\b", None), Gate::Regex(r"(?:AC|SK)[a-z0-9]{32}")),
        (rule("softlayer-api-key", &softlayer, None), words(&["softlayer", "sl_", "sl-", "slapi", "slkey", "slpass", "slpwd", "sltoken"])),
        (
            rule("softlayer-api-key", r"(?i)https?://api\.softlayer\.com/soap/v3(?:\.1)?/((?-i:[a-z0-9]{64}))", None),
            words(&["softlayer"]),
        ),
        (
            rule("cloudant-credential", &cloudant, None),
            words(&["cloudant", "clou", "cl_", "cl-", "clapi", "clkey", "clpw", "clpass", "cltoken"]),
        ),
        (
            rule("cloudant-credential", r"(?i)https?://[a-z0-9_-]+:((?-i:[0-9a-f]{64}|[a-z]{24}))@[a-z0-9_-]+\.cloudant\.com", None),
            words(&["cloudant"]),
        ),
        (
            rule(
                "gitlab-token",
                r"\b((?:glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_-]{20,50}|GR1348941[A-Za-z0-9_-]{20,50}|glcbt-(?:[0-9a-fA-F]{2}_)?[A-Za-z0-9_-]{20,50}|glimt-[A-Za-z0-9_-]{25}|glptt-[A-Za-z0-9_-]{40}|glagent-[A-Za-z0-9_-]{50,1024}|gloas-[A-Za-z0-9_-]{64})(?:[^A-Za-z0-9_]|$)",
                None,
            ),
            words(&["glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"]),
        ),
        // A JWT's header and claims, with or without its signature (`eyJ` is `{"` in base64).
        (rule("jwt", r"\b(eyJ[A-Za-z0-9_=-]{10,}\.[A-Za-z0-9_=-]{10,}(?:\.[A-Za-z0-9_.+/=-]*)?)", None), words(&["eyj"])),
        (rule("npm-auth-token", r#"//[^\s"']+/:_authToken=[ \t]*(npm_[^\s"'`]+|[A-Fa-f0-9-]{36})"#, None), words(&["_authtoken"])),
        (rule("openai-api-key", r"\b(sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})", None), words(&["t3blbkfj"])),
        (rule("pypi-token", r"\b(pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{70,1000})", None), words(&["pypi-age"])),
    ]
    .into_iter()
    .filter_map(|(r, w)| r.map(|r| (r, w)))
    .collect()
}

/// Not a word in capitals (`APACHE2LICENSE`, `APIKEY`-like constants): `AP` and a hex digit begin
/// some of those.
fn not_a_word(s: &[u8], _before: &[u8], _after: &[u8]) -> bool {
    !s.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        || s.iter().filter(|b| b.is_ascii_digit()).count() * 4 >= s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finds(line: &str) -> Vec<String> {
        super::super::secrets_found(plugins().iter().map(|(r, _)| r), line)
    }

    #[test]
    fn every_rule_compiles() {
        assert_eq!(plugins().len(), 16, "a rule that does not compile is dropped");
    }

    #[test]
    fn the_forms_are_found_alone() {
        for (line, secret) in [
            ("X-JFrog-Art-Api: AKCxxxxxxxxxx", "AKCxxxxxxxxxx"),
            ("=AP6xxxxxxxxxx", "AP6xxxxxxxxxx"),
            ("AKIAZZZZZZZZZZZZZZZZ", "AKIAZZZZZZZZZZZZZZZZ"),
            (
                "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
                "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
            ),
            ("343ea45721923ed956e2b38c31db76aa-us30", "343ea45721923ed956e2b38c31db76aa-us30"),
            ("7213808860:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM", "7213808860:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM"),
            ("SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            (
                "sl_key= abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234",
                "abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234",
            ),
            (
                "clou_pw = \"abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234\"",
                "abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234",
            ),
            ("cloudant_key = \"abcdefghijabcdefghijabcd\"", "abcdefghijabcdefghijabcd"),
            ("glptt-Need5_T00-be-exactly-40-chars--ELse_fail", "glptt-Need5_T00-be-exactly-40-chars--ELse_fail"),
            ("//registry.npmjs.org/:_authToken=npm_xxxxxxxxxxx", "npm_xxxxxxxxxxx"),
        ] {
            assert!(finds(line).iter().any(|f| f == secret), "{line}: {:?}", finds(line));
        }
    }

    #[test]
    fn words_and_prose_are_not_tokens() {
        for line in [
            "APACHE2LICENSE and APPLICATION",
            "ACCOUNT_SETTINGS_FOR_THE_DEFAULT_USER",
            "Mountain.bike.ride",
            "see the sl key: later",
            "aws key is in the vault",
        ] {
            assert!(finds(line).is_empty(), "{line}: {:?}", finds(line));
        }
    }
}
