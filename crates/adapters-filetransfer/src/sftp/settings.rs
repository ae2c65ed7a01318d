//! What an SFTP connection to a bank needs: where, as whom, with which key, which server key to
//! trust, which directories, and how long to wait.

use std::{fmt, str::FromStr, sync::Arc, time::Duration};

use domain::masking::Secret;
use russh::keys::{
    Algorithm, HashAlg, PrivateKey, PublicKey, decode_secret_key,
    ssh_key::{Fingerprint, public::KeyData},
};

/// The settings of an [`SftpTransport`](super::SftpTransport).
///
/// `Debug` never shows the private key: it is held in a [`Secret`].
#[derive(Debug, Clone)]
pub struct SftpSettings {
    /// The server's host name or address.
    pub host: String,
    /// The server's port, usually [`SftpSettings::DEFAULT_PORT`].
    pub port: u16,
    /// The user to log in as.
    pub user: String,
    /// The client's private key: an unencrypted ed25519 key in OpenSSH format
    /// (`-----BEGIN OPENSSH PRIVATE KEY-----`, as `ssh-keygen -t ed25519 -N ''` writes it) or
    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). The caller reads it from wherever it is kept
    /// (payoutd: a credential, a file or a variable, with its checks on secret files).
    pub private_key: Secret<String>,
    /// The server's host key: a connection to a server presenting any other is refused before
    /// authenticating.
    pub host_key: HostKeyPin,
    /// The remote directory uploads go to (absolute, or relative to the login directory).
    pub outbound_dir: String,
    /// The remote directory the bank's files are read from.
    pub inbound_dir: String,
    /// The limit on reaching the server: TCP connect, SSH handshake, authentication and the
    /// start of the SFTP session.
    pub connect_timeout: Duration,
    /// The limit on the work of one call once connected.
    pub operation_timeout: Duration,
}

impl SftpSettings {
    /// The SSH port.
    pub const DEFAULT_PORT: u16 = 22;
    /// The default [`connect_timeout`](Self::connect_timeout).
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
    /// The default [`operation_timeout`](Self::operation_timeout).
    pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(120);

    /// Settings with the default port and timeouts.
    pub fn new(
        host: impl Into<String>,
        user: impl Into<String>,
        private_key: Secret<String>,
        host_key: HostKeyPin,
        outbound_dir: impl Into<String>,
        inbound_dir: impl Into<String>,
    ) -> Self {
        Self {
            host: host.into(),
            port: Self::DEFAULT_PORT,
            user: user.into(),
            private_key,
            host_key,
            outbound_dir: outbound_dir.into(),
            inbound_dir: inbound_dir.into(),
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            operation_timeout: Self::DEFAULT_OPERATION_TIMEOUT,
        }
    }
}

/// Decodes the client's private key, which must be an unencrypted ed25519 key.
pub(crate) fn load_private_key(text: &Secret<String>) -> Result<Arc<PrivateKey>, SftpConfigError> {
    // The decoder's errors are not passed on: they are only about the key's encoding, and
    // nothing derived from the secret should reach a message.
    let key = decode_secret_key(text.expose(), None).map_err(|err| match err {
        russh::keys::Error::KeyIsEncrypted => SftpConfigError::PrivateKeyEncrypted,
        _ => SftpConfigError::PrivateKeyInvalid,
    })?;
    match key.algorithm() {
        Algorithm::Ed25519 => Ok(Arc::new(key)),
        other => Err(SftpConfigError::PrivateKeyNotEd25519 {
            algorithm: other.to_string(),
        }),
    }
}

/// The server host key to trust: the key itself, or its SHA256 fingerprint.
#[derive(Clone, PartialEq, Eq)]
pub enum HostKeyPin {
    /// The key, from an OpenSSH public-key line (`ssh-ed25519 AAAA… [comment]`, as in the
    /// server's `/etc/ssh/ssh_host_ed25519_key.pub`); the comment is ignored.
    Key(KeyData),
    /// Its fingerprint, as `ssh-keygen -l` prints it (`SHA256:…`).
    Fingerprint(Fingerprint),
}

impl HostKeyPin {
    /// Parses an OpenSSH public-key line or a `SHA256:` fingerprint.
    ///
    /// # Errors
    /// [`SftpConfigError::HostKeyPin`] for anything else.
    pub fn parse(text: &str) -> Result<Self, SftpConfigError> {
        let text = text.trim();
        if text.starts_with("SHA256:") {
            return Fingerprint::from_str(text)
                .map(Self::Fingerprint)
                .map_err(|_| SftpConfigError::HostKeyPin);
        }
        PublicKey::from_openssh(text)
            .map(|key| Self::Key(key.key_data().clone()))
            .map_err(|_| SftpConfigError::HostKeyPin)
    }

    /// Whether the server's `key` is the pinned one.
    pub fn matches(&self, key: &PublicKey) -> bool {
        match self {
            Self::Key(pinned) => pinned == key.key_data(),
            Self::Fingerprint(pinned) => *pinned == key.fingerprint(HashAlg::Sha256),
        }
    }

    /// The pinned key's SHA256 fingerprint, for messages.
    pub fn fingerprint(&self) -> Fingerprint {
        match self {
            Self::Key(key) => key.fingerprint(HashAlg::Sha256),
            Self::Fingerprint(fingerprint) => *fingerprint,
        }
    }
}

impl FromStr for HostKeyPin {
    type Err = SftpConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for HostKeyPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.fingerprint())
    }
}

impl fmt::Debug for HostKeyPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostKeyPin({})", self.fingerprint())
    }
}

/// Settings an [`SftpTransport`](super::SftpTransport) cannot work with. The messages name the
/// setting, never the key.
#[derive(Debug, thiserror::Error)]
pub enum SftpConfigError {
    /// The key is neither OpenSSH nor PKCS#8 PEM, or is damaged.
    #[error("the SFTP private key is not an OpenSSH or PKCS#8 PEM private key")]
    PrivateKeyInvalid,
    /// The key needs a passphrase.
    #[error("the SFTP private key is encrypted with a passphrase, which is not supported")]
    PrivateKeyEncrypted,
    /// The key is not ed25519.
    #[error("the SFTP private key is {algorithm}; only ed25519 keys are supported")]
    PrivateKeyNotEd25519 {
        /// The key's algorithm.
        algorithm: String,
    },
    /// The pinned host key could not be parsed.
    #[error(
        "the pinned SFTP host key is neither an OpenSSH public-key line (`ssh-ed25519 AAAA…`) \
         nor a SHA256 fingerprint (`SHA256:…`)"
    )]
    HostKeyPin,
    /// A required setting is empty.
    #[error("the SFTP setting `{0}` is empty")]
    Empty(&'static str),
}
