//! The last `tools/list` answer, kept on disk so pi can register the palace tools at once and
//! connect in the background.
//!
//! One JSON file in pi's agent directory, keyed by the server (command + arguments, or URL).
//! The key and the file never hold a token or a URL's `user:password@`. The file is as
//! untrusted as the palace: it is checked by the same rules as a live list (`super::tools`),
//! before it is written and when it is read. A missing file or another server's is no cache;
//! one that is unreadable, over 8 MiB, of another format or holding anything refused is ignored
//! as a whole (the caller says so on stderr) and replaced after the next good handshake.
//! Beside the tools it keeps what registering them in any exposure needs: each tool's
//! `annotations` (in the tool) and the server's namespace texts ([`ServerMeta`]: `serverInfo`'s
//! name, title and version, its `instructions`), bounded alike. A file written before they were
//! kept reads as one without them (same format and version; the next handshake rewrites it).
//! This module is the file's one owner: its key ([`key`]), writer ([`save`]) and reader
//! ([`load`], with the time it was saved).

use super::exposure::ServerMeta;
use super::tools;
use crate::env::Url;
use crate::mcp::{McpConfig, ToolInfo};
use crate::palace::files::{create_private_dir, now_ms, write_atomic};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

const CACHE_FILE: &str = "mempalace-tools-cache.json";
const FORMAT: &str = "dotty-pi-ext/mempalace-tools-cache";
const VERSION: u32 = 1;
/// A bigger file is not read at all (the 4 MiB of definitions pretty-printed fit well within).
const MAX_CACHE_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: String,
    version: u32,
    key: String,
    #[serde(rename = "savedAtMs")]
    saved_at_ms: u64,
    tools: Vec<ToolInfo>,
    #[serde(default, skip_serializing_if = "is_empty")]
    server: ServerMeta,
}

fn is_empty(m: &ServerMeta) -> bool {
    *m == ServerMeta::default()
}

/// A cache file's tools for this server, and when they were saved.
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    pub tools: Vec<ToolInfo>,
    /// The server's namespace texts as last seen.
    pub server: ServerMeta,
    /// When the file was written, in ms since the Unix epoch.
    pub saved_at_ms: u64,
}

/// Why a cache file is ignored as a whole; `Display` is the reason the stderr line gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Ignored {
    Unreadable(String),
    TooLarge,
    NotACache(String),
    /// Another format or version (the format as [`tools::shown`] shows it).
    OtherFormat {
        format: String,
        version: u32,
    },
    /// The summary of the refused tools.
    Refused(String),
    LongDescriptions(usize),
    /// `serverInfo` texts or `instructions` past their limits.
    LongServerTexts,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ignored::Unreadable(e) => write!(f, "unreadable: {e}"),
            Ignored::TooLarge => f.write_str("larger than 8 MiB"),
            Ignored::NotACache(e) => write!(f, "not a tool cache ({e})"),
            Ignored::OtherFormat { format, version } => write!(f, "of another format ({format:?} version {version})"),
            Ignored::Refused(line) => write!(f, "holds refused tools ({line})"),
            Ignored::LongDescriptions(n) => write!(f, "holds {n} descriptions over 16 KiB"),
            Ignored::LongServerTexts => f.write_str("holds server texts over their limits"),
        }
    }
}

impl std::error::Error for Ignored {}

/// `<agent_dir>/mempalace-tools-cache.json`.
pub fn cache_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join(CACHE_FILE)
}

/// The cache key of the server `mcp` talks to: [`key_for_url`] for a remote one, else
/// [`key_for_command`].
pub fn key(mcp: &McpConfig) -> String {
    match &mcp.remote_url {
        Some(url) => key_for_url(url),
        None => key_for_command(&mcp.bin, &mcp.args),
    }
}

/// The cache key of a local stdio server: its command and arguments (an argument that is a URL
/// loses its `user:password@`, [`Url::key`]).
pub(crate) fn key_for_command(command: &str, args: &[String]) -> String {
    let mut key = format!("stdio:{command}");
    for a in args {
        key.push(' ');
        key.push_str(&if a.contains("://") { Url::new(a.as_str()).key() } else { a.clone() });
    }
    key
}

/// The cache key of a remote server: its URL without user-info, query or fragment ([`Url::key`];
/// the bearer token travels in a header, never here; this also keeps a token someone put in the
/// URL out).
pub(crate) fn key_for_url(url: &Url) -> String {
    format!("http:{}", url.key())
}

