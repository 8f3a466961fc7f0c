//! Which palace tools pi may see: the one validator for a live `tools/list` and the cache file.
//!
//! The palace is untrusted (docs/trust.md). A tool named like one of pi's
//! built-ins or a voice tool would replace it (every `bash` call going to the palace), a name with
//! spaces or newlines breaks the model's tool calls, and a schema of a million values costs pi its
//! memory and its start. So a tool is taken only when its name matches `^[A-Za-z0-9_-]{1,64}$` and
//! is no built-in, voice tool or earlier tool of the same list, its `inputSchema` is an object of
//! `type` "object" (or none) of at most 256 KiB serialized, its `annotations` (if any) an object of
//! at most 16 KiB; its description is cut to 16 KiB. At most 512 tools and 4 MiB of definitions
//! are taken; the rest is dropped from the end. The server's `serverInfo` texts and `instructions`
//! (the palace's namespace) are cut to 256 bytes and 16 KiB ([`server_meta`]).

use crate::mcp::ToolInfo;
use crate::text::floor_char_boundary;
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;

pub(crate) const MAX_NAME_CHARS: usize = 64;
pub(crate) const MAX_SCHEMA_BYTES: usize = 256 * 1024;
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// A tool's `annotations`, serialized.
pub(crate) const MAX_ANNOTATIONS_BYTES: usize = 16 * 1024;
/// Each `serverInfo` text (name, title, version) the namespace shows.
pub(crate) const MAX_SERVER_TEXT_BYTES: usize = 256;
pub(crate) const MAX_TOOLS: usize = 512;
/// Names, descriptions and schemas (serialized) of all the tools taken, together.
pub(crate) const MAX_TOTAL_BYTES: usize = 4 * 1024 * 1024;
/// pi's own tools: a palace tool of the same name would take their place.
pub(crate) const PI_BUILTINS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
/// Refused names shown in the stderr line (the count is always complete).
const NAMES_SHOWN: usize = 3;

/// Why a tool was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Why {
    BadName,
    PiBuiltin,
    VoiceTool,
    Duplicate,
    SchemaNotObject,
    SchemaTooLarge,
    BadAnnotations,
    TooMany,
    OverBudget,
    /// Only for [`taken_elsewhere`]: another extension (or pi) has the name.
    AlreadyRegistered,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Why::BadName => "name not matching [A-Za-z0-9_-]{1,64}",
            Why::PiBuiltin => "name of a pi built-in tool",
            Why::VoiceTool => "name of a voice tool",
            Why::Duplicate => "name listed twice",
            Why::SchemaNotObject => "inputSchema not an object schema",
            Why::SchemaTooLarge => "inputSchema over 256 KiB",
            Why::BadAnnotations => "annotations not an object of at most 16 KiB",
            Why::TooMany => "past 512 tools",
            Why::OverBudget => "past 4 MiB of tool definitions",
            Why::AlreadyRegistered => "name already registered in pi",
        })
    }
}

/// One tool left out, with its name as listed (possibly hostile: see [`shown`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub name: String,
    pub why: Why,
}

/// The outcome of [`admit`].
#[derive(Debug, Default)]
pub struct Admitted {
    pub tools: Vec<ToolInfo>,
    pub refused: Vec<Refused>,
    /// Descriptions cut to 16 KiB (not a refusal for a live list; a cache never holds one).
    pub cut: usize,
}

/// `^[A-Za-z0-9_-]{1,64}$`.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Why `tool` may never be registered, whatever else is in its list. `reserved`: the names of the
/// voice tools (the caller's, handed in: the palace doesn't know the voice half).
pub(crate) fn refusal(tool: &ToolInfo, reserved: &[&str]) -> Option<Why> {
    let name = tool.name.as_str();
    if !valid_name(name) {
        return Some(Why::BadName);
    }
    if PI_BUILTINS.contains(&name) {
        return Some(Why::PiBuiltin);
    }
    if reserved.contains(&name) {
        return Some(Why::VoiceTool);
    }
    let object_type = match tool.input_schema.get("type") {
        None => true,
        Some(t) => t == "object",
    };
    if !tool.input_schema.is_object() || !object_type {
        return Some(Why::SchemaNotObject);
    }
    if serialized_len(&tool.input_schema, MAX_SCHEMA_BYTES) > MAX_SCHEMA_BYTES {
        return Some(Why::SchemaTooLarge);
    }
    if let Some(a) = &tool.annotations {
        if !a.is_object() || serialized_len(a, MAX_ANNOTATIONS_BYTES) > MAX_ANNOTATIONS_BYTES {
            return Some(Why::BadAnnotations);
        }
    }
    None
}

