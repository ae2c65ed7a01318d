//! `api`: throughput, latency and memory of the main routes, each against two ceilings measured
//! in the same run: pgbench replaying the SQL the route runs (the database's ceiling) and a bare
//! actix-web endpoint driven by the same load generator (the HTTP ceiling).
//!
//! One fresh database `payoutd_bench_api` (migrated by payoutd) holds one subaccount with one API
//! key per load worker, its five currencies funded with `payoutd admin fund` and a fee template
//! each (`payoutd admin set-fee`), `--receivers` receivers with one account each seeded in bulk
//! (KYC completed, accounts confirmed; ids that SQL can compute, see
//! [`Generator::with_sql_ids`]) and `--payouts` payouts seeded by SQL (with their ledger entries
//! and the hold on the balances). A release `payoutd serve` (sandbox, fresh master key) serves
//! it. Then each case, in this order:
//!
//! | case | requests | pgbench script(s) |
//! |---|---|---|
//! | `get-receiver` | `GET /api/receiver/<id>` of a random seeded receiver | `get_receiver.sql` |
//! | `get-payout` | `GET /api/payout/<id>` of a random seeded payout | `get_payout.sql` |
//! | `list` | `GET /api/payout/?limit=<page size>`: page 1 and the last page (page 1000 of 100 000), alternately | `list_first.sql`, `list_after.sql` |
//! | `post-receiver` | `POST /api/receiver`, a new receiver each | `post_receiver.sql` |
//! | `post-payout` | `POST /api/payout/single` to a random receiver, a fresh `idempotency-key` and reference each; at each of `--payout-clients` | `post_payout.sql`; reference `payout_one_statement.sql` |
//! | `bulk-payout` | `POST /api/payout/bulk` of 100 items (receivers spread as the script spreads them, mixed currencies), a fresh `idempotency-key` and references each | reference `payout_set_of_100.sql` only |
//!
//! A case's own script replays the SQL payoutd runs, so payoutd / pgbench shows how well payoutd
//! runs the statements it chose. A reference script (post-payout's `payout_one_statement.sql`)
//! does the same durable work as the database runs it best, in one statement and one commit: it
//! shows what the database can do for a payout, and the verdict asks payoutd to reach it.
//!
//! A case warms payoutd up for `--warmup-seconds`, then measures payoutd, pgbench and the bare
//! endpoint for `--seconds` each, split into `--rounds` alternating rounds (payoutd first, then
//! last, ...), so that other work on the machine weighs on all three alike. The load is closed
//! loop: `clients` workers each keep one signed request in flight. Every answer is checked.
//! After each payoutd round the harness waits until the delivery worker has taken every event
//! the round wrote (subaccount without a webhook: each is recorded as skipped), so that one
//! system's backlog does not weigh on the next; the backlog left at the end of a round is
//! reported. pgbench's events are written not yet due, so the worker leaves them alone.
//!
//! Besides latency and throughput, each round records payoutd's peak RSS (`VmHWM`, reset before
//! the round) and the CPU time of the load generator, the server and PostgreSQL.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use diesel_async::AsyncPgConnection;

use crate::Env;
use crate::db::BenchDb;
use crate::load::{Credentials, LoadResult};
use crate::pgbench::{Pgbench, PgbenchResult};
use crate::procfs::CpuUse;
use crate::seed::generate::Generator;
use crate::server::Server;
use prepare::prepare;
use verdicts::report_all;

mod citus;
mod prepare;
mod rounds;
mod verdicts;
mod workload;

