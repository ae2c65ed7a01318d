//! Setting up one measured run: a fresh database with a few funded subaccounts whose payouts
//! (seeded in bulk, `pending` in each subaccount's open batch) wait for one cut-off, the rail's
//! drop (or, for `cad/digital`, the local Interac partner), payoutd's production configuration,
//! and payoutd serving it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bank_simulator::interac_partner::{PartnerOptions, PartnerSimulator};
use chrono::{Datelike, Utc, Weekday};
use domain::account::PayoutMethod;
use uuid::Uuid;

use super::bank::{BenchRail, Drop};
use super::{Args, FEE, FUNDING};
use crate::Env;
use crate::db::BenchDb;
use crate::receiver::Receiver;
use crate::seed::{self, generate::Generator, payouts::seed_payouts};
use crate::server::{Payoutd, free_port, new_master_key};

/// A port nothing listens on (the scenario's range): the configuration needs an SMTP server,
/// and nothing in the run sends mail.
const NO_SMTP_PORT: u16 = 28299;

/// How often payoutd polls the SFTP bank's inbound directory: the least the SFTP transport
/// allows (the directory transport is polled every [`DIRECTORY_POLL_SECS`]).
const SFTP_POLL_SECS: u64 = 10;

/// Where libfaketime is on Debian and Ubuntu.
const FAKETIME_PATHS: [&str; 3] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
];

/// How long the partner holds its final reports unless the bench releases them: longer than
/// any run.
const PARTNER_HOLDS: Duration = Duration::from_secs(24 * 3600);

/// How long the partner waits for payoutd's answer to a callback: payoutd applies a pushed
/// report before it answers, one report at a time, and a final report of 10,000 payments takes
/// about a second.
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(120);

/// Tries of a callback: payoutd holds 8 callback bodies at once and tells the rest to retry a
/// second later, as a partner keeps trying for hours.
const CALLBACK_ATTEMPTS: u32 = 600;

/// Who answers payoutd on the run's rail.
pub enum Counterparty {
    /// The bank's drop (the file rails).
    Bank(Drop),
    /// The Interac partner (`cad/digital`) on loopback, calling payoutd back; it holds its final
    /// reports until the bench releases them.
    Partner(PartnerSimulator),
}

impl Counterparty {
    /// The bank's drop.
    ///
    /// # Errors
    /// The partner's rail, which has none.
    pub fn drop(&self) -> anyhow::Result<&Drop> {
        match self {
            Self::Bank(drop) => Ok(drop),
            Self::Partner(_) => anyhow::bail!("cad/digital has no drop: the partner's API"),
        }
    }

    /// The files the bank holds, or the batch requests the partner accepted.
    pub fn files_received(&self) -> anyhow::Result<usize> {
        match self {
            Self::Bank(drop) => Ok(drop.sent()?.len()),
            Self::Partner(partner) => Ok(usize::try_from(partner.counters().batches)?),
        }
    }
}

/// One run, ready for its cut-off.
pub struct Prepared {
    pub db: BenchDb,
    pub payoutd: Payoutd,
    /// The loopback port payoutd is to listen on: the partner's callbacks go there.
    pub port: u16,
    pub counterparty: Counterparty,
    /// Every subaccount, as text.
    pub subaccounts: Vec<String>,
    /// Their open batches, which the cut-off closes.
    pub batches: Vec<String>,
    /// Days payoutd's clock runs back (0 on a weekday).
    pub days_back: u32,
    /// Seeding's wall time.
    pub seeded: Duration,
}

/// Days back to the last weekday: bank file rails settle on business days only, so on a
/// Saturday or Sunday payoutd runs on Friday's date (under libfaketime), as
/// `cargo xtask rails-demo` does.
pub fn days_back() -> u32 {
    match Utc::now().weekday() {
        Weekday::Sat => 1,
        Weekday::Sun => 2,
        _ => 0,
    }
}

/// libfaketime: `given`, else the first of the Debian paths that exists.
pub fn faketime(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        anyhow::ensure!(
            path.is_file(),
            "--faketime {} is not a file",
            path.display()
        );
        return Ok(path.to_path_buf());
    }
    FAKETIME_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .context(
            "today is a weekend, when bank file rails do not settle: payoutd runs on the last \
             weekday's date under libfaketime, which is missing (Debian: apt-get install \
             libfaketime, or pass --faketime PATH)",
        )
}

