//! Native TLS for `payoutd serve`: `PAYOUT_TLS_CERT` (PEM certificate chain, the server's own
//! certificate first) and `PAYOUT_TLS_KEY` (its PEM private key: PKCS#8, PKCS#1 or SEC1), both
//! or neither. The key may instead be the systemd credential `PAYOUT_TLS_KEY`
//! (`LoadCredential=PAYOUT_TLS_KEY:/etc/payoutd/credentials/PAYOUT_TLS_KEY`) when the variable
//! is unset. The key file is a secret file ([`crate::secret_source`]): readable by its owner
//! only. They are read, parsed and matched against each other once, when the configuration is
//! read (`serve` and `check-config`), so a wrong file stops start-up with a message naming the
//! variable and the path; the key's bytes never appear in a message.
//!
//! The listener is rustls 0.23 on ring (TLS 1.2 and 1.3, rustls's safe defaults), the same
//! rustls the webhook and bank-file clients use.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::secret_source::{self, SecretSource};

/// The certificate variable.
pub const CERT_VARIABLE: &str = "PAYOUT_TLS_CERT";
/// The private key variable.
pub const KEY_VARIABLE: &str = "PAYOUT_TLS_KEY";

/// A loaded, checked certificate chain and private key, ready to serve.
#[derive(Clone)]
pub struct TlsSettings {
    /// Where the certificate chain was read from.
    pub cert_path: PathBuf,
    /// Where the private key was read from.
    pub key_path: PathBuf,
    /// How the key was given (`file:/path` or `credential:PAYOUT_TLS_KEY`), for summaries.
    pub key_source: SecretSource,
    /// How many certificates the chain holds.
    pub chain_length: usize,
    server: Arc<rustls::ServerConfig>,
}

impl fmt::Debug for TlsSettings {
    // Paths only: nothing of the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .field("key_source", &self.key_source)
            .field("chain_length", &self.chain_length)
            .finish_non_exhaustive()
    }
}

/// Why the listener's certificate or key was refused, naming the variable that gave its path
/// (the configuration turns it into its own error; this module does not depend on it).
#[derive(Debug, thiserror::Error)]
#[error("configuration: {variable} {problem}")]
pub struct TlsConfigError {
    /// `PAYOUT_TLS_CERT` or `PAYOUT_TLS_KEY`.
    pub variable: &'static str,
    /// What is wrong with it (never the key's content).
    pub problem: String,
}

fn problem(variable: &'static str, problem: String) -> TlsConfigError {
    TlsConfigError { variable, problem }
}

fn read(variable: &'static str, path: &Path) -> Result<Vec<u8>, TlsConfigError> {
    std::fs::read(path).map_err(|e| {
        problem(
            variable,
            format!("names {}, which cannot be read: {e}", path.display()),
        )
    })
}

impl TlsSettings {
    /// Reads the certificate chain at `cert_path` and the private key at `key_path` and checks
    /// that the key is the certificate's.
    ///
    /// # Errors
    /// A file that cannot be read, holds no PEM certificate (or private key), a key file that
    /// its group or others may access, or a key that is not the certificate's, naming the
    /// variable and the path (never the key's content).
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Self, TlsConfigError> {
        Self::load_key_from(cert_path, key_path, SecretSource::File(key_path.to_owned()))
    }

    pub(crate) fn load_key_from(
        cert_path: &Path,
        key_path: &Path,
        key_source: SecretSource,
    ) -> Result<Self, TlsConfigError> {
        let cert_pem = read(CERT_VARIABLE, cert_path)?;
        // Parse errors name the file, not the parser's detail (which may quote the input).
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                problem(
                    CERT_VARIABLE,
                    format!("names {}, which is not valid PEM", cert_path.display()),
                )
            })?;
        if chain.is_empty() {
            return Err(problem(
                CERT_VARIABLE,
                format!(
                    "names {}, which holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                    cert_path.display()
                ),
            ));
        }
        let key_pem = secret_source::read_file(key_path)
            .map_err(|e| problem(KEY_VARIABLE, format!("is refused: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.expose().as_bytes()).map_err(|_| {
            problem(
                KEY_VARIABLE,
                format!(
                    "names {}, which holds no PEM private key (PKCS#8, PKCS#1 or SEC1)",
                    key_path.display()
                ),
            )
        })?;
        let chain_length = chain.len();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| problem(CERT_VARIABLE, format!("TLS set-up failed: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => problem(
                KEY_VARIABLE,
                format!(
                    "names {}, which is not the private key of the certificate in {CERT_VARIABLE} ({})",
                    key_path.display(),
                    cert_path.display()
                ),
            ),
            // rustls's messages describe the kind of problem, not the key's bytes.
            other => problem(
                KEY_VARIABLE,
                format!(
                    "names {}, which cannot be used with the certificate in {CERT_VARIABLE} ({}): {other}",
                    key_path.display(),
                    cert_path.display()
                ),
            ),
        })?;
        Ok(Self {
            cert_path: cert_path.to_owned(),
            key_path: key_path.to_owned(),
            key_source,
            chain_length,
            server: Arc::new(server),
        })
    }

    /// The rustls server configuration (actix adds the ALPN protocols it speaks).
    pub fn server_config(&self) -> rustls::ServerConfig {
        (*self.server).clone()
    }
}

/// `PAYOUT_TLS_CERT` and `PAYOUT_TLS_KEY` (or the systemd credential `PAYOUT_TLS_KEY`): both
/// (TLS, loaded and checked) or neither (plain HTTP).
///
/// # Errors
/// Only one of them set, the key given both ways, or a file [`TlsSettings::load`] refuses.
pub fn tls_from_env() -> Result<Option<TlsSettings>, TlsConfigError> {
    let cert = std::env::var_os(CERT_VARIABLE).filter(|v| !v.to_string_lossy().trim().is_empty());
    let key = secret_source::file_from_env(KEY_VARIABLE, &secret_source::process_env)
        .map_err(|e| problem(e.variable, format!("is refused: {}", e.error)))?;
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert), Some((path, source))) => {
            TlsSettings::load_key_from(Path::new(&cert), &path, source).map(Some)
        }
        (Some(_), None) => Err(problem(
            KEY_VARIABLE,
            format!("is not set but {CERT_VARIABLE} is: set both (TLS) or neither (plain HTTP)"),
        )),
        (None, Some(_)) => Err(problem(
            CERT_VARIABLE,
            format!("is not set but {KEY_VARIABLE} is: set both (TLS) or neither (plain HTTP)"),
        )),
    }
}
