//! `cargo xtask chaos`: fault tests of payoutd against a real PostgreSQL, printing a pass/fail
//! table (issue 6):
//! - **crash**: `kill -9` of the server during a payout load, then a restart: every
//!   acknowledged payout exists, no payout exists in part (each has its hold and its
//!   `payoutCreated`), `check-ledger` passes, every committed event is eventually delivered;
//! - **outage**: PostgreSQL stopped during a load: requests get 503 `SYS503` quickly (no crash,
//!   no hang), and the service recovers by itself once the database is back;
//! - **two instances** on one database and one webhook receiver: every event delivered once,
//!   no payout submitted twice, no nonce accepted twice;
//! - **the cut-off** ([`cutoff_crash`]): `kill -9` while the cut-off's NACHA file of
//!   `--cutoff-payouts` payouts is being generated, again while it is being uploaded to the
//!   local SFTP bank, and again once it is at the bank but not yet recorded as uploaded; after a
//!   restart each file is at the bank once and as stored, no payout is in two files or paid
//!   twice, every payout is submitted, every event is delivered and the ledger balances.
//!
//! With `--citus` (`cargo xtask chaos --citus`) the database server is a Citus coordinator and
//! each check's database is made on every node of its cluster, its tables distributed by
//! subaccount:
//! - **crash** as above, on Citus;
//! - **worker outage**: one worker stopped (`pg_ctl stop -m immediate`) during a payout load
//!   of subaccounts on both workers, then started again: while it is down, the requests of the
//!   subaccounts whose shards it holds get 503 `SYS503` quickly and those of the other worker's
//!   subaccounts succeed; once it is back every subaccount is served again; nothing
//!   acknowledged is lost, nothing is stored in part, a retry of a payout committed without an
//!   answer replays it, and the ledger balances.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::Env;
use crate::report;
use crate::scenarios::cutoff::setup::SftpBank;
use crash::crash;
use cutoff_crash::{Window, cutoff_crash};
use outage::outage;
use two_instances::two_instances;
use worker_outage::worker_outage;

mod client;
mod crash;
mod cutoff_crash;
mod outage;
mod two_instances;
mod worker_outage;
mod world;

/// Flags of `payoutd-bench chaos`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Concurrent clients of the payout loads.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// How long the load runs before the fault (the crash check's `kill -9`, the worker
    /// outage's stop), in milliseconds, counted from the first acknowledged payout.
    #[arg(long, default_value_t = 2_000)]
    kill_after_ms: u64,
    /// How long PostgreSQL stays down in the outage check, in milliseconds.
    #[arg(long, default_value_t = 3_000)]
    outage_ms: u64,
    /// Payouts the two instances create together.
    #[arg(long, default_value_t = 300)]
    payouts: usize,
    /// Pairs of identical signed requests sent to both instances at once.
    #[arg(long, default_value_t = 50)]
    replays: usize,
    /// The command that stops PostgreSQL, as a JSON array (argv); without it (and
    /// `--pg-start`) the outage check is skipped.
    #[arg(long)]
    pg_stop: Option<String>,
    /// The command that starts PostgreSQL again, as a JSON array (argv).
    #[arg(long)]
    pg_start: Option<String>,
    /// `--database-url` is a Citus coordinator: run the crash check and the worker outage on
    /// distributed tables instead of the plain PostgreSQL checks.
    #[arg(long)]
    citus: bool,
    /// Citus: the command that stops one worker, as a JSON array (argv); without it (and
    /// `--worker-start`, `--worker-port`) the worker outage is skipped.
    #[arg(long)]
    worker_stop: Option<String>,
    /// Citus: the command that starts that worker again, as a JSON array (argv).
    #[arg(long)]
    worker_start: Option<String>,
    /// Citus: that worker's port, as the coordinator's `pg_dist_node` lists it.
    #[arg(long)]
    worker_port: Option<u16>,
    /// Payouts waiting for the cut-off of the cut-off checks (one subaccount, so one batch);
    /// 0 skips them.
    #[arg(long, default_value_t = 100_000)]
    cutoff_payouts: u64,
    /// The SFTP bank the cut-off checks send their files to (JSON, as `cargo xtask bank`
    /// describes it; `cargo xtask chaos` starts it); without it they are skipped.
    #[arg(long, value_parser = SftpBank::from_json)]
    sftp_bank: Option<SftpBank>,
    /// libfaketime, under which payoutd runs on the last weekday's date on a weekend (default:
    /// Debian's place).
    #[arg(long)]
    faketime: Option<PathBuf>,
}