/// The server's namespace texts from its `initialize` answer (`serverInfo`'s `name`, `title`,
/// `version`; `instructions`), each cut to its limit at a character boundary.
pub fn server_meta(info: Option<&Value>, instructions: Option<&str>) -> crate::palace::offer::exposure::ServerMeta {
    let text = |k: &str| info.and_then(|i| i.get(k)).and_then(Value::as_str).map(|s| cut(s, MAX_SERVER_TEXT_BYTES));
    crate::palace::offer::exposure::ServerMeta {
        name: text("name"),
        title: text("title"),
        version: text("version"),
        instructions: instructions.map(|s| cut(s, MAX_DESCRIPTION_BYTES)),
    }
}

/// Whether `meta` is within the limits [`server_meta`] cuts to (a cache file's must be).
pub(crate) fn server_meta_ok(meta: &crate::palace::offer::exposure::ServerMeta) -> bool {
    [&meta.name, &meta.title, &meta.version].iter().all(|t| t.as_ref().is_none_or(|t| t.len() <= MAX_SERVER_TEXT_BYTES))
        && meta.instructions.as_ref().is_none_or(|i| i.len() <= MAX_DESCRIPTION_BYTES)
}

fn cut(s: &str, max: usize) -> String {
    s[..floor_char_boundary(s, max)].to_string()
}

/// Takes the tools pi may register from one list (a `tools/list` answer or the cache), in order;
/// `reserved`: the voice tools' names, never a palace tool's.
pub fn admit(list: Vec<ToolInfo>, reserved: &[&str]) -> Admitted {
    let mut out = Admitted::default();
    let mut seen = HashSet::new();
    let mut total = 0usize;
    for mut tool in list {
        let mut why = refusal(&tool, reserved);
        if why.is_none() && !seen.insert(tool.name.clone()) {
            why = Some(Why::Duplicate);
        }
        let mut cut = false;
        if why.is_none() {
            if let Some(d) = tool.description.as_mut().filter(|d| d.len() > MAX_DESCRIPTION_BYTES) {
                d.truncate(floor_char_boundary(d, MAX_DESCRIPTION_BYTES));
                cut = true;
            }
            let size = tool.name.len()
                + tool.description.as_ref().map_or(0, String::len)
                + serialized_len(&tool.input_schema, usize::MAX)
                + tool.annotations.as_ref().map_or(0, |a| serialized_len(a, usize::MAX));
            if out.tools.len() >= MAX_TOOLS {
                why = Some(Why::TooMany);
            } else if total + size > MAX_TOTAL_BYTES {
                why = Some(Why::OverBudget);
            } else {
                total += size;
            }
        }
        match why {
            Some(why) => out.refused.push(Refused { name: std::mem::take(&mut tool.name), why }),
            None => {
                // Counted only for a tool taken: one dropped past the limits is not "cut".
                out.cut += usize::from(cut);
                out.tools.push(tool);
            }
        }
    }
    out
}

/// The one stderr line for what a list (`source`: "the palace's tool list", "the tool cache")
/// had refused: how many, and why with the first few names, escaped and cut to 64 characters.
pub fn summary(source: &str, refused: &[Refused]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    let mut whys: Vec<Why> = refused.iter().map(|r| r.why).collect();
    whys.sort();
    whys.dedup();
    let parts: Vec<String> = whys
        .iter()
        .map(|&why| {
            let names: Vec<&Refused> = refused.iter().filter(|r| r.why == why).collect();
            let mut shown: Vec<String> = names.iter().take(NAMES_SHOWN).map(|r| shown(&r.name)).collect();
            if names.len() > NAMES_SHOWN {
                shown.push(format!("and {} more", names.len() - NAMES_SHOWN));
            }
            format!("{} {why} ({})", names.len(), shown.join(", "))
        })
        .collect();
    let n = refused.len();
    Some(format!("mempalace: {n} tool{} from {source} skipped: {}", if n == 1 { "" } else { "s" }, parts.join("; ")))
}

