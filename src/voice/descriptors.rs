//! What pi shows the model for each voice tool: names, labels, descriptions, prompt snippets and
//! guidelines, JSON Schema parameters. The voice model was tuned on production's text, so these are
//! production's strings byte for byte (BrettKinny/dotty-stackchan `dotty-pi-ext/src/tools/<tool>.ts`,
//! the `*Tool` objects), in production's registration order (its `src/index.ts`): an interface, like
//! the reply strings. The contract's copy is `__test__/fixtures/production-descriptors.json`, with
//! each tool's source commit; the tests compare every field with it (docs/voice-tools.md, "What the
//! model reads"). A change of wording here is a contract change.

use super::Tool;
use serde_json::{json, Value};

/// One tool as pi registers it.
#[derive(Debug, Clone)]
pub(crate) struct Descriptor {
    pub tool: Tool,
    pub label: &'static str,
    pub description: &'static str,
    pub prompt_snippet: &'static str,
    pub prompt_guidelines: &'static [&'static str],
    pub parameters: Value,
}

/// One required string argument, as production's `Type.Object({ name: Type.String({ description }) })`
/// serialises (TypeBox 1.x: `type`, `required`, `properties`, in that order; pi sends it as is).
fn one_string(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "required": [name],
        "properties": { name: { "type": "string", "description": description } }
    })
}

