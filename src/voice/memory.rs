//! The brain.db tools: memory_lookup, remember, recall_person, remember_person.

use super::Voice;
use crate::brain::{clock, NewMemory};
use crate::services::dotty_behaviour::{person_review, Review};
use crate::text::{ellipsize, fts_phrase, strip, take};

const SNIPPET_MAX: usize = 200;
const FACT_MAX: usize = 300;

pub async fn memory_lookup(v: &Voice, query: &str) -> String {
    let q = strip(query);
    if q.is_empty() {
        return "(empty query)".into();
    }
    let phrase = fts_phrase(q);
    match v.brain.read(move |b| b.lookup(&phrase, 5)).await {
        Ok(rows) if !rows.is_empty() => rows.iter().take(3).map(|c| ellipsize(strip(c), SNIPPET_MAX)).collect::<Vec<_>>().join(" | "),
        Ok(_) => "(no memories found)".into(),
        Err(e) => {
            e.report("memory_lookup");
            "(no memories found)".into()
        }
    }
}

pub async fn remember(v: &Voice, fact: &str) -> String {
    let f = strip(fact);
    if f.is_empty() {
        return "(empty fact)".into();
    }
    let f = take(f, FACT_MAX).to_string();
    let ts = clock::now_rfc3339();
    let row = move |b: &crate::brain::Brain| b.insert(&NewMemory { content: &f, category: "core", namespace: "voice", importance: 0.7 }, &ts);
    match v.brain.write(row).await {
        Ok(_) => "(remembered)".into(),
        Err(e) => {
            e.report("remember");
            "(remember failed)".into()
        }
    }
}

pub async fn recall_person(v: &Voice, name: &str) -> String {
    let n = strip(name);
    if n.is_empty() {
        return "(no person specified)".into();
    }
    let id = n.to_lowercase();
    let limit = v.cfg.person_max_facts;
    let facts = match v.brain.read(move |b| b.person_facts(&id, limit)).await {
        Ok(rows) => rows.iter().map(|c| strip(c)).filter(|c| !c.is_empty()).map(|c| ellipsize(c, SNIPPET_MAX)).collect::<Vec<_>>(),
        Err(e) => {
            e.report("recall_person");
            Vec::new()
        }
    };
    if facts.is_empty() {
        format!("(nothing remembered about {n})")
    } else {
        facts.join(" | ")
    }
}

pub async fn remember_person(v: &Voice, name: &str, fact: &str) -> String {
    let n = strip(name);
    if n.is_empty() {
        return "(no person specified)".into();
    }
    let f = strip(fact);
    if f.is_empty() {
        return "(empty fact)".into();
    }
    let f = take(f, FACT_MAX).to_string();
    let id = n.to_lowercase();
    let review = person_review(&v.http, &v.cfg, n).await;
    let (namespace, reply) = match review {
        Review::Approved => (format!("person:{id}"), format!("(remembered about {n})")),
        Review::Held(why) => {
            crate::diag!("remember_person: holding a fact for review ({why})");
            (format!("person_pending:{id}"), "(saved — a grown-up will check that)".to_string())
        }
    };
    let ts = clock::now_rfc3339();
    let row = move |b: &crate::brain::Brain| b.insert(&NewMemory { content: &f, category: "core", namespace: &namespace, importance: 0.7 }, &ts);
    match v.brain.write(row).await {
        Ok(_) => reply,
        Err(e) => {
            e.report("remember_person");
            "(remember failed)".into()
        }
    }
}
