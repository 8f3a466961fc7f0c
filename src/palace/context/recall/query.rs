//! Recall's query: the few words of a prompt worth searching the palace for, and the search's
//! arguments. MemPalace's recall protocol asks for short, keyword-like queries; a prompt with no
//! such words ("hi", "thanks!") costs no search at all.

use serde_json::Value;

/// The search tool recall runs (MemPalace's own).
pub(crate) const SEARCH_TOOL: &str = "mempalace_search";

/// Results asked of the search: the few best, of which [`super::select`] keeps those close enough.
/// On long conversations the drawer that answers is often below the fifth, and MemPalace re-ranks a
/// pool three times the limit, so a larger limit ranks better too (docs/mempalace-bridge.md, "How
/// well it recalls").
const SEARCH_LIMIT: u64 = 10;

/// The query's words at most: MemPalace's recall protocol asks for short, keyword-like queries.
const QUERY_MAX_WORDS: usize = 10;

/// `mempalace_search`'s `query` is at most 250 characters (its schema's `maxLength`).
const QUERY_MAX_CHARS: usize = 250;

/// Words that say nothing about what a prompt is about (English; the query keeps the rest).
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "else",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "getting",
    "give",
    "go",
    "going",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "lets",
    "like",
    "look",
    "make",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "need",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "ok",
    "okay",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "quite",
    "really",
    "remember",
    "right",
    "said",
    "same",
    "say",
    "see",
    "shall",
    "she",
    "should",
    "show",
    "so",
    "some",
    "such",
    "sure",
    "take",
    "tell",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "through",
    "to",
    "too",
    "try",
    "under",
    "until",
    "up",
    "us",
    "use",
    "very",
    "want",
    "was",
    "way",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "yes",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The search query for a prompt's words (the voice provider's scaffolding already cut off by the
/// caller): its distinct content words, lowercased, in order, at most [`QUERY_MAX_WORDS`] and
/// [`QUERY_MAX_CHARS`]. `None` when nothing is left ("hi", "thanks!"): no search then.
pub(crate) fn query_of(words: &str) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut len = 0;
    for raw in words.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’' || c == '-' || c == '_')) {
        // Possessives and quotes: "grandma's" → "grandma"; "'quoted'" → "quoted".
        let word = raw.trim_matches(|c| c == '\'' || c == '’' || c == '-' || c == '_');
        let word = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
        let word = word.to_lowercase();
        let chars = word.chars().count();
        let numeric = word.chars().all(|c| c.is_ascii_digit());
        if chars < 2 || (numeric && chars < 3) || STOPWORDS.contains(&word.as_str()) || seen.contains(&word) {
            continue;
        }
        // A word longer than a whole query (a pasted blob) says nothing; the next ones may.
        if chars > QUERY_MAX_CHARS {
            continue;
        }
        let add = chars + usize::from(!seen.is_empty());
        if len + add > QUERY_MAX_CHARS {
            break;
        }
        len += add;
        seen.push(word);
        if seen.len() == QUERY_MAX_WORDS {
            break;
        }
    }
    (!seen.is_empty()).then(|| seen.join(" "))
}

/// The search's arguments for `query`.
pub(crate) fn search_args(query: &str) -> Value {
    serde_json::json!({ "query": query, "limit": SEARCH_LIMIT })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_keeps_the_content_words() {
        assert_eq!(
            query_of("Hey, what did we decide about the billing database? Postgres or MySQL?").as_deref(),
            Some("decide billing database postgres mysql")
        );
        assert_eq!(query_of("What flowers does Grandma's friend like?").as_deref(), Some("flowers grandma friend"));
        assert_eq!(query_of("hi"), None);
        assert_eq!(query_of("Thanks! ok."), None);
        assert_eq!(query_of("   "), None);
        assert_eq!(query_of("deploy deploy DEPLOY the deploy").as_deref(), Some("deploy"));
        // Identifiers stay whole; short numbers go, years stay.
        assert_eq!(
            query_of("why does napi-rs v3 fail on arm64 in 2026 with exit 1").as_deref(),
            Some("napi-rs v3 fail arm64 2026 exit")
        );
        // Other scripts are words too.
        assert_eq!(query_of("Wie heißt die Katze von Oma?").as_deref(), Some("wie heißt die katze von oma"));
        assert_eq!(query_of("おばあちゃんの 誕生日").as_deref(), Some("おばあちゃんの 誕生日"));
    }

    #[test]
    fn the_query_is_short_whatever_the_prompt() {
        let long: String = (0..500).map(|i| format!("word{i} ")).collect();
        let q = query_of(&long).unwrap();
        assert_eq!(q.split(' ').count(), QUERY_MAX_WORDS);
        let huge = "x".repeat(10_000);
        assert_eq!(
            query_of(&format!("{huge} billing")).as_deref(),
            Some("billing"),
            "a blob doesn't hide the words after it"
        );
        let many = "αβγδεζηθικλμνξοπρστυφχψω ".repeat(40);
        assert!(query_of(&many).unwrap().chars().count() <= QUERY_MAX_CHARS);
    }
}