/// The production configuration: the rail over `transport` (its lines, with its inbound
/// poll), its cut-off late in the day (the run's cut-off is the operator's
/// `payoutd admin run-cutoff`), same-day settlement, manual KYC.
///
/// `cad/digital`'s transport is the partner's API (`partner_transport`).
fn config_text(rail: BenchRail, transport: &str) -> String {
    let route = rail.method.route();
    format!(
        "# Written by payoutd-bench (scenario cutoff).\n\
         [rails.\"{route}\"]\n\
         file_prefix = \"BENCH\"\n\
         cutoffs = [\"23:59\"]\n\
         settlement_days = 0\n\
         {settings}\n\
         [rails.\"{route}\".transport]\n\
         {transport}\n\
         [smtp]\n\
         host = \"127.0.0.1\"\n\
         port = {NO_SMTP_PORT}\n\
         tls = \"none\"\n\
         from = \"payouts@example.com\"\n\n\
         [kyc]\n\
         provider = \"manual\"\n",
        settings = rail.settings(),
    )
}

/// How often payoutd polls the directory bank's inbound directory, seconds: a fifth of a
/// second (the directory transport allows down to a tenth), so the steps the bank's answers
/// start (the returns, SEPA's settlement) wait 0.1 s for the poll on average; polling a local
/// directory costs a listing.
const DIRECTORY_POLL_SECS: &str = "0.2";

/// The directory transport's lines.
pub fn directory_transport(drop: &Drop) -> String {
    format!(
        "kind = \"directory\"\noutbound_dir = {}\ninbound_dir = {}\npoll_interval_secs = {DIRECTORY_POLL_SECS}\n",
        toml_string(&drop.outbound.display().to_string()),
        toml_string(&drop.inbound.display().to_string()),
    )
}

/// The partner API transport's lines: the partner at `base_url`, the shared secret from
/// `PAYOUT_INTERAC_SECRET`, reports polled every 10 s besides the partner's callbacks.
pub fn partner_transport(base_url: &str) -> String {
    format!(
        "kind = \"partner_api\"\nbase_url = {}\nshared_secret = \"env:PAYOUT_INTERAC_SECRET\"\n\
         poll_interval_secs = 10\n",
        toml_string(base_url)
    )
}

/// The SFTP bank `cargo xtask bench cutoff --transport sftp` started (xtask's `bank` module,
/// as `cargo xtask bank` and rails-demo start it): a real OpenSSH sshd on loopback serving each
/// rail's directories, with its pinned host key and the client key payoutd logs in with.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SftpBank {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub private_key: PathBuf,
    pub host_key: String,
    /// Per route: `outbound_dir` and `inbound_dir`.
    pub rails: std::collections::BTreeMap<String, SftpDirs>,
}

/// A rail's directories on the SFTP bank.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SftpDirs {
    pub outbound_dir: PathBuf,
    pub inbound_dir: PathBuf,
}

impl SftpBank {
    /// The bank's JSON, as `cargo xtask bank` prints it (the `--sftp-bank` flags' parser).
    ///
    /// # Errors
    /// JSON that does not describe a bank, in words.
    pub fn from_json(raw: &str) -> Result<Self, String> {
        serde_json::from_str(raw).map_err(|e| format!("not the SFTP bank's JSON: {e}"))
    }

    /// The drop of `method` on this bank (emptied).
    pub fn drop_of(&self, method: PayoutMethod) -> anyhow::Result<Drop> {
        let dirs = self
            .rails
            .get(&method.route())
            .with_context(|| format!("the SFTP bank has no {} rail", method.route()))?;
        Drop::at(&dirs.outbound_dir, &dirs.inbound_dir)
    }

    /// The SFTP transport's lines for `drop`.
    pub fn transport(&self, drop: &Drop) -> String {
        format!(
            "kind = \"sftp\"\nhost = {}\nport = {}\nuser = {}\nprivate_key = {}\nhost_key = {}\n\
             outbound_dir = {}\ninbound_dir = {}\npoll_interval_secs = {SFTP_POLL_SECS}\n",
            toml_string(&self.host),
            self.port,
            toml_string(&self.user),
            toml_string(&self.private_key.display().to_string()),
            toml_string(&self.host_key),
            toml_string(&drop.outbound.display().to_string()),
            toml_string(&drop.inbound.display().to_string()),
        )
    }
}

