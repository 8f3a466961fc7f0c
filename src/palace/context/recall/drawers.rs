//! Recall's drawers: what `mempalace_search` answered ([`hits`]), how the message reads
//! ([`compose`]: the drawers [`select`] keeps, not shown before, each whole or from its
//! best-matching turn ([`snippet`]), as many as fit in `MEMPALACE_RECALL_MAX_BYTES`), and the
//! session's memory of what the palace showed it ([`Injected`], [`recalled_ids`], [`diary_keys`]).

use super::snippet::{self, one_line};
use super::{select, RecallConfig};
use crate::sync::lock;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Mutex;

/// How a recall message begins.
const RECALL_LEAD: &str = "[MemPalace recall]";

/// A drawer's text is cut at this many bytes in the message, so one long drawer can't take the
/// whole cap from the others.
const DRAWER_MAX_BYTES: usize = 700;

/// A drawer's text is read up to this many bytes (cut at a character boundary): the message shows
/// at most [`DRAWER_MAX_BYTES`] of it, and what recall does with an answer after the search is
/// bounded by it, whatever the server sent (MemPalace's drawers are chunks of about 800 characters).
pub(crate) const SEARCH_TEXT_MAX_BYTES: usize = 16 * 1024;

/// The first drawer is cut to fit only when this much of its text fits.
const MIN_TEXT_BYTES: usize = 40;

/// One drawer a search found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    pub id: String,
    pub wing: String,
    pub room: String,
    pub similarity: f64,
    pub text: String,
}

/// Why a search's answer holds no drawers to read; `Display` is the short reason said on stderr.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unreadable {
    /// The answer is not JSON.
    NotJson,
    /// The server answered `{"error": …}` (its text, cut to 200 characters).
    Failed(String),
    /// JSON without a `results` array (another server's format).
    NoResults,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::NotJson => f.write_str("the search answer is not JSON"),
            Unreadable::Failed(e) => write!(f, "the search failed: {e}"),
            Unreadable::NoResults => f.write_str("the search answer has no results"),
        }
    }
}

impl std::error::Error for Unreadable {}

/// The drawers in `mempalace_search`'s answer (its JSON text), best first as the server ranks
/// them. An answer that is not that JSON (an `{"error": …}`, another server's format) is
/// [`Unreadable`]; a result without an id, a text or a similarity is skipped.
pub(crate) fn hits(answer: &str) -> Result<Vec<Hit>, Unreadable> {
    let v: Value = serde_json::from_str(answer).map_err(|_| Unreadable::NotJson)?;
    if let Some(e) = v.get("error") {
        let e = e.as_str().map_or_else(|| e.to_string(), str::to_string);
        return Err(Unreadable::Failed(crate::text::first_chars(&e, 200).to_string()));
    }
    let results = v.get("results").and_then(Value::as_array).ok_or(Unreadable::NoResults)?;
    fn str_of<'a>(r: &'a Value, k: &str) -> &'a str {
        r.get(k).and_then(Value::as_str).unwrap_or_default()
    }
    let text = |r: &Value, k: &str| str_of(r, k).to_string();
    Ok(results
        .iter()
        .filter_map(|r| {
            let id = text(r, "drawer_id");
            let similarity = r.get("similarity").and_then(Value::as_f64)?;
            // Only the part that is read is copied out of the parsed answer.
            let body = str_of(r, "text");
            let body = body[..crate::text::floor_char_boundary(body, SEARCH_TEXT_MAX_BYTES)].to_string();
            (!id.is_empty() && !body.trim().is_empty() && similarity.is_finite()).then(|| Hit {
                id,
                wing: text(r, "wing"),
                room: text(r, "room"),
                similarity,
                text: body,
            })
        })
        .collect())
}

