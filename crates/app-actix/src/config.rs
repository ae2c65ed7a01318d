//! Configuration from the environment (a `.env` file is read first when present). Every
//! variable is listed here, where it is read; a missing or invalid one stops start-up with a
//! message naming it.
//!
//! The secrets (the database URL, the master keys, the TLS key) need not sit in the
//! environment: each may come from a file or a systemd credential ([`crate::secret_source`]).
//! `DATABASE_URL`, `PAYOUT_MASTER_KEY` and `PAYOUT_PREVIOUS_MASTER_KEY` are each given by the
//! variable itself, by `<VARIABLE>_FILE` naming a file that holds the value, or by the systemd
//! credential named like the variable (`$CREDENTIALS_DIRECTORY/<VARIABLE>`); two of them at
//! once are refused, naming both. Files must be readable by their owner only (`chmod 600`).
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `DATABASE_URL` | required | PostgreSQL URL of the service database (it holds the runtime role's password) |
//! | `DATABASE_URL_FILE` | unset | absolute path of a file holding `DATABASE_URL`, instead of the variable |
//! | `PAYOUT_MASTER_KEY` | required for `serve` and `admin` | 64 hex characters (32 bytes): encrypts secrets at rest, seals cursors |
//! | `PAYOUT_MASTER_KEY_FILE` | unset | absolute path of a file holding `PAYOUT_MASTER_KEY` (a trailing newline is ignored), instead of the variable |
//! | `PAYOUT_PREVIOUS_MASTER_KEY` | unset | 64 hex characters: the master key being rotated away from, accepted for reading only (opening secrets and accounts sealed by it, matching their fingerprints) until `payoutd admin rotate-master-key` has moved everything to `PAYOUT_MASTER_KEY`; must differ from it |
//! | `PAYOUT_PREVIOUS_MASTER_KEY_FILE` | unset | absolute path of a file holding `PAYOUT_PREVIOUS_MASTER_KEY`, instead of the variable |
//! | `CREDENTIALS_DIRECTORY` | set by systemd | the directory of the unit's credentials (`LoadCredential=`): the credentials `DATABASE_URL`, `PAYOUT_MASTER_KEY`, `PAYOUT_PREVIOUS_MASTER_KEY`, `PAYOUT_TLS_KEY` and `PAYOUT_CONSOLE_TLS_KEY`, and those the production file names as `credential:NAME` |
//! | `PAYOUT_BIND` | `127.0.0.1:8080` | listen address |
//! | `PAYOUT_TLS_CERT` | unset (plain HTTP) | path of the PEM certificate chain (server certificate first); with `PAYOUT_TLS_KEY` the listener speaks TLS only. Both or neither: read by [`crate::tls::tls_from_env`] |
//! | `PAYOUT_TLS_KEY` | unset (plain HTTP) | path of the certificate's PEM private key (PKCS#8, PKCS#1 or SEC1), readable by its owner only; when unset, the systemd credential `PAYOUT_TLS_KEY` if the unit loads one |
//! | `PAYOUT_SANDBOX` | `false` | sandbox mode: simulated KYC provider |
//! | `PAYOUT_CONFIG` | required unless sandbox | the production configuration file (rails, SMTP, KYC): read and checked by [`ProductionSettings::from_env`] |
//! | `PAYOUT_PUBLIC_URL` | `http://<PAYOUT_BIND>` (`https://` with TLS) | public base URL of this service, for confirmation links |
//! | `PAYOUT_WORKERS` | number of cores | HTTP worker threads |
//! | `PAYOUT_HTTP_KEEP_ALIVE_SECS` | `5` | how long an idle client connection is kept open for its next request (0..=3600; 0 closes each connection after its response) |
//! | `PAYOUT_HTTP_REQUEST_TIMEOUT_MS` | `5000` | how long a client has, once connected, to send its first request's head (request line and headers) before it is answered 408 and disconnected (100..=60000) |
//! | `PAYOUT_SIGNATURE_WINDOW_SECS` | `300` | accepted distance of a signature nonce from server time (1..=1800) |
//! | `PAYOUT_CREDENTIAL_CACHE_MS` | `1000` | how long each HTTP worker keeps an API key it looked up (0..=60000; 0 looks every request up); a revocation is announced (PostgreSQL NOTIFY) and takes effect at once, this time bounding it only while the listener reconnects |
//! | `PAYOUT_WEBHOOK_TIMEOUT_MS` | `15000` | per-attempt webhook timeout |
//! | `PAYOUT_WEBHOOK_ALLOW_PRIVATE` | `true` in sandbox, else `false` | allow webhook URLs that resolve to loopback/private/link-local addresses |
//! | `PAYOUT_DELIVERY_POLL_MS` | `100` | how often an idle delivery worker looks for due events |
//! | `PAYOUT_DELIVERY_BATCH` | `64` | most events one worker pass claims and sends concurrently |
//! | `PAYOUT_SANDBOX_KYC_DELAY_MS` | unset (never) | sandbox: the simulated KYC provider decides each check by itself after this delay |
//! | `PAYOUT_SANDBOX_KYC_OUTCOME` | `completed` | sandbox: what it decides, `completed` or `failed` |
//! | `PAYOUT_BATCH_INTERVAL_SECS` | `60` | how long a new batch stays open before it runs (1..=86400) |
//! | `PAYOUT_BATCH_POLL_MS` | `1000` | how often the batch runner looks for due batches and rail results (10..=60000) |
//! | `PAYOUT_BATCH_LEASE_SECS` | `60` | how long a runner may take to submit a closed batch before another instance takes it over (5..=3600) |
//! | `PAYOUT_SANDBOX_RAIL_SETTLE_MS` | `5000` | sandbox: the simulated rail reports each payout's result this long after its submission |
//! | `PAYOUT_RATE_LIMIT_PER_SEC` | `100` | requests per second per API key (1..=1000000) |
//! | `PAYOUT_RATE_LIMIT_BURST` | `200` | burst per API key (1..=1000000) |
//! | `PAYOUT_GROUP_COMMIT_MAX` | `64` | most create-payout requests of one subaccount written in one transaction (group commit; 1 writes each alone) (1..=1000) |
//! | `PAYOUT_GROUP_COMMIT_WINDOW_US` | `0` | how long the first request of a group waits for others, in microseconds; 0 groups only the requests that arrive while the previous group of their subaccount is being written (0..=10000) |
//! | `PAYOUT_DB_POOL_SIZE` | `16` | database connections for requests, split among the HTTP workers (the background jobs get up to 8 more) |
//! | `PAYOUT_DB_WAIT_TIMEOUT_MS` | `2000` | wait for a free connection before answering 503 |
//! | `PAYOUT_DB_STATEMENT_TIMEOUT_MS` | `5000` | per-statement timeout |
//! | `PAYOUT_CONSOLE_*` | unset (no console) | the operator console's listener, certificate, public URL and session timeouts: [`crate::console_config`] |
//! | `USER` | unset | `admin kyc`: the operating system user recorded with the decision (`operator:<USER>`) |

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use adapters_postgres::{DbConfig, GroupCommitSettings};
use domain::masking::Secret;
use domain::receiver::KycOutcome;

use crate::secret_source::{
    self, EnvSecret, EnvSecretError, MASTER_KEY, PREVIOUS_MASTER_KEY, SecretSource, SourcedSecret,
};

pub use crate::production_config::{ProductionConfigError, ProductionSettings};

/// A configuration problem, naming the variable.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {variable} {problem}")]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

impl From<crate::console_config::ConfigError> for ConfigError {
    fn from(e: crate::console_config::ConfigError) -> Self {
        ConfigError {
            variable: e.variable,
            problem: e.problem,
        }
    }
}

impl From<EnvSecretError> for ConfigError {
    fn from(e: EnvSecretError) -> Self {
        ConfigError {
            variable: e.variable,
            problem: format!("is refused: {}", e.error),
        }
    }
}

/// An environment secret ([`crate::secret_source`]): its variable, its `_FILE` variable or its
/// systemd credential.
fn env_secret(secret: EnvSecret) -> Result<Option<SourcedSecret>, ConfigError> {
    Ok(secret.read(&secret_source::process_env)?)
}

/// An environment secret that must be given.
fn required_secret(secret: EnvSecret) -> Result<SourcedSecret, ConfigError> {
    env_secret(secret)?.ok_or_else(|| ConfigError {
        variable: secret.variable,
        problem: format!(
            "is not set (nor {}, nor a systemd credential {} in CREDENTIALS_DIRECTORY)",
            secret.file_variable, secret.variable
        ),
    })
}

/// `(file:/path) ` before a problem with a secret's value that did not come from its variable.
fn from_where(secret: &SourcedSecret) -> String {
    match &secret.source {
        SecretSource::Env(_) => String::new(),
        other => format!("({other}) "),
    }
}

impl From<crate::tls::TlsConfigError> for ConfigError {
    fn from(e: crate::tls::TlsConfigError) -> Self {
        ConfigError {
            variable: e.variable,
            problem: e.problem,
        }
    }
}

fn var(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn parsed<T: FromStr>(
    name: &'static str,
    default: T,
    valid: impl Fn(&T) -> bool,
    expected: &str,
) -> Result<T, ConfigError> {
    match var(name) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse::<T>()
            .ok()
            .filter(|v| valid(v))
            .ok_or_else(|| ConfigError {
                variable: name,
                problem: format!("must be {expected}, got {raw:?}"),
            }),
    }
}

/// Database settings: `DATABASE_URL` and the `PAYOUT_DB_*` variables.
pub fn database_from_env() -> Result<DbConfig, ConfigError> {
    let url = required_secret(secret_source::DATABASE_URL)?;
    let text = url.value.expose().trim();
    if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
        return Err(ConfigError {
            variable: "DATABASE_URL",
            problem: format!("{}must start with postgres://", from_where(&url)),
        });
    }
    let mut db = DbConfig::new(text.to_owned());
    db.max_size = parsed(
        "PAYOUT_DB_POOL_SIZE",
        db.max_size,
        |n| (1..=1000).contains(n),
        "a number from 1 to 1000",
    )?;
    db.wait_timeout = Duration::from_millis(parsed(
        "PAYOUT_DB_WAIT_TIMEOUT_MS",
        2000,
        |n| (1..=60_000).contains(n),
        "milliseconds from 1 to 60000",
    )?);
    db.statement_timeout = Duration::from_millis(parsed(
        "PAYOUT_DB_STATEMENT_TIMEOUT_MS",
        5000,
        |n| (1..=600_000).contains(n),
        "milliseconds from 1 to 600000",
    )?);
    Ok(db)
}

