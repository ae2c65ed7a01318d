//! `[rails."<method>".transport]`: how a rail's files reach the bank and its answers come back
//! (SFTP, local directories or a partner's API), checked and built once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use adapters_filetransfer::{
    DirectoryTransport, HostKeyPin, PartnerApiConfigError, PartnerApiSettings, PartnerApiTransport,
    SftpConfigError, SftpSettings, SftpTransport,
};
use adapters_rails::TransportKind;
use domain::masking::Secret;
use domain::rail::transport::FileTransport;
use serde::Deserialize;

use super::problems::{Env, Problems, key_path, seconds, secret, secret_ref, table};
use crate::secret_source::{SecretRef, SecretSource, SourcedSecret};

/// Default of `poll_interval_secs`.
pub const DEFAULT_POLL_SECS: u64 = 300;

/// A rail's transport.
#[derive(Debug, Clone)]
pub enum TransportSettings {
    /// SFTP to the bank's host.
    Sftp(Box<SftpTransportSettings>),
    /// Local directories served by a managed file-transfer agent.
    Directory(DirectoryTransportSettings),
    /// A partner's signed HTTPS API (`cad/digital`).
    PartnerApi(Box<PartnerApiTransportSettings>),
}

impl TransportSettings {
    /// How often the inbound directory is read for the bank's answers.
    pub fn poll_interval(&self) -> Duration {
        match self {
            Self::Sftp(s) => s.poll_interval,
            Self::Directory(d) => d.poll_interval,
            Self::PartnerApi(p) => p.poll_interval,
        }
    }

    /// Its kind.
    pub fn kind(&self) -> TransportKind {
        match self {
            Self::Sftp(_) => TransportKind::Sftp,
            Self::Directory(_) => TransportKind::Directory,
            Self::PartnerApi(_) => TransportKind::PartnerApi,
        }
    }

    /// The transport, built once when the settings were checked (nothing is connected yet).
    pub fn transport(&self) -> Arc<dyn FileTransport> {
        match self {
            Self::Sftp(s) => s.transport.clone(),
            Self::Directory(d) => d.transport.clone(),
            Self::PartnerApi(p) => p.transport.clone(),
        }
    }
}

/// `kind = "sftp"`.
#[derive(Debug, Clone)]
pub struct SftpTransportSettings {
    /// What [`SftpTransport::new`] took.
    pub settings: SftpSettings,
    /// The transport it built (the key loaded, nothing connected).
    pub transport: Arc<SftpTransport>,
    /// How often the bank's inbound directory is read.
    pub poll_interval: Duration,
    /// Where the private key came from, for the summary.
    pub private_key_source: SecretSource,
    /// The SHA256 fingerprint of the client's key (to give the bank).
    pub client_fingerprint: String,
}

/// `kind = "partner_api"`.
#[derive(Debug, Clone)]
pub struct PartnerApiTransportSettings {
    /// What [`PartnerApiTransport::new`] took.
    pub settings: PartnerApiSettings,
    /// The transport it built (nothing connected).
    pub transport: Arc<PartnerApiTransport>,
    /// How often the partner's status reports are listed (callbacks bring them sooner).
    pub poll_interval: Duration,
    /// Where the shared secret came from, for the summary.
    pub secret_source: SecretSource,
}

/// `kind = "directory"`.
#[derive(Debug, Clone)]
pub struct DirectoryTransportSettings {
    /// Where files for the bank are written.
    pub outbound_dir: PathBuf,
    /// Where the bank's files are read from.
    pub inbound_dir: PathBuf,
    /// How often the inbound directory is read.
    pub poll_interval: Duration,
    /// The transport over them.
    pub transport: Arc<DirectoryTransport>,
}

