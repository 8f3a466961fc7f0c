use super::*;
use serde_json::json;

/// [`super::extract`] of a JSON `agent_end` value.
fn extract(messages: &Value) -> Option<Turn> {
    super::extract(&Message::list_from_json(messages))
}

#[test]
fn extracts_the_last_user_prompt_and_the_spoken_text_after_it() {
    let msgs = json!([
        {"role": "user", "content": "earlier", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]},
        {"role": "user", "content": [{"type": "text", "text": "  what's "}, {"type": "image", "data": "AAAA"}, {"type": "text", "text": "up?"}], "timestamp": 2},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Let me "},
            {"type": "toolCall", "id": "1", "name": "take_photo", "arguments": {}}
        ]},
        {"role": "toolResult", "toolCallId": "1", "content": [{"type": "text", "text": "a cat"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "look. A cat! "}]}
    ]);
    let t = extract(&msgs).unwrap();
    assert_eq!(t.user, "what's up?");
    assert_eq!(t.assistant, "Let me look. A cat!");
    assert_eq!(t.content(), "user: what's up? | assistant: Let me look. A cat!");
    assert_eq!(t.key.as_deref(), Some("2\u{0}  what's up?"));
}

#[test]
fn empty_turns_write_nothing_and_half_turns_write() {
    assert_eq!(extract(&json!([])), None);
    assert_eq!(extract(&json!({"not": "an array"})), None);
    assert_eq!(
        extract(&json!([{"role": "user", "content": "  "}, {"role": "assistant", "content": [{"type": "toolCall"}]}])),
        None
    );
    let only_user = extract(&json!([{"role": "user", "content": "hello"}])).unwrap();
    // Composed with the space; the store strips it (see a_turn_row_is_stripped_by_the_store).
    assert_eq!(only_user.content(), "user: hello | assistant: ");
    let only_assistant = extract(&json!([{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}])).unwrap();
    assert_eq!(only_assistant.content(), "user:  | assistant: hi");
    // Odd shapes are read leniently, never a panic.
    let odd = json!([{"role": 5}, {"content": null}, {"role": "user", "content": [1, {"type": "text", "text": 7}, {"type": "text", "text": "ok"}]}]);
    assert_eq!(extract(&odd).unwrap().user, "ok");
}

#[test]
fn an_assistant_plain_string_says_nothing() {
    // Only {type: "text"} blocks count for the assistant; a user's plain string does count.
    let t = extract(&json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "plain string"}, {"role": "assistant", "content": [{"type": "text", "text": "blocks"}]}])).unwrap();
    assert_eq!(t.assistant, "blocks");
    let t =
        extract(&json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "plain string"}])).unwrap();
    assert_eq!(t.assistant, "");
    assert_eq!(extract(&json!([{"role": "assistant", "content": "plain only"}])), None);
}

#[test]
fn truncates_by_codepoints() {
    let t = Turn { key: None, user: "😀".repeat(600), assistant: "é".repeat(1200) };
    let c = t.content();
    assert_eq!(c, format!("user: {} | assistant: {}", "😀".repeat(500), "é".repeat(1000)));
}

fn brain() -> (tempfile::TempDir, Arc<Brain>) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("brain.db");
    rusqlite::Connection::open(&p).unwrap().execute_batch(crate::brain::SCHEMA_SQL).unwrap();
    (dir, Arc::new(Brain::new(p, false)))
}

fn rows(b: &Brain) -> Vec<(String, String, String, f64)> {
    let c = rusqlite::Connection::open(b.path()).unwrap();
    let mut st = c.prepare("SELECT content, category, namespace, importance FROM memories ORDER BY rowid").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(|r| r.unwrap()).collect()
}

fn turn(ts: u64, user: &str, said: &str) -> Vec<Message> {
    Message::list_from_json(
        &json!([{"role": "user", "content": user, "timestamp": ts}, {"role": "assistant", "content": [{"type": "text", "text": said}]}]),
    )
}

#[tokio::test]
async fn writes_one_conversation_row() {
    let (_d, b) = brain();
    let log = Arc::new(TurnLog::default());
    tokio::spawn(log.submit(b.clone(), &turn(1, "hi", "hello")).unwrap());
    log.flush().await;
    assert_eq!(rows(&b), vec![("user: hi | assistant: hello".into(), "conversation".into(), "voice".into(), 0.3)]);
}

