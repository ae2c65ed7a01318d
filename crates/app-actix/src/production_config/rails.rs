//! `[rails."<method>"]`: one bank file rail per enabled payout method, with its calendar, its
//! transport and its file format's originator details.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use adapters_filetransfer::{
    HostKeyPin, PartnerApiConfigError, PartnerApiSettings, PartnerApiTransport, PrivateKeySource,
    SftpConfigError, SftpSettings, SftpTransport,
};
use adapters_rails::SettingsError;
use adapters_rails::aba::AbaSettings;
use adapters_rails::cpa005::Cpa005Settings;
use adapters_rails::ib4b::Ib4bSettings;
use adapters_rails::interac::InteracSettings;
use chrono::NaiveDate;
use domain::account::PayoutMethod;
use domain::masking::Secret;
use domain::rail::calendar::{
    CalendarError, MAX_SETTLEMENT_DAYS, RailCalendar, parse_cutoff, parse_date,
};
use domain::rail::file_rail::EffectiveDate;
use serde::Deserialize;

use super::problems::{
    Env, Problems, Sourced, key_path, seconds, secret, sourced, table, text, type_name,
};

/// One enabled method's rail.
#[derive(Debug, Clone)]
pub struct RailSettings {
    /// The method.
    pub method: PayoutMethod,
    /// The file name prefix.
    pub file_prefix: String,
    /// Cut-offs and business days.
    pub calendar: Arc<RailCalendar>,
    /// How files reach the bank and its answers come back.
    pub transport: TransportSettings,
    /// The file format and the originator details written into each file.
    pub format: FormatSettings,
}

impl RailSettings {
    /// The file rail's effective date of a file written at an instant (from the calendar).
    pub fn effective_date(&self) -> EffectiveDate {
        self.calendar.clone().effective_date_fn()
    }
}

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
}

/// `kind = "sftp"`.
#[derive(Debug, Clone)]
pub struct SftpTransportSettings {
    /// What [`SftpTransport::new`] takes (already checked by it: the key loads).
    pub settings: SftpSettings,
    /// How often the bank's inbound directory is read.
    pub poll_interval: Duration,
    /// Where the private key came from, for the summary: the file, or `env:NAME`.
    pub private_key_source: String,
    /// The SHA256 fingerprint of the client's key (to give the bank).
    pub client_fingerprint: String,
}

/// `kind = "partner_api"`.
#[derive(Debug, Clone)]
pub struct PartnerApiTransportSettings {
    /// What [`PartnerApiTransport::new`] takes (already checked by it).
    pub settings: PartnerApiSettings,
    /// How often the partner's status reports are listed (callbacks bring them sooner).
    pub poll_interval: Duration,
    /// Where the shared secret came from, for the summary: `env:NAME` or `inline`.
    pub secret_source: String,
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
}

/// A rail's file format and originator details.
#[derive(Debug, Clone)]
pub enum FormatSettings {
    /// `usd/ach`: NACHA.
    Nacha(NachaOriginator),
    /// `eur/sepa`: ISO 20022 pain.001.001.09.
    Pain001(SepaOriginator),
    /// `aud/direct-entry`: ABA (Cemtex) direct entry.
    Aba(AbaSettings),
    /// `cad/eft`: Payments Canada Standard 005.
    Cpa005(Cpa005Settings),
    /// `nzd/direct-credit`: BNZ IB4B direct credit CSV.
    Ib4b(Ib4bSettings),
    /// `cad/digital`: Interac e-Transfer batch requests to a partner's API.
    Interac(InteracSettings),
}

impl FormatSettings {
    /// The format's name in summaries.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Nacha(_) => "nacha",
            Self::Pain001(_) => "pain.001.001.09",
            Self::Aba(_) => "aba",
            Self::Cpa005(_) => "cpa-005",
            Self::Ib4b(_) => "ib4b",
            Self::Interac(_) => "interac-partner-api",
        }
    }
}

