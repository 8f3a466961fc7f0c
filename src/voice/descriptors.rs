//! What pi shows the model for each voice tool: names, descriptions and JSON Schema parameters.

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

fn one_string(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": { name: { "type": "string", "description": description } },
        "required": [name]
    })
}

/// The seven voice tools, in [`Tool::ALL`]'s order.
pub(crate) fn voice_tools() -> Vec<Descriptor> {
    vec![
        Descriptor {
            tool: Tool::MemoryLookup,
            label: "Memory lookup",
            description: "Search Dotty's long-term memory for facts matching a phrase. Returns up to three short snippets separated by ' | ', or '(no memories found)'.",
            prompt_snippet: "memory_lookup(query): search what Dotty remembers",
            prompt_guidelines: &["Use memory_lookup before saying you don't remember something."],
            parameters: one_string("query", "Words or a short phrase to look for, e.g. 'favourite colour'."),
        },
        Descriptor {
            tool: Tool::Remember,
            label: "Remember",
            description: "Store a durable fact in Dotty's long-term memory (at most 300 characters). Returns '(remembered)' or '(remember failed)'.",
            prompt_snippet: "remember(fact): store a durable fact",
            prompt_guidelines: &["Use remember only for facts worth keeping across conversations, not for small talk."],
            parameters: one_string("fact", "The fact, as one short self-contained sentence."),
        },
        Descriptor {
            tool: Tool::RecallPerson,
            label: "Recall person",
            description: "Recall the approved facts Dotty knows about a named household member. Returns facts separated by ' | ', or '(nothing remembered about <name>)'.",
            prompt_snippet: "recall_person(name): what Dotty knows about someone",
            prompt_guidelines: &["Use recall_person when someone introduces themselves or is mentioned by name."],
            parameters: one_string("name", "The person's name, e.g. 'Ada'."),
        },
        Descriptor {
            tool: Tool::RememberPerson,
            label: "Remember person",
            description: "Store a fact about a named household member (at most 300 characters). Facts about children are held for a grown-up to review.",
            prompt_snippet: "remember_person(name, fact): store a fact about someone",
            prompt_guidelines: &["Use remember_person for lasting facts about a person; tell the user if the fact was held for review."],
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "The person's name, e.g. 'Ada'." },
                    "fact": { "type": "string", "description": "The fact about them, as one short sentence." }
                },
                "required": ["name", "fact"]
            }),
        },
        Descriptor {
            tool: Tool::ThinkHard,
            label: "Think hard",
            description: "Ask a larger reasoning model a hard question (maths, facts, planning). Returns a terse one or two sentence answer.",
            prompt_snippet: "think_hard(question): ask a bigger model",
            prompt_guidelines: &["Use think_hard only for questions you can't answer reliably yourself; it takes several seconds."],
            parameters: one_string("question", "The question, self-contained."),
        },
        Descriptor {
            tool: Tool::TakePhoto,
            label: "Take photo",
            description: "Describe what Dotty's camera sees right now (a fresh description, or a reply saying nothing fresh is available).",
            prompt_snippet: "take_photo(): what the camera sees",
            prompt_guidelines: &["Use take_photo when asked what Dotty can see."],
            parameters: json!({ "type": "object", "properties": {} }),
        },
        Descriptor {
            tool: Tool::PlaySong,
            label: "Play song",
            description: "Play a song from Dotty's song library by (part of) its name. Returns 'playing <song>' or a reply listing some available songs.",
            prompt_snippet: "play_song(name): play a song from the library",
            prompt_guidelines: &["Use play_song when asked to play or sing a song."],
            parameters: one_string("name", "The song's name or part of it, e.g. 'twinkle'."),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_descriptor_per_tool_in_order() {
        let tools: Vec<Tool> = voice_tools().into_iter().map(|d| d.tool).collect();
        assert_eq!(tools, Tool::ALL);
    }
}