/// The cached tools for `key`: `Ok(None)` when there is no cache for this server (no file,
/// another server's, an empty list), `Err(why)` when the file is ignored as a whole. `reserved`:
/// the voice tools' names ([`tools::admit`]).
pub fn load(path: &Path, key: &str, reserved: &[&str]) -> Result<Option<Cached>, Ignored> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Ignored::Unreadable(e.to_string())),
    };
    let mut bytes = Vec::new();
    // Read one byte past the limit instead of trusting the size (the file may be growing).
    file.take(MAX_CACHE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Ignored::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > MAX_CACHE_BYTES {
        return Err(Ignored::TooLarge);
    }
    let file: CacheFile = serde_json::from_slice(&bytes).map_err(|e| Ignored::NotACache(e.to_string()))?;
    drop(bytes);
    if file.format != FORMAT || file.version != VERSION {
        return Err(Ignored::OtherFormat { format: tools::shown(&file.format), version: file.version });
    }
    if file.key != key || file.tools.is_empty() {
        return Ok(None);
    }
    if !tools::server_meta_ok(&file.server) {
        return Err(Ignored::LongServerTexts);
    }
    Ok(Some(Cached { tools: strict(file.tools, reserved)?, server: file.server, saved_at_ms: file.saved_at_ms }))
}

/// The tools of a cache file, which must hold nothing the rules refuse (a description past the
/// limit included: the cache is written with it cut).
fn strict(list: Vec<ToolInfo>, reserved: &[&str]) -> Result<Vec<ToolInfo>, Ignored> {
    let admitted = tools::admit(list, reserved);
    if let Some(line) = tools::summary("the cache", &admitted.refused) {
        return Err(Ignored::Refused(line.trim_start_matches("mempalace: ").to_string()));
    }
    if admitted.cut > 0 {
        return Err(Ignored::LongDescriptions(admitted.cut));
    }
    Ok(admitted.tools)
}