/// For `payoutd check-config`, when the database URL is given: where it came from, masked (it
/// holds the runtime role's password). Fails as the other commands would on a malformed URL or
/// `PAYOUT_DB_*` setting, a URL given twice or a refused file. Nothing is connected.
pub fn database_summary() -> Result<Option<serde_json::Value>, ConfigError> {
    let Some(source) = secret_source::DATABASE_URL.locate(&secret_source::process_env)? else {
        return Ok(None);
    };
    database_from_env()?;
    Ok(Some(
        serde_json::json!({ "url": secret_source::masked(&source) }),
    ))
}

/// Who `admin kyc` records as the decider: `operator`, plus the OS user from `USER` when it is
/// set and printable (`operator:alice`), at most 100 characters.
pub fn operator_from_env() -> String {
    match var("USER") {
        Some(user) if !user.chars().any(char::is_control) && user.trim().chars().count() <= 90 => {
            format!("operator:{}", user.trim())
        }
        _ => "operator".to_owned(),
    }
}

/// Parses 64 hex characters into the 32-byte master key.
pub fn parse_master_key(raw: &str) -> Option<Secret<[u8; 32]>> {
    let mut key = [0u8; 32];
    hex::decode_to_slice(raw.trim(), &mut key).ok()?;
    Some(Secret::new(key))
}