#[tokio::test]
async fn a_turn_row_is_stripped_by_the_store() {
    let (_d, b) = brain();
    let log = Arc::new(TurnLog::default());
    tokio::spawn(
        log.submit(
            b.clone(),
            &Message::list_from_json(&json!([{"role": "user", "content": "Hello?", "timestamp": 1}])),
        )
        .unwrap(),
    );
    // The assistant half cut at 1000 codepoints ends in a space: the store drops it.
    let said = format!("{} tail", "a".repeat(999));
    tokio::spawn(log.submit(b.clone(), &turn(2, "q", &said)).unwrap());
    log.flush().await;
    let got: Vec<String> = rows(&b).into_iter().map(|r| r.0).collect();
    assert_eq!(got, vec!["user: Hello? | assistant:".to_string(), format!("user: q | assistant: {}", "a".repeat(999))]);
}

#[tokio::test]
async fn a_repeated_agent_end_is_logged_once() {
    let (_d, b) = brain();
    let log = Arc::new(TurnLog::default());
    // Same prompt, same answer, submitted again before the first write finished: nothing to do.
    tokio::spawn(log.submit(b.clone(), &turn(1, "hi", "hello")).unwrap());
    assert!(log.submit(b.clone(), &turn(1, "hi", "hello")).is_none());
    // Same prompt, a different answer (an auto-retry that succeeded): the row is rewritten.
    tokio::spawn(log.submit(b.clone(), &turn(1, "hi", "hello again")).unwrap());
    log.flush().await;
    assert_eq!(rows(&b).len(), 1);
    assert_eq!(rows(&b)[0].0, "user: hi | assistant: hello again");
    // The same words in a new prompt (new timestamp) are a new turn.
    tokio::spawn(log.submit(b.clone(), &turn(2, "hi", "hello again")).unwrap());
    log.flush().await;
    assert_eq!(rows(&b).len(), 2);
    assert_eq!(log.rows_written.load(Ordering::Relaxed), 2);
    assert_eq!(log.rows_rewritten.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_missing_database_is_reported_not_raised() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(Brain::new(dir.path().join("absent.db"), false));
    let log = Arc::new(TurnLog::default());
    tokio::spawn(log.submit(b.clone(), &turn(1, "hi", "hello")).unwrap());
    log.flush().await;
    assert_eq!(log.rows_written.load(Ordering::Relaxed), 0);
    assert!(!dir.path().join("absent.db").exists());
}

#[tokio::test]
async fn a_row_waits_for_a_missing_file_and_lands_when_it_is_back() {
    let (d, b) = brain();
    let aside = d.path().join("aside.db");
    std::fs::rename(b.path(), &aside).unwrap();
    let log = Arc::new(TurnLog::default());
    tokio::spawn(log.submit(b.clone(), &turn(1, "are you there?", "yes")).unwrap());
    // The shutdown flush doesn't hang on it: the row waits, not in flight.
    tokio::time::timeout(Duration::from_secs(5), log.flush()).await.expect("flush returns");
    assert_eq!((log.in_flight(), log.waiting()), (0, 1));
    assert_eq!(log.rows_written.load(Ordering::Relaxed), 0);
    std::fs::rename(&aside, b.path()).unwrap();
    let t0 = std::time::Instant::now();
    while log.rows_written.load(Ordering::Relaxed) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "the waiting row was not written");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    log.flush().await;
    assert_eq!(log.waiting(), 0);
    assert_eq!(rows(&b).into_iter().map(|r| r.0).collect::<Vec<_>>(), vec!["user: are you there? | assistant: yes"]);
}

#[tokio::test]
async fn a_later_answer_to_a_waiting_turn_wins() {
    let (d, b) = brain();
    let aside = d.path().join("aside.db");
    std::fs::rename(b.path(), &aside).unwrap();
    let log = Arc::new(TurnLog::default());
    tokio::spawn(log.submit(b.clone(), &turn(1, "hi", "first answer")).unwrap());
    tokio::spawn(log.submit(b.clone(), &turn(1, "hi", "final answer")).unwrap());
    log.flush().await;
    std::fs::rename(&aside, b.path()).unwrap();
    let t0 = std::time::Instant::now();
    while log.waiting() > 0 || log.in_flight() > 0 {
        assert!(t0.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(rows(&b).into_iter().map(|r| r.0).collect::<Vec<_>>(), vec!["user: hi | assistant: final answer"]);
}
