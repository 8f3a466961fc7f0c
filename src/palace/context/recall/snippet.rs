//! The part of a drawer a recall message shows. A drawer that fits is shown whole: a conversation
//! drawer is one exchange (MemPalace's convos miner: the user's turn as a `> ` line, then the
//! reply), and the turn that answers a prompt is as often the reply as the question, so neither
//! turn alone will do (measured: docs/mempalace-bridge.md, "How well it recalls"). A drawer too long
//! for its room is shown from the turn that holds the most of the query's words, not from its first
//! bytes.

/// `text` on one line (every run of whitespace or control characters one space), whole when it
/// fits in `max` bytes; else from its line that holds the most distinct words of `query` (see
/// [`best_line`]) to the end, cut to `max` bytes at a character boundary with `…`.
pub(crate) fn excerpt(text: &str, query: &str, max: usize) -> String {
    let whole = one_line(text);
    if whole.len() <= max {
        return whole;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let from = best_line(&lines, query);
    cut(&one_line(&lines[from..].join("\n")), max)
}

/// The index of the line of `lines` that holds the most distinct words of `query` (a word matches
/// another with the same stem: `paint` matches `painted` and `painting`); ties go to the first.
fn best_line(lines: &[&str], query: &str) -> usize {
    let mut words: Vec<String> = Vec::new();
    for w in tokens(query) {
        let w = stem(&w).to_string();
        if !words.contains(&w) {
            words.push(w);
        }
    }
    let score = |line: &str| {
        let stems: Vec<String> = tokens(line).map(|t| stem(&t).to_string()).collect();
        words.iter().filter(|w| stems.contains(w)).count()
    };
    let mut best = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        let s = score(line);
        if s > best.1 {
            best = (i, s);
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

/// `s` on one line: every run of whitespace or control characters is one space.
pub(crate) fn one_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// `s` cut to at most `max` bytes at a character boundary, with `…` when it was cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let ellipsis = "…";
    let end = crate::text::floor_char_boundary(s, max.saturating_sub(ellipsis.len()));
    format!("{}{ellipsis}", s[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawer_that_fits_is_shown_whole_on_one_line() {
        let exchange = "> Hey, how was your weekend?\nGreat! I painted a sunrise over the lake.";
        assert_eq!(
            excerpt(exchange, "paint sunrise", 100),
            "> Hey, how was your weekend? Great! I painted a sunrise over the lake."
        );
    }

    #[test]
    fn a_long_drawer_is_shown_from_the_turn_holding_the_querys_words() {
        let chatter = "We talked about many other things that day. ".repeat(10);
        let text = format!("> {chatter}\nGreat! I painted a sunrise over the lake.\n> Lovely! {chatter}");
        let e = excerpt(&text, "painting sunrise", 120);
        assert!(e.starts_with("Great! I painted a sunrise over the lake. > Lovely! We talked"), "{e}");
        assert!(e.len() <= 120 && e.ends_with('…'), "{e}");
        // No word matches: from the start.
        assert!(excerpt(&text, "adoption agencies", 120).starts_with("> We talked about"));
        // Distinct words count once: three `race`s lose to `charity` and `race`.
        let text = format!("race race race {chatter}\nthe charity race raised money {chatter}");
        assert!(excerpt(&text, "charity race", 80).starts_with("the charity race"));
    }

    #[test]
    fn cuts_never_split_a_character() {
        let long = "é".repeat(3000);
        for max in [0, 1, 2, 3, 4, 5, 61, 700] {
            let e = excerpt(&long, "x", max);
            assert!(e.len() <= max.max("…".len()), "{max}: {}", e.len());
        }
    }

    #[test]
    fn stems() {
        assert_eq!(stem("painting"), "paint");
        assert_eq!(stem("painted"), "paint");
        assert_eq!(stem("race"), "race");
        assert_eq!(stem("is"), "is");
        assert_eq!(stem("bus"), "bus");
    }
}
