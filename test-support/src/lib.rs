//! Test support for dotty-pi-ext, out of the library (a dev-dependency of its unit and integration
//! tests): pi session JSONL fixtures ([`sessions`]), a fake palace caller ([`caller`]) and the
//! redactor's held-out credential corpus ([`credentials`]).
//!
//! The fake is made a `PalaceCaller` in `src/palace/connection.rs`, under `#[cfg(test)]`: the trait is the
//! library's, and a crate the library's unit tests depend on can't implement it (it would see another
//! build of the library). Test code: a panic (`unwrap`) is the failure report.

pub mod caller;
pub mod credentials;
pub mod sessions;

pub use caller::{Behaviour, Call, FakeCaller, Fault};
pub use sessions::{session_jsonl, write_session};
