//! The binary, Node and pi: which build of the addon is loaded, and the versions this package was
//! tested with (pi 0.73.1, 0.74.0 and 1.6.0; Node 20, 22, 24 and production's 25).

use super::{Check, Host};
use std::path::{Path, PathBuf};

pub(crate) const TESTED_PI: &[&str] = &["0.73.1", "0.74.0", "1.6.0"];
pub(crate) const TESTED_NODE_MAJORS: &[&str] = &["20", "22", "24", "25"];
const PI_PACKAGES: &[&str] = &["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];

/// The platform package this binary ships in (`linux-x64-musl`, …): what a loaded binary was built for.
pub(crate) fn binary_platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let libc = if cfg!(target_env = "musl") { "musl" } else { "gnu" };
    format!("{}-{arch}-{libc}", std::env::consts::OS)
}

pub fn check(host: &Host) -> Vec<Check> {
    let binary = Check::ok("binary", format!("{} (dotty-pi-ext {})", binary_platform(), env!("CARGO_PKG_VERSION")));
    let tested = TESTED_NODE_MAJORS.join(", ");
    let node = match &host.node_version {
        Some(v) if TESTED_NODE_MAJORS.iter().any(|m| v.trim_start_matches('v').split('.').next() == Some(m)) => {
            Check::ok("node", format!("{v} (tested: Node {tested})"))
        }
        Some(v) => Check::warn(
            "node",
            format!("{v}, not a tested version"),
            format!("run pi on Node {tested} (the versions this package is tested with)"),
        ),
        None => Check::warn("node", "version unknown", format!("run pi on Node {tested}")),
    };
    let pi = match find_pi(host) {
        Some((pkg, dir, v)) if TESTED_PI.contains(&v.as_str()) => {
            Check::ok("pi", format!("{pkg} {v} at {}", dir.display()))
        }
        Some((pkg, dir, v)) => Check::warn(
            "pi",
            format!("{pkg} {v} at {}, not a tested version ({})", dir.display(), TESTED_PI.join(", ")),
            format!("install pi {} (npm install -g @earendil-works/pi-coding-agent@0.74.0)", TESTED_PI.join(" or ")),
        ),
        None => Check::warn(
            "pi",
            "not found from the working directory or among the global packages",
            "install pi: npm install -g @earendil-works/pi-coding-agent@0.74.0",
        ),
    };
    vec![binary, node, pi]
}

/// pi's package, from `node_modules` in the working directory and above, then the global folder
/// of the running Node (`<prefix>/lib/node_modules`).
pub(crate) fn find_pi(host: &Host) -> Option<(String, PathBuf, String)> {
    let mut roots: Vec<PathBuf> =
        host.cwd.iter().flat_map(|c| c.ancestors().map(|a| a.join("node_modules")).collect::<Vec<_>>()).collect();
    if let Some(exe) = &host.node_exec_path {
        if let Some(prefix) = Path::new(exe).parent().and_then(Path::parent) {
            roots.push(prefix.join("lib/node_modules"));
        }
    }
    for root in roots {
        for pkg in PI_PACKAGES {
            let dir = root.join(pkg);
            if let Some(v) = version_of(&dir.join("package.json")) {
                return Some((pkg.to_string(), dir, v));
            }
        }
    }
    None
}

fn version_of(package_json: &Path) -> Option<String> {
    let bytes = std::fs::read(package_json).ok().filter(|b| b.len() < 1 << 20)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("version")?.as_str().map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn versions() {
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("node_modules/@mariozechner/pi-coding-agent");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("package.json"), r#"{"version":"0.73.1"}"#).unwrap();
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let host = Host { node_version: Some("20.20.2".into()), node_exec_path: None, cwd: Some(sub) };
        let c = check(&host);
        assert_eq!(c[0].name, "binary");
        assert_eq!(c[0].status, Status::Ok);
        assert!(c[0].detail.starts_with(&binary_platform()), "{:?}", c[0]);
        assert_eq!(c[1].status, Status::Ok);
        assert_eq!(c[2].status, Status::Ok, "{:?}", c[2]);
        // production's Node (25.9) is a tested one
        assert_eq!(check(&Host { node_version: Some("v25.9.0".into()), ..host.clone() })[1].status, Status::Ok);
        std::fs::write(pkg.join("package.json"), r#"{"version":"0.80.0"}"#).unwrap();
        let host = Host { node_version: Some("21.1.0".into()), ..host };
        let c = check(&host);
        assert_eq!(c[1].status, Status::Warn);
        assert_eq!(c[2].status, Status::Warn);
        let c = check(&Host { node_version: None, node_exec_path: None, cwd: Some(d.path().join("nowhere")) });
        assert!(c[2].detail.contains("not found") || c[2].status != Status::Fail);
    }
}