/// Options of `api`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Cases to run, comma-separated (they always run in the order of the table in the docs).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = CaseKind::ALL)]
    cases: Vec<CaseKind>,
    /// Requests in flight at once (one API key each), for every case but post-payout.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// The concurrencies post-payout runs at, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [16, 64])]
    payout_clients: Vec<usize>,
    /// Receivers (each with one account) seeded.
    #[arg(long, default_value_t = 10_000)]
    receivers: u64,
    /// Payouts seeded (get-payout reads them; list pages through them).
    #[arg(long, default_value_t = 100_000)]
    payouts: u64,
    /// `limit` of a list request; the deep page is the last one, payouts / page size.
    #[arg(long, default_value_t = 100)]
    page_size: u64,
    /// Measured seconds per case for each of payoutd, pgbench and the bare endpoint.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The measured seconds are split into this many alternating rounds.
    #[arg(long, default_value_t = 2)]
    rounds: u64,
    /// Unmeasured seconds of load on payoutd before each case.
    #[arg(long, default_value_t = 2)]
    warmup_seconds: u64,
    /// pgbench threads (`-j`).
    #[arg(long, default_value_t = 2)]
    pgbench_threads: usize,
    /// Report the verdicts without failing on them (debug smoke runs are not judged).
    #[arg(long)]
    advisory: bool,
    /// The maintenance database of a Citus coordinator, its workers registered (as `cargo
    /// xtask citus` prints it): runs the cases on plain PostgreSQL (`--database-url`), then on
    /// the Citus cluster, and prints Citus' overhead and per-node costs instead of the
    /// verdicts (see [`citus`]).
    #[arg(long)]
    citus_url: Option<String>,
    /// Shards per distributed table of the Citus database (Citus' default is 32).
    #[arg(long, default_value_t = 32)]
    citus_shards: u32,
}

/// What a case sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
enum CaseKind {
    GetReceiver,
    GetPayout,
    List,
    PostReceiver,
    PostPayout,
    BulkPayout,
}

/// Items of one `bulk-payout` request.
const BULK_ITEMS: u64 = 100;

impl CaseKind {
    const ALL: [CaseKind; 6] = [
        CaseKind::GetReceiver,
        CaseKind::GetPayout,
        CaseKind::List,
        CaseKind::PostReceiver,
        CaseKind::PostPayout,
        CaseKind::BulkPayout,
    ];

    fn name(self) -> &'static str {
        match self {
            CaseKind::GetReceiver => "get-receiver",
            CaseKind::GetPayout => "get-payout",
            CaseKind::List => "list",
            CaseKind::PostReceiver => "post-receiver",
            CaseKind::PostPayout => "post-payout",
            CaseKind::BulkPayout => "bulk-payout",
        }
    }

    fn endpoint(self) -> &'static str {
        match self {
            CaseKind::GetReceiver => "GET /api/receiver/<id>",
            CaseKind::GetPayout => "GET /api/payout/<id>",
            CaseKind::List => "GET /api/payout/?subaccount_id=..&limit=..[&lastkey=..]",
            CaseKind::PostReceiver => "POST /api/receiver",
            CaseKind::PostPayout => "POST /api/payout/single",
            CaseKind::BulkPayout => "POST /api/payout/bulk, 100 items",
        }
    }

    /// The pgbench scripts of the case (file names in `crates/bench/sql/`).
    fn scripts(self) -> &'static [&'static str] {
        match self {
            CaseKind::GetReceiver => &["get_receiver"],
            CaseKind::GetPayout => &["get_payout"],
            CaseKind::List => &["list_first", "list_after"],
            CaseKind::PostReceiver => &["post_receiver"],
            CaseKind::PostPayout => &["post_payout"],
            // No script replays payoutd's statements for a bulk request: only the reference.
            CaseKind::BulkPayout => &[],
        }
    }

    /// The case's reference script and the least payoutd / reference throughput asked for (at
    /// the base concurrency): the same durable work as the case's own script, written as the
    /// database runs it best (one statement, one commit). The own script measures how well
    /// payoutd runs the statements it chose; the reference, what the database can do.
    fn reference(self) -> Option<(&'static str, f64)> {
        match self {
            CaseKind::PostPayout => Some(("payout_one_statement", 1.0)),
            // A request and a transaction of the script both create 100 payouts, so the ratio
            // of requests to transactions is the ratio of payouts per second.
            CaseKind::BulkPayout => Some(("payout_set_of_100", 0.7)),
            _ => None,
        }
    }

    /// The least payoutd / pgbench throughput the issue asks for (at the base concurrency).
    fn min_db_ratio(self) -> Option<f64> {
        match self {
            CaseKind::GetReceiver | CaseKind::PostReceiver => Some(0.7),
            CaseKind::PostPayout => Some(0.6),
            CaseKind::GetPayout | CaseKind::List | CaseKind::BulkPayout => None,
        }
    }
}

