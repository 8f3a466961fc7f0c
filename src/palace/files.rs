//! The bridge's files are private to the user: folders it creates are 0700, files 0600, and a
//! file is replaced atomically (the tool cache, the feed state, the staging copies). Times in
//! them are milliseconds since the Unix epoch, said to a person as an age ("3 min").

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// `create_dir_all` where every folder created is 0700 (the bridge's files are private to the
/// user); folders that exist keep their modes.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Writes `bytes` to `path` through `<path>.<pid>.<uuid>.tmp` + fsync + rename. A new file is
/// 0600; a file replaced keeps the mode it had.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    let tmp = path.with_file_name(format!(".{name}.{}.{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        if mode != 0o600 {
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Now, in milliseconds since the Unix epoch (0 before it).
pub(crate) fn now_ms() -> u64 {
    millis_since_epoch(SystemTime::now())
}

/// `t` in milliseconds since the Unix epoch (0 before it).
pub(crate) fn millis_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// How long ago `at_ms` was, in one unit a person reads at a glance: "42 s", "3 min", "5 h",
/// "2 days".
pub(crate) fn age(at_ms: u64) -> String {
    match now_ms().saturating_sub(at_ms) / 1000 {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_in_one_unit() {
        let ago = |s: u64| super::age(super::now_ms() - s * 1000);
        assert_eq!(ago(5), "5 s");
        assert_eq!(ago(600), "10 min");
        assert_eq!(ago(3 * 3600), "3 h");
        assert_eq!(ago(3 * 86_400), "3 days");
        assert_eq!(super::age(super::now_ms() + 60_000), "0 s", "a time in the future");
    }
}
