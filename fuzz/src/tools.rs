//! `tools`: the palace's tool list and the tool cache, under the trust rules (docs/trust.md).
//!
//! The input is JSON: a `tools/list` page (`{"tools": [...]}`), a bare array of tools, or a cache
//! file. Every entry goes through the live path (`parse_tool`, then `admit`), and the same bytes
//! are loaded as a cache file. Checked: every admitted tool satisfies every rule (re-checked here
//! from the rules' text, not with the crate's helpers; `annotations` included), each listed tool is either admitted or
//! refused with the first rule it breaks, in order; the limits hold; `admit` is idempotent; a
//! save of the admitted list loads back unchanged; a cache that loads holds only admissible tools.
//! The list is also replicated and its descriptions grown (by factors taken from the input's
//! length) so that the 512-tool, 4 MiB and 16 KiB limits are reached.

use dotty_pi_ext::mcp::{parse_tool, ToolInfo};
use dotty_pi_ext::palace::offer::{cache, tools as rules};
use serde_json::Value;
use std::cell::RefCell;

const BUILTINS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
const VOICE: [&str; 7] =
    ["memory_lookup", "remember", "recall_person", "remember_person", "think_hard", "take_photo", "play_song"];
const KEY: &str = "stdio:mempalace-mcp";

thread_local! {
    // On tmpfs when there is one: the cache is written with fsync.
    static DIR: RefCell<tempfile::TempDir> = RefCell::new(
        tempfile::Builder::new().prefix("dotty-fuzz-").tempdir_in(if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" })
            .expect("a temporary directory"),
    );
}

pub fn check(data: &[u8]) {
    let path = DIR.with(|d| cache::cache_path(d.borrow().path()));
    let loaded = {
        std::fs::write(&path, data).expect("write the cache file");
        let key = serde_json::from_slice::<Value>(data)
            .ok()
            .and_then(|v| v.get("key").and_then(Value::as_str).map(String::from));
        cache::load(&path, key.as_deref().unwrap_or(KEY), &VOICE).map(|c| c.map(|c| c.tools))
    };
    if let Ok(Some(list)) = &loaded {
        assert!(!list.is_empty());
        let again = rules::admit(list.clone(), &VOICE);
        assert!(again.refused.is_empty() && again.cut == 0, "a loaded cache holds only admissible tools");
        check_admitted(list, list);
    }

    let Ok(v) = serde_json::from_slice::<Value>(data) else { return };
    let entries = match &v {
        Value::Array(a) => a.clone(),
        Value::Object(o) => o.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        _ => return,
    };
    let listed: Vec<ToolInfo> = entries.into_iter().map(parse_tool).collect();
    let admitted = check_admit(&listed);

    if !admitted.is_empty() {
        cache::save(&path, KEY, &admitted, &Default::default(), &VOICE).expect("an admitted list can be saved");
        assert_eq!(
            cache::load(&path, KEY, &VOICE).map(|c| c.map(|c| c.tools)),
            Ok(Some(admitted.clone())),
            "save then load"
        );
    }

    // Replicated up to past 512 tools; in one case of four, every description just past 16 KiB
    // (so the 4 MiB budget is met too).
    let copies = data.len() % 7;
    let grow = data.len() / 7 % 4 == 3;
    if copies > 0 && !listed.is_empty() {
        let big: Vec<ToolInfo> = (0..copies * 90)
            .flat_map(|i| {
                listed.iter().map(move |t| {
                    let mut t = t.clone();
                    if rules::valid_name(&t.name) && t.name.len() < 60 {
                        t.name = format!("{}{i}", t.name);
                    }
                    if grow {
                        t.description =
                            t.description.map(|d| d.repeat(rules::MAX_DESCRIPTION_BYTES / d.len().max(1) + 2));
                    }
                    t
                })
            })
            .take(600)
            .collect();
        check_admit(&big);
    }
}

/// `admit(listed)` against the rules; returns the admitted tools.
fn check_admit(listed: &[ToolInfo]) -> Vec<ToolInfo> {
    let out = rules::admit(listed.to_vec(), &VOICE);
    check_admitted(&out.tools, listed);
    assert_eq!(out.tools.len() + out.refused.len(), listed.len(), "each tool admitted or refused");

    // Walk the list in order: each tool is the next admitted one or the next refused one.
    let (mut a, mut r) = (out.tools.iter().peekable(), out.refused.iter().peekable());
    let mut seen: Vec<&str> = Vec::new();
    let (mut total, mut taken, mut cut) = (0usize, 0usize, 0usize);
    for t in listed {
        let first_rule = broken_rule(t, &seen);
        match first_rule {
            Some(why) => {
                let refused = r.next().expect("a refused entry");
                assert_eq!(
                    (refused.name.as_str(), refused.why),
                    (t.name.as_str(), why),
                    "refused for the first rule broken"
                );
            }
            None => {
                seen.push(&t.name);
                let desc = t.description.as_deref().map(|d| cut_at(d, rules::MAX_DESCRIPTION_BYTES));
                let size = t.name.len()
                    + desc.map_or(0, str::len)
                    + serde_json::to_string(&t.input_schema).expect("json").len()
                    + annotations_len(t);
                if taken >= 512 {
                    assert_eq!(
                        r.next().map(|x| (x.name.as_str(), x.why)),
                        Some((t.name.as_str(), rules::Why::TooMany))
                    );
                } else if total + size > 4 * 1024 * 1024 {
                    assert_eq!(
                        r.next().map(|x| (x.name.as_str(), x.why)),
                        Some((t.name.as_str(), rules::Why::OverBudget))
                    );
                } else {
                    let got = a.next().expect("an admitted entry");
                    assert_eq!(
                        (&got.name, got.description.as_deref(), &got.input_schema, &got.annotations),
                        (&t.name, desc, &t.input_schema, &t.annotations),
                        "annotations kept as listed"
                    );
                    cut += usize::from(desc.map(str::len) != t.description.as_deref().map(str::len));
                    total += size;
                    taken += 1;
                }
            }
        }
    }
    assert!(a.next().is_none() && r.next().is_none());
    assert_eq!(out.cut, cut, "descriptions cut");

    let again = rules::admit(out.tools.clone(), &VOICE);
    assert!(again.refused.is_empty() && again.cut == 0 && again.tools == out.tools, "admit is idempotent");
    if let Some(line) = rules::summary("the palace's tool list", &out.refused) {
        assert!(!line.contains('\n') && !line.contains('\r'), "one stderr line: {line:?}");
    }
    out.tools
}

/// The trust rules every admitted list obeys, checked from their text.
fn check_admitted(tools: &[ToolInfo], listed: &[ToolInfo]) {
    assert!(tools.len() <= 512);
    let mut total = 0;
    for (i, t) in tools.iter().enumerate() {
        let n = &t.name;
        assert!(
            (1..=64).contains(&n.len()) && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "name {n:?}"
        );
        assert!(!BUILTINS.contains(&n.as_str()) && !VOICE.contains(&n.as_str()), "name {n:?}");
        assert!(tools[..i].iter().all(|o| o.name != *n), "duplicate {n:?}");
        let schema = t.input_schema.as_object().expect("an object schema");
        assert!(schema.get("type").is_none_or(|t| t == "object"));
        let schema_len = serde_json::to_string(&t.input_schema).expect("json").len();
        assert!(schema_len <= 256 * 1024);
        let d = t.description.as_deref().unwrap_or_default();
        assert!(d.len() <= 16 * 1024);
        assert!(
            listed.iter().any(|l| l.name == *n && l.description.as_deref().unwrap_or_default().starts_with(d)),
            "the description is the listed one's beginning"
        );
        let annotations = annotations_len(t);
        assert!(
            t.annotations.as_ref().is_none_or(Value::is_object) && annotations <= 16 * 1024,
            "annotations of {n:?}"
        );
        total += n.len() + d.len() + schema_len + annotations;
    }
    assert!(total <= 4 * 1024 * 1024);
}

/// The first rule `t` breaks (the order `admit` checks them in), given the names admitted so far.
fn broken_rule(t: &ToolInfo, seen: &[&str]) -> Option<rules::Why> {
    let n = t.name.as_str();
    let name_ok = (1..=64).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Some(rules::Why::BadName);
    }
    if BUILTINS.contains(&n) {
        return Some(rules::Why::PiBuiltin);
    }
    if VOICE.contains(&n) {
        return Some(rules::Why::VoiceTool);
    }
    match t.input_schema.as_object() {
        Some(o) if o.get("type").is_none_or(|t| t == "object") => {}
        _ => return Some(rules::Why::SchemaNotObject),
    }
    if serde_json::to_string(&t.input_schema).expect("json").len() > 256 * 1024 {
        return Some(rules::Why::SchemaTooLarge);
    }
    if t.annotations.as_ref().is_some_and(|a| !a.is_object()) || annotations_len(t) > 16 * 1024 {
        return Some(rules::Why::BadAnnotations);
    }
    if seen.contains(&n) {
        return Some(rules::Why::Duplicate);
    }
    None
}

/// Bytes of a tool's `annotations` serialized (none: 0).
fn annotations_len(t: &ToolInfo) -> usize {
    t.annotations.as_ref().map_or(0, |a| serde_json::to_string(a).expect("json").len())
}

/// The longest prefix of `d` of at most `max` bytes that ends at a character boundary.
fn cut_at(d: &str, max: usize) -> &str {
    if d.len() <= max {
        return d;
    }
    let mut end = 0;
    for (i, c) in d.char_indices() {
        if i + c.len_utf8() > max {
            break;
        }
        end = i + c.len_utf8();
    }
    &d[..end]
}