/// The pgbench scripts, compiled in: `crates/bench/sql/<name>.sql`.
const SCRIPTS: [(&str, &str); 8] = [
    ("get_receiver", include_str!("../../sql/get_receiver.sql")),
    ("get_payout", include_str!("../../sql/get_payout.sql")),
    ("list_first", include_str!("../../sql/list_first.sql")),
    ("list_after", include_str!("../../sql/list_after.sql")),
    ("post_receiver", include_str!("../../sql/post_receiver.sql")),
    ("post_payout", include_str!("../../sql/post_payout.sql")),
    (
        "payout_one_statement",
        include_str!("../../sql/payout_one_statement.sql"),
    ),
    (
        "payout_set_of_100",
        include_str!("../../sql/payout_set_of_100.sql"),
    ),
];

/// Largest acceptable p99 at the base concurrency, ms (closed loop: reported beside it).
const MAX_P99_MS: f64 = 15.0;
/// Open loop: payoutd's p99 may be at most this many times pgbench's (same SQL, same rate)...
const OPEN_LOOP_P99_FACTOR: f64 = 1.5;
/// ...plus this, ms.
const OPEN_LOOP_P99_SLACK_MS: f64 = 1.0;
/// Largest acceptable p50(deep page) / p50(page 1).
const MAX_PAGE_RATIO: f64 = 1.5;
/// Largest acceptable peak RSS of payoutd, MiB.
const MAX_RSS_MIB: f64 = 100.0;
/// The database of the scenario.
const DATABASE: &str = "payoutd_bench_api";
/// Money each currency is funded with, minor units (the largest `payoutd admin fund` takes).
const FUNDING: &str = "1000000000000";
/// The fee template of every currency: fixed, percentage, minimum.
const FEE: (&str, &str, &str) = ("25", "0.5", "50");

/// One measured configuration: what is sent and at what concurrency.
#[derive(Debug, Clone, Copy)]
struct Case {
    kind: CaseKind,
    clients: usize,
}

impl Case {
    fn label(&self) -> String {
        format!("{}@{}", self.kind.name(), self.clients)
    }
}

/// The pages the list case asks for.
#[derive(Debug, Clone)]
struct Pages {
    /// The last page's number.
    deep: u64,
    /// The `lastkey` that leads to it.
    cursor: String,
    /// First payout id and number of items: page 1, deep page.
    expected: [(String, usize); 2],
    /// Kind names: `page-1`, `page-<deep>`.
    kinds: [&'static str; 2],
}

/// What the workloads need to know about the seeded database.
struct Fixture {
    subaccount_id: String,
    generator: Generator,
    /// Tag of the SQL-computable ids.
    tag: String,
    receivers: u64,
    payouts: u64,
    page_size: u64,
    /// Unique to this run, so that new emails and references never collide.
    run_id: String,
    pages: Option<Pages>,
}

/// One system's measurements in a case, over every round.
struct Side<T> {
    result: Option<T>,
    cpu: CpuUse,
}

impl<T> Default for Side<T> {
    fn default() -> Self {
        Self {
            result: None,
            cpu: CpuUse::default(),
        }
    }
}

/// A case and what was measured.
struct Measured {
    case: Case,
    service: Side<LoadResult>,
    pgbench: Side<PgbenchResult>,
    /// GET receiver only: pgbench with `-M simple`, the stack notes' baseline (reported).
    pgbench_simple: Side<PgbenchResult>,
    /// pgbench of the case's reference script ([`CaseKind::reference`]), if it has one.
    pgbench_reference: Side<PgbenchResult>,
    bare: Side<LoadResult>,
    /// Bytes of the bare endpoint's answer (payoutd's mean answer in the warm-up).
    bare_body_bytes: u64,
    /// payoutd's peak RSS over the case's rounds, KiB, and whether it was reset per round.
    peak_rss_kib: Option<u64>,
    rss_reset: bool,
    /// Outbox events still due when a payoutd round ended, at most, and the time to drain them.
    backlog: (i64, Duration),
    /// The open-loop run at half payoutd's closed-loop rate, if the case has one.
    open_loop: Option<OpenLoop>,
    /// On Citus: what the payoutd rounds cost each node, and what the coordinator routed.
    nodes: citus::NodeCosts,
    /// Why a measurement is missing (a pgbench script Citus refuses, say).
    notes: Vec<String>,
}

/// payoutd and pgbench (same SQL) driven at one fixed arrival rate, latency counted from when
/// each request was due.
struct OpenLoop {
    /// Requests (transactions) due per second.
    rate: f64,
    payoutd: LoadResult,
    pgbench: Option<PgbenchResult>,
}

/// What a run measures besides payoutd and pgbench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Everything: the bare endpoint, pgbench `-M simple`, the open loop (plain mode).
    Full,
    /// payoutd and pgbench only, for comparing plain PostgreSQL with Citus.
    Compare,
}

