//! Code, not a value: names, member chains, calls, digests, file names and versions that a
//! credential's name is assigned in source files and docs (`password = getPassword()`), which the
//! rules refuse.

use super::contains_ignore_case;
use super::random::random_token;

/// Words, not a secret: most of the letters of `v` are in runs of three or more that read as
/// words of code or prose (`Uint8Array`, `self.headers.get`, `Zeroizing::new`, `db-password`), as
/// a camel-case, dotted, dashed or slashed name has them. A random token's letters rarely are
/// (`Zq8Lw3Xv7Rt2`: every run is two letters; base64 mixes cases every few letters).
pub(in crate::palace::feed::redact) fn wordy(v: &[u8]) -> bool {
    let mut letters = 0usize;
    let mut in_words = 0usize;
    let mut run = 0usize;
    let flush = |run: &mut usize, in_words: &mut usize| {
        if *run >= 3 {
            *in_words += *run;
        }
        *run = 0;
    };
    for (i, c) in v.iter().enumerate() {
        if c.is_ascii_alphabetic() {
            letters += 1;
            // A new word starts at an upper-case letter after a lower-case one, and after two or
            // more capitals followed by a lower-case letter (`HTTPServer`: HTTP, Server).
            let prev = i.checked_sub(1).map(|p| v[p]);
            let next = v.get(i + 1).copied();
            let camel = c.is_ascii_uppercase()
                && (prev.is_some_and(|p| p.is_ascii_lowercase())
                    || (prev.is_some_and(|p| p.is_ascii_uppercase()) && next.is_some_and(|n| n.is_ascii_lowercase())));
            if camel {
                flush(&mut run, &mut in_words);
            }
            run += 1;
        } else {
            flush(&mut run, &mut in_words);
        }
    }
    flush(&mut run, &mut in_words);
    letters > 0 && in_words * 10 >= letters * 7
}

/// Code, not a value: a call (`self.headers.get(`), a member or path chain of identifiers
/// (`config.db.password`, `X25519.secret_length`, `Zeroizing::new`, `win32api.RegEnumKey`), a
/// member reached with `->` or `::` (`sqlite3_api->column_bytes16`), or an identifier made of
/// words (`_bindgen_ty_3`, `nl80211_key_attributes`, `Uint8Array`).
pub(super) fn is_code(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    if after.first() == Some(&b'(') || after.starts_with(b"::") || before.ends_with(b"->") || before.ends_with(b"::") {
        return true;
    }
    // An expression: what comes before an operator (`oauth.clientSecret===void`, `headingPrefix=`),
    // optional chaining and non-null marks read as member access (`security?.basic.password`).
    let cut = s.iter().position(|b| b"=|&+*%".contains(b)).unwrap_or(s.len());
    let owned: Vec<u8> = String::from_utf8_lossy(&s[..cut]).replace("?.", ".").replace("!.", ".").into_bytes();
    let s = if owned.is_empty() { s } else { &owned[..] };
    let identifier = s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$');
    let camel = s.windows(2).any(|w| (w[0].is_ascii_lowercase() || w[0].is_ascii_digit()) && w[1].is_ascii_uppercase());
    if identifier && (camel || s.contains(&b'_') || s.contains(&b'$')) && wordy(s) {
        return true;
    }
    let text = String::from_utf8_lossy(s);
    let pieces: Vec<&str> = text.split(['.', ':']).filter(|p| !p.is_empty()).collect();
    let ident = |p: &&str| {
        let mut c = p.bytes();
        c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == b'_' || f == b'$' || f == b'#')
            && c.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    };
    (text.contains('.') || text.contains("::")) && pieces.len() >= 2 && pieces.iter().all(ident) && !random_token(s)
}

/// gitleaks' generic rule, refused on code and on file names of words (`rsa-2048-private-key.pk8`).
pub(super) fn not_code(s: &[u8], before: &[u8], after: &[u8]) -> bool {
    !is_code(s, before, after) && !is_file_name(s) && !is_digest(s, before)
}

/// A digest or fingerprint, not a key: a value right after words that say so (`ping-sha256:`,
/// `Release GPG key:`, `integrity`), or a hexadecimal digest keyed by a file name
/// (`"qwen-token-plan.json":"600e…"` in a manifest).
pub(super) fn is_digest(s: &[u8], before: &[u8]) -> bool {
    let near = &before[before.len().saturating_sub(40)..];
    const WORDS: &[&[u8]] = &[
        b"sha1",
        b"sha256",
        b"sha384",
        b"sha512",
        b"md5",
        b"hash",
        b"digest",
        b"checksum",
        b"fingerprint",
        b"integrity",
        b"gpg",
        b"pgp",
    ];
    if WORDS.iter().any(|w| contains_ignore_case(near, w)) {
        return true;
    }
    let hex = s.iter().all(u8::is_ascii_hexdigit) && [32, 40, 64, 128].contains(&s.len());
    let key = near.iter().rposition(|b| b.is_ascii_alphanumeric()).map_or(&near[..0], |e| &near[..=e]);
    hex && [&b".json"[..], b".js", b".tgz", b".tar.gz", b".zip", b".whl", b".txt"].iter().any(|x| key.ends_with(x))
}

/// A file name of words with an extension (`rsa-2048-private-key.pk8`, `s_rsa1024_priv.pem`).
pub(super) fn is_file_name(s: &[u8]) -> bool {
    let Some(dot) = s.iter().rposition(|b| *b == b'.') else { return false };
    let ext = &s[dot + 1..];
    (2..=4).contains(&ext.len())
        && ext[0].is_ascii_lowercase()
        && ext.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s[..dot].iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && wordy(&s[..dot])
}

/// A version or a range of versions (`^4.0.10`, `~1.2`, `>=2.0.0-rc.1`, `v3.11.0`).
pub(super) fn is_version(s: &[u8]) -> bool {
    let t = s.iter().position(|b| b.is_ascii_digit()).map_or(&s[s.len()..], |i| &s[i..]);
    let prefix = &s[..s.len() - t.len()];
    prefix.iter().all(|b| matches!(b, b'^' | b'~' | b'<' | b'>' | b'=' | b'v' | b'V'))
        && t.first().is_some_and(u8::is_ascii_digit)
        && t.contains(&b'.')
        && t.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+' | b'*'))
        && t.split(|b| *b == b'.').next().is_some_and(|m| m.iter().all(u8::is_ascii_digit))
}