/// A master key and where it came from.
pub type SourcedKey = (Secret<[u8; 32]>, SecretSource);

/// The master key: `PAYOUT_MASTER_KEY`, `PAYOUT_MASTER_KEY_FILE` or the systemd credential
/// `PAYOUT_MASTER_KEY`.
pub fn master_key_from_env() -> Result<SourcedKey, ConfigError> {
    let raw = required_secret(MASTER_KEY)?;
    let key = parse_master_key(raw.value.expose()).ok_or_else(|| ConfigError {
        variable: MASTER_KEY.variable,
        problem: format!(
            "{}must be 64 hex characters (32 bytes), e.g. from `openssl rand -hex 32`",
            from_where(&raw)
        ),
    })?;
    Ok((key, raw.source))
}

/// The previous master key (`PAYOUT_PREVIOUS_MASTER_KEY`, its `_FILE` variable or its
/// credential), when given: it must be a valid key other than `current`.
pub fn previous_master_key_from_env(
    current: &Secret<[u8; 32]>,
) -> Result<Option<SourcedKey>, ConfigError> {
    let Some(raw) = env_secret(PREVIOUS_MASTER_KEY)? else {
        return Ok(None);
    };
    let previous = parse_master_key(raw.value.expose()).ok_or_else(|| ConfigError {
        variable: PREVIOUS_MASTER_KEY.variable,
        problem: format!(
            "{}must be 64 hex characters (32 bytes): the master key being rotated away from",
            from_where(&raw)
        ),
    })?;
    if previous.expose() == current.expose() {
        return Err(ConfigError {
            variable: PREVIOUS_MASTER_KEY.variable,
            problem: format!(
                "{}is the same key as PAYOUT_MASTER_KEY: set PAYOUT_MASTER_KEY to the new key \
                 and this one to the old key, or unset it",
                from_where(&raw)
            ),
        });
    }
    Ok(Some((previous, raw.source)))
}

