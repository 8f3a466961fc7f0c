//! The brain.db tools: memory_lookup, remember, recall_person, remember_person.

use super::scaffolding::clean_row;
use super::Voice;
use crate::brain::{clock, WriteOp};
use crate::services::dotty_behaviour::{person_review, Review};
use crate::text::{ellipsize, first_chars, fts_phrase, strip};

const SNIPPET_MAX: usize = 200;
const FACT_MAX: usize = 300;

// memory_lookup, remember and recall_person answer through `done`, called on a store thread (or
// at once for an empty argument): see `Voice::start`.

pub(super) fn memory_lookup(v: &Voice, query: &str, done: impl FnOnce(String) + Send + 'static) {
    let q = strip(query);
    if q.is_empty() {
        return done("(empty query)".into());
    }
    let phrase = fts_phrase(q);
    v.brain.submit_lookup(phrase, 5, move |r| {
        done(match r {
            Ok(rows) if !rows.is_empty() => {
                // Rows older loggers wrote with the voice provider's rules inside are read back as
                // the conversation they were (the contract's step 5), before the 200-codepoint cut.
                rows.iter()
                    .take(3)
                    .map(|c| ellipsize(strip(&clean_row(c)), SNIPPET_MAX))
                    .collect::<Vec<_>>()
                    .join(" | ")
            }
            Ok(_) => "(no memories found)".into(),
            Err(e) => {
                e.report("memory_lookup");
                "(no memories found)".into()
            }
        })
    });
}

pub(super) fn remember(v: &Voice, fact: &str, done: impl FnOnce(String) + Send + 'static) {
    let f = strip(fact);
    if f.is_empty() {
        return done("(empty fact)".into());
    }
    let op = WriteOp::Insert {
        content: first_chars(f, FACT_MAX).to_string(),
        category: "core".into(),
        namespace: "voice".into(),
        importance: 0.7,
        ts: clock::now_rfc3339(),
        session_id: v.session_id.clone(),
    };
    v.brain.submit_write(op, move |r| {
        done(match r {
            Ok(_) => "(remembered)".into(),
            Err(e) => {
                e.report("remember");
                "(remember failed)".into()
            }
        })
    });
}

pub(super) fn recall_person(v: &Voice, name: &str, done: impl FnOnce(String) + Send + 'static) {
    let n = strip(name).to_string();
    if n.is_empty() {
        return done("(no person specified)".into());
    }
    let id = n.to_lowercase();
    let limit = v.cfg.person_max_facts;
    v.brain.submit_read(
        move |b| b.person_facts(&id, limit),
        move |r| {
            let facts = match r {
                Ok(rows) => rows
                    .iter()
                    .map(|c| strip(c))
                    .filter(|c| !c.is_empty())
                    .map(|c| ellipsize(c, SNIPPET_MAX))
                    .collect::<Vec<_>>(),
                Err(e) => {
                    e.report("recall_person");
                    Vec::new()
                }
            };
            done(if facts.is_empty() { format!("(nothing remembered about {n})") } else { facts.join(" | ") })
        },
    );
}

pub(super) async fn remember_person(v: &Voice, name: &str, fact: &str) -> String {
    let n = strip(name);
    if n.is_empty() {
        return "(no person specified)".into();
    }
    let f = strip(fact);
    if f.is_empty() {
        return "(empty fact)".into();
    }
    let f = first_chars(f, FACT_MAX).to_string();
    let id = n.to_lowercase();
    let review = person_review(&v.http, &v.cfg, n).await;
    let (namespace, reply) = match review {
        Review::Approved => (format!("person:{id}"), format!("(remembered about {n})")),
        Review::Held(why) => {
            crate::diag!("remember_person: holding a fact for review ({why})");
            (format!("person_pending:{id}"), "(saved — a grown-up will check that)".to_string())
        }
    };
    let op = WriteOp::Insert {
        content: f,
        category: "core".into(),
        namespace,
        importance: 0.7,
        ts: clock::now_rfc3339(),
        session_id: v.session_id.clone(),
    };
    match v.brain.write(op).await {
        Ok(_) => reply,
        Err(e) => {
            e.report("remember_person");
            "(remember failed)".into()
        }
    }
}
