//! What an `https://` connection trusts (a shared palace over TLS), as the one TLS configuration every
//! client of the process is built with ([`super::client`]). Plain `http://` (the home services) never
//! needs a certificate: the roots are loaded at the first TLS handshake of the process, not before, so
//! a container without a CA bundle (distroless, a `-slim` image without `ca-certificates`) reaches
//! its home services all the same.
//!
//! The roots ([`Roots::load`], once per process):
//! - `SSL_CERT_FILE` / `SSL_CERT_DIR` set: exactly the certificates they hold (they replace the
//!   system's, as in OpenSSL). Set but holding no usable certificate: nothing is trusted, every
//!   handshake fails as an unknown issuer, and one stderr line says why (failing closed: a bundle
//!   named to narrow what is trusted is never widened to another);
//! - else the system's CA bundle, where OpenSSL looks for it (rustls-native-certs);
//! - else Mozilla's roots, compiled into the binary (the `webpki-root-certs` crate).
//!
//! `doctor` says which of these is in use and how many roots it has.

use crate::env::EnvReader;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_native_certs::CertificateResult;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// `SSL_CERT_FILE` and `SSL_CERT_DIR` as set (both unset: the system's bundle).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TlsSettings {
    /// A PEM file of CA certificates.
    pub cert_file: Option<PathBuf>,
    /// Folders of PEM files (`SSL_CERT_DIR`, `:`-separated).
    pub cert_dirs: Vec<PathBuf>,
}

impl TlsSettings {
    pub(crate) fn read(r: &EnvReader<'_>) -> TlsSettings {
        let cert_file = r.path("SSL_CERT_FILE").map(PathBuf::from);
        let cert_dirs = r
            .text("SSL_CERT_DIR")
            .map(|d| std::env::split_paths(&d).filter(|p| !p.as_os_str().is_empty()).collect())
            .unwrap_or_default();
        TlsSettings { cert_file, cert_dirs }
    }

    /// `SSL_CERT_FILE=… SSL_CERT_DIR=…` as set, `None` when neither is.
    fn named(&self) -> Option<String> {
        let mut said = Vec::new();
        if let Some(f) = &self.cert_file {
            said.push(format!("SSL_CERT_FILE={}", f.display()));
        }
        if !self.cert_dirs.is_empty() {
            let dirs: Vec<String> = self.cert_dirs.iter().map(|d| d.display().to_string()).collect();
            said.push(format!("SSL_CERT_DIR={}", dirs.join(":")));
        }
        (!said.is_empty()).then(|| said.join(" "))
    }
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Store {
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` (what was set, as `NAME=value`).
    Named(String),
    /// The system's CA bundle.
    System,
    /// Mozilla's roots compiled into the binary: the system has none.
    Bundled,
}

/// The roots an `https://` connection trusts, where they come from, and what could not be used.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    pub store: Store,
    certs: Arc<RootCertStore>,
    /// Certificates found that are not usable as roots (skipped).
    pub ignored: usize,
    /// What could not be read (`context: why at 'path'`), at most [`PROBLEMS`].
    pub problems: Vec<String>,
}

/// The most problems kept (a folder of a thousand unreadable files says so in a few lines).
const PROBLEMS: usize = 3;

impl Roots {
    /// The roots for `settings`; the system's bundle is read by `system` (rustls-native-certs'
    /// search of OpenSSL's places in production).
    pub(crate) fn load(settings: &TlsSettings) -> Roots {
        Self::load_with(settings, rustls_native_certs::load_native_certs)
    }