/// The current and (when configured) previous master key from the environment.
pub fn master_keys_from_env() -> Result<MasterKeys, ConfigError> {
    let (current, current_source) = master_key_from_env()?;
    let previous = previous_master_key_from_env(&current)?;
    let (previous, previous_source) = previous.unzip();
    Ok(MasterKeys {
        current,
        previous,
        current_source,
        previous_source,
    })
}

/// `PAYOUT_MASTER_KEY` and `PAYOUT_PREVIOUS_MASTER_KEY`.
#[derive(Debug, Clone)]
pub struct MasterKeys {
    /// Seals and fingerprints every write.
    pub current: Secret<[u8; 32]>,
    /// Read only, while a rotation is under way.
    pub previous: Option<Secret<[u8; 32]>>,
    /// Where the current key came from.
    pub current_source: SecretSource,
    /// Where the previous key came from.
    pub previous_source: Option<SecretSource>,
}

impl MasterKeys {
    /// The vault of these keys.
    pub fn vault(&self) -> Result<adapters_postgres::Vault, adapters_postgres::vault::VaultError> {
        adapters_postgres::Vault::with_previous(&self.current, self.previous.as_ref())
    }
}

/// For `payoutd check-config`, when the master key is given: where each key came from (masked),
/// the ids of the configured keys (as ciphertexts carry them; nothing about the keys
/// themselves) and, with a previous key, what to do about it. Fails as start-up would on a
/// malformed key, a key given twice or a refused key file, or a previous key equal to the
/// current one.
pub fn master_keys_summary() -> Result<Option<serde_json::Value>, ConfigError> {
    if MASTER_KEY.locate(&secret_source::process_env)?.is_none() {
        return Ok(None);
    }
    let keys = master_keys_from_env()?;
    let id = |key: &Secret<[u8; 32]>| {
        adapters_postgres::vault::key_id(key)
            .map(hex::encode)
            .map_err(|e| ConfigError {
                variable: "PAYOUT_MASTER_KEY",
                problem: e.to_string(),
            })
    };
    let previous = keys.previous.as_ref().map(id).transpose()?;
    let note = if previous.is_some() {
        "a previous key is configured: run `payoutd admin rotate-master-key`; once it reports \
         complete, remove PAYOUT_PREVIOUS_MASTER_KEY (serve logs whether the rotation is done)"
    } else {
        "no previous key: nothing to rotate"
    };
    Ok(Some(serde_json::json!({
        "current_key": secret_source::masked(&keys.current_source),
        "previous_key": keys.previous_source.as_ref().map(secret_source::masked),
        "current_key_id": id(&keys.current)?,
        "previous_key_id": previous,
        "note": note,
    })))
}

