//! Random characters, told from words: Shannon entropy (gitleaks' measure) and the letter pairs of
//! words of code and prose.

/// Shannon entropy in bits per byte (gitleaks' measure).
pub(in crate::palace::feed::redact) fn entropy(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in s {
        counts[*b as usize] += 1;
    }
    let n = s.len() as f64;
    counts.iter().filter(|c| **c > 0).map(|c| f64::from(*c) / n).map(|p| -p * p.log2()).sum()
}

/// Random characters, not a name: long enough, varied (gitleaks' generic entropy, 3.5 bits; 3 from
/// 24 characters on, where a hex UUID's 16 symbols are at home), of two kinds of characters at
/// least (cases, digits, symbols), and not reading as words ([`reads_as_words`]); or base64 with its padding.
pub(in crate::palace::feed::redact) fn random_token(s: &[u8]) -> bool {
    // Base64 with its padding (`…kyg==`, a Kubernetes secret's data) is encoded bytes.
    let body = s.strip_suffix(b"==").or_else(|| s.strip_suffix(b"=")).unwrap_or(s);
    let padded = body.len() < s.len()
        && s.len().is_multiple_of(4)
        && body.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'));
    if padded && s.len() >= 16 && entropy(s) >= 3.0 {
        return true;
    }
    let kinds = [
        s.iter().any(u8::is_ascii_lowercase),
        s.iter().any(u8::is_ascii_uppercase),
        s.iter().any(u8::is_ascii_digit),
        s.iter().any(|b| b"+/=~!@%^*#-".contains(b)),
    ];
    let min = if s.len() >= 24 { 3.0 } else { 3.5 };
    // Hexadecimal (a UUID, a hex key): its letters are a to f, whose pairs read as words.
    let hex = s.iter().filter(|b| b.is_ascii_hexdigit()).count() >= 16
        && s.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-');
    // Letters alone are a name more often than not (`AlgorithmType`): random only when long.
    let letters_only = !kinds[2] && !kinds[3];
    let long_enough = if letters_only { 20 } else { 12 };
    s.len() >= long_enough
        && kinds.iter().filter(|k| **k).count() >= 2
        && entropy(s) >= min
        && (hex || !(reads_as_words(s) && super::code::wordy(s)))
}

/// The letter pairs of words of code and prose: those that make 97 % of the pairs in the words of
/// Python 3.11's standard library (`scripts/redact/bigrams.py`), 262 of the 676. A random string's
/// pairs are common four times in ten; a name of code's, nineteen times in twenty; the line is drawn
/// at three in four.
const COMMON_BIGRAMS: &str = concat!(
    "ab ac ad ag ai ak al am an ap ar as at au av aw ax ay ba be bi bj bl bo br bs bu by ca cc ce ch ",
    "ci ck cl co cr cs ct cu cy da dd de di dl do dr ds du ea eb ec ed ee ef eg el em en eo ep eq er ",
    "es et ev ew ex ey fa fe ff fi fl fo fr ft fu ge gh gi gl gn gr gs gu ha he hi ho hr ht ia ib ic ",
    "id ie if ig il im in io ip ir is it iv ix iz je ke ki ks la ld le lf li ll lo ls lt lu ly ma mb ",
    "me mi mm mo mp ms mu na nc nd ne nf ng ni nk nl nn no np ns nt nu nv oa ob oc od of og oi ok ol ",
    "om on oo op or os ot ou ov ow ox pa pe pi pl po pp pr ps pt pu py qu ra rc rd re rg ri rk rl rm ",
    "rn ro rr rs rt ru rv ry sa sc se sg sh si sk sl sm so sp ss st su sy ta tc td te tf th ti tl to ",
    "tp tr ts tt tu ty ua ub uc ue uf ui ul um un up ur us ut va ve vi wa we wh wi wn wo wr xc xe xi ",
    "xp xt yp ys yt ze ",
);

/// [`COMMON_BIGRAMS`] as a table (first letter × 26 + second), made at compile time.
const COMMON: [bool; 26 * 26] = {
    let text = COMMON_BIGRAMS.as_bytes();
    let mut table = [false; 26 * 26];
    let mut i = 0;
    while i + 1 < text.len() {
        table[(text[i] - b'a') as usize * 26 + (text[i + 1] - b'a') as usize] = true;
        i += 3;
    }
    table
};

/// Three in four of the letter pairs of `s` (inside its words: camel case, digits and symbols split them)
/// are [`COMMON_BIGRAMS`]: names of code (`win32api.RegEnumKey`, `MODEL_NONSTREAMING_TOKENS`),
/// not random characters (`RlfdKYDHtZdhzyZosqPiuMmxuas299Sr`).
pub(super) fn reads_as_words(s: &[u8]) -> bool {
    let (mut pairs, mut common) = (0usize, 0usize);
    for w in s.windows(2) {
        let (a, b) = (w[0], w[1]);
        // A pair inside a word: two letters, not a lower-case letter before a capital.
        if !(a.is_ascii_alphabetic() && b.is_ascii_alphabetic()) || (a.is_ascii_lowercase() && b.is_ascii_uppercase()) {
            continue;
        }
        pairs += 1;
        let (a, b) = (a.to_ascii_lowercase() - b'a', b.to_ascii_lowercase() - b'a');
        if COMMON[usize::from(a) * 26 + usize::from(b)] {
            common += 1;
        }
    }
    pairs >= 4 && common * 4 >= pairs * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_table_is_the_list() {
        let listed = COMMON_BIGRAMS.split_whitespace().count();
        assert_eq!(COMMON.iter().filter(|x| **x).count(), listed);
        assert!(
            COMMON[usize::from(b'q' - b'a') * 26 + usize::from(b'u' - b'a')] && !COMMON[usize::from(b'q' - b'a') * 26]
        );
    }

    #[test]
    fn entropy_is_shannon() {
        assert_eq!(entropy(b""), 0.0);
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
    }
}