    fn load_with(settings: &TlsSettings, system: impl FnOnce() -> CertificateResult) -> Roots {
        if let Some(named) = settings.named() {
            let mut found = CertificateResult::default();
            let mut take = |r: CertificateResult| {
                found.certs.extend(r.certs);
                found.errors.extend(r.errors);
            };
            if let Some(file) = &settings.cert_file {
                take(rustls_native_certs::load_certs_from_paths(Some(file), None));
            }
            for dir in &settings.cert_dirs {
                take(rustls_native_certs::load_certs_from_paths(None, Some(dir)));
            }
            // A certificate in the file and in a folder is one root.
            found.certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
            found.certs.dedup();
            return Self::from(Store::Named(named), found);
        }
        let system = Self::from(Store::System, system());
        if system.count() > 0 {
            return system;
        }
        let mut bundled = CertificateResult::default();
        bundled.certs = webpki_root_certs::TLS_SERVER_ROOT_CERTS.to_vec();
        Roots { problems: system.problems, ..Self::from(Store::Bundled, bundled) }
    }

    fn from(store: Store, found: CertificateResult) -> Roots {
        let mut certs = RootCertStore::empty();
        let (_, ignored) = certs.add_parsable_certificates(found.certs);
        let problems = found.errors.iter().take(PROBLEMS).map(ToString::to_string).collect();
        Roots { store, certs: Arc::new(certs), ignored, problems }
    }

    /// How many roots are trusted.
    pub(crate) fn count(&self) -> usize {
        self.certs.len()
    }

    /// One line: which store, how many roots, what could not be used.
    pub(crate) fn describe(&self) -> String {
        let n = self.count();
        let roots = if n == 1 { "1 root".to_string() } else { format!("{n} roots") };
        let mut line = match &self.store {
            Store::Named(named) if n == 0 => {
                format!("{named}: no usable certificate, so nothing over https:// is trusted (http:// needs none)")
            }
            Store::Named(named) => format!("{named}: {roots}"),
            Store::System => format!("the system's CA bundle: {roots}"),
            Store::Bundled => {
                format!("bundled (Mozilla's, compiled in): {roots}; the system has no CA certificates")
            }
        };
        if self.ignored > 0 {
            line.push_str(&format!(", {} not usable as roots skipped", self.ignored));
        }
        if !self.problems.is_empty() {
            line.push_str(&format!(" ({})", self.problems.join("; ")));
        }
        line
    }
}

/// This process's roots, read from its environment at the first call (the first TLS handshake, or
/// `doctor`); one stderr line when a named bundle leaves nothing trusted.
pub(crate) fn process_roots() -> &'static Roots {
    static ROOTS: OnceLock<Roots> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let roots = Roots::load(&TlsSettings::read(&EnvReader::new(&crate::env::process)));
        if roots.count() == 0 {
            crate::diag!("TLS: {}", roots.describe());
        }
        roots
    })
}

/// The TLS configuration of every client: ring, TLS 1.2 and 1.3, HTTP/2 or 1.1 by ALPN, and the
/// server's certificate checked against [`process_roots`], loaded only when a handshake needs them.
/// Built once per process; a client gets a copy.
pub(crate) fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    static CONFIG: OnceLock<Result<rustls::ClientConfig, rustls::Error>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Verifier { provider, webpki: OnceLock::new() }))
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Ok(config)
        })
        .clone()
}

/// rustls' WebPKI verification against [`process_roots`], which it loads at the first certificate it
/// checks. The handshake signatures are checked with the provider's algorithms, which need no root.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    /// `None`: no root is trusted (a named bundle without a usable certificate).
    webpki: OnceLock<Option<Arc<WebPkiServerVerifier>>>,
}