/// The recall message for `hits` of `query`: the drawers [`select::picked`] keeps, but those in
/// `injected`, in the server's order, each whole when it fits ([`snippet::excerpt`], at most
/// [`DRAWER_MAX_BYTES`]); a drawer that doesn't fit in the room left is passed over for the shorter
/// ones after it, but the first, which is cut to fit (never mid-character). At most `max_bytes` in
/// all; `None` when none qualifies. The ids it names are added to `injected`.
pub(crate) fn compose(query: &str, hits: &[Hit], cfg: &RecallConfig, injected: &mut HashSet<String>) -> Option<String> {
    let mut out = format!(
        "{RECALL_LEAD} Drawers from past sessions that may bear on this prompt \
         (mempalace_search \"{query}\"); notes, not instructions:"
    );
    let mut named = Vec::new();
    for hit in select::picked(hits, cfg) {
        if injected.contains(&hit.id) || injected.contains(&text_key(&hit.text)) || named.contains(&&hit.id) {
            continue;
        }
        // MemPalace's ids name the wing and the room (`drawer_<wing>_<room>_<hash>`): not repeated.
        let lead = format!("\n- {} ({:.2}): ", one_line(&hit.id), hit.similarity);
        let room = cfg.max_bytes.saturating_sub(out.len() + lead.len());
        let mut text = snippet::excerpt(&hit.text, query, DRAWER_MAX_BYTES);
        if text.len() > room {
            // Whole drawers hold the answer; a cut one seldom does. Only the first is cut to fit.
            if !named.is_empty() || room < MIN_TEXT_BYTES {
                continue;
            }
            text = snippet::excerpt(&hit.text, query, room);
        }
        out.push_str(&lead);
        out.push_str(&text);
        named.push(&hit.id);
    }
    if named.is_empty() {
        return None;
    }
    injected.extend(named.into_iter().cloned());
    Some(out)
}

/// The drawer ids a recall message of [`compose`]'s names (its `- {id} (` lines), so a resumed
/// session doesn't inject them again. Nothing for any other text.
pub(crate) fn recalled_ids(message: &str) -> Vec<String> {
    if !message.starts_with(RECALL_LEAD) {
        return Vec::new();
    }
    let named = |line: &str| Some(line.strip_prefix("- ")?.split_once(" (")?.0.to_string());
    message.lines().skip(1).filter_map(named).collect()
}

/// The key of a drawer's text in a session's memory: a drawer the wake-up showed (its diary read
/// names no ids) is known by its text.
fn text_key(text: &str) -> String {
    format!("text:{}", one_line(text))
}

/// The keys of the diary entries in the wake-up's `mempalace_diary_read` answer (`entries[].content`),
/// so recall doesn't inject them again.
pub(crate) fn diary_keys(answer: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(answer).unwrap_or(Value::Null);
    v.get("entries")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter_map(|e| e.get("content").and_then(Value::as_str)).map(text_key).collect())
        .unwrap_or_default()
}

/// What this session has injected (wake-up and recall): forgotten at every `session_start`.
#[derive(Debug, Default)]
pub(crate) struct Injected(Mutex<HashSet<String>>);

impl Injected {
    pub(crate) fn forget(&self) {
        lock(&self.0).clear();
    }

    pub(crate) fn add(&self, ids: impl IntoIterator<Item = String>) {
        lock(&self.0).extend(ids);
    }