/// A TOML basic string.
pub fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// What one run seeds: a rail's payouts waiting for one cut-off, in a database of their own.
#[derive(Debug, Clone)]
pub struct Seeding {
    /// The database's name (a previous run's is dropped).
    pub database: String,
    /// Where the run's configuration (and, over the directory transport, the drop) is written.
    pub dir: PathBuf,
    pub rail: BenchRail,
    pub payouts: u64,
    /// Subaccounts the payouts are split among (each has its batch, so its files).
    pub subaccounts: u64,
    /// libfaketime, for weekends (default: Debian's place).
    pub faketime: Option<PathBuf>,
    /// The Citus cluster to run on, instead of the bench's PostgreSQL server.
    pub citus: Option<OnCitus>,
}

/// A Citus cluster a run's database is made on.
#[derive(Debug, Clone)]
pub struct OnCitus {
    /// The coordinator's maintenance database, the workers registered (`cargo xtask citus`).
    pub coordinator_url: String,
    /// Shards per distributed table.
    pub shards: u32,
}

impl OnCitus {
    /// The cluster at `coordinator_url`, its tables in `shards` shards.
    ///
    /// # Errors
    /// No shards.
    pub fn new(coordinator_url: &str, shards: u32) -> anyhow::Result<Self> {
        anyhow::ensure!(shards > 0, "--citus-shards must be at least 1");
        Ok(Self {
            coordinator_url: coordinator_url.to_owned(),
            shards,
        })
    }
}

impl Seeding {
    /// The cutoff scenario's run of `rail` at `payouts` (on `citus` if given).
    pub fn bench(
        env: &Env,
        args: &Args,
        rail: BenchRail,
        payouts: u64,
        citus: Option<&OnCitus>,
    ) -> Self {
        let dir_name = run_name(rail.method, citus.is_some());
        Self {
            database: format!(
                "payoutd_bench_cutoff_{}_{payouts}",
                dir_name.replace('-', "_")
            ),
            dir: env.out_dir.join("cutoff").join(&dir_name),
            rail,
            payouts,
            subaccounts: args.subaccounts,
            faketime: args.faketime.clone(),
            citus: citus.cloned(),
        }
    }
}