/// Shards per distributed table of the databases made on Citus: as in the Citus test databases,
/// enough to spread every table over both workers at a fraction of the placement time of Citus'
/// default (32).
const CITUS_SHARD_COUNT: u32 = 4;

/// Longest a request may take while the database, or one Citus worker, is down: the statement
/// timeout payoutd runs with by default.
const DOWN_BUDGET: Duration = Duration::from_secs(5);

/// How one check ended.
enum Verdict {
    Pass(String),
    Fail(String),
    Skip(String),
}

/// Settings every server of these checks runs with: quick webhook leases (so events a killed
/// instance had claimed come back soon), no rate limit in the way of the load.
const SERVER_ENV: &[(&str, &str)] = &[
    ("PAYOUT_WEBHOOK_TIMEOUT_MS", "1000"),
    ("PAYOUT_DELIVERY_POLL_MS", "50"),
    ("PAYOUT_RATE_LIMIT_PER_SEC", "1000000"),
    ("PAYOUT_RATE_LIMIT_BURST", "1000000"),
    ("PAYOUT_DB_WAIT_TIMEOUT_MS", "1000"),
];

/// Runs every check and prints the table.
pub async fn run(env: &Env, args: &Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut rows: Vec<(&str, Verdict, Duration)> = Vec::new();
    let timed = Instant::now();
    let crashed = verdict(crash(env, args).await);
    if args.citus {
        rows.push((
            "kill -9 during payout load (Citus)",
            crashed,
            timed.elapsed(),
        ));
        let timed = Instant::now();
        let outage = match (&args.worker_stop, &args.worker_start, args.worker_port) {
            (Some(stop), Some(start), Some(port)) => {
                verdict(worker_outage(env, args, stop, start, port).await)
            }
            _ => Verdict::Skip(
                "needs a Citus worker that xtask controls (--worker-stop, --worker-start, \
                 --worker-port)"
                    .to_owned(),
            ),
        };
        rows.push(("Citus worker stopped during load", outage, timed.elapsed()));
    } else {
        rows.push(("kill -9 during payout load", crashed, timed.elapsed()));
        let timed = Instant::now();
        let outage = match (&args.pg_stop, &args.pg_start) {
            (Some(stop), Some(start)) => verdict(outage(env, args, stop, start).await),
            _ => {
                Verdict::Skip("needs a PostgreSQL that xtask controls (no DATABASE_URL)".to_owned())
            }
        };
        rows.push(("PostgreSQL stopped during load", outage, timed.elapsed()));
        let timed = Instant::now();
        let pair = verdict(two_instances(env, args).await);
        rows.push(("two instances, one database", pair, timed.elapsed()));
        for (name, window) in [
            ("kill -9 during cut-off generation", Window::Generation),
            ("kill -9 during cut-off SFTP upload", Window::Upload),
            ("kill -9 before upload is recorded", Window::Record),
        ] {
            let timed = Instant::now();
            let checked = match &args.sftp_bank {
                _ if args.cutoff_payouts == 0 => Verdict::Skip("--cutoff-payouts 0".to_owned()),
                Some(bank) => verdict(cutoff_crash(env, args, window, bank).await),
                None => Verdict::Skip(
                    "needs the local SFTP bank (--sftp-bank; `cargo xtask chaos` starts it)"
                        .to_owned(),
                ),
            };
            rows.push((name, checked, timed.elapsed()));
        }
    }

    println!("\nchaos ({:.0} s)", started.elapsed().as_secs_f64());
    println!("{:<34} {:<6} {:>6} details", "check", "result", "time");
    let mut failed = false;
    let mut json_rows = Vec::new();
    for (name, verdict, took) in &rows {
        let (word, details) = match verdict {
            Verdict::Pass(d) => ("PASS", d),
            Verdict::Fail(d) => {
                failed = true;
                ("FAIL", d)
            }
            Verdict::Skip(d) => ("SKIP", d),
        };
        let seconds = took.as_secs_f64();
        println!("{name:<34} {word:<6} {:>5.0}s {details}", seconds);
        json_rows.push(json!({
            "check": name, "result": word, "seconds": seconds, "details": details
        }));
    }
    let file = if args.citus {
        "chaos-citus.json"
    } else {
        "chaos.json"
    };
    report::write_json(
        &env.out_dir.join(file),
        &json!({"machine": report::machine_json(), "checks": json_rows}),
    )?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn verdict(result: anyhow::Result<Result<String, String>>) -> Verdict {
    match result {
        Ok(Ok(details)) => Verdict::Pass(details),
        Ok(Err(failure)) => Verdict::Fail(failure),
        Err(e) => Verdict::Fail(format!("could not run: {e:#}")),
    }
}