/// Everything `payoutd serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Database settings.
    pub database: DbConfig,
    /// The master key.
    pub master_key: Secret<[u8; 32]>,
    /// The previous master key (read only, while a rotation is under way).
    pub previous_master_key: Option<Secret<[u8; 32]>>,
    /// Listen address.
    pub bind: SocketAddr,
    /// TLS certificate and key of the listener (`None`: plain HTTP).
    pub tls: Option<crate::tls::TlsSettings>,
    /// Sandbox mode.
    pub sandbox: bool,
    /// HTTP worker threads.
    pub workers: usize,
    /// Freshness window of signature nonces.
    pub signature_window: Duration,
    /// How long an HTTP worker keeps an API key it looked up (zero: not at all).
    pub credential_cache: Duration,
    /// Public base URL (confirmation links start with it).
    pub public_url: String,
    /// Webhook delivery.
    pub delivery: DeliveryConfig,
    /// Sandbox: the KYC provider's own decisions (after a delay), if any.
    pub sandbox_kyc: Option<(Duration, KycOutcome)>,
    /// Batches and the rail.
    pub batches: BatchConfig,
    /// Requests per second per API key, and the burst.
    pub rate_limit: (std::num::NonZeroU32, std::num::NonZeroU32),
    /// Group commit of create-payout requests.
    pub group_commit: GroupCommitSettings,
    /// Client connections: keep-alive and the request head's deadline.
    pub http: HttpConfig,
    /// The operator console's listener (`None`: no console; `PAYOUT_CONSOLE_*`, see
    /// [`crate::console_config`]).
    pub console: Option<crate::console_config::ConsoleConfig>,
}

/// How the listener treats client connections: `PAYOUT_HTTP_KEEP_ALIVE_SECS` and
/// `PAYOUT_HTTP_REQUEST_TIMEOUT_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// How long an idle connection is kept open for its next request (zero: each connection is
    /// closed after its response). Behind a load balancer that reuses connections, longer than
    /// the balancer's own idle timeout, so that it never sends a request on a connection this
    /// side is closing.
    pub keep_alive: Duration,
    /// How long a client has, once connected, to send its first request's head (its request
    /// line and headers) before it is answered 408 and disconnected: how long a client that
    /// opens connections and trickles bytes into them holds each one.
    pub request_timeout: Duration,
}

/// `PAYOUT_HTTP_KEEP_ALIVE_SECS` when unset (actix-web's own default).
const KEEP_ALIVE_SECS: u64 = 5;

/// `PAYOUT_HTTP_REQUEST_TIMEOUT_MS` when unset (actix-web's own default).
const REQUEST_TIMEOUT_MS: u64 = 5_000;

impl Default for HttpConfig {
    /// The defaults of the variables.
    fn default() -> Self {
        Self {
            keep_alive: Duration::from_secs(KEEP_ALIVE_SECS),
            request_timeout: Duration::from_millis(REQUEST_TIMEOUT_MS),
        }
    }
}

impl HttpConfig {
    /// Reads `PAYOUT_HTTP_KEEP_ALIVE_SECS` and `PAYOUT_HTTP_REQUEST_TIMEOUT_MS`.
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            keep_alive: Duration::from_secs(parsed(
                "PAYOUT_HTTP_KEEP_ALIVE_SECS",
                KEEP_ALIVE_SECS,
                |n| (0..=3_600).contains(n),
                "seconds from 0 to 3600",
            )?),
            request_timeout: Duration::from_millis(parsed(
                "PAYOUT_HTTP_REQUEST_TIMEOUT_MS",
                REQUEST_TIMEOUT_MS,
                |n| (100..=60_000).contains(n),
                "milliseconds from 100 to 60000",
            )?),
        })
    }
}

