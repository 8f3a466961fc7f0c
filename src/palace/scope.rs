//! `MEMPALACE_SCOPE`: which wing a session files into (docs/mempalace-bridge.md, "A wing per
//! project"). `global` (the default): every session into `MEMPALACE_FEED_WING`. `project`: the wing
//! MemPalace's own hooks (`mempalace/hooks_cli.py` 3.11.0, `_ingest_wing`) file a transcript from
//! pi's cwd into: [`safe_wing_slug`] of the cwd's last segment, or the machine's workstation wing
//! for the home directory; a `.pi/mempalace.json` `{"wing": "…"}` in the project overrides it, read
//! only when pi says it trusts the project ([`session_wing`]).
//!
//! Plain functions and one small shared cell ([`SessionWing`]): the bridge decides the wing at
//! pi's `session_start`; the feed, recall and the wake-up read it.

use crate::sync::lock;
use std::path::Path;
use std::sync::Mutex;

/// `MEMPALACE_SCOPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// One wing for every session (`MEMPALACE_FEED_WING`), recall across the palace.
    #[default]
    Global,
    /// A wing per project.
    Project,
}

impl Scope {
    /// `global` or `project` (any case); None for anything else.
    pub fn parse(raw: &str) -> Option<Scope> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "global" => Some(Scope::Global),
            "project" => Some(Scope::Project),
            _ => None,
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Scope::Global => "global",
            Scope::Project => "project",
        })
    }
}

/// The wing of a session started in the home directory, as MemPalace's hooks name it on Linux
/// (`_workstation_wing`).
pub const WORKSTATION_WING: &str = "linux_workstation";

/// The project file that names a project's wing.
pub const PROJECT_FILE: &str = ".pi/mempalace.json";

/// The longest project file read (it holds one short name).
const PROJECT_FILE_MAX_BYTES: u64 = 4096;

/// MemPalace 3.11.0's `_safe_wing_slug`: lower case; spaces and dashes to `_`; every run of
/// characters outside `[\w.']` to one `_`; runs of dots to one dot; the first 120 characters, with
/// `_`, `.` and `'` trimmed off both edges; `sessions` when nothing is left.
pub fn safe_wing_slug(name: &str) -> String {
    let lowered = name.to_lowercase().replace([' ', '-'], "_");
    let mut slug = String::with_capacity(lowered.len());
    let mut outside = false;
    for c in lowered.chars() {
        if c.is_alphanumeric() || c == '_' || c == '.' || c == '\'' {
            slug.push(c);
            outside = false;
        } else if !outside {
            slug.push('_');
            outside = true;
        }
    }
    let mut collapsed = String::with_capacity(slug.len());
    for c in slug.chars() {
        if !(c == '.' && collapsed.ends_with('.')) {
            collapsed.push(c);
        }
    }
    let cut: String = collapsed.chars().take(120).collect();
    let trimmed = cut.trim_matches(['_', '.', '\'']);
    if trimmed.is_empty() {
        "sessions".to_string()
    } else {
        trimmed.to_string()
    }
}

/// The wing MemPalace's hooks file a transcript whose cwd is `cwd` into (`_ingest_wing`): the
/// machine's workstation wing for `home`, else the slug of the cwd's last segment (a git worktree
/// under `<project>/.claude/worktrees/` counts as `<project>`).
pub fn project_wing(cwd: &Path, home: Option<&Path>) -> String {
    let norm = cwd.to_string_lossy().replace('\\', "/");
    let mut norm = norm.trim_end_matches('/');
    if let Some((project, _)) = norm.split_once("/.claude/worktrees/") {
        norm = project;
    }
    let home = home.map(|h| h.to_string_lossy().replace('\\', "/").trim_end_matches('/').to_lowercase());
    if home.is_some_and(|h| !h.is_empty() && h == norm.to_lowercase()) {
        return WORKSTATION_WING.to_string();
    }
    safe_wing_slug(norm.rsplit('/').next().unwrap_or_default())
}

/// MemPalace's hooks' diary wing of the same cwd (`_wing_from_transcript_path`): `wing_<slug>`.
pub fn diary_wing(cwd: &Path) -> String {
    let norm = cwd.to_string_lossy().replace('\\', "/");
    let mut norm = norm.trim_end_matches('/');
    if let Some((project, _)) = norm.split_once("/.claude/worktrees/") {
        norm = project;
    }
    format!("wing_{}", safe_wing_slug(norm.rsplit('/').next().unwrap_or_default()))
}

