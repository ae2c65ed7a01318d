//! `cutoff`: one cut-off of many payouts on each production rail, step by step, against what
//! the database can do for the same rows.
//!
//! For each rail and size, the harness makes a fresh database with a few subaccounts (funded,
//! fee templates, webhooks to the harness's receiver) and seeds their receivers, accounts (of
//! the rail's method, sealed and fingerprinted as the service stores them) and payouts
//! (`pending` with their holds, in each subaccount's open batch, due in 30 days) in bulk. It
//! writes payoutd's production configuration (the rail over the directory transport, the drop
//! under `<out>/cutoff/<rail>/bank`; `cad/digital` over the partner API to the local Interac
//! partner, which calls payoutd back), runs the reference scripts (`crates/bench/sql/cutoff_*.sql`,
//! [`reference`]) once in a rolled-back transaction, starts `payoutd serve` (production mode)
//! and runs the cut-off with `payoutd admin run-cutoff`. Then it measures, as payoutd's time and
//! peak RSS ([`steps`]): the cut-off to every file stored, to every file at the drop, to every
//! payout `in_progress` with its reference; settlement (on the effective date, or the bank's
//! pain.002, or the partner's final reports, which reject a tenth); a return file of a tenth of
//! the payouts to every return applied; every event delivered. Verdicts: each step within `--max-ratio` of its reference; peak RSS at the large
//! size within `--max-rss-ratio` of the small size's; nothing lost (`payoutd admin
//! check-ledger` clean, every payout in exactly one file, every payout a payment at the bank).

pub(crate) mod bank;
mod reference;
pub(crate) mod setup;
mod steps;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;
use domain::account::PayoutMethod;
use serde_json::{Value, json};

use crate::Env;
use crate::receiver::Receiver;
use crate::report::{load_average, machine_json, write_json};
use bank::BenchRail;
use reference::ReferenceTimes;
use setup::Counterparty;
use steps::Measured;

/// Each subaccount's float, in cents: far more than its payouts.
const FUNDING: &str = "1000000000000";
/// The fee template: fixed, percentage, minimum.
const FEE: (&str, &str, &str) = ("25", "0.5", "50");

/// Flags of `cutoff`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Payouts waiting for the cut-off at the large size.
    #[arg(long, default_value_t = 100_000)]
    pub payouts: u64,
    /// Payouts at the small size, whose peak RSS the large size's is held to (0 runs the large
    /// size only); its steps' times are shown, and only the large size's are judged.
    #[arg(long, default_value_t = 10_000)]
    pub payouts_small: u64,
    /// Subaccounts the payouts are split among (each has its batch, so its file).
    #[arg(long, default_value_t = 4)]
    pub subaccounts: u64,
    /// The rails, as payout method routes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "usd/ach,eur/sepa,aud/direct-entry,cad/eft,nzd/direct-credit,cad/digital"
    )]
    pub rails: Vec<String>,
    /// Limit of each step's time over its reference's.
    #[arg(long, default_value_t = 2.0)]
    pub max_ratio: f64,
    /// Limit of the peak RSS at the large size over the small size's.
    #[arg(long, default_value_t = 2.0)]
    pub max_rss_ratio: f64,
    /// A step not done within this many seconds fails the run.
    #[arg(long, default_value_t = 1800)]
    pub step_timeout_secs: u64,
    /// libfaketime, for weekends (default: Debian's place).
    #[arg(long)]
    pub faketime: Option<PathBuf>,
    /// psql, which runs the reference scripts.
    #[arg(long, default_value = "psql")]
    pub psql: PathBuf,
    /// The SFTP bank to send the files to (JSON, as `cargo xtask bank` describes it; `cargo
    /// xtask bench cutoff --transport sftp` starts it); without it, the directory transport.
    #[arg(long, value_parser = setup::SftpBank::from_json)]
    pub sftp_bank: Option<setup::SftpBank>,
    /// The time and memory verdicts are advisory (smoke sizes); nothing lost still decides.
    #[arg(long)]
    pub advisory: bool,
    /// The maintenance database of a Citus coordinator, its workers registered (as `cargo xtask
    /// citus` prints it): each rail's `--payouts` runs again on the Citus cluster, and each
    /// step's time there is reported against plain PostgreSQL's (no verdict; nothing lost
    /// still decides).
    #[arg(long)]
    pub citus_url: Option<String>,
    /// Shards per distributed table of the Citus database.
    #[arg(long, default_value_t = 32)]
    pub citus_shards: u32,
}