/// `PAYOUT_GROUP_COMMIT_MAX` and `PAYOUT_GROUP_COMMIT_WINDOW_US`.
pub fn group_commit_from_env() -> Result<GroupCommitSettings, ConfigError> {
    Ok(GroupCommitSettings {
        max_group: parsed(
            "PAYOUT_GROUP_COMMIT_MAX",
            64,
            |n| (1..=1000).contains(n),
            "a number from 1 to 1000",
        )?,
        window: Duration::from_micros(parsed(
            "PAYOUT_GROUP_COMMIT_WINDOW_US",
            0,
            |n| (0..=10_000).contains(n),
            "microseconds from 0 to 10000",
        )?),
    })
}

/// `PAYOUT_RATE_LIMIT_PER_SEC` and `PAYOUT_RATE_LIMIT_BURST`.
pub fn rate_limit_from_env() -> Result<(std::num::NonZeroU32, std::num::NonZeroU32), ConfigError> {
    let limit = |name, default| -> Result<std::num::NonZeroU32, ConfigError> {
        let n: u32 = parsed(
            name,
            default,
            |n| (1..=1_000_000).contains(n),
            "a number from 1 to 1000000",
        )?;
        std::num::NonZeroU32::new(n).ok_or_else(|| ConfigError {
            variable: name,
            problem: "must not be 0".to_owned(),
        })
    };
    Ok((
        limit("PAYOUT_RATE_LIMIT_PER_SEC", 100)?,
        limit("PAYOUT_RATE_LIMIT_BURST", 200)?,
    ))
}

/// Batch runner settings.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// How long a new batch stays open.
    pub interval: Duration,
    /// Idle polling interval of the runner.
    pub poll: Duration,
    /// How long a runner may hold a closed batch before another takes it over.
    pub lease: Duration,
    /// Sandbox: how long the simulated rail takes to settle a payout.
    pub sandbox_settle: Duration,
}

impl BatchConfig {
    /// Reads the `PAYOUT_BATCH_*` and `PAYOUT_SANDBOX_RAIL_*` variables.
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            interval: Duration::from_secs(parsed(
                "PAYOUT_BATCH_INTERVAL_SECS",
                60,
                |n| (1..=86_400).contains(n),
                "seconds from 1 to 86400",
            )?),
            poll: Duration::from_millis(parsed(
                "PAYOUT_BATCH_POLL_MS",
                1_000,
                |n| (10..=60_000).contains(n),
                "milliseconds from 10 to 60000",
            )?),
            lease: Duration::from_secs(parsed(
                "PAYOUT_BATCH_LEASE_SECS",
                60,
                |n| (5..=3_600).contains(n),
                "seconds from 5 to 3600",
            )?),
            sandbox_settle: Duration::from_millis(parsed(
                "PAYOUT_SANDBOX_RAIL_SETTLE_MS",
                5_000,
                |n| *n <= 86_400_000,
                "milliseconds from 0 to 86400000",
            )?),
        })
    }
}

/// `PAYOUT_SANDBOX_KYC_DELAY_MS` and `PAYOUT_SANDBOX_KYC_OUTCOME`.
pub fn sandbox_kyc_from_env() -> Result<Option<(Duration, KycOutcome)>, ConfigError> {
    let Some(raw) = var("PAYOUT_SANDBOX_KYC_DELAY_MS") else {
        return Ok(None);
    };
    let delay = raw
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms <= 86_400_000)
        .ok_or_else(|| ConfigError {
            variable: "PAYOUT_SANDBOX_KYC_DELAY_MS",
            problem: format!("must be milliseconds from 0 to 86400000, got {raw:?}"),
        })?;
    let outcome = match var("PAYOUT_SANDBOX_KYC_OUTCOME").as_deref().map(str::trim) {
        None | Some("completed") => KycOutcome::Completed,
        Some("failed") => KycOutcome::Failed,
        Some(other) => {
            return Err(ConfigError {
                variable: "PAYOUT_SANDBOX_KYC_OUTCOME",
                problem: format!("must be completed or failed, got {other:?}"),
            });
        }
    };
    Ok(Some((Duration::from_millis(delay), outcome)))
}

/// Webhook delivery settings.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Whether URLs resolving to private addresses may be called.
    pub allow_private_targets: bool,
    /// Idle polling interval.
    pub poll: Duration,
    /// Events per pass.
    pub batch: u32,
}