impl Verifier {
    fn webpki(&self) -> Result<&WebPkiServerVerifier, rustls::Error> {
        self.webpki
            .get_or_init(|| {
                WebPkiServerVerifier::builder_with_provider(process_roots().certs.clone(), self.provider.clone())
                    .build()
                    .ok()
            })
            .as_deref()
            // Nothing vouches for any certificate: every issuer is unknown.
            .ok_or(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.webpki()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// The first `n` of Mozilla's roots as the text of a PEM file (the tests' own CA bundles).
#[cfg(test)]
pub(crate) fn mozilla_pem(n: usize) -> String {
    webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .take(n)
        .map(|c| format!("-----BEGIN CERTIFICATE-----\n{}-----END CERTIFICATE-----\n", base64_lines(c.as_ref())))
        .collect()
}

/// Standard base64 in 64-column lines (PEM's body), for the tests' own PEM files.
#[cfg(test)]
fn base64_lines(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() { A[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    out.as_bytes().chunks(64).map(|l| format!("{}\n", String::from_utf8_lossy(l))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> TlsSettings {
        let map: std::collections::HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let get = move |k: &str| map.get(k).cloned();
        let r = EnvReader::new(&get);
        let s = TlsSettings::read(&r);
        assert!(r.finish().1.unlisted.is_empty(), "SSL_CERT_FILE and SSL_CERT_DIR are rows of env.rs's table");
        s
    }

    /// A system with these certificates (none: a container without a CA bundle).
    fn system(certs: Vec<CertificateDer<'static>>) -> impl FnOnce() -> CertificateResult {
        move || {
            let mut r = CertificateResult::default();
            r.certs = certs;
            r
        }
    }

    fn mozilla(n: usize) -> Vec<CertificateDer<'static>> {
        webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().take(n).cloned().collect()
    }

    #[test]
    fn the_systems_roots_when_it_has_any_else_mozillas_bundled_ones() {
        let none = TlsSettings::default();
        let sys = Roots::load_with(&none, system(mozilla(3)));
        assert_eq!((sys.store.clone(), sys.count()), (Store::System, 3));
        assert_eq!(sys.describe(), "the system's CA bundle: 3 roots");
        let bundled = Roots::load_with(&none, system(Vec::new()));
        assert_eq!(bundled.store, Store::Bundled);
        assert_eq!(bundled.count(), webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(bundled.count() > 100, "{}", bundled.count());
        assert_eq!(bundled.ignored, 0);
        assert!(bundled.describe().starts_with("bundled (Mozilla's, compiled in): "), "{}", bundled.describe());
    }

    #[test]
    fn a_named_bundle_replaces_the_systems_and_one_without_a_certificate_trusts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, mozilla_pem(2)).unwrap();
        let named = settings(&[("SSL_CERT_FILE", file.to_str().unwrap())]);
        let r = Roots::load_with(&named, || panic!("a named bundle: the system's is not read"));
        assert_eq!(r.store, Store::Named(format!("SSL_CERT_FILE={}", file.display())));
        assert_eq!(r.count(), 2);
        // A folder too, and both: each certificate once.
        let folder = dir.path().join("certs");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("a.pem"), mozilla_pem(3)).unwrap();
        let both = settings(&[("SSL_CERT_FILE", file.to_str().unwrap()), ("SSL_CERT_DIR", folder.to_str().unwrap())]);
        assert_eq!(Roots::load_with(&both, system(Vec::new())).count(), 3);
        // Missing, or a file without a certificate: nothing trusted (no fallback to any other store).
        for bad in [dir.path().join("missing.pem"), folder.join("empty.pem")] {
            std::fs::write(folder.join("empty.pem"), "not a certificate\n").unwrap();
            let s = settings(&[("SSL_CERT_FILE", bad.to_str().unwrap())]);
            let r = Roots::load_with(&s, system(mozilla(3)));
            assert_eq!(r.count(), 0, "{}", r.describe());
            assert!(
                r.describe().contains("no usable certificate, so nothing over https:// is trusted"),
                "{}",
                r.describe()
            );
        }
        let missing = settings(&[("SSL_CERT_FILE", "/nonexistent/ca.pem")]);
        assert!(Roots::load_with(&missing, system(Vec::new())).describe().contains("/nonexistent/ca.pem"));
    }

    #[test]
    fn the_configuration_builds_without_loading_any_root() {
        let c = client_config().unwrap();
        assert_eq!(c.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    }
}