/// Saves `tools` and `server` for `key`, atomically (a temporary file in the same directory, then
/// rename), after checking them by the same rules as [`load`]: a list they refuse is not written.
pub fn save(path: &Path, key: &str, tools: &[ToolInfo], server: &ServerMeta, reserved: &[&str]) -> std::io::Result<()> {
    let tools = strict(tools.to_vec(), reserved).map_err(std::io::Error::other)?;
    if !tools::server_meta_ok(server) {
        return Err(std::io::Error::other(Ignored::LongServerTexts));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let file = CacheFile {
        format: FORMAT.into(),
        version: VERSION,
        key: key.into(),
        saved_at_ms: now_ms(),
        tools,
        server: server.clone(),
    };
    let json = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
    write_atomic(path, &json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palace::offer::tools::RESERVED_IN_TESTS as RESERVED;
    use serde_json::json;

    fn tools() -> Vec<ToolInfo> {
        let list = json!([
            {"name": "mempalace_status", "description": "Palace overview", "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}},
            {"name": "mempalace_diary_read", "description": "Read", "inputSchema": {"type": "object", "required": ["agent_name"], "properties": {"agent_name": {"type": "string"}, "last_n": {"type": "integer"}}}},
        ]);
        serde_json::from_value(list).unwrap()
    }

    fn meta() -> ServerMeta {
        ServerMeta { name: Some("mempalace".into()), version: Some("3.11.0".into()), ..ServerMeta::default() }
    }

    #[test]
    fn a_file_of_before_annotations_and_server_texts_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        write_cache(&path, json!([{"name": "good", "inputSchema": {"type": "object"}}]));
        let c = load(&path, "k", RESERVED).unwrap().unwrap();
        assert_eq!((c.tools[0].annotations.clone(), c.server), (None, ServerMeta::default()));
        let long = ServerMeta { instructions: Some("i".repeat(16 * 1024 + 1)), ..meta() };
        assert!(save(&path, "k", &tools(), &long, RESERVED).is_err(), "never written past the limits");
        let file =
            json!({"format": FORMAT, "version": 1, "key": "k", "savedAtMs": 1, "tools": tools(), "server": long});
        std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
        assert_eq!(load(&path, "k", RESERVED), Err(Ignored::LongServerTexts));
        let bad = json!([{"name": "a", "inputSchema": {}, "annotations": [1]}]);
        write_cache(&path, bad);
        assert!(load(&path, "k", RESERVED).unwrap_err().to_string().contains("annotations not an object"));
    }

    #[test]
    fn round_trip_keeps_schema_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(&dir.path().join("agent"));
        let key = key_for_command("mempalace-mcp", &["--palace".into(), "/p".into()]);
        save(&path, &key, &tools(), &meta(), RESERVED).unwrap();
        let before = now_ms();
        let back = load(&path, &key, RESERVED).unwrap().unwrap();
        assert!(back.saved_at_ms <= before && before - back.saved_at_ms < 60_000, "{}", back.saved_at_ms);
        assert_eq!(back.server, meta());
        let back = back.tools;
        assert_eq!(back[0].annotations, Some(json!({"readOnlyHint": true})), "annotations kept");
        assert_eq!(back, tools());
        // Key order inside the schema survives too.
        let schema = serde_json::to_string(&back[1].input_schema).unwrap();
        assert_eq!(
            schema,
            r#"{"type":"object","required":["agent_name"],"properties":{"agent_name":{"type":"string"},"last_n":{"type":"integer"}}}"#
        );
        // No temporary files left behind.
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(CACHE_FILE)]);
    }

    #[test]
    fn other_key_is_no_cache_and_anything_odd_is_ignored_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        assert_eq!(load(&path, "k", RESERVED), Ok(None), "missing");
        save(&path, "k", &tools(), &meta(), RESERVED).unwrap();
        assert_eq!(load(&path, "other", RESERVED), Ok(None), "another server");
        let odd: [(&[u8], &str); 6] = [
            (b"{\"format\": \"dotty-pi-ext/mempalace-tools-cache\", \"vers", "not a tool cache"),
            (br#"{"tools": [{"name": "x", "inputSchema": {}}]}"#, "not a tool cache"),
            (br#"[1, 2, 3]"#, "not a tool cache"),
            (&[0xff, 0xfe, 0x00], "not a tool cache"),
            (br#"{"format": "dotty-pi-ext/mempalace-tools", "version": 1, "key": "k", "savedAtMs": 1, "tools": []}"#, "of another format"),
            (br#"{"format": "dotty-pi-ext/mempalace-tools-cache", "version": 2, "key": "k", "savedAtMs": 1, "tools": []}"#, "of another format"),
        ];
        for (bytes, why) in odd {
            std::fs::write(&path, bytes).unwrap();
            let err = load(&path, "k", RESERVED).unwrap_err().to_string();
            assert!(err.contains(why), "{err} for {}", String::from_utf8_lossy(bytes));
        }
    }

    fn write_cache(path: &Path, tools: serde_json::Value) {
        let file = json!({"format": FORMAT, "version": 1, "key": "k", "savedAtMs": 1, "tools": tools});
        std::fs::write(path, serde_json::to_vec(&file).unwrap()).unwrap();
    }

    #[test]
    fn a_cache_holding_anything_refused_is_ignored_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        let good = json!({"name": "good", "inputSchema": {"type": "object"}});
        for (bad, why) in [
            (json!({"name": "bash", "inputSchema": {"type": "object"}}), "pi built-in"),
            (json!({"name": "remember", "inputSchema": {"type": "object"}}), "voice tool"),
            (json!({"name": "two words", "inputSchema": {"type": "object"}}), "not matching"),
            (json!({"name": "s", "inputSchema": {"type": "string"}}), "not an object schema"),
            (json!({"name": "big", "inputSchema": {"type": "object", "enum": vec![0; 1_100_000]}}), "over 256 KiB"),
            (
                json!({"name": "d", "description": "x".repeat(16 * 1024 + 1), "inputSchema": {}}),
                "descriptions over 16 KiB",
            ),
        ] {
            write_cache(&path, json!([good.clone(), bad]));
            let err = load(&path, "k", RESERVED).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
        write_cache(&path, json!(vec![good.clone(); 1]));
        assert_eq!(load(&path, "k", RESERVED).unwrap().unwrap().tools.len(), 1);
        // Over 8 MiB: not even parsed.
        std::fs::write(&path, vec![b' '; MAX_CACHE_BYTES as usize + 1]).unwrap();
        assert_eq!(load(&path, "k", RESERVED).unwrap_err().to_string(), "larger than 8 MiB");
    }

    #[test]
    fn refused_tools_are_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path());
        let bad: Vec<ToolInfo> = serde_json::from_value(json!([{"name": "bash", "inputSchema": {}}])).unwrap();
        assert!(save(&path, "k", &bad, &meta(), RESERVED).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn files_are_private_and_existing_modes_stay() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("a/b/agent");
        let path = cache_path(&agent);
        save(&path, "k", &tools(), &meta(), RESERVED).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&agent), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o750)).unwrap();
        save(&path, "k2", &tools(), &meta(), RESERVED).unwrap();
        assert_eq!(mode(&path), 0o640, "a file replaced keeps its mode");
        assert_eq!(mode(&agent), 0o750, "an existing folder keeps its mode");
    }

    #[test]
    fn keys_hold_no_secrets() {
        assert_eq!(
            key_for_url(&"http://user:s3cret@172.17.0.1:8765/mcp?token=s3cret#x".into()),
            "http:http://172.17.0.1:8765/mcp"
        );
        assert_eq!(key_for_url(&" https://h/mcp ".into()), "http:https://h/mcp");
        assert_eq!(key_for_url(&"http://only-user@h/mcp".into()), "http:http://h/mcp");
        assert_eq!(key_for_url(&"user:s3cret@h:1/mcp".into()), "http:h:1/mcp");
        assert_eq!(key_for_command("mempalace-mcp", &[]), "stdio:mempalace-mcp");
        assert_eq!(key_for_command("m", &["--url".into(), "https://u:s3cret@h/x".into()]), "stdio:m --url https://h/x");
        assert_ne!(key_for_command("a", &["b c".into()]), key_for_url(&"a b c".into()));
        for k in [key_for_url(&"http://u:p%40ss@h/".into()), key_for_url(&"ftp://u:pw@h/".into())] {
            assert!(!k.contains("ss@") && !k.contains("pw"), "{k}");
        }
    }
}
