//! The production configuration file (docs/OPERATIONS.md, Production configuration): the settings
//! of production mode that do not fit in a few environment variables, in a TOML file named by
//! `PAYOUT_CONFIG` and read when `PAYOUT_SANDBOX` is unset or false. `docs/OPERATIONS.md`
//! ("Production configuration") lists every setting; `docs/examples/payoutd.toml` is a complete
//! example.
//!
//! ```toml
//! [rails."usd/ach"]          # one table per enabled payout method, keyed by its quoted route
//! file_prefix = "ACME"
//! cutoffs = ["15:00"]        # UTC
//! holidays = ["2026-12-25"]
//! transport = { kind = "sftp", host = "sftp.bank.example", user = "acme", private_key = "credential:ach-sftp-key", host_key = "ssh-ed25519 AAAA…", outbound_dir = "outbound", inbound_dir = "inbound" }
//! # … the NACHA originator settings
//!
//! [smtp]
//! host = "smtp.example.com"
//! tls = "starttls"
//! username = "payoutd"
//! password = "file:/etc/payoutd/credentials/smtp-password"
//! from = "Payouts <payouts@example.com>"
//!
//! [kyc]
//! provider = "manual"
//! ```
//!
//! Every table denies unknown keys. Every setting is checked when the file is loaded, and every
//! problem found is reported, each naming the setting's full path
//! (`rails."usd/ach".company_id: must be 10 characters, got 9`); within one table, a key that is
//! unknown, missing or of the wrong type stops the checks of that table (serde reports the
//! first one). Secrets (`smtp.password`, a partner's `shared_secret`, an SFTP `private_key`)
//! may be written `credential:NAME`, `file:/path` or `env:NAME` and are then read from there
//! ([`crate::secret_source`]); they are kept in `Secret`s and never appear in a message or the
//! summary, which shows where each came from (`[REDACTED] (credential:smtp-password)`).

mod problems;
mod rails;
mod smtp;
mod transport;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::secret_source::masked;
use chrono::{DateTime, SecondsFormat, Utc};
use domain::account::PayoutMethod;
use serde::Deserialize;
use serde_json::{Value, json};

pub use problems::Problem;
pub use rails::RailSettings;
pub use smtp::{KycProviderSetting, SmtpCredentials, SmtpSettings, SmtpTls, is_loopback_host};
pub use transport::{
    DirectoryTransportSettings, PartnerApiTransportSettings, SftpTransportSettings,
    TransportSettings,
};

use problems::{Env, Problems, as_table, key_path};

/// The environment variable naming the file.
pub const CONFIG_VARIABLE: &str = "PAYOUT_CONFIG";

/// The checked production settings: what the lead wires into the production adapters.
#[derive(Debug, Clone)]
pub struct ProductionSettings {
    /// The file they were read from.
    pub path: PathBuf,
    /// The rails of the enabled methods; a method without one is not enabled.
    pub rails: BTreeMap<PayoutMethod, RailSettings>,
    /// The SMTP notifier.
    pub smtp: SmtpSettings,
    /// The KYC provider.
    pub kyc: KycProviderSetting,
}

/// Why the production settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProductionConfigError {
    /// `PAYOUT_CONFIG` is not set.
    #[error(
        "configuration: PAYOUT_CONFIG is not set: outside sandbox mode (PAYOUT_SANDBOX unset or false) it names the TOML file of the rails, SMTP and KYC settings (see docs/OPERATIONS.md)"
    )]
    NotSet,
    /// The file cannot be read.
    #[error("configuration: PAYOUT_CONFIG: cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file has problems.
    #[error("{}", invalid_message(path, problems))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every problem found.
        problems: Vec<Problem>,
    },
}

fn invalid_message(path: &Path, problems: &[Problem]) -> String {
    Invalid { path, problems }.to_string()
}

