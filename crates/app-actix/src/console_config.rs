//! The operator console's settings (docs/CONSOLE.md), read with the rest of the configuration.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `PAYOUT_CONSOLE_BIND` | unset (no console) | the console's own listen address, e.g. `127.0.0.1:8081`; never the API's |
//! | `PAYOUT_CONSOLE_TLS_CERT`, `PAYOUT_CONSOLE_TLS_KEY` | the API's (`PAYOUT_TLS_CERT`, `PAYOUT_TLS_KEY`) | the console listener's certificate chain and key (both or neither); the key may instead be the systemd credential `PAYOUT_CONSOLE_TLS_KEY` |
//! | `PAYOUT_CONSOLE_URL` | `http(s)://<PAYOUT_CONSOLE_BIND>` | the console's public base URL, for enrolment links |
//! | `PAYOUT_CONSOLE_IDLE_MINUTES` | `30` | a session unused this long ends (1..=1440) |
//! | `PAYOUT_CONSOLE_ABSOLUTE_HOURS` | `12` | a session ends this long after sign-in (1..=168, at least the idle timeout) |

use std::net::SocketAddr;
use std::path::Path;

use domain::operators::SessionPolicy;

use crate::tls::TlsSettings;

/// A console setting refused, naming its variable (the configuration turns it into its own
/// error; this module does not depend on it).
#[derive(Debug, thiserror::Error)]
#[error("configuration: {variable} {problem}")]
pub struct ConfigError {
    /// The variable.
    pub variable: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

/// The console listener and its sessions.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// Where it listens.
    pub bind: SocketAddr,
    /// Its TLS certificate and key (`None`: plain HTTP).
    pub tls: Option<TlsSettings>,
    /// Its public base URL (enrolment links start with it).
    pub public_url: String,
    /// How long sessions last.
    pub sessions: SessionPolicy,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn number(
    name: &'static str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, ConfigError> {
    match var(name) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| ConfigError {
                variable: name,
                problem: format!(
                    "must be a number from {} to {}, got {raw:?}",
                    range.start(),
                    range.end()
                ),
            }),
    }
}

/// The session timeouts (`PAYOUT_CONSOLE_IDLE_MINUTES`, `PAYOUT_CONSOLE_ABSOLUTE_HOURS`).
///
/// # Errors
/// A value out of range, or an absolute timeout shorter than the idle one.
pub fn session_policy_from_env() -> Result<SessionPolicy, ConfigError> {
    let idle = number("PAYOUT_CONSOLE_IDLE_MINUTES", 30, 1..=1440)?;
    let absolute = number("PAYOUT_CONSOLE_ABSOLUTE_HOURS", 12, 1..=168)?;
    SessionPolicy::new(
        chrono::Duration::minutes(idle),
        chrono::Duration::hours(absolute),
    )
    .map_err(|e| ConfigError {
        variable: "PAYOUT_CONSOLE_ABSOLUTE_HOURS",
        problem: e.to_string(),
    })
}

/// The console's public base URL for `payoutd admin create-operator`: `PAYOUT_CONSOLE_URL`, or
/// one made from `PAYOUT_CONSOLE_BIND` (`https` when a certificate is configured for it).
///
/// # Errors
/// Neither is set, or either is malformed.
pub fn console_url_from_env() -> Result<String, ConfigError> {
    if let Some(url) = var("PAYOUT_CONSOLE_URL") {
        return parse_url(&url);
    }
    let bind = var("PAYOUT_CONSOLE_BIND").ok_or_else(|| ConfigError {
        variable: "PAYOUT_CONSOLE_URL",
        problem:
            "is not set (nor PAYOUT_CONSOLE_BIND): the enrolment link needs the console's address"
                .to_owned(),
    })?;
    let tls = var("PAYOUT_CONSOLE_TLS_CERT")
        .or_else(|| var("PAYOUT_TLS_CERT"))
        .is_some();
    Ok(format!(
        "{}://{}",
        if tls { "https" } else { "http" },
        bind.trim()
    ))
}

fn parse_url(url: &str) -> Result<String, ConfigError> {
    let url = url.trim();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.trim_end_matches('/').to_owned())
    } else {
        Err(ConfigError {
            variable: "PAYOUT_CONSOLE_URL",
            problem: format!("must start with http:// or https://, got {url:?}"),
        })
    }
}

impl ConsoleConfig {
    /// Reads the variables; `None` when `PAYOUT_CONSOLE_BIND` is unset. `api_tls` is the API
    /// listener's certificate, used unless the console has its own.
    ///
    /// # Errors
    /// A malformed or unreadable setting, naming its variable.
    pub fn from_env(
        api_bind: SocketAddr,
        api_tls: Option<&TlsSettings>,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(raw) = var("PAYOUT_CONSOLE_BIND") else {
            return Ok(None);
        };
        let bind: SocketAddr = raw.trim().parse().map_err(|_| ConfigError {
            variable: "PAYOUT_CONSOLE_BIND",
            problem: format!("must be host:port, e.g. 127.0.0.1:8081, got {raw:?}"),
        })?;
        if bind == api_bind && bind.port() != 0 {
            return Err(ConfigError {
                variable: "PAYOUT_CONSOLE_BIND",
                problem:
                    "is the API's address (PAYOUT_BIND): the console needs a listener of its own"
                        .to_owned(),
            });
        }
        // The key, like the API's, may be the systemd credential named like its variable.
        let key = crate::secret_source::file_from_env(
            "PAYOUT_CONSOLE_TLS_KEY",
            &crate::secret_source::process_env,
        )
        .map_err(|e| ConfigError {
            variable: "PAYOUT_CONSOLE_TLS_KEY",
            problem: format!("is refused: {}", e.error),
        })?;
        let tls = match (var("PAYOUT_CONSOLE_TLS_CERT"), key) {
            (Some(cert), Some((key, source))) => Some(
                TlsSettings::load_key_from(Path::new(&cert), &key, source).map_err(|e| {
                    ConfigError {
                        variable: if e.variable == crate::tls::CERT_VARIABLE {
                            "PAYOUT_CONSOLE_TLS_CERT"
                        } else {
                            "PAYOUT_CONSOLE_TLS_KEY"
                        },
                        problem: e.problem,
                    }
                })?,
            ),
            (None, None) => api_tls.cloned(),
            (Some(_), None) => {
                return Err(ConfigError {
                    variable: "PAYOUT_CONSOLE_TLS_KEY",
                    problem: "is not set but PAYOUT_CONSOLE_TLS_CERT is: set both or neither"
                        .to_owned(),
                });
            }
            (None, Some(_)) => {
                return Err(ConfigError {
                    variable: "PAYOUT_CONSOLE_TLS_CERT",
                    problem: "is not set but PAYOUT_CONSOLE_TLS_KEY is: set both or neither"
                        .to_owned(),
                });
            }
        };
        let public_url = match var("PAYOUT_CONSOLE_URL") {
            Some(url) => parse_url(&url)?,
            None => format!("{}://{bind}", if tls.is_some() { "https" } else { "http" }),
        };
        Ok(Some(Self {
            bind,
            tls,
            public_url,
            sessions: session_policy_from_env()?,
        }))
    }
}