/// The NACHA file and batch header fields that come from the originator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NachaOriginator {
    /// The receiving bank's routing number (9 digits, check digit verified).
    pub immediate_destination: String,
    /// Its name (at most 23 characters).
    pub immediate_destination_name: String,
    /// The identification the bank assigned the sender (9 or 10 digits).
    pub immediate_origin: String,
    /// The sender's name (at most 23 characters).
    pub immediate_origin_name: String,
    /// The company name of each batch (at most 16 characters).
    pub company_name: String,
    /// The company identification (exactly 10 characters).
    pub company_id: String,
    /// The originating bank's routing number without its check digit (8 digits).
    pub odfi_routing: String,
    /// The company entry description (at most 10 characters, e.g. `PAYOUT`).
    pub entry_description: String,
}

/// The pain.001 fields that come from the originator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SepaOriginator {
    /// `Dbtr/Nm` (at most 70 characters).
    pub debtor_name: String,
    /// `DbtrAcct/Id/IBAN`, in electronic form (no spaces, upper case).
    pub debtor_iban: String,
    /// `DbtrAgt/FinInstnId/BICFI` (8 or 11 characters); `None` writes `NOTPROVIDED`.
    pub debtor_bic: Option<String>,
    /// `GrpHdr/InitgPty/Nm` (at most 70 characters).
    pub initiating_party_name: String,
    /// `GrpHdr/InitgPty/Id/OrgId/Othr/Id`, when the bank assigned one (at most 35 characters).
    pub initiating_party_id: Option<String>,
}

/// Default of `poll_interval_secs`.
pub const DEFAULT_POLL_SECS: u64 = 300;

/// The keys every rail has, whatever its format.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    file_prefix: String,
    cutoffs: Vec<toml::Value>,
    #[serde(default)]
    holidays: Vec<toml::Value>,
    open_on_weekends: Option<toml::Value>,
    settlement_days: Option<i64>,
    transport: toml::Table,
}

impl Common {
    const KEYS: [&'static str; 6] = [
        "file_prefix",
        "cutoffs",
        "holidays",
        "open_on_weekends",
        "settlement_days",
        "transport",
    ];