/// The kinds' names for a message: `"sftp" or "directory"`.
pub fn names(kinds: &[TransportKind]) -> String {
    let quoted: Vec<String> = kinds.iter().map(|k| format!("{:?}", k.name())).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPartnerApi {
    base_url: String,
    shared_secret: toml::Value,
    poll_interval_secs: Option<u64>,
    timeout_secs: Option<u64>,
    connect_timeout_secs: Option<u64>,
    signature_tolerance_secs: Option<u64>,
    max_response_bytes: Option<u64>,
    max_pages: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSftp {
    host: String,
    port: Option<u16>,
    user: String,
    private_key: toml::Value,
    host_key: String,
    outbound_dir: String,
    inbound_dir: String,
    poll_interval_secs: Option<u64>,
    connect_timeout_secs: Option<u64>,
    operation_timeout_secs: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDirectory {
    outbound_dir: String,
    inbound_dir: String,
    /// Seconds, a fraction allowed (a local directory is cheap to list).
    poll_interval_secs: Option<f64>,
}

/// The shortest poll of a directory transport's inbound directory, seconds.
const MIN_DIRECTORY_POLL_SECS: f64 = 0.1;
/// The longest poll of any transport, seconds (a day).
const MAX_POLL_SECS: u64 = 86_400;

/// Reads `[rails."<method>".transport]` (a table already known to be one) and builds its
/// transport.
pub fn transport(
    mut body: toml::Table,
    path: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<TransportSettings> {
    let kind_path = key_path(path, "kind");
    let kinds = names(TransportKind::ALL);
    let kind = match body.remove("kind") {
        Some(toml::Value::String(kind)) => kind,
        Some(_) | None => {
            problems.push(kind_path, format!("must be {kinds}"));
            return None;
        }
    };
    match TransportKind::from_name(&kind) {
        Some(TransportKind::Sftp) => sftp(table(body, path, problems)?, path, env, problems),
        Some(TransportKind::Directory) => directory(table(body, path, problems)?, path, problems),
        Some(TransportKind::PartnerApi) => {
            partner_api(table(body, path, problems)?, path, env, problems)
        }
        None => {
            problems.push(kind_path, format!("must be {kinds}, got {kind:?}"));
            None
        }
    }
}

fn required(value: &str, setting: &str, problems: &mut Problems) -> Option<String> {
    if value.trim().is_empty() {
        problems.push(setting, "must not be empty");
        None
    } else {
        Some(value.trim().to_owned())
    }
}

fn sftp(
    raw: RawSftp,
    path: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<TransportSettings> {
    let at = |key: &str| key_path(path, key);
    let host = match required(&raw.host, &at("host"), problems) {
        Some(host) if host.contains(char::is_whitespace) || host.contains('/') => {
            problems.push(at("host"), "must be a host name or an IP address");
            None
        }
        host => host,
    };
    let port = match raw.port {
        Some(0) => {
            problems.push(at("port"), "must be from 1 to 65535");
            None
        }
        port => Some(port.unwrap_or(SftpSettings::DEFAULT_PORT)),
    };
    let user = required(&raw.user, &at("user"), problems);
    let outbound = required(&raw.outbound_dir, &at("outbound_dir"), problems);
    let inbound = required(&raw.inbound_dir, &at("inbound_dir"), problems);
    let host_key = match HostKeyPin::parse(&raw.host_key) {
        Ok(pin) => Some(pin),
        Err(e) => {
            problems.push(at("host_key"), e.to_string());
            None
        }
    };
    let private_key = private_key(raw.private_key, &at("private_key"), env, problems);
    let poll = seconds(
        raw.poll_interval_secs,
        DEFAULT_POLL_SECS,
        10..=MAX_POLL_SECS,
        &at("poll_interval_secs"),
        problems,
    );
    let connect = seconds(
        raw.connect_timeout_secs,
        SftpSettings::DEFAULT_CONNECT_TIMEOUT.as_secs(),
        1..=600,
        &at("connect_timeout_secs"),
        problems,
    );
    let operation = seconds(
        raw.operation_timeout_secs,
        SftpSettings::DEFAULT_OPERATION_TIMEOUT.as_secs(),
        1..=3_600,
        &at("operation_timeout_secs"),
        problems,
    );
    let private_key = private_key?;
    let mut settings = SftpSettings::new(
        host?,
        user?,
        private_key.value,
        host_key?,
        outbound?,
        inbound?,
    );
    settings.port = port?;
    settings.connect_timeout = connect?;
    settings.operation_timeout = operation?;
    // The transport's own check: the settings it refuses, and the key (read and decoded here,
    // never connected).
    let transport = SftpTransport::new(settings.clone())
        .map_err(|e| {
            let setting = match e {
                SftpConfigError::Empty(name) => at(name),
                SftpConfigError::HostKeyPin => at("host_key"),
                _ => at("private_key"),
            };
            problems.push(setting, e.to_string());
        })
        .ok()?;
    Some(TransportSettings::Sftp(Box::new(SftpTransportSettings {
        settings,
        poll_interval: poll?,
        client_fingerprint: transport.client_fingerprint(),
        transport: Arc::new(transport),
        private_key_source: private_key.source,
    })))
}

/// An SFTP client key: `"file:/path"` (or the absolute path alone), `"credential:NAME"` or
/// `"env:NAME"` for the key text; never the key written in the configuration file. A file is
/// read here, with the checks of every secret file (owner-only mode).
fn private_key(
    value: toml::Value,
    setting: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<SourcedSecret> {
    let reference = match secret_ref(value, setting, problems)? {
        SecretRef::Inline(text) if Path::new(text.expose()).is_absolute() => {
            SecretRef::File(PathBuf::from(text.expose()))
        }
        SecretRef::Inline(_) => {
            problems.push(
                setting,
                "must be the key file (\"file:/path\", or the absolute path alone), \"credential:NAME\" or \"env:NAME\" for the key text",
            );
            return None;
        }
        reference => reference,
    };
    reference
        .read(env)
        .map_err(|e| problems.push(setting, e.to_string()))
        .ok()
}

fn partner_api(
    raw: RawPartnerApi,
    path: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<TransportSettings> {
    let at = |key: &str| key_path(path, key);
    let secret = secret(raw.shared_secret, &at("shared_secret"), env, problems);
    let poll = seconds(
        raw.poll_interval_secs,
        DEFAULT_POLL_SECS,
        1..=MAX_POLL_SECS,
        &at("poll_interval_secs"),
        problems,
    );
    let defaults = PartnerApiSettings::new(String::new(), Secret::new(String::new()));
    let timeout = seconds(
        raw.timeout_secs,
        defaults.timeout.as_secs(),
        1..=600,
        &at("timeout_secs"),
        problems,
    );
    let connect = seconds(
        raw.connect_timeout_secs,
        defaults.connect_timeout.as_secs(),
        1..=600,
        &at("connect_timeout_secs"),
        problems,
    );
    let tolerance = seconds(
        raw.signature_tolerance_secs,
        defaults.signature_tolerance_seconds,
        1..=3_600,
        &at("signature_tolerance_secs"),
        problems,
    );
    let bounded =
        |value: Option<u64>, default: usize, max: u64, key: &str, problems: &mut Problems| {
            match value {
                None => Some(default),
                Some(n) if (1..=max).contains(&n) => usize::try_from(n).ok(),
                Some(n) => {
                    problems.push(at(key), format!("must be from 1 to {max}, got {n}"));
                    None
                }
            }
        };
    let max_response = bounded(
        raw.max_response_bytes,
        defaults.max_response_bytes,
        64 * 1024 * 1024,
        "max_response_bytes",
        problems,
    );
    let max_pages = bounded(
        raw.max_pages,
        defaults.max_pages,
        1_000,
        "max_pages",
        problems,
    );
    let secret = secret?;
    let mut settings = PartnerApiSettings::new(raw.base_url, secret.value.clone());
    settings.timeout = timeout?;
    settings.connect_timeout = connect?;
    settings.signature_tolerance_seconds = tolerance?.as_secs();
    settings.max_response_bytes = max_response?;
    settings.max_pages = max_pages?;
    // The transport's own check (the URL, the secret); nothing is connected.
    let transport = PartnerApiTransport::new(settings.clone())
        .map_err(|e| {
            let setting = match e {
                PartnerApiConfigError::BaseUrl(_) => at("base_url"),
                PartnerApiConfigError::EmptySecret => at("shared_secret"),
                _ => path.to_owned(),
            };
            problems.push(setting, e.to_string());
        })
        .ok()?;
    Some(TransportSettings::PartnerApi(Box::new(
        PartnerApiTransportSettings {
            settings,
            transport: Arc::new(transport),
            poll_interval: poll?,
            secret_source: secret.source,
        },
    )))
}

fn local_dir(value: &str, setting: &str, problems: &mut Problems) -> Option<PathBuf> {
    let dir = Path::new(value);
    if !dir.is_absolute() {
        problems.push(setting, format!("must be an absolute path, got {value:?}"));
        None
    } else if !dir.is_dir() {
        problems.push(setting, format!("{value} is not an existing directory"));
        None
    } else {
        Some(dir.to_path_buf())
    }
}

/// A directory transport's `poll_interval_secs`: [`DEFAULT_POLL_SECS`] when absent, else from
/// [`MIN_DIRECTORY_POLL_SECS`] to [`MAX_POLL_SECS`], a fraction allowed.
fn fractional_seconds(
    value: Option<f64>,
    setting: &str,
    problems: &mut Problems,
) -> Option<std::time::Duration> {
    let Some(secs) = value else {
        return Some(std::time::Duration::from_secs(DEFAULT_POLL_SECS));
    };
    if (MIN_DIRECTORY_POLL_SECS..=MAX_POLL_SECS as f64).contains(&secs) {
        Some(std::time::Duration::from_secs_f64(secs))
    } else {
        problems.push(
            setting,
            format!(
                "must be from {MIN_DIRECTORY_POLL_SECS} to {MAX_POLL_SECS} seconds, got {secs}"
            ),
        );
        None
    }
}

fn directory(raw: RawDirectory, path: &str, problems: &mut Problems) -> Option<TransportSettings> {
    let outbound = local_dir(&raw.outbound_dir, &key_path(path, "outbound_dir"), problems);
    let inbound = local_dir(&raw.inbound_dir, &key_path(path, "inbound_dir"), problems);
    let poll = fractional_seconds(
        raw.poll_interval_secs,
        &key_path(path, "poll_interval_secs"),
        problems,
    );
    let (outbound_dir, inbound_dir) = (outbound?, inbound?);
    Some(TransportSettings::Directory(DirectoryTransportSettings {
        transport: Arc::new(DirectoryTransport::new(&outbound_dir, &inbound_dir)),
        outbound_dir,
        inbound_dir,
        poll_interval: poll?,
    }))
}