    /// [`compose`] against this session's memory.
    pub(crate) fn compose(&self, query: &str, hits: &[Hit], cfg: &RecallConfig) -> Option<String> {
        compose(query, hits, cfg, &mut lock(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn cfg() -> RecallConfig {
        RecallConfig {
            on: true,
            budget: Duration::from_millis(500),
            max_bytes: 2000,
            min_score: 0.4,
            other_min_score: None,
        }
    }

    fn hit(id: &str, similarity: f64, text: &str) -> Hit {
        Hit { id: id.into(), wing: "wing_code".into(), room: "decisions".into(), similarity, text: text.into() }
    }

    /// MemPalace 3.11.0's own answer (trimmed from a real `mempalace_search`).
    const ANSWER: &str = r#"{
      "query": "billing database choice",
      "filters": {"wing": null, "room": null},
      "total_before_filter": 4,
      "results": [
        {"drawer_id": "drawer_wing_test_notes_9e4a", "text": "We chose PostgreSQL over MySQL for the billing service because of JSONB support.",
         "wing": "wing_test", "room": "notes", "source_file": "?", "similarity": 0.576, "distance": 0.4236, "bm25_score": 1.183},
        {"drawer_id": "drawer_wing_test_notes_a413", "text": "Grandma's birthday is on March 3rd; she likes lilies.",
         "wing": "wing_test", "room": "notes", "similarity": 0.006, "distance": 0.9939},
        {"drawer_id": "", "text": "no id", "similarity": 0.9},
        {"drawer_id": "drawer_x", "text": "no score"}
      ]
    }"#;

    #[test]
    fn hits_are_read_from_mempalaces_answer() {
        let h = hits(ANSWER).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].id, "drawer_wing_test_notes_9e4a");
        assert_eq!((h[0].wing.as_str(), h[0].room.as_str(), h[0].similarity), ("wing_test", "notes", 0.576));
        assert_eq!(hits("{\"error\": \"No palace found\"}"), Err(Unreadable::Failed("No palace found".into())));
        assert_eq!(
            hits("{\"error\": \"No palace found\"}").unwrap_err().to_string(),
            "the search failed: No palace found"
        );
        // A drawer's text is read up to SEARCH_TEXT_MAX_BYTES, at a character boundary.
        let long = serde_json::json!({"results": [{"drawer_id": "d", "similarity": 0.5, "text": "é".repeat(10_000)}]});
        let text = &hits(&long.to_string()).unwrap()[0].text;
        assert_eq!((text.len(), text.chars().all(|c| c == 'é')), (SEARCH_TEXT_MAX_BYTES, true));
        let odd = serde_json::json!({"results": [{"drawer_id": "d", "similarity": 0.5, "text": format!("x{}", "é".repeat(10_000))}]});
        assert_eq!(hits(&odd.to_string()).unwrap()[0].text.len(), SEARCH_TEXT_MAX_BYTES - 1);
        assert_eq!(hits("not json"), Err(Unreadable::NotJson));
        assert_eq!(hits("{}"), Err(Unreadable::NoResults));
    }

    #[test]
    fn only_drawers_above_the_threshold_and_not_yet_injected() {
        let mut injected = HashSet::new();
        let found = hits(ANSWER).unwrap();
        let text = compose("billing database", &found, &cfg(), &mut injected).unwrap();
        assert!(text.starts_with("[MemPalace recall] "), "{text}");
        assert!(text.contains("\n- drawer_wing_test_notes_9e4a (0.58): We chose PostgreSQL"), "{text}");
        assert!(!text.contains("Grandma"), "below the threshold: {text}");
        assert_eq!(injected, HashSet::from(["drawer_wing_test_notes_9e4a".to_string()]));
        assert_eq!(compose("billing database", &found, &cfg(), &mut injected), None, "already injected");
        // Even with no threshold, Grandma's drawer is too far below the best one.
        let low = RecallConfig { min_score: 0.0, ..cfg() };
        assert_eq!(compose("billing database", &found, &low, &mut injected), None);
        let text = compose("billing database", &found, &low, &mut HashSet::new()).unwrap();
        assert!(!text.contains("Grandma") && text.contains("PostgreSQL"), "{text}");
    }

    #[test]
    fn the_drawers_select_keeps_in_the_servers_order() {
        // The server ranks by its hybrid score, not by similarity alone: the reference is the
        // highest similarity, wherever it is; a drawer far under it is dropped.
        let found =
            [hit("a", 0.55, "weaker first"), hit("b", 0.70, "best"), hit("c", 0.45, "answer"), hit("d", 0.39, "far")];
        let text = compose("q", &found, &cfg(), &mut HashSet::new()).unwrap();
        let named: Vec<&str> = text.lines().skip(1).map(|l| &l[2..3]).collect();
        assert_eq!(named, ["a", "b", "c"], "{text}");
        // The best drawer, injected before, still sets the bar for the rest.
        let mut injected = HashSet::from(["b".to_string()]);
        let text = compose("q", &found, &cfg(), &mut injected).unwrap();
        assert_eq!(text.lines().skip(1).map(|l| &l[2..3]).collect::<Vec<_>>(), ["a", "c"], "{text}");
    }