/// Everything a case needs.
struct Harness<'a> {
    env: &'a Env,
    args: &'a Args,
    plan: Plan,
    db: BenchDb,
    conn: AsyncPgConnection,
    /// On Citus: a connection to the database on each worker (for their CPU and counters).
    workers: Vec<citus::Worker>,
    server: Server,
    fixture: Arc<Fixture>,
    keys: Vec<Credentials>,
    pgbench: Option<Pgbench>,
    scripts: Vec<(String, PathBuf)>,
    vars: Vec<(String, String)>,
    next_seq: u64,
}

/// Runs the scenario: seeding, every case, the tables, the JSON file, the verdicts.
pub async fn run(env: &Env, args: &Args) -> anyhow::Result<ExitCode> {
    let cases = cases(args)?;
    if let Some(coordinator_url) = &args.citus_url {
        return citus::run(env, args, coordinator_url, &cases).await;
    }
    let db = BenchDb::new(&env.server_url, DATABASE)?;
    let (measured, setup) = measure_on(env, args, &db, &cases, Plan::Full).await?;
    report_all(env, args, &measured, &setup)
}

/// Creates `db` afresh (on every node, on Citus), measures `cases` on it, and drops it (unless
/// `--keep-databases`).
async fn measure_on(
    env: &Env,
    args: &Args,
    db: &BenchDb,
    cases: &[Case],
    plan: Plan,
) -> anyhow::Result<(Vec<Measured>, Setup)> {
    db.drop_if_exists().await?;
    let outcome = async {
        db.create_on_citus().await?;
        measure_all(env, args, db, cases, plan).await
    }
    .await;
    if env.keep_databases {
        eprintln!("payoutd-bench: kept database {} ({})", db.name, db.url);
    } else if let Err(e) = db.drop_if_exists().await {
        eprintln!("payoutd-bench: warning: could not drop {}: {e:#}", db.name);
    }
    outcome
}

/// The cases to run, in order.
fn cases(args: &Args) -> anyhow::Result<Vec<Case>> {
    anyhow::ensure!(args.clients > 0, "--clients must be at least 1");
    anyhow::ensure!(
        args.payout_clients.iter().all(|&c| c > 0),
        "--payout-clients must be at least 1"
    );
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    anyhow::ensure!(args.receivers > 0, "--receivers must be at least 1");
    anyhow::ensure!(
        args.page_size > 0 && args.page_size <= 100 && args.payouts > args.page_size,
        "--page-size must be 1 to 100 and --payouts more than it"
    );
    let mut kinds = args.cases.clone();
    kinds.sort();
    kinds.dedup();
    let mut cases = Vec::new();
    for kind in kinds {
        if kind == CaseKind::PostPayout {
            cases.extend(
                args.payout_clients
                    .iter()
                    .map(|&clients| Case { kind, clients }),
            );
        } else {
            cases.push(Case {
                kind,
                clients: args.clients,
            });
        }
    }
    Ok(cases)
}

/// How the database was prepared.
struct Setup {
    seed_receivers: Duration,
    seed_payouts: Duration,
    walk_pages: Option<Duration>,
    pgbench: Option<PathBuf>,
    /// The variables the pgbench scripts got (to rerun them by hand on a kept database).
    pgbench_vars: Vec<(String, String)>,
}

async fn measure_all(
    env: &Env,
    args: &Args,
    db: &BenchDb,
    cases: &[Case],
    plan: Plan,
) -> anyhow::Result<(Vec<Measured>, Setup)> {
    let (mut harness, setup) = prepare(env, args, db, cases, plan).await?;
    let mut measured = Vec::new();
    for case in cases {
        eprintln!("payoutd-bench: [{}] measuring", case.label());
        measured.push(harness.measure(*case).await?);
    }
    harness.server.stop().await?;
    Ok((measured, setup))
}