/// Whether webhook URLs may resolve to private addresses, as `serve` would decide it from
/// `PAYOUT_WEBHOOK_ALLOW_PRIVATE` and `PAYOUT_SANDBOX` (the admin commands check URLs with it).
///
/// # Errors
/// A variable that is set but not `true` or `false`.
pub fn webhook_targets_may_be_private() -> Result<bool, ConfigError> {
    let sandbox = parsed("PAYOUT_SANDBOX", false, |_| true, "true or false")?;
    parsed(
        "PAYOUT_WEBHOOK_ALLOW_PRIVATE",
        sandbox,
        |_| true,
        "true or false",
    )
}

impl DeliveryConfig {
    /// Reads the `PAYOUT_WEBHOOK_*` and `PAYOUT_DELIVERY_*` variables.
    pub fn from_env(sandbox: bool) -> Result<Self, ConfigError> {
        Ok(Self {
            timeout: Duration::from_millis(parsed(
                "PAYOUT_WEBHOOK_TIMEOUT_MS",
                15_000,
                |n| (100..=120_000).contains(n),
                "milliseconds from 100 to 120000",
            )?),
            allow_private_targets: parsed(
                "PAYOUT_WEBHOOK_ALLOW_PRIVATE",
                sandbox,
                |_| true,
                "true or false",
            )?,
            poll: Duration::from_millis(parsed(
                "PAYOUT_DELIVERY_POLL_MS",
                100,
                |n| (10..=60_000).contains(n),
                "milliseconds from 10 to 60000",
            )?),
            batch: parsed(
                "PAYOUT_DELIVERY_BATCH",
                64,
                |n| (1..=1000).contains(n),
                "a number from 1 to 1000",
            )?,
        })
    }
}

impl Config {
    /// Reads every variable of the table above.
    pub fn from_env() -> Result<Self, ConfigError> {
        let cores = std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(2);
        let bind = parsed(
            "PAYOUT_BIND",
            SocketAddr::from(([127, 0, 0, 1], 8080)),
            |_| true,
            "host:port, e.g. 127.0.0.1:8080",
        )?;
        let tls = crate::tls::tls_from_env()?;
        let public_url = match var("PAYOUT_PUBLIC_URL") {
            None if tls.is_some() => format!("https://{bind}"),
            None => format!("http://{bind}"),
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                url.trim_end_matches('/').to_owned()
            }
            Some(url) => {
                return Err(ConfigError {
                    variable: "PAYOUT_PUBLIC_URL",
                    problem: format!("must start with http:// or https://, got {url:?}"),
                });
            }
        };
        let sandbox = parsed("PAYOUT_SANDBOX", false, |_| true, "true or false")?;
        let keys = master_keys_from_env()?;
        let console = crate::console_config::ConsoleConfig::from_env(bind, tls.as_ref())?;
        Ok(Self {
            console,
            database: database_from_env()?,
            master_key: keys.current,
            previous_master_key: keys.previous,
            bind,
            tls,
            public_url,
            delivery: DeliveryConfig::from_env(sandbox)?,
            sandbox_kyc: sandbox_kyc_from_env()?,
            batches: BatchConfig::from_env()?,
            rate_limit: rate_limit_from_env()?,
            group_commit: group_commit_from_env()?,
            http: HttpConfig::from_env()?,
            sandbox,
            workers: parsed(
                "PAYOUT_WORKERS",
                cores,
                |n| (1..=256).contains(n),
                "a number from 1 to 256",
            )?,
            signature_window: Duration::from_secs(parsed(
                "PAYOUT_SIGNATURE_WINDOW_SECS",
                300,
                |n| (1..=1800).contains(n),
                "seconds from 1 to 1800",
            )?),
            credential_cache: Duration::from_millis(parsed(
                "PAYOUT_CREDENTIAL_CACHE_MS",
                1000,
                |n| (0..=60_000).contains(n),
                "milliseconds from 0 to 60000",
            )?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_keys_are_64_hex_characters() {
        assert!(parse_master_key(&"ab".repeat(32)).is_some());
        assert!(parse_master_key(&"ab".repeat(31)).is_none());
        assert!(parse_master_key(&"zz".repeat(32)).is_none());
        assert!(parse_master_key("").is_none());
    }
}