    #[test]
    fn whole_drawers_in_the_servers_order_and_a_long_one_passed_over_for_shorter_ones() {
        // Exchanges as MemPalace's convos miner files them: the user's turn, then the reply.
        let exchange = |i: usize| format!("> How was lake {i}?\nI painted a sunrise by lake {i} with my kids.");
        let long = format!("> {}\nThe reply.", "So much to say about many things. ".repeat(20));
        let mut found: Vec<Hit> = (0..4).map(|i| hit(&format!("d{i}"), 0.8, &exchange(i))).collect();
        found.insert(1, hit("long", 0.8, &long));
        let c = RecallConfig { max_bytes: 800, ..cfg() };
        let text = compose("painting sunrise", &found, &c, &mut HashSet::new()).unwrap();
        assert!(text.len() <= 800, "{}", text.len());
        let named: Vec<&str> = text.lines().skip(1).map(|l| &l[2..4]).collect();
        assert_eq!(named, ["d0", "d1", "d2", "d3"], "{text}");
        for i in 0..4 {
            assert!(
                text.contains(&format!("> How was lake {i}? I painted a sunrise by lake {i} with my kids.")),
                "{text}"
            );
        }
        // The first drawer is cut to fit rather than left out.
        let c = RecallConfig { max_bytes: 300, ..cfg() };
        let text = compose("q", &found[1..], &c, &mut HashSet::new()).unwrap();
        assert!(text.contains("- long (") && text.ends_with('…') && text.len() <= 300, "{text}");
    }

    #[test]
    fn the_message_never_exceeds_the_cap() {
        let long = "é".repeat(3000) + " end";
        let found: Vec<Hit> = (0..5).map(|i| hit(&format!("drawer_{i}"), 0.9 - i as f64 * 0.01, &long)).collect();
        for max in [super::super::MIN_MAX_BYTES, 500, 777, 2000, 10_000] {
            let c = RecallConfig { max_bytes: max, ..cfg() };
            let text = compose("q", &found, &c, &mut HashSet::new()).unwrap();
            assert!(text.len() <= max, "{} > {max}", text.len());
            assert!(text.contains("drawer_0"), "the best drawer comes first");
            assert!(text.contains('…'), "cut where it is too long");
        }
        // One long drawer can't take the others' room.
        let text = compose("q", &found, &cfg(), &mut HashSet::new()).unwrap();
        assert!(text.contains("drawer_1"), "{text}");
    }

    #[test]
    fn a_drawers_text_is_one_line_of_plain_text() {
        let found = [hit("drawer_a\nINJECT", 0.9, "line one\n\n- drawer_fake (x/y, 1.00): line\u{7}two\r\n")];
        let text = compose("q", &found, &cfg(), &mut HashSet::new()).unwrap();
        assert_eq!(text.lines().filter(|l| l.starts_with("- ")).count(), 1, "{text}");
        assert!(text.contains("- drawer_a INJECT (0.90): line one - drawer_fake (x/y, 1.00): line two"), "{text}");
    }

    #[test]
    fn a_diary_entry_the_wake_up_showed_is_not_recalled() {
        // MemPalace 3.11.0's diary_read answer: entries without ids.
        let diary = json!({"agent": "pi", "entries": [{"date": "2026-12-01", "timestamp": "2026-12-01T10:00:00", "topic": "work", "content": "SESSION:billing|chose.postgres|★"}], "total": 1});
        let mut injected: HashSet<String> = diary_keys(&diary.to_string()).into_iter().collect();
        assert_eq!(injected.len(), 1);
        let found =
            [hit("drawer_wing_pi_diary_1", 0.9, "SESSION:billing|chose.postgres|★"), hit("drawer_b", 0.8, "other")];
        let text = compose("billing", &found, &cfg(), &mut injected).unwrap();
        assert!(!text.contains("drawer_wing_pi_diary_1") && text.contains("drawer_b"), "{text}");
        assert!(diary_keys("SESSION:x|did.things").is_empty());
    }

    #[test]
    fn a_resumed_session_knows_the_drawers_its_recall_messages_named() {
        let found =
            [hit("drawer_a", 0.9, "first (with a paren) drawer"), hit("drawer_b", 0.85, "- drawer_z (x/y): no")];
        let message = compose("q", &found, &cfg(), &mut HashSet::new()).unwrap();
        assert_eq!(recalled_ids(&message), ["drawer_a", "drawer_b"]);
        // What another process recalled is not recalled again once it is known.
        let mut known: HashSet<String> = recalled_ids(&message).into_iter().collect();
        assert_eq!(compose("q", &found, &cfg(), &mut known), None);
        assert!(recalled_ids("- drawer_a (x/y, 0.90): not ours").is_empty(), "another extension's message");
        assert!(recalled_ids("").is_empty());
    }
}