/// Whether `name` may be a wing: what [`safe_wing_slug`] leaves as it is (so no `/`, `\`, `..`,
/// control or other odd characters, no leading or trailing `.` `_` `'`), at most 128 characters.
pub fn valid_wing(name: &str) -> bool {
    !name.is_empty() && name.chars().count() <= 128 && safe_wing_slug(name) == name
}

/// How a session's wing was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// `global` scope: `MEMPALACE_FEED_WING`.
    Global,
    /// The cwd's wing, as MemPalace's hooks name it.
    Cwd,
    /// The project's `.pi/mempalace.json`, pi trusting the project.
    ProjectFile,
}

/// The wing one session files into, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wing {
    pub name: String,
    pub chosen: Chosen,
    /// The session's cwd (project scope), for the diary wing and the feed's sessions of it.
    pub cwd: Option<std::path::PathBuf>,
    /// What was wrong with the project file, or why it was not read (said in status).
    pub note: Option<String>,
}

/// The wing of a session of `cwd` under `scope`. `trusted`: pi's `ctx.isProjectTrusted()`, None on
/// a pi without trust (0.7x): the project file is read only when it is `Some(true)`. A project file
/// that can't be read, isn't JSON, or names an invalid wing is ignored, with a note.
pub fn session_wing(scope: Scope, feed_wing: &str, cwd: &Path, home: Option<&Path>, trusted: Option<bool>) -> Wing {
    if scope == Scope::Global {
        return Wing { name: feed_wing.to_string(), chosen: Chosen::Global, cwd: None, note: None };
    }
    let own = Wing { name: project_wing(cwd, home), chosen: Chosen::Cwd, cwd: Some(cwd.to_path_buf()), note: None };
    let file = cwd.join(PROJECT_FILE);
    if !file.exists() {
        return own;
    }
    match trusted {
        Some(true) => {}
        Some(false) => {
            return Wing { note: Some(format!("{PROJECT_FILE} ignored: pi does not trust this project")), ..own }
        }
        None => return Wing { note: Some(format!("{PROJECT_FILE} ignored: this pi has no project trust")), ..own },
    }
    match read_project_file(&file) {
        Ok(name) => Wing { name, chosen: Chosen::ProjectFile, ..own },
        Err(why) => Wing { note: Some(format!("{PROJECT_FILE} ignored: {why}")), ..own },
    }
}

/// The wing a project file names, or why it names none usable.
fn read_project_file(file: &Path) -> Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(PROJECT_FILE_MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > PROJECT_FILE_MAX_BYTES {
        return Err(format!("larger than {PROJECT_FILE_MAX_BYTES} bytes"));
    }
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| format!("not JSON ({e})"))?;
    let name = v.get("wing").and_then(|w| w.as_str()).ok_or("no \"wing\" string in it")?;
    if !valid_wing(name) {
        return Err(format!(
            "{:?} is not a wing name (its slug would be {:?})",
            crate::text::first_chars(name, 64),
            safe_wing_slug(name)
        ));
    }
    Ok(name.to_string())
}

/// The session's wing, shared by the bridge's rooms: set at each `session_start`.
#[derive(Debug, Default)]
pub struct SessionWing(Mutex<Option<Wing>>);

impl SessionWing {
    pub fn set(&self, wing: Wing) {
        *lock(&self.0) = Some(wing);
    }

    pub fn get(&self) -> Option<Wing> {
        lock(&self.0).clone()
    }

