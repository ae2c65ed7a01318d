//! What the SMTP notifier is configured with.

use std::str::FromStr;
use std::time::Duration;

use domain::masking::Secret;

/// How the connection to the relay is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain connection upgraded with `STARTTLS`, which is required (usually port 587).
    Starttls,
    /// TLS from the first byte (usually port 465).
    Implicit,
    /// No TLS: only for a relay on the same host or a test server.
    None,
}

impl FromStr for TlsMode {
    type Err = SmtpConfigError;

    /// `starttls`, `implicit` or `none`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "starttls" => Ok(Self::Starttls),
            "implicit" => Ok(Self::Implicit),
            "none" => Ok(Self::None),
            _ => Err(SmtpConfigError::TlsMode),
        }
    }
}

/// SMTP AUTH credentials (PLAIN or LOGIN, as the server offers).
#[derive(Debug, Clone)]
pub struct SmtpCredentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: Secret<String>,
}

/// The SMTP notifier's settings.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    /// The relay's host name (also the name its certificate must carry).
    pub host: String,
    /// Its port.
    pub port: u16,
    /// How the connection is secured.
    pub tls: TlsMode,
    /// AUTH credentials, if the relay wants them.
    pub credentials: Option<SmtpCredentials>,
    /// The sender, as a mailbox: `Payouts <payouts@example.com>` or a bare address.
    pub from: String,
    /// The longest wait for each step of the conversation (connecting included).
    pub timeout: Duration,
    /// A CA certificate (PEM) to trust instead of the system's, for a relay with a private CA.
    pub ca_certificate_pem: Option<Vec<u8>>,
}

/// A setting the notifier cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum SmtpConfigError {
    /// The TLS mode is not one of the three.
    #[error("the SMTP TLS mode must be starttls, implicit or none")]
    TlsMode,
    /// The sender is not a mailbox.
    #[error("the SMTP sender is not an e-mail address or mailbox: {0}")]
    From(String),
    /// The host is empty.
    #[error("the SMTP host is empty")]
    Host,
    /// The CA certificate or TLS parameters were refused.
    #[error("the SMTP TLS settings were refused: {0}")]
    Tls(String),
}
