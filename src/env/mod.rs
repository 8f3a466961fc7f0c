//! The process environment, in one place: the table of every variable the extension reads or
//! sets for a child (`table.rs`, [`VARIABLES`]: name, default, how it is parsed, a one-line
//! meaning), the one reader the configuration modules read it through (`reader.rs`,
//! [`EnvReader`]), and the two kinds of value that must never be printed whole (`hidden.rs`:
//! [`Secret`], and [`Url`], which may carry `user:password@`), and this process's own environment
//! (here: nothing else reads it).
//!
//! A variable is added to the table once: the readers take their defaults from its row, and
//! `dotty-pi-ext doctor` walks the table, showing each value as the readers parsed it. A name
//! read that is not in the table is recorded ([`Readings::unlisted`]), so a test catches it.
//! A leaf: nothing of the crate is imported here.

mod hidden;
mod reader;
mod table;

pub use hidden::{shown, Secret, Url};
pub use reader::{EnvReader, Readings};
pub use table::Kind;
pub(crate) use table::{default_text, VARIABLES};

/// This process's environment, as a lookup for [`EnvReader`] (the only reader of it).
pub fn process(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Every variable of this process's environment (name, value; not UTF-8 ones skipped): what the
/// feed's redactor matches exactly ([`crate::palace::feed::redact`] picks the secrets by name).
pub fn process_all() -> Vec<(String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}

#[cfg(test)]
mod tests {
    /// Every read of the process environment goes through this module: a variable read elsewhere
    /// would be missing from the table and from `doctor`.
    #[test]
    fn nothing_outside_this_module_reads_the_process_environment() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("src/env/mod.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for needle in ["env::var(", "env::var_os(", "env::vars(", "env::vars_os("] {
                        if text.contains(needle) {
                            out.push(format!("{}: {needle}", p.display()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
        assert!(found.is_empty(), "read the environment through crate::env: {found:?}");
    }
}
