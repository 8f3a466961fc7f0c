//! The redactor of a feed (built once, its warnings said once) and the redaction of a staged
//! folder in place (the external exporter's `MINE_SOURCE`).

use super::{Counts, Redactor, Sources};
use std::path::Path;
use std::sync::Arc;

/// The redactor of a feed with this configuration: None when `MEMPALACE_FEED_REDACT=off`.
/// Warnings are said on stderr here, once per build.
pub fn for_feed(cfg: &crate::palace::PalaceConfig) -> Option<Arc<Redactor>> {
    let patterns_file = match &cfg.redact {
        crate::palace::config::Redact::Off => return None,
        crate::palace::config::Redact::On { patterns } => patterns.clone(),
    };
    let (r, warnings) = Redactor::build(&Sources { env: crate::env::process_all(), patterns_file });
    for w in warnings {
        crate::diag!("{w}");
    }
    Some(Arc::new(r))
}

/// Redacts every regular file under `dir` in place (the external exporter's `MINE_SOURCE`):
/// `*.jsonl` as session files, anything else as text. Each changed file is replaced atomically
/// (a private temporary file beside it, then a rename), so no unredacted copy is left behind.
pub fn redact_tree(r: &Redactor, dir: &Path, counts: &mut Counts) -> std::io::Result<usize> {
    let mut changed = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let Ok(e) = e else { continue };
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let mut bytes = std::fs::read(&p)?;
                let jsonl = p.extension().is_some_and(|x| x == "jsonl");
                if jsonl {
                    // The user's opt-out applies to the external exporter's copies too.
                    match crate::palace::feed::no_memory::apply(&bytes) {
                        crate::palace::feed::no_memory::Opt::Unchanged => {}
                        crate::palace::feed::no_memory::Opt::Session => {
                            std::fs::remove_file(&p)?;
                            changed += 1;
                            continue;
                        }
                        crate::palace::feed::no_memory::Opt::Without(b, _) => {
                            crate::palace::files::write_atomic(&p, &b)?;
                            bytes = b;
                        }
                    }
                }
                let redacted = if jsonl || p.extension().is_some_and(|x| x == "json") {
                    r.redact_jsonl(&bytes, counts)
                } else {
                    r.redact_bytes(&bytes, counts)
                };
                if let Some(new) = redacted {
                    crate::palace::files::write_atomic(&p, &new)?;
                    changed += 1;
                }
            }
        }
    }
    Ok(changed)
}