/// Creates the database of `seeding`, its subaccounts (funded, with fee templates, webhooks to
/// `receiver`), seeds them and writes the configuration; payoutd is not started.
pub async fn prepare(
    env: &Env,
    seeding: &Seeding,
    receiver: &Receiver,
    sftp: Option<&SftpBank>,
) -> anyhow::Result<Prepared> {
    let (rail, payouts) = (seeding.rail, seeding.payouts);
    let db = match &seeding.citus {
        Some(citus) => {
            BenchDb::citus(&citus.coordinator_url, &seeding.database, citus.shards).await?
        }
        None => BenchDb::new(&env.server_url, &seeding.database)?,
    };
    db.drop_if_exists().await?;
    // On Citus: the database on every node, with the extension (`migrate` distributes it).
    db.create_on_citus().await?;
    let root = std::path::absolute(&seeding.dir)?;
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let port = free_port()?;
    let secret = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    let (counterparty, transport) = if rail.has_partner() {
        let partner = PartnerSimulator::start(PartnerOptions {
            callback_url: Some(format!("http://127.0.0.1:{port}/rail/interac/callback")),
            // Every payment deposited unless the bench gives it another fate.
            deposited_share: 1,
            declined_share: 0,
            expired_share: 0,
            final_delay: PARTNER_HOLDS,
            callback_timeout: CALLBACK_TIMEOUT,
            callback_attempts: CALLBACK_ATTEMPTS,
            ..PartnerOptions::new(secret.clone())
        })
        .map_err(|e| anyhow::anyhow!("the Interac partner: {e}"))?;
        let lines = partner_transport(&partner.base_url());
        (Counterparty::Partner(partner), lines)
    } else {
        match sftp {
            Some(bank) => {
                let drop = bank.drop_of(rail.method)?;
                let lines = bank.transport(&drop);
                (Counterparty::Bank(drop), lines)
            }
            None => {
                let drop = Drop::create(&root.join("bank"))?;
                let lines = directory_transport(&drop);
                (Counterparty::Bank(drop), lines)
            }
        }
    };
    let config = root.join("payoutd.toml");
    std::fs::write(&config, config_text(rail, &transport))
        .with_context(|| format!("cannot write {}", config.display()))?;

    let master_key = new_master_key();
    // The partner works every day, and signs by the system clock: its rail runs on today's date.
    let days_back = if rail.has_partner() { 0 } else { days_back() };
    let mut payoutd = Payoutd::new(&env.payoutd, &db.url, &master_key)
        .with_env("PAYOUT_SANDBOX", "false")
        .with_env("PAYOUT_INTERAC_SECRET", &secret)
        .with_env("PAYOUT_CONFIG", &config.display().to_string())
        .with_env("PAYOUT_WEBHOOK_ALLOW_PRIVATE", "true")
        .with_env("PAYOUT_BATCH_POLL_MS", "50");
    if days_back > 0 {
        let library = faketime(seeding.faketime.as_deref())?;
        payoutd = payoutd
            .with_env("LD_PRELOAD", &library.display().to_string())
            .with_env("FAKETIME", &format!("-{days_back}d"))
            .with_env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    }
    payoutd.migrate().await?;

    let started = Instant::now();
    let asset = rail.method.asset().code();
    let count = seeding.subaccounts.max(1);
    let vault = Arc::new(seed::vault(&master_key)?);
    let mut subaccounts = Vec::new();
    let mut batches = Vec::new();
    for s in 0..count {
        let tenant = payoutd.tenant(&format!("Bench cutoff {s}"), 1).await?;
        let sub = tenant.subaccount_id;
        for (command, values) in [
            (
                "fund",
                ["--amount", FUNDING, "--reason", "cutoff bench float"].as_slice(),
            ),
            (
                "set-fee",
                [
                    "--fixed",
                    FEE.0,
                    "--percentage",
                    FEE.1,
                    "--min-amount",
                    FEE.2,
                ]
                .as_slice(),
            ),
        ] {
            let mut full = vec![command, "--subaccount", &sub, "--asset", asset];
            full.extend_from_slice(values);
            payoutd.admin(&full).await?;
        }
        payoutd
            .admin(&["set-webhook", "--subaccount", &sub, "--url", &receiver.url])
            .await?;
        // The payouts are split evenly; the first subaccount takes the remainder.
        let share = payouts / count + if s == 0 { payouts % count } else { 0 };
        let subaccount = Uuid::parse_str(&sub)?;
        let tag = format!("c{s}{}", &Uuid::new_v4().simple().to_string()[..6]);
        // One receiver (and account) per payout.
        let generator = Generator::new(share, 0xC0_7F ^ s)
            .with_sql_ids(&tag)
            .only(rail.method);
        seed::seed(&db, Arc::clone(&vault), subaccount, &generator).await?;
        let batch = Uuid::new_v4();
        // Payable receivers (KYC completed, accounts confirmed), and the open batch the payouts
        // wait in, due in 30 days: only the run's cut-off brings it forward.
        db.execute(&format!(
            "UPDATE receivers SET status = 2, kyc_status = 1 WHERE subaccount_id = '{subaccount}';
             UPDATE receiver_accounts SET status = 'completed', confirm_status = 'confirmed'
               WHERE subaccount_id = '{subaccount}';
             INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, created_at,
               updated_at)
             VALUES ('{batch}', '{subaccount}', '{asset}', 'open', now() + interval '30 days',
               now(), now());"
        ))
        .await?;
        seed_payouts(&db, subaccount, &tag, share, share).await?;
        db.execute(&format!(
            "UPDATE payouts SET batch_id = '{batch}' WHERE subaccount_id = '{subaccount}'"
        ))
        .await?;
        subaccounts.push(sub);
        batches.push(batch.to_string());
    }
    db.execute("VACUUM (ANALYZE) receivers, receiver_accounts, payouts, batches, ledger_entries")
        .await?;
    Ok(Prepared {
        db,
        payoutd,
        port,
        counterparty,
        subaccounts,
        batches,
        days_back,
        seeded: started.elapsed(),
    })
}

/// A run's name in file and directory names: the route (`usd-ach`), with `-citus` on Citus.
pub fn run_name(method: PayoutMethod, on_citus: bool) -> String {
    format!(
        "{}{}",
        method.route().replace('/', "-"),
        if on_citus { "-citus" } else { "" }
    )
}