    /// Splits a rail's table into the common keys and the format's own.
    fn split(mut body: toml::Table) -> (toml::Table, toml::Table) {
        let common = Self::KEYS
            .iter()
            .filter_map(|key| body.remove(*key).map(|value| ((*key).to_owned(), value)))
            .collect();
        (common, body)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAch {
    immediate_destination: String,
    immediate_destination_name: String,
    immediate_origin: String,
    immediate_origin_name: String,
    company_name: String,
    company_id: String,
    odfi_routing: String,
    entry_description: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSepa {
    debtor_name: String,
    debtor_iban: String,
    debtor_bic: Option<String>,
    initiating_party_name: String,
    initiating_party_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAba {
    bank_mnemonic: String,
    user_name: String,
    apca_user_id: String,
    description: String,
    remitter_name: String,
    trace_bsb: String,
    trace_account: String,
    #[serde(default)]
    self_balancing: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCpa005 {
    originator_id: String,
    data_centre: String,
    originator_short_name: String,
    originator_long_name: String,
    direct_clearer_user_id: Option<String>,
    return_institution: String,
    return_account: String,
    transaction_code: u16,
    line_ending: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIb4b {
    originating_account: String,
    originator_name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInterac {
    partner_customer_id: String,
    sender_name: String,
    expiry_days: Option<u32>,
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

/// Default of `expiry_days`: what Interac allows at most.
pub const DEFAULT_EXPIRY_DAYS: u32 = 30;

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
    poll_interval_secs: Option<u64>,
}

/// Reads the rail of the route `key` (a table already known to be one).
pub fn rail(
    key: &str,
    body: toml::Table,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<RailSettings> {
    let path = key_path("rails", key);
    let Some(method) = PayoutMethod::from_route(key) else {
        let routes: Vec<String> = PayoutMethod::ALL
            .iter()
            .map(|m| format!("\"{}\"", m.route()))
            .collect();
        problems.push(
            path,
            format!(
                "unknown payout method; rails are keyed by route: {}",
                routes.join(", ")
            ),
        );
        return None;
    };
    let (common_keys, format_keys) = Common::split(body);
    let common: Option<Common> = table(common_keys, &path, problems);
    let format = match method {
        PayoutMethod::Ach => table::<RawAch>(format_keys, &path, problems)
            .and_then(|raw| nacha(&raw, &path, problems))
            .map(FormatSettings::Nacha),
        PayoutMethod::Sepa => table::<RawSepa>(format_keys, &path, problems)
            .and_then(|raw| sepa(&raw, &path, problems))
            .map(FormatSettings::Pain001),
        PayoutMethod::DirectEntry => table::<RawAba>(format_keys, &path, problems)
            .and_then(|raw| {
                checked(
                    AbaSettings {
                        bank_mnemonic: raw.bank_mnemonic,
                        user_name: raw.user_name,
                        apca_user_id: raw.apca_user_id,
                        description: raw.description,
                        remitter_name: raw.remitter_name,
                        trace_bsb: raw.trace_bsb,
                        trace_account: raw.trace_account,
                        self_balancing: raw.self_balancing,
                    },
                    AbaSettings::validate,
                    &path,
                    problems,
                )
            })
            .map(FormatSettings::Aba),
        PayoutMethod::Eft => table::<RawCpa005>(format_keys, &path, problems)
            .and_then(|raw| cpa005(raw, &path, problems))
            .map(FormatSettings::Cpa005),
        PayoutMethod::DirectCredit => table::<RawIb4b>(format_keys, &path, problems)
            .and_then(|raw| {
                checked(
                    Ib4bSettings {
                        originating_account: raw.originating_account,
                        originator_name: raw.originator_name,
                    },
                    Ib4bSettings::validate,
                    &path,
                    problems,
                )
            })
            .map(FormatSettings::Ib4b),
        PayoutMethod::Digital => table::<RawInterac>(format_keys, &path, problems)
            .and_then(|raw| {
                checked(
                    InteracSettings {
                        partner_customer_id: raw.partner_customer_id,
                        sender_name: raw.sender_name,
                        expiry_days: raw.expiry_days.unwrap_or(DEFAULT_EXPIRY_DAYS),
                    },
                    InteracSettings::validate,
                    &path,
                    problems,
                )
            })
            .map(FormatSettings::Interac),
    };
    rail_settings(method, &path, common?, format, env, problems)
}

fn rail_settings(
    method: PayoutMethod,
    path: &str,
    raw: Common,
    format: Option<FormatSettings>,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<RailSettings> {
    let prefix = file_prefix(&raw.file_prefix, &key_path(path, "file_prefix"), problems);
    let weekends_open = match &raw.open_on_weekends {
        None => Some(false),
        Some(toml::Value::Boolean(open)) => Some(*open),
        Some(other) => {
            problems.push(
                key_path(path, "open_on_weekends"),
                format!("must be true or false, got {}", type_name(other)),
            );
            None
        }
    };
    let days_path = key_path(path, "settlement_days");
    let days = match raw.settlement_days {
        None => Some(1),
        Some(days) => match u32::try_from(days) {
            Ok(days) if days <= MAX_SETTLEMENT_DAYS => Some(days),
            _ => {
                problems.push(
                    days_path,
                    format!(
                        "must be 0 (same-day settlement) to {MAX_SETTLEMENT_DAYS} business days, got {days}"
                    ),
                );
                None
            }
        },
    };
    let calendar = calendar(&raw.cutoffs, &raw.holidays, path, problems).and_then(|calendar| {
        Some(
            calendar
                .with_settlement_days(days?)
                .with_weekends_open(weekends_open?),
        )
    });
    let transport_path = key_path(path, "transport");
    let transport = transport(raw.transport, &transport_path, env, problems).and_then(|t| {
        // A partner's API carries Interac batch requests only, and nothing else speaks it.
        let partner = matches!(t, TransportSettings::PartnerApi(_));
        let wanted = method == PayoutMethod::Digital;
        if partner == wanted {
            Some(t)
        } else {
            problems.push(
                key_path(&transport_path, "kind"),
                if wanted {
                    format!("{} is paid through a partner's API: must be \"partner_api\"", method.route())
                } else {
                    format!("\"partner_api\" is for cad/digital; {} sends files: \"sftp\" or \"directory\"", method.route())
                },
            );
            None
        }
    });
    Some(RailSettings {
        method,
        file_prefix: prefix?,
        calendar: Arc::new(calendar?),
        transport: transport?,
        format: format?,
    })
}

fn file_prefix(value: &str, setting: &str, problems: &mut Problems) -> Option<String> {
    let ok = (1..=32).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Some(value.to_owned())
    } else {
        problems.push(
            setting,
            format!("must be 1 to 32 ASCII letters, digits, '_' or '-', got {value:?}"),
        );
        None
    }
}

fn calendar(
    cutoffs: &[toml::Value],
    holidays: &[toml::Value],
    path: &str,
    problems: &mut Problems,
) -> Option<RailCalendar> {
    let cutoffs_path = key_path(path, "cutoffs");
    let holidays_path = key_path(path, "holidays");
    let mut ok = true;
    let mut times = Vec::new();
    for (i, value) in cutoffs.iter().enumerate() {
        let time = match value {
            toml::Value::String(text) => parse_cutoff(text).map_err(|e| e.to_string()),
            other => Err(format!(
                "must be a string \"HH:MM\" (UTC), got {}",
                type_name(other)
            )),
        };
        match time {
            Ok(time) => times.push(time),
            Err(message) => {
                ok = false;
                problems.push(format!("{cutoffs_path}[{i}]"), message);
            }
        }
    }
    let mut dates = Vec::new();
    for (i, value) in holidays.iter().enumerate() {
        // A quoted "2026-12-25" or a TOML local date 2026-12-25.
        let date = match value {
            toml::Value::String(text) => parse_date(text).map_err(|e| e.to_string()),
            toml::Value::Datetime(toml::value::Datetime {
                date: Some(date),
                time: None,
                offset: None,
            }) => NaiveDate::from_ymd_opt(
                i32::from(date.year),
                u32::from(date.month),
                u32::from(date.day),
            )
            .ok_or_else(|| format!("{date} is not a date that exists")),
            other => Err(format!(
                "must be a date YYYY-MM-DD, got {}",
                type_name(other)
            )),
        };
        match date {
            Ok(date) => dates.push(date),
            Err(message) => {
                ok = false;
                problems.push(format!("{holidays_path}[{i}]"), message);
            }
        }
    }
    if !ok {
        return None;
    }
    RailCalendar::new(times, dates)
        .map_err(|e| {
            let setting = match e {
                CalendarError::ClosedTooLong(_) => holidays_path,
                _ => cutoffs_path,
            };
            problems.push(setting, e.to_string());
        })
        .ok()
}

fn transport(
    mut body: toml::Table,
    path: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<TransportSettings> {
    let kind_path = key_path(path, "kind");
    const KINDS: &str = "\"sftp\", \"directory\" or \"partner_api\"";
    let kind = match body.remove("kind") {
        Some(toml::Value::String(kind)) => kind,
        Some(_) | None => {
            problems.push(kind_path, format!("must be {KINDS}"));
            return None;
        }
    };
    match kind.as_str() {
        "sftp" => sftp(table(body, path, problems)?, path, env, problems),
        "directory" => directory(table(body, path, problems)?, path, problems),
        "partner_api" => partner_api(table(body, path, problems)?, path, env, problems),
        other => {
            problems.push(kind_path, format!("must be {KINDS}, got {other:?}"));
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
    let (private_key, private_key_source) =
        match sourced(raw.private_key, &at("private_key"), env, problems) {
            Some(Sourced::Inline(file)) => {
                let file = PathBuf::from(file);
                if file.is_absolute() {
                    let source = file.display().to_string();
                    (Some(PrivateKeySource::File(file)), source)
                } else {
                    problems.push(
                    at("private_key"),
                    "must be an absolute path to the key file, or \"env:NAME\" for the key text",
                );
                    (None, String::new())
                }
            }
            Some(Sourced::FromEnv { variable, value }) => (
                Some(PrivateKeySource::Text(value)),
                format!("env:{variable}"),
            ),
            None => (None, String::new()),
        };
    let poll = seconds(
        raw.poll_interval_secs,
        DEFAULT_POLL_SECS,
        10..=86_400,
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
    let mut settings =
        SftpSettings::new(host?, user?, private_key?, host_key?, outbound?, inbound?);
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
        private_key_source,
        client_fingerprint: transport.client_fingerprint(),
    })))
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
        1..=86_400,
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
    PartnerApiTransport::new(settings.clone())
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
            poll_interval: poll?,
            secret_source: secret.source(),
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

fn directory(raw: RawDirectory, path: &str, problems: &mut Problems) -> Option<TransportSettings> {
    let outbound = local_dir(&raw.outbound_dir, &key_path(path, "outbound_dir"), problems);
    let inbound = local_dir(&raw.inbound_dir, &key_path(path, "inbound_dir"), problems);
    let poll = seconds(
        raw.poll_interval_secs,
        DEFAULT_POLL_SECS,
        1..=86_400,
        &key_path(path, "poll_interval_secs"),
        problems,
    );
    Some(TransportSettings::Directory(DirectoryTransportSettings {
        outbound_dir: outbound?,
        inbound_dir: inbound?,
        poll_interval: poll?,
    }))
}

/// A NACHA alphanumeric name or description: at most `width` characters that the writer keeps
/// as they are once upper-cased (so nothing is silently changed in the bank's file).
fn nacha_text(value: &str, width: usize, setting: &str, problems: &mut Problems) -> Option<String> {
    let value = text(value, width, setting, problems)?;
    if let Some(c) = value
        .chars()
        .find(|c| !bank_formats::nacha::is_allowed_char(c.to_ascii_uppercase()))
    {
        problems.push(
            setting,
            format!(
                "{c:?} is not allowed in a NACHA file (letters, digits, space and {})",
                bank_formats::nacha::ALLOWED_SYMBOLS
            ),
        );
        return None;
    }
    Some(value.to_ascii_uppercase())
}

fn digits(value: &str, lengths: &[usize]) -> bool {
    lengths.contains(&value.len()) && value.bytes().all(|b| b.is_ascii_digit())
}

fn nacha(raw: &RawAch, path: &str, problems: &mut Problems) -> Option<NachaOriginator> {
    let at = |key: &str| key_path(path, key);
    let destination = if bank_codes::us_routing::is_valid(&raw.immediate_destination) {
        Some(raw.immediate_destination.clone())
    } else {
        problems.push(
            at("immediate_destination"),
            format!(
                "must be a 9-digit ABA routing number with a valid check digit, got {:?}",
                raw.immediate_destination
            ),
        );
        None
    };
    let origin = if digits(&raw.immediate_origin, &[9, 10]) {
        Some(raw.immediate_origin.clone())
    } else {
        problems.push(
            at("immediate_origin"),
            format!("must be 9 or 10 digits, got {:?}", raw.immediate_origin),
        );
        None
    };
    let company_id = if raw.company_id.chars().count() != 10 {
        problems.push(
            at("company_id"),
            format!(
                "must be 10 characters, got {}",
                raw.company_id.chars().count()
            ),
        );
        None
    } else if let Some(c) = raw
        .company_id
        .chars()
        .find(|c| !bank_formats::nacha::is_allowed_char(*c))
    {
        problems.push(
            at("company_id"),
            format!(
                "{c:?} is not allowed: upper-case letters, digits, space and {}",
                bank_formats::nacha::ALLOWED_SYMBOLS
            ),
        );
        None
    } else {
        Some(raw.company_id.clone())
    };
    let odfi = if digits(&raw.odfi_routing, &[8]) {
        Some(raw.odfi_routing.clone())
    } else {
        problems.push(
            at("odfi_routing"),
            format!(
                "must be 8 digits (the routing number without its check digit), got {:?}",
                raw.odfi_routing
            ),
        );
        None
    };
    let destination_name = nacha_text(
        &raw.immediate_destination_name,
        23,
        &at("immediate_destination_name"),
        problems,
    );
    let origin_name = nacha_text(
        &raw.immediate_origin_name,
        23,
        &at("immediate_origin_name"),
        problems,
    );
    let company_name = nacha_text(&raw.company_name, 16, &at("company_name"), problems);
    let description = nacha_text(
        &raw.entry_description,
        10,
        &at("entry_description"),
        problems,
    );
    Some(NachaOriginator {
        immediate_destination: destination?,
        immediate_destination_name: destination_name?,
        immediate_origin: origin?,
        immediate_origin_name: origin_name?,
        company_name: company_name?,
        company_id: company_id?,
        odfi_routing: odfi?,
        entry_description: description?,
    })
}

fn sepa(raw: &RawSepa, path: &str, problems: &mut Problems) -> Option<SepaOriginator> {
    let at = |key: &str| key_path(path, key);
    let iban = match raw.debtor_iban.parse::<iban::Iban>() {
        Ok(iban) => Some(iban::IbanLike::electronic_str(&iban).to_owned()),
        Err(_) => {
            problems.push(
                at("debtor_iban"),
                "must be an IBAN with valid check digits (spaces allowed in groups of four)",
            );
            None
        }
    };
    let bic = match &raw.debtor_bic {
        None => Some(None),
        Some(bic) if bank_codes::bic::is_normalised(bic) => Some(Some(bic.clone())),
        Some(bic) => {
            problems.push(
                at("debtor_bic"),
                format!(
                    "must be a BIC of 8 or 11 characters (4 letters or digits, a 2-letter country, 2 letters or digits, an optional 3-character branch), got {bic:?}"
                ),
            );
            None
        }
    };
    let debtor_name = text(&raw.debtor_name, 70, &at("debtor_name"), problems);
    let party_name = text(
        &raw.initiating_party_name,
        70,
        &at("initiating_party_name"),
        problems,
    );
    let party_id = match &raw.initiating_party_id {
        None => Some(None),
        Some(id) => match bank_formats::iso20022::text::check_id(id, 35) {
            Ok(()) => Some(Some(id.clone())),
            Err(problem) => {
                problems.push(
                    at("initiating_party_id"),
                    format!(
                        "must be 1 to 35 characters of the SEPA set, not starting or ending with '/' nor containing '//' ({problem:?})"
                    ),
                );
                None
            }
        },
    };
    Some(SepaOriginator {
        debtor_name: debtor_name?,
        debtor_iban: iban?,
        debtor_bic: bic?,
        initiating_party_name: party_name?,
        initiating_party_id: party_id?,
    })
}

/// `settings` when the format's own check passes, else the problem at the setting it names.
fn checked<T>(
    settings: T,
    validate: impl Fn(&T) -> Result<(), SettingsError>,
    path: &str,
    problems: &mut Problems,
) -> Option<T> {
    match validate(&settings) {
        Ok(()) => Some(settings),
        Err(e) => {
            problems.push(key_path(path, e.setting), e.problem);
            None
        }
    }
}

fn cpa005(raw: RawCpa005, path: &str, problems: &mut Problems) -> Option<Cpa005Settings> {
    use bank_formats::cpa005::LineEnding;
    let line_ending = match raw.line_ending.as_deref() {
        None | Some("crlf") => LineEnding::CrLf,
        Some("lf") => LineEnding::Lf,
        Some("none") => LineEnding::None,
        Some(other) => {
            problems.push(
                key_path(path, "line_ending"),
                format!("must be \"crlf\" (the default), \"lf\" or \"none\", got {other:?}"),
            );
            return None;
        }
    };
    checked(
        Cpa005Settings {
            originator_id: raw.originator_id,
            data_centre: raw.data_centre,
            originator_short_name: raw.originator_short_name,
            originator_long_name: raw.originator_long_name,
            direct_clearer_user_id: raw.direct_clearer_user_id,
            return_institution: raw.return_institution,
            return_account: raw.return_account,
            transaction_code: raw.transaction_code,
            line_ending,
        },
        Cpa005Settings::validate,
        path,
        problems,
    )
}
