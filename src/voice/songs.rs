//! The song matcher: case-insensitive, not fuzzy; an exact stem wins at once, otherwise the
//! closest-length substring match, the first one on ties.

use crate::text::{char_count, strip, without_extension};

/// Picks a file from `catalogue` for the spoken name `name` (already stripped).
pub fn best_match<'a>(name: &str, catalogue: &'a [String]) -> Option<&'a str> {
    let lowered = strip(name).to_lowercase();
    let q = strip(without_extension(&lowered));
    if q.is_empty() {
        return None;
    }
    let q_len = char_count(q);
    let mut best: Option<(usize, &str)> = None;
    for file in catalogue {
        let lowered_file = file.to_lowercase();
        let stem = without_extension(&lowered_file);
        if stem == q {
            return Some(file);
        }
        if stem.contains(q) || q.contains(stem) {
            let score = char_count(stem).abs_diff(q_len);
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, file));
            }
        }
    }
    best.map(|(_, f)| f)
}

/// The reply when nothing matches: the stems (original case) of the first five files.
pub fn no_match_reply(name: &str, catalogue: &[String]) -> String {
    let have: Vec<&str> = catalogue.iter().take(5).map(|f| without_extension(f)).collect();
    format!("(no match for '{name}'; have: {})", have.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(files: &[&str]) -> Vec<String> {
        files.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exact_stem_wins_even_after_a_closer_candidate() {
        let c = cat(&["Happy Birthday Song.mp3", "happy.mp3", "Happy Birthday.mp3"]);
        assert_eq!(best_match("happy birthday", &c), Some("Happy Birthday.mp3"));
        assert_eq!(best_match("HAPPY", &c), Some("happy.mp3"));
    }

    #[test]
    fn closest_length_substring_then_first_on_ties() {
        let c = cat(&["twinkle twinkle little star.mp3", "twinkle.mp3", "little star.wav"]);
        assert_eq!(best_match("twinkle twinkle", &c), Some("twinkle.mp3"));
        let tie = cat(&["abcd.mp3", "abce.mp3"]);
        assert_eq!(best_match("abc", &tie), Some("abcd.mp3"));
        // The stem inside the query counts too.
        assert_eq!(best_match("play me little star please", &c), Some("little star.wav"));
    }

    #[test]
    fn the_query_loses_its_extension_and_whitespace() {
        let c = cat(&["Lullaby.ogg"]);
        assert_eq!(best_match("  lullaby.mp3 ", &c), Some("Lullaby.ogg"));
        assert_eq!(best_match(".mp3", &c), None);
        assert_eq!(best_match("   ", &c), None);
        assert_eq!(best_match("rock", &c), None);
    }

    #[test]
    fn scores_count_codepoints() {
        // "héé" is 3 codepoints but 5 bytes: by bytes "hé" would score 3 against it, by codepoints 1.
        let c = cat(&["hééxxx.mp3", "héé.mp3x"]);
        assert_eq!(best_match("hé", &c), Some("héé.mp3x"));
    }

    #[test]
    fn no_match_lists_five_stems_in_original_case() {
        let c = cat(&["A.mp3", "B.Song.mp3", "c", "D.mp3", "E.mp3", "F.mp3"]);
        assert_eq!(no_match_reply("Zed", &c), "(no match for 'Zed'; have: A, B.Song, c, D, E)");
    }
}
