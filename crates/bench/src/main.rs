//! `payoutd-bench`: the benchmark harness of payoutd, normally run through `cargo xtask bench`.
//!
//! Each scenario gets a PostgreSQL server URL and the path of a built `payoutd`, and does the
//! rest itself: fresh databases (migrated by `payoutd migrate`), subaccounts and keys (by
//! `payoutd admin`), data seeded in bulk through the storage crate's own encryption and
//! fingerprints, a `payoutd serve` child, and a closed-loop load of signed requests whose
//! latencies go into HDR histograms. Results are printed as a table and written as JSON.
//!
//! The pieces a new scenario reuses:
//! - [`db`]: creating, connecting to and dropping bench databases;
//! - [`server`]: the `payoutd` binary: migrate, admin commands, a served instance;
//! - [`seed`]: realistic receivers and receiver accounts, generated deterministically and
//!   inserted in batches exactly as the service stores them;
//! - [`load`]: signed requests driven at a fixed concurrency, with per-kind histograms;
//! - [`receiver`]: a local webhook receiver recording when each event arrived;
//! - [`report`]: the printed tables and the JSON file;
//! - [`pgbench`]: the database's ceiling, pgbench replaying a route's SQL;
//! - [`bare`]: the HTTP ceiling, a bare actix-web endpoint in a child process;
//! - [`procfs`]: peak RSS and CPU time of the processes involved.

mod bare;
mod db;
mod load;
mod pgbench;
mod procfs;
mod receiver;
mod report;
mod scenarios;
mod seed;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "payoutd-bench",
    about = "Benchmarks of payoutd (normally run by `cargo xtask bench`)",
    // A flag given twice (say, a smoke default and then the user's) takes the last value.
    args_override_self = true
)]
struct Cli {
    /// What every scenario needs.
    #[command(flatten)]
    common: Common,
    /// The scenario to run.
    #[command(subcommand)]
    scenario: Scenario,
}

/// Options shared by every scenario.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// URL of a PostgreSQL server database to connect to for creating and dropping the bench
    /// databases (e.g. postgres://postgres@127.0.0.1:25432/postgres).
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// The payoutd binary to benchmark.
    #[arg(long, global = true)]
    payoutd: Option<PathBuf>,
    /// Where results (JSON) and server logs go.
    #[arg(long, global = true, default_value = "target/bench")]
    out_dir: PathBuf,
    /// Keep the bench databases afterwards (for EXPLAIN ANALYZE and the like).
    #[arg(long, global = true)]
    keep_databases: bool,
    /// The pgbench binary (for the database ceilings).
    #[arg(long, global = true, default_value = "pgbench")]
    pgbench: PathBuf,
}

/// The scenarios.
#[derive(Debug, Subcommand)]
enum Scenario {
    /// Fault tests (`cargo xtask chaos`): kill -9 during a payout load, PostgreSQL stopped
    /// during a load, two instances on one database; prints a pass/fail table.
    Chaos(scenarios::chaos::Args),
    /// `POST /api/receiver-account/verify` latency with a small and a large number of accounts
    /// in one subaccount.
    Verify(scenarios::verify::Args),
    /// Webhook delivery to a local receiver: throughput draining a backlog, and the delay from
    /// commit to delivery at a steady rate.
    Delivery(scenarios::delivery::Args),
    /// The main routes (GET/POST receiver, GET/POST payout, list pages) against pgbench running
    /// the same SQL and a bare actix-web endpoint; peak RSS of payoutd.
    Api(scenarios::api::Args),
    /// One cut-off of many payouts per production rail: each step (file stored, sent, payouts
    /// in progress, settled, returns applied, events delivered) against SQL doing the same rows,
    /// and payoutd's peak RSS at two sizes.
    Cutoff(scenarios::cutoff::Args),
    /// The bare actix-web endpoint itself (started by `api`).
    #[command(hide = true)]
    BareHttp(bare::Args),
}

/// [`Common`], checked.
pub struct Env {
    /// Server URL for creating and dropping databases.
    pub server_url: String,
    /// The payoutd binary.
    pub payoutd: PathBuf,
    /// Output directory.
    pub out_dir: PathBuf,
    /// Whether to keep the databases.
    pub keep_databases: bool,
    /// The pgbench binary.
    pub pgbench: PathBuf,
}

impl Common {
    fn check(self) -> anyhow::Result<Env> {
        let server_url = self
            .database_url
            .ok_or_else(|| anyhow::anyhow!("--database-url is required"))?;
        let payoutd = self
            .payoutd
            .ok_or_else(|| anyhow::anyhow!("--payoutd (the payoutd binary) is required"))?;
        anyhow::ensure!(
            payoutd.is_file(),
            "--payoutd {} is not a file",
            payoutd.display()
        );
        std::fs::create_dir_all(&self.out_dir)?;
        Ok(Env {
            server_url,
            payoutd,
            out_dir: self.out_dir,
            keep_databases: self.keep_databases,
            pgbench: self.pgbench,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Scenario::BareHttp(args) = &cli.scenario {
        return match bare::serve(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("payoutd-bench bare-http: error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    // When built together with payoutd, reqwest's rustls backend is switched on by the webhook
    // adapter's features, and then needs a crypto provider before the first client is built.
    // `Err` only means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("payoutd-bench: error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let env = cli.common.check()?;
        match cli.scenario {
            Scenario::Verify(args) => scenarios::verify::run(&env, &args).await,
            Scenario::Delivery(args) => scenarios::delivery::run(&env, &args).await,
            Scenario::Api(args) => scenarios::api::run(&env, &args).await,
            Scenario::Chaos(args) => scenarios::chaos::run(&env, &args).await,
            Scenario::Cutoff(args) => scenarios::cutoff::run(&env, &args).await,
            Scenario::BareHttp(_) => Ok(ExitCode::FAILURE),
        }
    });
    match result {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("payoutd-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