    /// The wing set at `session_start`, or before one, the wing of the process's cwd (project
    /// scope; no project file read: pi's trust is not known yet).
    /// (`scope`, `feed_wing`, `home`: the configuration's).
    pub fn or_default(&self, scope: Scope, feed_wing: &str, home: Option<&Path>) -> Wing {
        self.get().unwrap_or_else(|| {
            let cwd = std::env::current_dir().unwrap_or_default();
            session_wing(scope, feed_wing, &cwd, home, None)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Folder names and what MemPalace 3.11.0's `_safe_wing_slug` makes of them (run with the
    /// installed mempalace's own function: hooks_cli.py).
    const SLUGS: [(&str, &str); 17] = [
        ("alpha-app", "alpha_app"),
        ("Beta Service", "beta_service"),
        ("my.app", "my.app"),
        ("My..App", "my.app"),
        ("+project", "project"),
        ("wing_notes", "wing_notes"),
        ("Café Crème", "café_crème"),
        ("日本語プロジェクト", "日本語プロジェクト"),
        ("dotty-pi-ext", "dotty_pi_ext"),
        ("node_modules.bak", "node_modules.bak"),
        ("--weird--", "weird"),
        ("'quoted'", "quoted"),
        ("x/y", "x_y"),
        ("Ünïcödé-Straße", "ünïcödé_straße"),
        ("..", "sessions"),
        (".hidden", "hidden"),
        ("über_ℌ", "über_ℌ"),
    ];

    #[test]
    fn slugs_are_mempalace_s_own() {
        for (name, slug) in SLUGS {
            assert_eq!(safe_wing_slug(name), slug, "{name}");
        }
        assert_eq!(safe_wing_slug(&"a".repeat(130)), "a".repeat(120));
    }

    #[test]
    fn a_cwd_s_wing_is_mempalace_s_ingest_wing() {
        let home = Path::new("/root");
        // hooks_cli.py `_ingest_wing` / `_wing_from_transcript_path` on transcripts of these cwds.
        let cases = [
            ("/home/u/dev/alpha-app", "alpha_app", "wing_alpha_app"),
            ("/tmp/x/Beta Service", "beta_service", "wing_beta_service"),
            ("/root", "linux_workstation", "wing_root"),
            ("/root/", "linux_workstation", "wing_root"),
            ("/work/p/.claude/worktrees/w1", "p", "wing_p"),
            ("/srv/Project.v2/", "project.v2", "wing_project.v2"),
        ];
        for (cwd, ingest, diary) in cases {
            assert_eq!(project_wing(Path::new(cwd), Some(home)), ingest, "{cwd}");
            assert_eq!(diary_wing(Path::new(cwd)), diary, "{cwd}");
        }
    }

    #[test]
    fn wing_names_are_checked() {
        for ok in ["alpha_app", "wing_x", "my.app", "日本語", "sessions"] {
            assert!(valid_wing(ok), "{ok}");
        }
        for bad in
            ["", "../etc", "a/b", "a\\b", "..", ".", "x..y", "_x", "x.", "Alpha", "a b", "a\nb", &"a".repeat(129)]
        {
            assert!(!valid_wing(bad), "{bad:?}");
        }
    }

    fn project(file: Option<&str>) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let cwd = d.path().join("alpha-app");
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        if let Some(f) = file {
            std::fs::write(cwd.join(PROJECT_FILE), f).unwrap();
        }
        (d, cwd)
    }

    #[test]
    fn the_project_file_is_read_only_when_pi_trusts_the_project() {
        let (_d, cwd) = project(Some(r#"{"wing": "shared_alpha"}"#));
        let w = |trusted| session_wing(Scope::Project, "wing_conversations", &cwd, None, trusted);
        assert_eq!(w(Some(true)).name, "shared_alpha");
        assert_eq!(w(Some(true)).chosen, Chosen::ProjectFile);
        for untrusted in [Some(false), None] {
            let wing = w(untrusted);
            assert_eq!((wing.name.as_str(), wing.chosen), ("alpha_app", Chosen::Cwd), "{untrusted:?}");
            assert!(wing.note.unwrap().contains("ignored"));
        }
        // Global scope reads nothing.
        let g = session_wing(Scope::Global, "wing_conversations", &cwd, None, Some(true));
        assert_eq!((g.name.as_str(), g.chosen), ("wing_conversations", Chosen::Global));
    }

    #[test]
    fn a_project_file_with_a_path_trick_or_garbage_is_ignored() {
        for bad in
            [r#"{"wing": "../wing_other"}"#, r#"{"wing": "a/b"}"#, r#"{"wing": 3}"#, "not json", r#"{"wing": "Upper"}"#]
        {
            let (_d, cwd) = project(Some(bad));
            let wing = session_wing(Scope::Project, "wing_conversations", &cwd, None, Some(true));
            assert_eq!(wing.name, "alpha_app", "{bad}");
            assert!(wing.note.is_some(), "{bad}");
        }
        let (_d, cwd) = project(None);
        let wing = session_wing(Scope::Project, "wing_conversations", &cwd, None, Some(true));
        assert_eq!((wing.name.as_str(), wing.note), ("alpha_app", None));
    }
}