/// A hostile name as it may appear on a stderr line: cut to 64 characters, then escaped (no
/// newline or control character reaches the terminal).
pub fn shown(name: &str) -> String {
    format!("\"{}\"", crate::text::first_chars(name, MAX_NAME_CHARS).escape_debug())
}

/// The names among `tools` that something else in this pi process registered already (`taken`:
/// pi's own list, minus what this extension registered): those are not registered again.
pub fn taken_elsewhere<'a>(tools: &'a [ToolInfo], taken: &[String]) -> Vec<&'a str> {
    tools.iter().map(|t| t.name.as_str()).filter(|n| taken.iter().any(|t| t == n)).collect()
}

/// Bytes of `v` serialized as compact JSON, counting no further than just past `limit` (a
/// million-value schema is not written out to be measured).
pub(crate) fn serialized_len(v: &Value, limit: usize) -> usize {
    struct Counter {
        n: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len();
            if self.n > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter { n: 0, limit };
    let _ = serde_json::to_writer(&mut c, v);
    c.n
}

/// The voice tools' names, as the extension hands them in (`voice::Tool::names`), for the palace's
/// tests (which don't reach into the voice half either).
#[cfg(test)]
pub(crate) const RESERVED_IN_TESTS: &[&str] =
    &["memory_lookup", "remember", "recall_person", "remember_person", "think_hard", "take_photo", "play_song"];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use RESERVED_IN_TESTS as RESERVED;

    fn tool(name: &str, schema: Value) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: Some(format!("about {name}")),
            input_schema: schema,
            annotations: None,
        }
    }

    fn ok(name: &str) -> ToolInfo {
        tool(name, json!({"type": "object", "properties": {"q": {"type": "string"}}}))
    }

    #[test]
    fn names() {
        for good in ["mempalace_status", "a", "A-b_9", &"x".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "has space", "new\nline", "dot.ted", "ünï", &"x".repeat(65), "semi;colon"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert_eq!(refusal(&ok("bash"), RESERVED), Some(Why::PiBuiltin));
        assert_eq!(refusal(&ok("ls"), RESERVED), Some(Why::PiBuiltin));
        assert_eq!(refusal(&ok("remember"), RESERVED), Some(Why::VoiceTool));
        assert_eq!(refusal(&ok("Bash"), RESERVED), None, "pi's names are case-sensitive");
    }

    #[test]
    fn schemas() {
        assert_eq!(refusal(&tool("a", json!({})), RESERVED), None, "a missing type counts as object");
        assert_eq!(refusal(&tool("a", json!({"type": "object"})), RESERVED), None);
        for bad in [
            json!("object"),
            json!([]),
            json!(null),
            json!({"type": "string"}),
            json!({"type": ["object"]}),
            json!({"type": 1}),
        ] {
            assert_eq!(refusal(&tool("a", bad.clone()), RESERVED), Some(Why::SchemaNotObject), "{bad}");
        }
        let props: serde_json::Map<String, Value> =
            (0..20_000).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
        assert_eq!(
            refusal(&tool("a", json!({"type": "object", "properties": props})), RESERVED),
            Some(Why::SchemaTooLarge)
        );
        let big = json!({"enum": vec![0; 1_100_000]});
        let t0 = std::time::Instant::now();
        assert_eq!(refusal(&tool("a", big), RESERVED), Some(Why::SchemaTooLarge));
        assert!(t0.elapsed() < std::time::Duration::from_millis(500), "stops counting at the limit");
    }

    /// A tool whose description is 32 KiB of 2-byte chars.
    fn long_described(name: &str) -> ToolInfo {
        let mut long = ok(name);
        long.description = Some("é".repeat(MAX_DESCRIPTION_BYTES));
        long
    }

    #[test]
    fn admit_keeps_order_cuts_descriptions_and_limits() {
        let list =
            vec![ok("one"), ok("bash"), long_described("long"), ok("one"), ok("has space"), tool("nope", json!([1]))];
        let a = admit(list, RESERVED);
        assert_eq!(a.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["one", "long"]);
        let d = a.tools[1].description.as_deref().unwrap();
        assert_eq!(d.len(), MAX_DESCRIPTION_BYTES);
        assert!(d.chars().all(|c| c == 'é'));
        assert_eq!(a.cut, 1);
        let whys: Vec<Why> = a.refused.iter().map(|r| r.why).collect();
        assert_eq!(whys, [Why::PiBuiltin, Why::Duplicate, Why::BadName, Why::SchemaNotObject]);

        let many: Vec<ToolInfo> = (0..600).map(|i| ok(&format!("t{i}"))).collect();
        let a = admit(many, RESERVED);
        assert_eq!(a.tools.len(), MAX_TOOLS);
        assert_eq!(a.tools.last().unwrap().name, "t511");
        assert_eq!(a.refused.len(), 88);
        assert!(a.refused.iter().all(|r| r.why == Why::TooMany));

        // 20 schemas of ~250 KiB: 16 fit in 4 MiB, the rest is dropped from the end.
        let blob = "x".repeat(250 * 1024);
        let heavy: Vec<ToolInfo> =
            (0..20).map(|i| tool(&format!("h{i}"), json!({"type": "object", "description": blob}))).collect();
        let a = admit(heavy, RESERVED);
        assert_eq!(a.tools.len(), 16);
        assert_eq!(a.refused.first().map(|r| (r.name.as_str(), r.why)), Some(("h16", Why::OverBudget)));

        // Found by fuzz/ (tools): a long description of a tool dropped past the limits was
        // counted as cut though no tool taken has it.
        let mut past: Vec<ToolInfo> = (0..MAX_TOOLS).map(|i| ok(&format!("t{i}"))).collect();
        past.push(long_described("late"));
        let a = admit(past, RESERVED);
        assert_eq!((a.tools.len(), a.cut, a.refused.len()), (MAX_TOOLS, 0, 1));
    }

    #[test]
    fn annotations_are_kept_as_declared_within_bounds() {
        let with = |a: Value| ToolInfo { annotations: Some(a), ..ok("a") };
        let declared = json!({"readOnlyHint": true, "title": "Search", "x-vendor": {"k": [1]}});
        assert_eq!(refusal(&with(declared.clone()), RESERVED), None);
        assert_eq!(admit(vec![with(declared.clone())], RESERVED).tools[0].annotations, Some(declared), "unchanged");
        for bad in [json!(true), json!([]), json!("readOnly"), json!({"t": "x".repeat(MAX_ANNOTATIONS_BYTES)})] {
            assert_eq!(refusal(&with(bad.clone()), RESERVED), Some(Why::BadAnnotations), "{bad}");
        }
    }

    #[test]
    fn server_texts_are_cut() {
        let info = json!({"name": "mempalace", "version": "é".repeat(200), "title": 7});
        let m = server_meta(Some(&info), Some(&"i".repeat(MAX_DESCRIPTION_BYTES + 5)));
        assert_eq!(m.name.as_deref(), Some("mempalace"));
        assert_eq!(m.title, None);
        assert_eq!(m.version.as_deref().map(str::len), Some(MAX_SERVER_TEXT_BYTES));
        assert_eq!(m.instructions.as_deref().map(str::len), Some(MAX_DESCRIPTION_BYTES));
        assert!(server_meta_ok(&m));
        assert!(!server_meta_ok(&crate::palace::offer::exposure::ServerMeta { name: Some("n".repeat(300)), ..m }));
        assert_eq!(server_meta(None, None), crate::palace::offer::exposure::ServerMeta::default());
    }

    #[test]
    fn the_summary_is_one_escaped_line() {
        let long = "n".repeat(300);
        let a = admit(
            vec![ok("bash"), ok("read"), ok("bad name\nforged line"), ok(&long), ok("x y"), ok("a b"), ok("remember")],
            RESERVED,
        );
        let line = summary("the palace's tool list", &a.refused).unwrap();
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with("mempalace: 7 tools from the palace's tool list skipped: "), "{line}");
        assert!(line.contains(r#"4 name not matching [A-Za-z0-9_-]{1,64} ("bad name\nforged line", "nnnn"#), "{line}");
        assert!(line.contains("and 1 more"), "{line}");
        assert!(line.contains(r#"2 name of a pi built-in tool ("bash", "read")"#), "{line}");
        assert!(line.contains(r#"1 name of a voice tool ("remember")"#), "{line}");
        assert!(!line.contains(&"n".repeat(65)), "names cut to 64 characters");
        assert_eq!(summary("x", &[]), None);
    }

    #[test]
    fn taken_names() {
        let tools = vec![ok("a"), ok("b")];
        assert_eq!(taken_elsewhere(&tools, &["b".into(), "c".into()]), ["b"]);
    }
}
