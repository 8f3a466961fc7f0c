//! `/mempalace-diary [topic]`: the user message that asks the model to write this session's
//! diary entry. It stays a prompt (not an automatic hook) because composing the entry needs an
//! LLM turn, and `session_shutdown` fires too late for one.

/// The palace tool the diary prompt asks the model to call.
pub(crate) const DIARY_TOOL: &str = "mempalace_diary_write";

/// The user message text for `/mempalace-diary [topic]`. A blank topic counts as none. `reach`:
/// how the model reaches the tool when it is not declared to it (pi 1.x's codemode/deferred).
/// `named`: the name the model knows a palace tool by (pi's own MCP's `mcp__<server>__<tool>` when
/// pi offers the palace's tools, else the tool's own).
pub(crate) fn diary_prompt(
    agent_name: &str,
    topic: Option<&str>,
    reach: Option<&str>,
    named: &dyn Fn(&str) -> String,
) -> String {
    let topic = topic.map(str::trim).filter(|t| !t.is_empty());
    let args = match topic {
        Some(t) => format!("`agent_name`: {}, `topic`: {}, `entry`: <your entry>", json_str(agent_name), json_str(t)),
        None => format!("`agent_name`: {}, `entry`: <your entry>", json_str(agent_name)),
    };
    let mut text = format!(
        "Write your MemPalace diary entry for this session now: call the `{}` tool \
         once with {args}.{}\n\n\
         Write the entry in AAAK form, the compressed shorthand the palace uses for memories: one \
         dense line of `|`-separated fields, dotted terms instead of sentences, `+` to join related \
         items, `KEY:value` for facts, entity codes where you know them, and a closing importance \
         marker from ★ to ★★★★★. For example: \
         `SESSION:2026-04-04|built.palace.graph+diary.tools|ALC.req:agent.diaries.in.aaak|★★★`.\n\n\
         Summarise the session: what was worked on, what was decided and why, what is still open, \
         and anything your future self should know first.",
        named(DIARY_TOOL),
        reach.map(|r| format!(" ({r}.)")).unwrap_or_default()
    );
    if let Some(t) = topic {
        text.push_str(&format!(" Focus the entry on: {t}."));
    }
    text.push_str(&format!(
        " (If you are unsure of the AAAK conventions, `{}` describes them.)",
        named("mempalace_get_aaak_spec")
    ));
    text
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(t: &str) -> String {
        t.to_string()
    }

    #[test]
    fn names_pi_s_own_tools_when_pi_offers_them() {
        let p = diary_prompt("pi", None, None, &|t: &str| format!("mcp__memory__{t}"));
        assert!(p.contains("call the `mcp__memory__mempalace_diary_write` tool once"), "{p}");
        assert!(p.contains("`mcp__memory__mempalace_get_aaak_spec` describes them"), "{p}");
        assert!(!p.contains("`mempalace_diary_write`"), "{p}");
    }

    #[test]
    fn names_the_tool_agent_and_aaak() {
        let p = diary_prompt("pi", None, None, &own);
        assert!(p.contains("`mempalace_diary_write`"));
        assert!(p.contains("`agent_name`: \"pi\""));
        assert!(p.contains("AAAK"));
        assert!(!p.contains("`topic`"));
        assert!(!p.contains("codemode"));
        let p = diary_prompt(
            "pi",
            None,
            Some("`mempalace_diary_write` is not declared to you: call it from a `codemode` script"),
            &own,
        );
        assert!(
            p.contains(
                "<your entry>. (`mempalace_diary_write` is not declared to you: call it from a `codemode` script.)\n\n"
            ),
            "{p}"
        );
    }

    #[test]
    fn topic_is_passed_and_blank_topic_ignored() {
        let p = diary_prompt("pi-laptop", Some("  voice \"tools\" "), None, &own);
        assert!(p.contains("`agent_name`: \"pi-laptop\", `topic`: \"voice \\\"tools\\\"\""), "{p}");
        assert!(p.contains("Focus the entry on: voice \"tools\"."));
        assert_eq!(diary_prompt("pi", Some("   "), None, &own), diary_prompt("pi", None, None, &own));
    }
}
