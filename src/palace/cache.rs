//! The last `tools/list` answer, kept on disk so pi can register the palace tools at once and
//! connect in the background.
//!
//! One JSON file in pi's agent directory, keyed by the server (command + arguments, or URL).
//! The key and the file never hold a token. Reading is forgiving: a missing, corrupt, foreign or
//! differently-keyed file is simply no cache (`None`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const CACHE_FILE: &str = "mempalace-tools-cache.json";
const FORMAT: &str = "dotty-pi-ext/mempalace-tools-cache";
const VERSION: u32 = 1;

/// One MCP tool as `tools/list` gave it: name, description and the real `inputSchema`, unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

impl CachedTool {
    /// From one entry of a `tools/list` result; `None` without a string `name` or an object
    /// `inputSchema`.
    pub fn from_mcp(tool: &Value) -> Option<Self> {
        let name = tool.get("name")?.as_str()?.to_string();
        let input_schema = tool.get("inputSchema").filter(|s| s.is_object())?.clone();
        let description = tool.get("description").and_then(|d| d.as_str()).map(str::to_string);
        Some(CachedTool { name, description, input_schema })
    }
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: String,
    version: u32,
    key: String,
    #[serde(rename = "savedAtMs")]
    saved_at_ms: u64,
    tools: Vec<CachedTool>,
}

/// `<agent_dir>/mempalace-tools-cache.json`.
pub fn cache_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join(CACHE_FILE)
}

/// The cache key of a local stdio server: its command and arguments.
pub fn key_for_command(command: &str, args: &[String]) -> String {
    let mut key = format!("stdio:{command}");
    for a in args {
        key.push(' ');
        key.push_str(a);
    }
    key
}

/// The cache key of a remote server: its URL without user-info, query or fragment (the bearer
/// token travels in a header, never here; this also keeps a token someone put in the URL out).
pub fn key_for_url(url: &str) -> String {
    let url = url.trim();
    let url = url.split(['#', '?']).next().unwrap_or(url);
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("http:{scheme}://{host}{path}")
}

/// The cached tools for `key`, or `None` (missing, corrupt, foreign or another server's file).
pub fn load(path: &Path, key: &str) -> Option<Vec<CachedTool>> {
    let bytes = std::fs::read(path).ok()?;
    let file: CacheFile = serde_json::from_slice(&bytes).ok()?;
    if file.format != FORMAT || file.version != VERSION || file.key != key || file.tools.is_empty() {
        return None;
    }
    if file.tools.iter().any(|t| t.name.is_empty() || !t.input_schema.is_object()) {
        return None;
    }
    Some(file.tools)
}

/// Saves `tools` for `key`, atomically (a temporary file in the same directory, then rename).
pub fn save(path: &Path, key: &str, tools: &[CachedTool]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let saved_at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let file = CacheFile { format: FORMAT.into(), version: VERSION, key: key.into(), saved_at_ms, tools: tools.to_vec() };
    let json = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
    write_atomic(path, &json)
}

/// Writes `bytes` to `path` through `<path>.<pid>.<uuid>.tmp` + fsync + rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    let tmp = path.with_file_name(format!(".{name}.{}.{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<CachedTool> {
        let list = json!([
            {"name": "mempalace_status", "description": "Palace overview", "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}},
            {"name": "mempalace_diary_read", "description": "Read", "inputSchema": {"type": "object", "required": ["agent_name"], "properties": {"agent_name": {"type": "string"}, "last_n": {"type": "integer"}}}},
        ]);
        list.as_array().unwrap().iter().map(|t| CachedTool::from_mcp(t).unwrap()).collect()
    }

    #[test]
    fn round_trip_keeps_schema_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(&dir.path().join("agent"));
        let key = key_for_command("mempalace-mcp", &["--palace".into(), "/p".into()]);
        save(&path, &key, &tools()).unwrap();
        let back = load(&path, &key).unwrap();
        assert_eq!(back, tools());
        // Key order inside the schema survives too.
        let schema = serde_json::to_string(&back[1].input_schema).unwrap();
        assert_eq!(schema, r#"{"type":"object","required":["agent_name"],"properties":{"agent_name":{"type":"string"},"last_n":{"type":"integer"}}}"#);
        // No temporary files left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(CACHE_FILE)]);
    }

    #[test]
    fn other_key_corrupt_or_foreign_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        assert_eq!(load(&path, "k"), None, "missing");
        save(&path, "k", &tools()).unwrap();
        assert_eq!(load(&path, "other"), None, "another server");
        std::fs::write(&path, b"{\"format\": \"dotty-pi-ext/mempalace-tools-cache\", \"vers").unwrap();
        assert_eq!(load(&path, "k"), None, "truncated");
        std::fs::write(&path, br#"{"tools": [{"name": "x", "inputSchema": {}}]}"#).unwrap();
        assert_eq!(load(&path, "k"), None, "foreign");
        std::fs::write(&path, br#"[1, 2, 3]"#).unwrap();
        assert_eq!(load(&path, "k"), None, "not an object");
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(load(&path, "k"), None, "binary");
    }

    #[test]
    fn keys_hold_no_secrets() {
        assert_eq!(key_for_url("http://user:s3cret@172.17.0.1:8765/mcp?token=s3cret#x"), "http:http://172.17.0.1:8765/mcp");
        assert_eq!(key_for_url(" https://h/mcp "), "http:https://h/mcp");
        assert_eq!(key_for_command("mempalace-mcp", &[]), "stdio:mempalace-mcp");
        assert_ne!(key_for_command("a", &["b c".into()]), key_for_url("a b c"));
    }

    #[test]
    fn from_mcp_requires_name_and_object_schema() {
        assert!(CachedTool::from_mcp(&json!({"name": "x"})).is_none());
        assert!(CachedTool::from_mcp(&json!({"inputSchema": {}})).is_none());
        let t = CachedTool::from_mcp(&json!({"name": "x", "inputSchema": {"type": "object"}})).unwrap();
        assert_eq!(t.description, None);
    }
}