/// The seven voice tools, in production's registration order (memory_lookup, recall_person,
/// remember, remember_person, think_hard, play_song, take_photo).
pub(crate) fn voice_tools() -> Vec<Descriptor> {
    vec![
        Descriptor {
            tool: Tool::MemoryLookup,
            label: "Memory Lookup",
            description: "Search Dotty's long-term memory for relevant facts about the user, the household, or prior conversations. Use when the user asks about something Dotty might have been told before.",
            prompt_snippet: "Search Dotty's long-term memory store for a query string.",
            prompt_guidelines: &["Use memory_lookup when the user asks about prior conversations, the household, or details Dotty might have been told before. Don't guess — query first."],
            parameters: one_string("query", "Free-text search query. Will be phrase-matched against the FTS5 index."),
        },
        Descriptor {
            tool: Tool::RecallPerson,
            label: "Recall Person",
            description: "Recall durable facts Dotty has learned about a specific household member — their preferences, relationships, recent context. Use when the conversation turns to a named person and you want what Dotty already knows about them.",
            prompt_snippet: "Look up what Dotty remembers about a named household member.",
            prompt_guidelines: &["Call recall_person when a named person comes up and you want their stored preferences or context. For general past-conversation recall that isn't about one specific person, use memory_lookup."],
            parameters: one_string("name", "The person's name — matched case-insensitively against the household registry id."),
        },
        Descriptor {
            tool: Tool::Remember,
            label: "Remember",
            description: "Store a durable fact about the user, the household, or something Dotty has learned that should persist across conversations. Use sparingly — short, specific facts only (≤300 chars).",
            prompt_snippet: "Persist a short fact to Dotty's long-term memory.",
            prompt_guidelines: &["Call remember when the user shares a stable fact worth keeping (name, preference, relationship, recurring event). Don't store ephemeral chat — that's already logged automatically.", "Keep the fact short and self-contained (≤300 chars). Longer text is silently truncated."],
            parameters: one_string("fact", "The fact to remember. Will be stored verbatim (trimmed + truncated to 300 codepoints) into the core memory namespace."),
        },
        Descriptor {
            tool: Tool::RememberPerson,
            label: "Remember Person",
            description: "Store a durable fact about a specific named household member — a preference, relationship, or recent context. Use when the user tells you something worth keeping about a particular person. For general facts not about one named person, use remember instead.",
            prompt_snippet: "Persist a fact about a named household member to Dotty's memory.",
            prompt_guidelines: &["Call remember_person when the user shares a stable fact about a specific named person. Keep it short and self-contained (≤300 chars).", "Facts about children are automatically held for a grown-up to review before Dotty uses them — just store the fact; the gate is handled for you."],
            parameters: json!({
                "type": "object",
                "required": ["name", "fact"],
                "properties": {
                    "name": { "type": "string", "description": "The person the fact is about (their name)." },
                    "fact": { "type": "string", "description": "The fact to remember about them (≤300 chars)." }
                }
            }),
        },
        Descriptor {
            tool: Tool::ThinkHard,
            label: "Think Hard",
            description: "Send a single question to a larger reasoning model for a precise 1-2 sentence answer. Use only when the quick chat path can't handle the question (math, lookups, technical specifics).",
            prompt_snippet: "Escalate a single question to the qwen3.6:27b-think reasoning model.",
            prompt_guidelines: &["Use think_hard when the user asks a factual or technical question that needs precise reasoning. Keep the question self-contained."],
            parameters: one_string("question", "Self-contained question for the reasoning model. Include any context inline."),
        },
        Descriptor {
            tool: Tool::PlaySong,
            label: "Play Song",
            description: "Play a song from Dotty's local catalogue through the robot's speaker. Pass the song name (or a fragment of it); the matcher is tolerant of extensions and substrings.",
            prompt_snippet: "Play a song from Dotty's local catalogue by name or fragment.",
            prompt_guidelines: &["Use play_song when the user asks Dotty to play, sing, or put on a specific song. Pass the user's free-form name in `name`."],
            parameters: one_string("name", "Free-form song name or fragment."),
        },
        Descriptor {
            tool: Tool::TakePhoto,
            label: "Take Photo",
            description: "Look through Dotty's camera right now and describe what you see. Uses the most recent ambient capture (≤30 s old) — Dotty does not actively trigger a fresh photo. Use when the user asks about the room, what Dotty can see, or to ground the conversation in the current physical surroundings.",
            prompt_snippet: "Look at the latest cached camera view and describe it.",
            prompt_guidelines: &["Use take_photo when the user asks 'what do you see', mentions something in front of the camera, or wants Dotty to describe the current scene. Don't guess at the room contents — call this tool first.", "If take_photo returns '(I can't see anything fresh right now)', say so honestly to the user rather than inventing a description."],
            parameters: json!({ "type": "object", "properties": {} }),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Production's strings, the contract's data (`__test__/descriptors.test.mjs` checks the same
    /// through the real entry into pi).
    const PRODUCTION: &str = include_str!("../../__test__/fixtures/production-descriptors.json");

    /// A value as bytes: JSON with its key order, which is what pi sends the model (`Value`'s own
    /// equality ignores the order of an object's keys).
    fn bytes(v: &Value) -> String {
        v.to_string()
    }

    #[test]
    fn every_field_is_productions_in_productions_order() {
        let production: Value = serde_json::from_str(PRODUCTION).unwrap();
        let want = production["tools"].as_array().unwrap();
        let ours = voice_tools();
        let names: Vec<&str> = ours.iter().map(|d| d.tool.name()).collect();
        let order: Vec<&str> = want.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, order, "production's registration order");
        let mut differences = Vec::new();
        for (d, w) in ours.iter().zip(want) {
            let fields = [
                ("label", json!(d.label)),
                ("description", json!(d.description)),
                ("promptSnippet", json!(d.prompt_snippet)),
                ("promptGuidelines", json!(d.prompt_guidelines)),
                ("parameters", d.parameters.clone()),
            ];
            for (field, value) in fields {
                if bytes(&value) != bytes(&w[field]) {
                    differences.push(format!("{}.{field}: {value}, production {}", d.tool.name(), w[field]));
                }
            }
        }
        assert!(differences.is_empty(), "{differences:#?}");
        let mut each: Vec<Tool> = ours.iter().map(|d| d.tool).collect();
        each.sort_by_key(|t| t.name());
        let mut all = Tool::ALL.to_vec();
        all.sort_by_key(|t| t.name());
        assert_eq!(each, all, "one descriptor per tool");
    }
}