struct Invalid<'a> {
    path: &'a Path,
    problems: &'a [Problem],
}

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            f,
            "configuration: PAYOUT_CONFIG file {} has {count} problem{}:",
            self.path.display(),
            if count == 1 { "" } else { "s" }
        )?;
        for problem in self.problems {
            write!(f, "\n  {problem}")?;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    rails: Option<toml::Value>,
    smtp: Option<toml::Value>,
    kyc: Option<toml::Value>,
}

/// `line L, column C` of a byte offset.
fn position(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

impl ProductionSettings {
    /// Loads the file named by `PAYOUT_CONFIG`, with `env:` references read from the process
    /// environment.
    ///
    /// # Errors
    /// `PAYOUT_CONFIG` unset, the file unreadable, or every problem found in it.
    pub fn from_env() -> Result<Self, ProductionConfigError> {
        let path = std::env::var(CONFIG_VARIABLE)
            .ok()
            .filter(|p| !p.trim().is_empty())
            .ok_or(ProductionConfigError::NotSet)?;
        Self::load(Path::new(path.trim()), &|name| std::env::var(name).ok())
    }

    /// Loads the file at `path`, reading `env:` references with `env`.
    ///
    /// # Errors
    /// The file unreadable, or every problem found in it.
    pub fn load(path: &Path, env: Env<'_>) -> Result<Self, ProductionConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ProductionConfigError::Unreadable {
                path: path.to_path_buf(),
                source,
            })?;
        Self::parse(&text, path, env).map_err(|problems| ProductionConfigError::Invalid {
            path: path.to_path_buf(),
            problems,
        })
    }

    /// Checks the text of a file (`path` is only recorded).
    ///
    /// # Errors
    /// Every problem found.
    pub fn parse(text: &str, path: &Path, env: Env<'_>) -> Result<Self, Vec<Problem>> {
        let mut problems = Problems::default();
        let document = match text.parse::<toml::Table>() {
            Ok(document) => document,
            Err(e) => {
                // The message only, without the excerpt of the line: that line may hold a
                // secret.
                let at = e
                    .span()
                    .map_or_else(|| "the file".to_owned(), |span| position(text, span.start));
                problems.push(at, format!("not valid TOML: {}", e.message().trim()));
                return Err(problems.into_vec());
            }
        };
        let Some(raw) = problems::table::<RawFile>(document, "top level", &mut problems) else {
            return Err(problems.into_vec());
        };
        let rails = Self::rails(raw.rails, env, &mut problems);
        let smtp = match raw.smtp {
            None => {
                problems.push(
                    "smtp",
                    "is missing: production mode sends confirmation requests by e-mail",
                );
                None
            }
            Some(value) => as_table(value, "smtp", &mut problems)
                .and_then(|body| smtp::smtp(body, env, &mut problems)),
        };
        let kyc = match raw.kyc {
            None => {
                problems.push("kyc", "is missing: write [kyc] provider = \"manual\"");
                None
            }
            Some(value) => as_table(value, "kyc", &mut problems)
                .and_then(|body| smtp::kyc(body, &mut problems)),
        };
        match (rails, smtp, kyc) {
            (Some(rails), Some(smtp), Some(kyc)) if problems.is_empty() => Ok(Self {
                path: path.to_path_buf(),
                rails,
                smtp,
                kyc,
            }),
            _ => Err(problems.into_vec()),
        }
    }

    fn rails(
        value: Option<toml::Value>,
        env: Env<'_>,
        problems: &mut Problems,
    ) -> Option<BTreeMap<PayoutMethod, RailSettings>> {
        let no_rail = "no payout method is enabled: add a [rails.\"<method>\"] table, e.g. [rails.\"usd/ach\"]";
        let Some(value) = value else {
            problems.push("rails", no_rail);
            return None;
        };
        let tables = as_table(value, "rails", problems)?;
        if tables.is_empty() {
            problems.push("rails", no_rail);
            return None;
        }
        let mut rails = BTreeMap::new();
        let mut complete = true;
        for (key, body) in tables {
            let rail = as_table(body, &key_path("rails", &key), problems)
                .and_then(|body| rails::rail(&key, body, env, problems));
            match rail {
                Some(rail) => {
                    rails.insert(rail.method, rail);
                }
                None => complete = false,
            }
        }
        complete.then_some(rails)
    }

    /// The enabled methods.
    pub fn enabled_methods(&self) -> Vec<PayoutMethod> {
        self.rails.keys().copied().collect()
    }

    /// What `payoutd check-config` prints: the enabled methods, each rail's calendar, next
    /// cut-off after `now` and transport, the SMTP server and the KYC provider. Secrets are
    /// shown only as where they come from, the debtor IBAN masked.
    pub fn summary(&self, now: DateTime<Utc>) -> Value {
        let rails: serde_json::Map<String, Value> = self
            .rails
            .values()
            .map(|rail| (rail.method.route(), rail_summary(rail, now)))
            .collect();
        let smtp = &self.smtp;
        json!({
            "config": self.path.display().to_string(),
            "enabled_methods": self.rails.keys().map(|m| m.route()).collect::<Vec<_>>(),
            "rails": rails,
            "smtp": {
                "host": smtp.host,
                "port": smtp.port,
                "tls": smtp.tls.as_str(),
                "from": smtp.from,
                "username": smtp.credentials.as_ref().map(|c| c.username.clone()),
                "password": smtp.credentials.as_ref().map(|c| c.password.masked()),
                "timeout_secs": smtp.timeout.as_secs(),
                "max_attempts": smtp.max_attempts,
            },
            "kyc": { "provider": self.kyc.as_str() },
        })
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn rail_summary(rail: &RailSettings, now: DateTime<Utc>) -> Value {
    let next_cutoff = rail.calendar.next_cutoff(now);
    let transport = match &rail.transport {
        TransportSettings::Sftp(sftp) => json!({
            "kind": "sftp",
            "host": sftp.settings.host,
            "port": sftp.settings.port,
            "user": sftp.settings.user,
            "private_key": masked(&sftp.private_key_source),
            "client_key_fingerprint": sftp.client_fingerprint,
            "host_key": sftp.settings.host_key.to_string(),
            "outbound_dir": sftp.settings.outbound_dir,
            "inbound_dir": sftp.settings.inbound_dir,
            "poll_interval_secs": sftp.poll_interval.as_secs(),
        }),
        TransportSettings::PartnerApi(api) => json!({
            "kind": "partner_api",
            "base_url": api.settings.base_url,
            "shared_secret": masked(&api.secret_source),
            "timeout_secs": api.settings.timeout.as_secs(),
            "connect_timeout_secs": api.settings.connect_timeout.as_secs(),
            "poll_interval_secs": api.poll_interval.as_secs(),
        }),
        TransportSettings::Directory(dir) => json!({
            "kind": "directory",
            "outbound_dir": dir.outbound_dir.display().to_string(),
            "inbound_dir": dir.inbound_dir.display().to_string(),
            // Whole seconds as an integer, as written; a fraction as one.
            "poll_interval_secs": if dir.poll_interval.subsec_nanos() == 0 {
                json!(dir.poll_interval.as_secs())
            } else {
                json!(dir.poll_interval.as_secs_f64())
            },
        }),
    };
    json!({
        "format": rail.rail.unit().format,
        "file_prefix": rail.file_prefix,
        "cutoffs": rail.calendar.cutoff_texts(),
        "holidays": rail.calendar.holidays().map(|d| d.to_string()).collect::<Vec<_>>(),
        "next_cutoff": next_cutoff.map(rfc3339),
        "effective_date_of_next_cutoff": next_cutoff
            .and_then(|c| rail.calendar.effective_date(c))
            .map(|d| d.to_string()),
        "transport": transport,
        "originator": rail.rail.summary(),
    })
}

#[cfg(test)]
mod tests;
