//! The part of a drawer a recall message shows: the turn that matches the query best, not the
//! drawer's first bytes. A conversation drawer is an exchange (MemPalace's convos miner: the user's
//! turn as a `> ` line, then the reply), and the turn that answers a prompt is as often the reply
//! as the question; showing one turn whole leaves room for more drawers in the message's cap.

/// The line of `text` that holds the most distinct words of `query` (a word matches another with
/// the same stem: `paint` matches `painted` and `painting`), trimmed; ties go to the first. A text
/// without lines worth showing is given back trimmed as it is.
pub(crate) fn best_turn<'a>(text: &'a str, query: &str) -> &'a str {
    let words: Vec<String> = tokens(query).map(|w| stem(&w).to_string()).collect();
    let score = |line: &str| {
        let stems: Vec<String> = tokens(line).map(|t| stem(&t).to_string()).collect();
        words.iter().enumerate().filter(|(i, w)| !words[..*i].contains(w) && stems.contains(w)).count()
    };
    let mut best = (text.trim(), 0);
    for (i, line) in text.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {
        let s = score(line);
        if i == 0 || s > best.1 {
            best = (line, s);
        }
    }
    best.0
}

/// `s`'s words, lowercased: runs of letters and digits.
fn tokens(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// A crude English stem: one common ending off a word that keeps three characters or more.
fn stem(w: &str) -> &str {
    for end in ["ing", "ed", "es", "s"] {
        if let Some(s) = w.strip_suffix(end) {
            if s.chars().count() >= 3 {
                return s;
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_holding_the_querys_words_not_the_first_one() {
        let exchange = "> Hey, how was your weekend?\nGreat! I painted a sunrise over the lake with my kids.";
        assert_eq!(best_turn(exchange, "paint sunrise"), "Great! I painted a sunrise over the lake with my kids.");
        assert_eq!(best_turn(exchange, "weekend"), "> Hey, how was your weekend?");
        // No word matches: the first turn.
        assert_eq!(best_turn(exchange, "adoption agencies"), "> Hey, how was your weekend?");
    }

    #[test]
    fn distinct_words_count_once_and_ties_go_first() {
        let text = "race race race race\n\nthe charity race raised money\nmoney for the charity";
        assert_eq!(best_turn(text, "charity race"), "the charity race raised money");
        assert_eq!(best_turn("  one line only, no newline  ", "x"), "one line only, no newline");
        assert_eq!(best_turn("", "x"), "");
        assert_eq!(best_turn("Straße und Café\nnichts", "café"), "Straße und Café");
    }

    #[test]
    fn stems() {
        assert_eq!(stem("painting"), "paint");
        assert_eq!(stem("painted"), "paint");
        assert_eq!(stem("races"), "rac");
        assert_eq!(stem("race"), "race");
        assert_eq!(stem("is"), "is");
        assert_eq!(stem("bus"), "bus");
    }
}
