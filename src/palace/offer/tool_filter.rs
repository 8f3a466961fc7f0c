//! `MEMPALACE_TOOLS`, the filter of which admitted palace tools pi is offered: read into the
//! palace's configuration, set to none when pi's own MCP offers the palace's tools
//! (`palace::pi_mcp`), applied where the bridge hands tools to pi.

use crate::mcp::ToolInfo;
use std::fmt;

/// `MEMPALACE_TOOLS`: which of the admitted palace tools pi is offered. Unset (or blank): all of
/// them. Otherwise a comma-separated list of names or `*` patterns (`mempalace_diary_*`). Only
/// what pi registers is filtered: the wake-up, the diary and the feed call the palace directly.
/// `MEMPALACE_DIRECT_TOOLS` is a list of the same kind whose unset means nothing listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolFilter {
    /// Unset, where unset means every tool (`MEMPALACE_TOOLS`).
    #[default]
    All,
    /// Unset, where unset means no tool (`MEMPALACE_DIRECT_TOOLS`): nothing listed.
    NothingListed,
    /// No tool: pi's own MCP offers the palace's tools.
    PiMcpOffers,
    /// The entries listed: names or `*` patterns, trimmed, none empty.
    Listed(Vec<String>),
}

impl ToolFilter {
    /// The filter of `raw` (the variable's value), unset or blank meaning every tool.
    pub fn parse(raw: Option<&str>) -> ToolFilter {
        Self::entries(raw).map_or(ToolFilter::All, ToolFilter::Listed)
    }

    /// The filter of `raw`, unset or blank meaning nothing listed.
    pub fn parse_listed(raw: Option<&str>) -> ToolFilter {
        Self::entries(raw).map_or(ToolFilter::NothingListed, ToolFilter::Listed)
    }

    fn entries(raw: Option<&str>) -> Option<Vec<String>> {
        let list: Vec<String> =
            raw.unwrap_or_default().split(',').map(str::trim).filter(|p| !p.is_empty()).map(String::from).collect();
        (!list.is_empty()).then_some(list)
    }

    /// Offers no tool: pi's own MCP offers the palace's tools.
    pub fn none() -> ToolFilter {
        ToolFilter::PiMcpOffers
    }

    /// Whether any tool may be offered (not `none`, not pi's own MCP offering them).
    pub(crate) fn offers_any(&self) -> bool {
        matches!(self, ToolFilter::All | ToolFilter::Listed(_))
    }

    /// True when every tool is offered (the default).
    pub(crate) fn is_all(&self) -> bool {
        *self == ToolFilter::All
    }

    /// True when the variable listed entries.
    pub(crate) fn is_listed(&self) -> bool {
        matches!(self, ToolFilter::Listed(_))
    }

    /// Whether the filter lets the tool `name` through.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            ToolFilter::All => true,
            ToolFilter::NothingListed | ToolFilter::PiMcpOffers => false,
            ToolFilter::Listed(list) => list.iter().any(|p| glob(p, name)),
        }
    }

    /// The tools of `tools` pi is offered, in order.
    pub fn apply(&self, tools: Vec<ToolInfo>) -> Vec<ToolInfo> {
        tools.into_iter().filter(|t| self.allows(&t.name)).collect()
    }

    /// The entries that match none of `tools` (a typo, or a tool this palace doesn't have).
    pub fn unmatched(&self, tools: &[ToolInfo]) -> Vec<&str> {
        match self {
            ToolFilter::Listed(list) => {
                list.iter().filter(|p| !tools.iter().any(|t| glob(p, &t.name))).map(String::as_str).collect()
            }
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for ToolFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolFilter::All => f.write_str("all"),
            ToolFilter::NothingListed => f.write_str("none"),
            ToolFilter::PiMcpOffers => f.write_str("none, pi's own MCP offers them"),
            ToolFilter::Listed(list) => f.write_str(&list.join(",")),
        }
    }
}

/// `name` matches `pattern`, where `*` stands for any run of characters (none included).
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else { return rest.is_empty() };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            annotations: None,
        }
    }

    #[test]
    fn globs() {
        for (p, n) in [
            ("a", "a"),
            ("*", "x"),
            ("*", ""),
            ("mempalace_diary_*", "mempalace_diary_write"),
            ("*_read", "diary_read"),
            ("m*s*h", "mempalace_search"),
            ("a*a", "aa"),
            ("**", "z"),
        ] {
            assert!(glob(p, n), "{p} {n}");
        }
        for (p, n) in [
            ("a", "ab"),
            ("ab", "a"),
            ("mempalace_diary_*", "mempalace_search"),
            ("*_read", "diary_reads"),
            ("a*a", "a"),
            ("x*", ""),
        ] {
            assert!(!glob(p, n), "{p} {n}");
        }
    }

    #[test]
    fn the_tool_filter_keeps_listed_names_and_patterns_in_order() {
        let list = vec![
            ok("mempalace_status"),
            ok("mempalace_search"),
            ok("mempalace_diary_write"),
            ok("mempalace_diary_read"),
        ];
        let all = ToolFilter::parse(None);
        assert!(all.is_all() && ToolFilter::parse(Some(" , ")).is_all());
        assert_eq!(all.apply(list.clone()).len(), 4);
        assert_eq!(all.to_string(), "all");
        let f = ToolFilter::parse(Some(" mempalace_diary_*, mempalace_search ,mempalace_nope,x*"));
        let names: Vec<String> = f.apply(list.clone()).into_iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            ["mempalace_search", "mempalace_diary_write", "mempalace_diary_read"],
            "the palace's order, not the filter's"
        );
        assert_eq!(f.unmatched(&list), ["mempalace_nope", "x*"]);
        assert_eq!(f.to_string(), "mempalace_diary_*,mempalace_search,mempalace_nope,x*");
        assert!(ToolFilter::parse(Some("*")).unmatched(&list).is_empty());
    }

    #[test]
    fn a_list_whose_unset_means_nothing_listed_lets_no_tool_through() {
        let nothing = ToolFilter::parse_listed(None);
        assert_eq!(nothing, ToolFilter::parse_listed(Some(" , ")));
        assert!(!nothing.allows("mempalace_search") && !nothing.is_all() && !nothing.is_listed());
        assert_eq!(nothing.to_string(), "none");
        assert!(nothing.unmatched(&[ok("a")]).is_empty());
        assert_eq!(ToolFilter::parse_listed(Some("a*")), ToolFilter::parse(Some("a*")));
    }
}