/// One measured run: a rail at a size.
struct Run {
    rail: BenchRail,
    payouts: u64,
    /// On the Citus cluster (no references run there).
    on_citus: bool,
    seeded: Duration,
    references: ReferenceTimes,
    measured: Measured,
    ledger_clean: bool,
    /// Payouts in no file or in more than one.
    not_in_one_file: i64,
}

impl Run {
    /// The reference of a step, seconds: the sum of its scripts that ran (a rail without
    /// returns runs no `cutoff_returned.sql`); `None` when none did.
    fn reference_of(&self, step: &steps::Step) -> Option<f64> {
        let times: Vec<f64> = step
            .references
            .iter()
            .filter_map(|name| self.references.of(name))
            .collect();
        (!times.is_empty()).then(|| times.iter().sum::<f64>() / 1000.0)
    }

    fn lost_nothing(&self) -> bool {
        self.ledger_clean
            && self.not_in_one_file == 0
            && self.measured.payments_at_bank as u64 == self.payouts
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        self.measured
            .steps
            .iter()
            .filter_map(|s| s.peak_rss_kib)
            .max()
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Runs the scenario.
pub async fn run(env: &Env, args: &Args) -> anyhow::Result<ExitCode> {
    let mut rails = Vec::new();
    for route in &args.rails {
        let method = PayoutMethod::from_route(route.trim())
            .with_context(|| format!("--rails: {route:?} is not a payout method"))?;
        rails.push(BenchRail::of(method));
    }
    anyhow::ensure!(
        args.payouts >= args.subaccounts.max(1),
        "--payouts must be at least --subaccounts"
    );
    let sizes: Vec<u64> = [args.payouts_small, args.payouts]
        .into_iter()
        .filter(|n| *n > 0)
        .collect();
    let sql_dir = env.out_dir.join("cutoff").join("sql");
    let scripts = reference::write_scripts(&sql_dir)?;
    let citus = args
        .citus_url
        .as_deref()
        .map(|url| setup::OnCitus::new(url, args.citus_shards))
        .transpose()?;
    let mut runs = Vec::new();
    for rail in &rails {
        for &payouts in &sizes {
            runs.push(run_one(env, args, *rail, payouts, &scripts, None).await?);
        }
        if let Some(citus) = &citus {
            runs.push(run_one(env, args, *rail, args.payouts, &scripts, Some(citus)).await?);
        }
    }
    report(env, args, &runs)
}

/// One rail at one size.
async fn run_one(
    env: &Env,
    args: &Args,
    rail: BenchRail,
    payouts: u64,
    scripts: &[PathBuf],
    citus: Option<&setup::OnCitus>,
) -> anyhow::Result<Run> {
    let route = rail.method.route();
    let on = if citus.is_some() { " on Citus" } else { "" };
    let dir = setup::run_name(rail.method, citus.is_some());
    eprintln!("payoutd-bench: [cutoff] {route}: seeding {payouts} payouts{on}");
    let receiver = Receiver::start(1_000).await?;
    let seeding = setup::Seeding::bench(env, args, rail, payouts, citus);
    let prepared = setup::prepare(env, &seeding, &receiver, args.sftp_bank.as_ref()).await?;
    if prepared.days_back > 0 {
        eprintln!(
            "payoutd-bench: [cutoff] a weekend: payoutd runs {} day(s) back (libfaketime), as \
             bank file rails settle on weekdays only",
            prepared.days_back
        );
    }
    let outcome = async {
        eprintln!(
            "payoutd-bench: [cutoff] {route}: seeded in {:.1} s; the reference scripts",
            prepared.seeded.as_secs_f64()
        );
        // The references run on plain PostgreSQL only: on Citus a step is held to plain
        // PostgreSQL's time for it.
        let references = if citus.is_some() {
            ReferenceTimes::default()
        } else {
            let references = reference::run(
                &args.psql,
                &prepared.db.url,
                scripts,
                &rail.scripts_left_out(),
                &reference::Variables {
                    batches: &prepared.batches,
                    subaccounts: &prepared.subaccounts,
                    method: &route,
                    report_line_bytes: rail.report_line_bytes(),
                },
                &env.out_dir
                    .join(format!("cutoff-reference-{dir}-{payouts}.log")),
            )
            .await?;
            // The rolled-back rows are dead tuples now: vacuumed, as autovacuum would.
            crate::db::BenchDb::execute(
                &prepared.db,
                "VACUUM (ANALYZE) payouts, batches, outbox_events, outbox_sequences, \
                     ledger_entries, balances, rail_files, rail_file_items, rail_file_numbers, \
                 receiver_accounts, inbound_files, bank_reports, webhook_attempts",
            )
            .await?;
            references
        };
        let log = env
            .out_dir
            .join(format!("payoutd-cutoff-{dir}-{payouts}.log"));
        let server = prepared.payoutd.serve_on(prepared.port, &log, &[]).await?;
        let pid = server.pid().context("payoutd has no pid")?;
        settle_in(&prepared, &receiver).await?;
        eprintln!("payoutd-bench: [cutoff] {route}: the cut-off of {payouts} payouts{on}");
        let measured = steps::measure(
            &prepared,
            rail,
            payouts,
            pid,
            &receiver,
            Duration::from_secs(args.step_timeout_secs),
        )
        .await;
        server.stop().await?;
        let mut measured = measured?;
        let ledger_clean = prepared.payoutd.admin(&["check-ledger"]).await.is_ok();
        let mut conn = prepared.db.connect().await?;
        // Grouped by the distribution column, so that Citus runs it on each shard.
        let not_in_one_file = diesel::sql_query(
            "SELECT count(*) AS n FROM (SELECT count(i.payout_id) AS files FROM payouts p \
             LEFT JOIN rail_file_items i ON i.payout_id = p.id AND i.subaccount_id = p.subaccount_id \
             GROUP BY p.subaccount_id, p.id) per_payout WHERE files <> 1",
        )
        .get_result::<Count>(&mut conn)
        .await?
        .n;
        match &prepared.counterparty {
            Counterparty::Bank(drop) => {
                for name in drop.sent()? {
                    measured.payments_at_bank += bank::payments(rail, &drop.read(&name)?)
                        .with_context(|| format!("reading {name} at the bank"))?
                        .len();
                }
            }
            Counterparty::Partner(partner) => measured.payments_at_bank = partner.statuses().len(),
        }
        anyhow::Ok(Run {
            rail,
            payouts,
            on_citus: citus.is_some(),
            seeded: prepared.seeded,
            references,
            measured,
            ledger_clean,
            not_in_one_file,
        })
    }
    .await;
    if env.keep_databases {
        eprintln!("payoutd-bench: [cutoff] keeping {}", prepared.db.name);
    } else if let Err(e) = prepared.db.drop_if_exists().await {
        eprintln!(
            "payoutd-bench: warning: could not drop {}: {e:#}",
            prepared.db.name
        );
    }
    outcome
}

/// Waits (up to 30 s) until the events the set-up wrote are delivered, so that the cut-off
/// starts on a quiet server.
async fn settle_in(prepared: &setup::Prepared, receiver: &Receiver) -> anyhow::Result<()> {
    let mut conn = prepared.db.connect().await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let pending = diesel::sql_query(
            "SELECT count(*) AS n FROM outbox_events WHERE status <> 'delivered'",
        )
        .get_result::<Count>(&mut conn)
        .await?
        .n;
        if pending == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "payoutd-bench: [cutoff] warning: the set-up's events are not all delivered ({} received)",
        receiver.distinct()
    );
    Ok(())
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

fn mib(kib: Option<u64>) -> Option<f64> {
    kib.map(|k| (k as f64 / 1024.0 * 10.0).round() / 10.0)
}

/// Prints the table and verdicts, writes `cutoff.json`; the exit status.
fn report(env: &Env, args: &Args, runs: &[Run]) -> anyhow::Result<ExitCode> {
    let mut pass = true;
    let mut lost = false;
    let mut runs_json = Vec::new();
    println!(
        "{:<18} {:>7}  {:<11} {:>10} {:>11} {:>7} {:>9}  verdict",
        "rail", "payouts", "step", "payoutd s", "reference s", "ratio", "peak MiB"
    );
    println!("{}", "-".repeat(90));
    for run in runs.iter().filter(|r| !r.on_citus) {
        let mut steps_json = Vec::new();
        // The small size is run for the memory verdict's baseline: its steps' times are shown,
        // and only the large size's decide (at 10,000 payouts a step of a second or less is
        // mostly the payoutd poll that starts it).
        let decides = run.payouts == args.payouts;
        for step in &run.measured.steps {
            let reference = run.reference_of(step);
            let ratio = reference.map(|r| step.seconds / r.max(1e-6));
            let ok = ratio.is_some_and(|r| r <= args.max_ratio);
            if decides {
                pass &= ok;
            }
            let shown = if decides { verdict(ok) } else { "(info)" };
            println!(
                "{:<18} {:>7}  {:<11} {:>10.3} {:>11} {:>7} {:>9}  {}",
                run.rail.method.route(),
                run.payouts,
                step.name,
                step.seconds,
                reference.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}")),
                ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}")),
                mib(step.peak_rss_kib).map_or_else(|| "-".to_owned(), |m| format!("{m:.1}")),
                shown
            );
            steps_json.push(json!({
                "step": step.name,
                "measures": step.span,
                "payoutd_s": step.seconds,
                "reference_s": reference,
                "reference_scripts": step.references,
                "ratio": ratio,
                "limit": args.max_ratio,
                "peak_rss_mib": mib(step.peak_rss_kib),
                "verdict": shown,
            }));
        }
        let kept = run.lost_nothing();
        lost |= !kept;
        print_nothing_lost(run);
        runs_json.push(json!({
            "rail": run.rail.method.route(),
            "payouts": run.payouts,
            "subaccounts": args.subaccounts,
            "files": run.measured.files,
            "seeded_s": run.seeded.as_secs_f64(),
            "reference_ms": reference::SCRIPTS.iter().map(|(name, _)| ((*name).to_owned(), json!(run.references.of(name)))).collect::<serde_json::Map<_, _>>(),
            "steps": steps_json,
            "returned": run.measured.returned,
            "rejected": run.measured.rejected,
            "accounts_failed": run.measured.accounts_failed,
            "events": run.measured.events,
            "nothing_lost": nothing_lost_json(run),
        }));
    }
    let citus_json = report_citus(runs, &mut lost);
    let mut memory = Vec::new();
    if args.payouts_small > 0 && args.payouts_small != args.payouts {
        for rail in runs
            .iter()
            .map(|r| r.rail.method)
            .collect::<std::collections::BTreeSet<_>>()
        {
            let peak_at = |n: u64| {
                runs.iter()
                    .find(|r| r.rail.method == rail && r.payouts == n && !r.on_citus)
                    .and_then(Run::peak_rss_kib)
            };
            let (small, large) = (peak_at(args.payouts_small), peak_at(args.payouts));
            let ratio = small.zip(large).map(|(s, l)| l as f64 / s.max(1) as f64);
            let ok = ratio.is_some_and(|r| r <= args.max_rss_ratio);
            pass &= ok;
            println!(
                "{}: peak RSS {} MiB at {} payouts / {} MiB at {} = {} (limit {}): {}",
                rail.route(),
                mib(large).map_or_else(|| "-".to_owned(), |m| m.to_string()),
                args.payouts,
                mib(small).map_or_else(|| "-".to_owned(), |m| m.to_string()),
                args.payouts_small,
                ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}")),
                args.max_rss_ratio,
                verdict(ok)
            );
            memory.push(json!({
                "rail": rail.route(),
                "peak_rss_mib_small": mib(small),
                "peak_rss_mib_large": mib(large),
                "ratio": ratio,
                "limit": args.max_rss_ratio,
                "verdict": verdict(ok),
            }));
        }
    }
    let overall = pass && !lost;
    let value: Value = json!({
        "scenario": "cutoff",
        "machine": machine_json(),
        "load_average_1m": load_average(),
        "advisory": args.advisory,
        "payouts": args.payouts,
        "payouts_small": args.payouts_small,
        "subaccounts": args.subaccounts,
        "transport": if args.sftp_bank.is_some() { "sftp" } else { "directory" },
        "runs": runs_json,
        "peak_rss": memory,
        "citus": citus_json,
        "verdict": verdict(overall),
    });
    let path = env.out_dir.join("cutoff.json");
    write_json(&path, &value)?;
    println!(
        "cutoff: {}{}; results in {}",
        verdict(overall),
        if args.advisory && !lost && !pass {
            " (advisory at these sizes)"
        } else {
            ""
        },
        path.display()
    );
    Ok(if lost || (!pass && !args.advisory) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints a run's "nothing lost" line.
fn print_nothing_lost(run: &Run) {
    println!(
        "{:<18} {:>7}  nothing lost{}: check-ledger {}, {} payouts not in exactly one file, \
         {} of {} payouts at the bank in {} files; {} returned, {} rejected ({} accounts \
         failed), {} events delivered: {}",
        run.rail.method.route(),
        run.payouts,
        if run.on_citus { " on Citus" } else { "" },
        if run.ledger_clean { "clean" } else { "FAILED" },
        run.not_in_one_file,
        run.measured.payments_at_bank,
        run.payouts,
        run.measured.files,
        run.measured.returned,
        run.measured.rejected,
        run.measured.accounts_failed,
        run.measured.events,
        verdict(run.lost_nothing())
    );
}

fn nothing_lost_json(run: &Run) -> Value {
    json!({
        "check_ledger_clean": run.ledger_clean,
        "payouts_not_in_exactly_one_file": run.not_in_one_file,
        "payments_at_bank": run.measured.payments_at_bank,
        "verdict": verdict(run.lost_nothing()),
    })
}

/// Prints each Citus run's steps against the same rail's and size's run on plain PostgreSQL
/// (Citus' time / plain PostgreSQL's) and its "nothing lost" line, sets `lost` when it lost
/// anything; the runs as JSON.
fn report_citus(runs: &[Run], lost: &mut bool) -> Vec<Value> {
    let mut out = Vec::new();
    let on_citus: Vec<&Run> = runs.iter().filter(|r| r.on_citus).collect();
    if on_citus.is_empty() {
        return out;
    }
    println!();
    println!(
        "{:<18} {:>7}  {:<11} {:>9} {:>12} {:>12} {:>9}",
        "on Citus", "payouts", "step", "Citus s", "PostgreSQL s", "Citus / PG", "peak MiB"
    );
    println!("{}", "-".repeat(86));
    for run in on_citus {
        let plain = runs
            .iter()
            .find(|r| !r.on_citus && r.rail.method == run.rail.method && r.payouts == run.payouts);
        let mut steps = Vec::new();
        for step in &run.measured.steps {
            let plain_s = plain.and_then(|p| {
                p.measured
                    .steps
                    .iter()
                    .find(|s| s.name == step.name)
                    .map(|s| s.seconds)
            });
            let ratio = plain_s.map(|p| step.seconds / p.max(1e-6));
            println!(
                "{:<18} {:>7}  {:<11} {:>9.3} {:>12} {:>12} {:>9}",
                run.rail.method.route(),
                run.payouts,
                step.name,
                step.seconds,
                plain_s.map_or_else(|| "-".to_owned(), |p| format!("{p:.3}")),
                ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}")),
                mib(step.peak_rss_kib).map_or_else(|| "-".to_owned(), |m| format!("{m:.1}")),
            );
            steps.push(json!({
                "step": step.name,
                "citus_s": step.seconds,
                "postgresql_s": plain_s,
                "ratio": ratio,
                "peak_rss_mib": mib(step.peak_rss_kib),
            }));
        }
        *lost |= !run.lost_nothing();
        print_nothing_lost(run);
        out.push(json!({
            "rail": run.rail.method.route(),
            "payouts": run.payouts,
            "files": run.measured.files,
            "seeded_s": run.seeded.as_secs_f64(),
            "steps": steps,
            "returned": run.measured.returned,
            "rejected": run.measured.rejected,
            "events": run.measured.events,
            "nothing_lost": nothing_lost_json(run),
        }));
    }
    out
}
