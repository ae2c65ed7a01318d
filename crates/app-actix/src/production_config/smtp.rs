//! `[smtp]`, the notifier's mail server, and `[kyc]`, the KYC provider.

use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;

use super::problems::{Env, Problems, key_path, seconds, secret, table};
use crate::secret_source::SourcedSecret;

/// How the connection to the mail server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain connection upgraded with `STARTTLS` (refused if the server does not offer it).
    StartTls,
    /// TLS from the first byte (SMTPS).
    Implicit,
    /// No TLS: loopback hosts only.
    None,
}

impl SmtpTls {
    /// The setting's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StartTls => "starttls",
            Self::Implicit => "implicit",
            Self::None => "none",
        }
    }

    /// The usual port of the mode: 587 (submission), 465 (submissions), 25.
    pub fn default_port(self) -> u16 {
        match self {
            Self::StartTls => 587,
            Self::Implicit => 465,
            Self::None => 25,
        }
    }
}

/// The login to the mail server.
#[derive(Debug, Clone)]
pub struct SmtpCredentials {
    /// The user name.
    pub username: String,
    /// The password, and where it came from.
    pub password: SourcedSecret,
}

/// The SMTP notifier's settings.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    /// The server's host name or address.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The TLS mode.
    pub tls: SmtpTls,
    /// The login, when the server wants one.
    pub credentials: Option<SmtpCredentials>,
    /// The sender mailbox, as written (`Payouts <payouts@example.com>` or a bare address).
    pub from: String,
    /// The sender's address alone.
    pub from_address: String,
    /// The limit on one attempt (connect, greet, send).
    pub timeout: Duration,
    /// Most attempts at one message before it is recorded as failed.
    pub max_attempts: u32,
}

/// The KYC provider of production mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KycProviderSetting {
    /// Operators decide with `payoutd admin kyc`.
    Manual,
}

impl KycProviderSetting {
    /// The setting's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
        }
    }
}

/// Default of `timeout_secs`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// Default of `max_attempts`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSmtp {
    host: String,
    port: Option<u16>,
    tls: String,
    username: Option<String>,
    password: Option<toml::Value>,
    from: String,
    timeout_secs: Option<u64>,
    max_attempts: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKyc {
    provider: String,
}

/// Whether `host` is this machine: `localhost` or a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Reads `[smtp]`.
pub fn smtp(body: toml::Table, env: Env<'_>, problems: &mut Problems) -> Option<SmtpSettings> {
    let at = |key: &str| key_path("smtp", key);
    let raw: RawSmtp = table(body, "smtp", problems)?;
    let host = raw.host.trim().to_owned();
    let host_ok = !host.is_empty() && !host.contains(char::is_whitespace) && !host.contains('/');
    if !host_ok {
        problems.push(at("host"), "must be a host name or an IP address");
    }
    let tls = match raw.tls.as_str() {
        "starttls" => Some(SmtpTls::StartTls),
        "implicit" => Some(SmtpTls::Implicit),
        "none" if host_ok && !is_loopback_host(&host) => {
            problems.push(
                at("tls"),
                format!(
                    "\"none\" is allowed only for a loopback host (localhost, 127.0.0.1, ::1), not {host:?}: without TLS the password and the confirmation links would cross the network in clear text"
                ),
            );
            None
        }
        "none" => Some(SmtpTls::None),
        other => {
            problems.push(
                at("tls"),
                format!("must be \"starttls\", \"implicit\" or \"none\", got {other:?}"),
            );
            None
        }
    };
    let port = match raw.port {
        Some(0) => {
            problems.push(at("port"), "must be from 1 to 65535");
            None
        }
        port => Some(port),
    };
    let credentials = match (raw.username, raw.password) {
        (None, None) => Some(None),
        (Some(username), Some(password)) => {
            let password = secret(password, &at("password"), env, problems);
            if username.trim().is_empty() {
                problems.push(at("username"), "must not be empty");
                None
            } else {
                password.map(|password| {
                    Some(SmtpCredentials {
                        username: username.trim().to_owned(),
                        password,
                    })
                })
            }
        }
        (Some(_), None) => {
            problems.push(at("password"), "is needed with smtp.username");
            None
        }
        (None, Some(_)) => {
            problems.push(at("username"), "is needed with smtp.password");
            None
        }
    };
    let options = email_address::Options::default()
        .with_display_text()
        .with_required_tld()
        .without_domain_literal();
    let from = match email_address::EmailAddress::parse_with_options(raw.from.trim(), options) {
        Ok(address) => Some((raw.from.trim().to_owned(), address.email())),
        Err(e) => {
            problems.push(
                at("from"),
                format!(
                    "must be a mailbox such as \"Payouts <payouts@example.com>\" or payouts@example.com ({e})"
                ),
            );
            None
        }
    };
    let timeout = seconds(
        raw.timeout_secs,
        DEFAULT_TIMEOUT_SECS,
        1..=300,
        &at("timeout_secs"),
        problems,
    );
    let max_attempts = match raw.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS) {
        n @ 1..=20 => Some(n),
        n => {
            problems.push(at("max_attempts"), format!("must be from 1 to 20, got {n}"));
            None
        }
    };
    let tls = tls?;
    let (from, from_address) = from?;
    if !host_ok {
        return None;
    }
    Some(SmtpSettings {
        host,
        port: port?.unwrap_or(tls.default_port()),
        tls,
        credentials: credentials?,
        from,
        from_address,
        timeout: timeout?,
        max_attempts: max_attempts?,
    })
}

/// Reads `[kyc]`.
pub fn kyc(body: toml::Table, problems: &mut Problems) -> Option<KycProviderSetting> {
    let raw: RawKyc = table(body, "kyc", problems)?;
    match raw.provider.as_str() {
        "manual" => Some(KycProviderSetting::Manual),
        other => {
            problems.push(
                "kyc.provider",
                format!("must be \"manual\" (the only provider in this version), got {other:?}"),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.1.2.3",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "mail.example.com",
            "10.0.0.1",
            "localhost.example.com",
            "0.0.0.0",
            "::",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
