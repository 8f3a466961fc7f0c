//! What `https://` trusts (a shared palace over TLS): which store of roots is in use and how many it
//! has (`http::tls`). The home services are plain `http://` and need none of it.

use super::Check;
use crate::http::tls::{Roots, TlsSettings};

/// One check, `tls roots`: the store `settings` give (read here as pi's first handshake reads it); a
/// warning when some of it could not be read, a failure when it trusts nothing.
pub(crate) fn check(settings: &TlsSettings) -> Check {
    let roots = Roots::load(settings);
    if roots.count() == 0 {
        return Check::fail(
            "tls roots",
            roots.describe(),
            "point SSL_CERT_FILE at a PEM file of CA certificates (or SSL_CERT_DIR at a folder of them), or unset both",
        );
    }
    if !roots.problems.is_empty() {
        // Roots enough, but something the store holds (or names) could not be read: said, not hidden.
        return Check::warn(
            "tls roots",
            roots.describe(),
            "some of the certificates named could not be read: fix or drop the file or folder the detail names",
        );
    }
    Check::ok("tls roots", roots.describe())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn says_which_store_and_fails_a_named_one_that_trusts_nothing() {
        let c = check(&TlsSettings { cert_file: Some("/nonexistent/ca.pem".into()), cert_dirs: Vec::new() });
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.starts_with("SSL_CERT_FILE=/nonexistent/ca.pem: no usable certificate"), "{}", c.detail);
        assert!(c.fix.as_deref().is_some_and(|f| f.contains("SSL_CERT_FILE")));
        // This machine's own store: the system's or the bundled one, never empty.
        let c = check(&TlsSettings::default());
        assert_eq!(c.status, Status::Ok, "{}", c.detail);
        assert!(c.detail.starts_with("the system's CA bundle: ") || c.detail.starts_with("bundled"), "{}", c.detail);
    }

    #[test]
    fn warns_when_something_named_could_not_be_read_though_other_roots_were() {
        let dir = tempfile::tempdir().unwrap();
        // A folder of five roots, and a file named beside it that isn't there.
        std::fs::write(dir.path().join("roots.pem"), crate::http::tls::mozilla_pem(5)).unwrap();
        let settings =
            TlsSettings { cert_file: Some(dir.path().join("missing.pem")), cert_dirs: vec![dir.path().to_path_buf()] };
        let c = check(&settings);
        assert_eq!(c.status, Status::Warn, "{}", c.detail);
        assert!(c.detail.contains(": 5 roots ("), "{}", c.detail);
        assert!(c.detail.contains("missing.pem"), "{}", c.detail);
        assert!(c.fix.as_deref().is_some_and(|f| f.contains("could not be read")), "{:?}", c.fix);
    }
}
