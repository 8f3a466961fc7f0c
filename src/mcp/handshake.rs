//! The handshake on a fresh connection: `initialize`, `notifications/initialized`, then every
//! page of `tools/list` (bounded), and [`ToolInfo`], what a listed tool is.

use super::error::McpError;
use super::jsonrpc::{self, KNOWN_PROTOCOL_VERSIONS, PROTOCOL_VERSION};
use super::transport::Conn;
use serde_json::{json, Value};

/// One MCP tool as `tools/list` describes it, and as the tool cache keeps it (same JSON names).
/// What pi may register of it is decided by `palace::offer::tools`, for the live list and the cache alike.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolInfo {
    /// As listed: possibly empty or hostile until `palace::offer::tools` has checked it.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The tool's JSON Schema, unchanged.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// The tool's `annotations` (MCP's `readOnlyHint`, `destructiveHint`, …), as the server
    /// declares them; pi 1.x hands them to permission extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// What a handshake learnt: the server's tools, its `serverInfo` (`{name, version}`, if given)
/// and its `instructions` (how to use it, if given).
pub(crate) struct Handshake {
    pub tools: Vec<ToolInfo>,
    pub server_info: Option<Value>,
    pub instructions: Option<String>,
}

/// `initialize`, `notifications/initialized`, then `tools/list` following `nextCursor`.
pub(crate) async fn handshake(conn: &Conn) -> Result<Handshake, McpError> {
    let mut none = None;
    let init = conn.request("initialize", jsonrpc::initialize_params(), None, &mut none).await.map_err(|f| f.err)?;
    let server_info = init.get("serverInfo").cloned();
    let instructions = init.get("instructions").and_then(Value::as_str).map(String::from);
    let version = init.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    if !KNOWN_PROTOCOL_VERSIONS.contains(&version) {
        crate::diag!("MemPalace answered protocolVersion {version:?}, which this client does not know; continuing");
    }
    conn.set_protocol(if version.is_empty() { PROTOCOL_VERSION } else { version });
    conn.notify("notifications/initialized", None).await?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _page in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = conn.request("tools/list", params, None, &mut none).await.map_err(|f| f.err)?;
        for t in page.get("tools").and_then(Value::as_array).cloned().unwrap_or_default() {
            tools.push(parse_tool(t));
        }
        cursor = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()).map(String::from);
        if cursor.is_none() {
            return Ok(Handshake { tools, server_info, instructions });
        }
        if tools.len() >= MAX_LISTED_TOOLS {
            break;
        }
    }
    // A server that pages on and on must not grow our memory: keep what came (the palace takes
    // at most 512 tools of it anyway) and say so once.
    crate::diag!(
        "MemPalace's tools/list goes on past {} tools or {MAX_LIST_PAGES} pages; the rest is not read",
        tools.len()
    );
    Ok(Handshake { tools, server_info, instructions })
}

/// Bounds of one `tools/list` walk. Each page is one message (at most
/// `MEMPALACE_MCP_MAX_MESSAGE_BYTES`), so these cap what a listing can hold in memory; MemPalace
/// sends one page of 47 tools, and `palace::offer::tools` registers at most 512.
const MAX_LIST_PAGES: usize = 8;
const MAX_LISTED_TOOLS: usize = 1024;

/// One entry of a `tools/list` page, taken as it is: an entry without a string name gets the
/// empty name, so `palace::offer::tools` counts it with the other refused tools (one stderr line per
/// handshake, not one per entry). A missing `inputSchema` is the empty object schema.
pub fn parse_tool(mut t: Value) -> ToolInfo {
    let name = t.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let description = t.get("description").and_then(Value::as_str).map(String::from);
    let input_schema = match t.get_mut("inputSchema").map(Value::take) {
        Some(s) if !s.is_null() => s,
        _ => json!({"type": "object", "properties": {}}),
    };
    let annotations = t.get_mut("annotations").map(Value::take).filter(|a| !a.is_null());
    ToolInfo { name, description, input_schema, annotations }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_parse() {
        let t = parse_tool(json!({"name": "a", "inputSchema": {"type": "object", "required": ["x"]}}));
        assert_eq!(t.input_schema, json!({"type": "object", "required": ["x"]}));
        assert_eq!(t.description, None);
        assert_eq!(t.annotations, None);
        let t = parse_tool(json!({"name": "a", "annotations": {"readOnlyHint": true, "title": "A"}}));
        assert_eq!(t.annotations, Some(json!({"readOnlyHint": true, "title": "A"})), "kept as declared");
        assert_eq!(parse_tool(json!({"description": "no name"})).name, "");
        assert_eq!(parse_tool(json!({"name": 7})).name, "");
    }
}
