//! `api --citus-url`: the cases on plain PostgreSQL, then on a Citus cluster, and what Citus
//! costs.
//!
//! Both runs measure payoutd and pgbench (the case's script and reference, through the
//! coordinator on Citus) in the same alternating rounds as plain mode, without the bare endpoint,
//! `-M simple` or the open loop. The Citus database is made on every node (the coordinator's
//! data seeded through the coordinator, as payoutd writes it) with `--citus-shards` shards per
//! distributed table and `citus.enable_stat_counters` on.
//!
//! During each payoutd round on Citus the harness also reads, per request:
//! - the CPU time of the coordinator's PostgreSQL processes and of each worker's (their
//!   `pg_stat_activity` processes and the postmaster's exited children, from `/proc`);
//! - from the coordinator's `citus_stat_counters`: queries routed to one shard, queries that
//!   ran on several shards, and connections to workers opened and reused;
//! - from each worker's `pg_stat_database`: transactions run in the database (statistics are
//!   flushed about once a second, so short rounds read them roughly).
//!
//! The verdicts of plain mode are not judged: one machine cannot show scale-out (every node,
//! payoutd and the load generator share its cores), so the report is Citus' overhead per request
//! and per node, the inputs of a scaling model.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{Value, json};

use super::{Args, Case, DATABASE, Measured, Plan, Setup, measure_on};
use crate::Env;
use crate::db::BenchDb;
use crate::load::LoadResult;
use crate::procfs::PostgresMeter;
use crate::report;

/// A connection to the bench database on one Citus worker.
pub(super) struct Worker {
    label: String,
    conn: AsyncPgConnection,
}

impl Worker {
    /// A connection to `db` on each of its workers (none on plain PostgreSQL).
    pub(super) async fn connect_all(db: &BenchDb) -> anyhow::Result<Vec<Worker>> {
        let mut workers = Vec::new();
        for node in db.workers() {
            let url = node.url_of(&db.name)?;
            let conn = AsyncPgConnection::establish(&url).await.with_context(|| {
                format!("connecting to {} on the worker {}", db.name, node.label)
            })?;
            workers.push(Worker {
                label: node.label.clone(),
                conn,
            });
        }
        Ok(workers)
    }
}

/// The coordinator's Citus counters of the bench database.
#[derive(Debug, Clone, Copy, Default, QueryableByName)]
struct Counters {
    #[diesel(sql_type = BigInt)]
    single_shard: i64,
    #[diesel(sql_type = BigInt)]
    multi_shard: i64,
    #[diesel(sql_type = BigInt)]
    connections_made: i64,
    #[diesel(sql_type = BigInt)]
    connections_reused: i64,
}

async fn counters(conn: &mut AsyncPgConnection) -> anyhow::Result<Counters> {
    diesel::sql_query(
        "SELECT query_execution_single_shard AS single_shard, \
                query_execution_multi_shard AS multi_shard, \
                connection_establishment_succeeded AS connections_made, \
                connection_reused AS connections_reused \
         FROM citus_stat_counters WHERE name = current_database()",
    )
    .get_result(conn)
    .await
    .context("reading citus_stat_counters")
}

#[derive(QueryableByName)]
struct Transactions {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Transactions run so far in the database behind `conn` (committed and rolled back).
async fn transactions(conn: &mut AsyncPgConnection) -> anyhow::Result<i64> {
    let found: Transactions = diesel::sql_query(
        "SELECT (xact_commit + xact_rollback)::bigint AS n FROM pg_stat_database \
         WHERE datname = current_database()",
    )
    .get_result(conn)
    .await
    .context("reading pg_stat_database")?;
    Ok(found.n)
}

/// What payoutd's rounds cost the Citus nodes (all zero on plain PostgreSQL).
#[derive(Debug, Clone, Default)]
pub(super) struct NodeCosts {
    /// Per worker: its label, CPU seconds and transactions run.
    workers: Vec<(String, f64, i64)>,
    /// The coordinator's counters over the rounds.
    counters: Counters,
}

impl NodeCosts {
    /// Adds another round's figures.
    pub(super) fn add(&mut self, other: &NodeCosts) {
        if self.workers.is_empty() {
            self.workers.clone_from(&other.workers);
        } else {
            for (mine, theirs) in self.workers.iter_mut().zip(&other.workers) {
                mine.1 += theirs.1;
                mine.2 += theirs.2;
            }
        }
        let (c, o) = (&mut self.counters, &other.counters);
        c.single_shard += o.single_shard;
        c.multi_shard += o.multi_shard;
        c.connections_made += o.connections_made;
        c.connections_reused += o.connections_reused;
    }

    /// CPU seconds of every worker together.
    fn workers_cpu(&self) -> f64 {
        self.workers.iter().map(|w| w.1).sum()
    }
}

/// Readings of the workers and the coordinator's counters at the start of a round.
pub(super) struct NodeMeter {
    counters: Option<Counters>,
    workers: Vec<(PostgresMeter, i64)>,
}

impl NodeMeter {
    /// Readings now; nothing to read without workers (plain PostgreSQL).
    pub(super) async fn start(
        coordinator: &mut AsyncPgConnection,
        workers: &mut [Worker],
    ) -> anyhow::Result<Self> {
        if workers.is_empty() {
            return Ok(Self {
                counters: None,
                workers: Vec::new(),
            });
        }
        let mut started = Vec::with_capacity(workers.len());
        for worker in workers.iter_mut() {
            let xacts = transactions(&mut worker.conn).await?;
            started.push((PostgresMeter::start(&mut worker.conn).await, xacts));
        }
        Ok(Self {
            counters: Some(counters(coordinator).await?),
            workers: started,
        })
    }

    /// What was spent since [`NodeMeter::start`].
    pub(super) async fn stop(
        self,
        coordinator: &mut AsyncPgConnection,
        workers: &mut [Worker],
    ) -> anyhow::Result<NodeCosts> {
        let Some(before) = self.counters else {
            return Ok(NodeCosts::default());
        };
        let now = counters(coordinator).await?;
        let mut costs = NodeCosts {
            workers: Vec::with_capacity(workers.len()),
            counters: Counters {
                single_shard: now.single_shard - before.single_shard,
                multi_shard: now.multi_shard - before.multi_shard,
                connections_made: now.connections_made - before.connections_made,
                connections_reused: now.connections_reused - before.connections_reused,
            },
        };
        for (worker, (meter, xacts)) in workers.iter_mut().zip(self.workers) {
            let cpu = meter.stop(&mut worker.conn).await;
            let xacts = transactions(&mut worker.conn).await? - xacts;
            costs.workers.push((worker.label.clone(), cpu, xacts));
        }
        Ok(costs)
    }
}

/// Runs the cases on plain PostgreSQL, then on the Citus cluster whose coordinator's
/// maintenance database is `coordinator_url`, and reports the difference.
pub(super) async fn run(
    env: &Env,
    args: &Args,
    coordinator_url: &str,
    cases: &[Case],
) -> anyhow::Result<ExitCode> {
    let plain_db = BenchDb::new(&env.server_url, DATABASE)?;
    let citus_db = BenchDb::citus(coordinator_url, DATABASE, args.citus_shards).await?;
    eprintln!(
        "payoutd-bench: api on plain PostgreSQL first ({})",
        plain_db.url
    );
    let (plain, _) = measure_on(env, args, &plain_db, cases, Plan::Compare).await?;
    let plain_load = report::load_average();
    eprintln!(
        "payoutd-bench: api on Citus ({}, {} workers, {} shards per table)",
        citus_db.url,
        citus_db.workers().len(),
        args.citus_shards
    );
    let (citus, setup) = measure_on(env, args, &citus_db, cases, Plan::Compare).await?;
    let citus_load = report::load_average();
    report_comparison(
        env,
        args,
        &citus_db,
        &plain,
        &citus,
        &setup,
        [plain_load, citus_load],
    )
}

/// Milliseconds per request of `seconds` spent over `requests`.
fn per_request_ms(seconds: f64, requests: u64) -> f64 {
    seconds * 1000.0 / requests.max(1) as f64
}

/// Count per request.
fn per_request(count: i64, requests: u64) -> f64 {
    count as f64 / requests.max(1) as f64
}

fn load_text(load: Option<f64>) -> String {
    load.map_or_else(|| "?".to_owned(), |l| format!("{l:.2}"))
}

/// payoutd's results of a case.
fn service(m: &Measured) -> anyhow::Result<&LoadResult> {
    m.service
        .result
        .as_ref()
        .with_context(|| format!("payoutd was not measured in {}", m.case.label()))
}

/// Prints the three tables (payoutd, pgbench, per-node costs), writes `api-citus.json` and
/// picks the exit code (failure when a request failed or got a wrong answer).
fn report_comparison(
    env: &Env,
    args: &Args,
    citus_db: &BenchDb,
    plain: &[Measured],
    citus: &[Measured],
    setup: &Setup,
    loads: [Option<f64>; 2],
) -> anyhow::Result<ExitCode> {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!();
    println!(
        "api --citus: payoutd on Citus (coordinator + {} workers, {} shards per distributed table) vs payoutd on plain PostgreSQL; {} receivers, {} payouts; {} s per system and case in {} rounds after {} s of warm-up; load average after the plain run {}, after the Citus run {}",
        citus_db.workers().len(),
        args.citus_shards,
        args.receivers,
        args.payouts,
        args.seconds,
        args.rounds,
        args.warmup_seconds,
        load_text(loads[0]),
        load_text(loads[1]),
    );
    println!(
        "NOTE: one machine cannot show scale-out: the coordinator, the workers, payoutd, pgbench and the load generator all share these {cores} cores. The figures below are Citus' overhead per request and its cost per node, the inputs of a scaling model (docs/OPERATIONS.md), not a cluster's capacity. The verdicts of plain mode do not apply."
    );

    println!();
    let header = format!(
        "{:<18}  {:>9}  {:>9}  {:>7}  {:>9}  {:>9}  {:>9}  {:>9}  {:>11}",
        "payoutd",
        "plain r/s",
        "Citus r/s",
        "C/plain",
        "plain p50",
        "plain p99",
        "Citus p50",
        "Citus p99",
        "errors p/C"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let mut bad_answers = 0;
    let mut cases_json = Vec::new();
    for (p, c) in plain.iter().zip(citus) {
        let (ps, cs) = (service(p)?, service(c)?);
        let p_bad = ps.overall.errors + ps.overall.wrong;
        let c_bad = cs.overall.errors + cs.overall.wrong;
        bad_answers += p_bad + c_bad;
        println!(
            "{:<18}  {:>9.0}  {:>9.0}  {:>7.2}  {:>9.3}  {:>9.3}  {:>9.3}  {:>9.3}  {:>11}",
            c.case.label(),
            ps.throughput(),
            cs.throughput(),
            cs.throughput() / ps.throughput().max(1e-9),
            ps.overall.millis_at(0.5),
            ps.overall.millis_at(0.99),
            cs.overall.millis_at(0.5),
            cs.overall.millis_at(0.99),
            format!("{p_bad}/{c_bad}")
        );
        for (which, problem) in [("plain", &ps.first_problem), ("Citus", &cs.first_problem)] {
            if let Some(problem) = problem {
                println!("  first unexpected answer ({which}): {problem}");
            }
        }
    }
    println!("(latencies in ms; closed loop, so latency is about clients / throughput)");

    println!();
    let header = format!(
        "{:<18}  {:<22}  {:>9}  {:>9}  {:>7}  {:>9}  {:>9}",
        "pgbench", "script", "plain tps", "Citus tps", "C/plain", "plain p99", "Citus p99"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let millis = |ms: Option<f64>| ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.3}"));
    for (p, c) in plain.iter().zip(citus) {
        let own = c.case.kind.scripts().join("+");
        let reference = c.case.kind.reference().map(|(name, _)| name.to_owned());
        let sides = [
            (own, &p.pgbench.result, &c.pgbench.result),
            (
                reference.unwrap_or_default(),
                &p.pgbench_reference.result,
                &c.pgbench_reference.result,
            ),
        ];
        for (script, p_pg, c_pg) in sides {
            if script.is_empty() {
                continue;
            }
            let tps = |pg: &Option<crate::pgbench::PgbenchResult>| {
                pg.as_ref()
                    .map_or_else(|| "failed".to_owned(), |pg| format!("{:.0}", pg.tps()))
            };
            let ratio = match (p_pg, c_pg) {
                (Some(p), Some(c)) => format!("{:.2}", c.tps() / p.tps().max(1e-9)),
                _ => "-".to_owned(),
            };
            println!(
                "{:<18}  {:<22}  {:>9}  {:>9}  {:>7}  {:>9}  {:>9}",
                c.case.label(),
                script,
                tps(p_pg),
                tps(c_pg),
                ratio,
                millis(p_pg.as_ref().and_then(|pg| pg.millis_at(0.99))),
                millis(c_pg.as_ref().and_then(|pg| pg.millis_at(0.99))),
            );
        }
        for note in &c.notes {
            println!("  {}: {}", c.case.label(), first_line(note));
        }
    }

    println!();
    println!(
        "CPU ms per payoutd request on Citus (payoutd; coordinator's PostgreSQL; each worker's), what the coordinator routed per request, and plain PostgreSQL's CPU for the same requests:"
    );
    let mut header = format!("{:<18}  {:>7}  {:>7}", "case", "payoutd", "coord");
    let workers: Vec<String> = citus
        .first()
        .map(|m| m.nodes.workers.iter().map(|w| w.0.clone()).collect())
        .unwrap_or_default();
    for (i, _) in workers.iter().enumerate() {
        write!(header, "  {:>7}", format!("w{}", i + 1))?;
    }
    write!(
        header,
        "  {:>6}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>8}  {:>8}",
        "1-shrd", "multi", "conns", "w-xact", "plain-d", "plain-pg", "coord/s", "wrk/s"
    )?;
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for (p, c) in plain.iter().zip(citus) {
        let (ps, cs) = (service(p)?, service(c)?);
        let n = cs.overall.requests();
        let pn = ps.overall.requests();
        let coordinator_ms = per_request_ms(c.service.cpu.postgres, n);
        let workers_ms = per_request_ms(c.nodes.workers_cpu(), n);
        let mut line = format!(
            "{:<18}  {:>7.3}  {:>7.3}",
            c.case.label(),
            per_request_ms(c.service.cpu.server, n),
            coordinator_ms
        );
        for worker in &c.nodes.workers {
            write!(line, "  {:>7.3}", per_request_ms(worker.1, n))?;
        }
        let counters = &c.nodes.counters;
        let worker_xacts: i64 = c.nodes.workers.iter().map(|w| w.2).sum();
        write!(
            line,
            "  {:>6.2}  {:>6.2}  {:>6.2}  {:>6.2}  {:>7.3}  {:>7.3}  {:>8.0}  {:>8.0}",
            per_request(counters.single_shard, n),
            per_request(counters.multi_shard, n),
            per_request(counters.connections_made, n),
            per_request(worker_xacts, n),
            per_request_ms(p.service.cpu.server, pn),
            per_request_ms(p.service.cpu.postgres, pn),
            1000.0 / coordinator_ms.max(1e-9),
            1000.0 / workers_ms.max(1e-9),
        )?;
        println!("{line}");
        cases_json.push(case_json(p, c)?);
    }
    println!(
        "(1-shrd, multi: queries the coordinator routed to one shard / ran on several; conns: connections to workers it opened; w-xact: transactions the workers ran; plain-d, plain-pg: payoutd's and PostgreSQL's CPU per request on plain PostgreSQL; coord/s, wrk/s: requests per second one core of coordinator PostgreSQL, resp. one core spread over the workers, would serve at these costs)"
    );

    let json = json!({
        "scenario": "api-citus",
        "machine": report::machine_json(),
        "note": "one machine cannot show scale-out: every node shares its cores",
        "load_average": { "after_plain": loads[0], "after_citus": loads[1] },
        "config": {
            "cases": citus.iter().map(|m| m.case.label()).collect::<Vec<_>>(),
            "receivers": args.receivers,
            "payouts": args.payouts,
            "page_size": args.page_size,
            "seconds": args.seconds,
            "rounds": args.rounds,
            "warmup_seconds": args.warmup_seconds,
            "citus_workers": workers,
            "citus_shards": args.citus_shards,
        },
        "setup_citus": {
            "seed_receivers_s": setup.seed_receivers.as_secs_f64(),
            "seed_payouts_s": setup.seed_payouts.as_secs_f64(),
        },
        "cases": cases_json,
    });
    let path = env.out_dir.join("api-citus.json");
    report::write_json(&path, &json)?;
    println!("\nresults: {}", path.display());

    if bad_answers > 0 {
        eprintln!("payoutd-bench: {bad_answers} requests failed or got a wrong answer");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The JSON of one side of a case.
fn side_json(m: &Measured) -> anyhow::Result<Value> {
    let s = service(m)?;
    let n = s.overall.requests();
    let pg = |result: &Option<crate::pgbench::PgbenchResult>| {
        result.as_ref().map(|pg| {
            json!({
                "tps": pg.tps(),
                "transactions": pg.transactions,
                "failed": pg.failed,
                "p50_ms": pg.millis_at(0.5),
                "p99_ms": pg.millis_at(0.99),
            })
        })
    };
    Ok(json!({
        "payoutd": report::load_json(s),
        "cpu_ms_per_request": {
            "payoutd": per_request_ms(m.service.cpu.server, n),
            "postgres_or_coordinator": per_request_ms(m.service.cpu.postgres, n),
            "load_generator": per_request_ms(m.service.cpu.client, n),
            "workers": m.nodes.workers.iter()
                .map(|w| json!({ "node": w.0, "cpu_ms": per_request_ms(w.1, n), "transactions": per_request(w.2, n) }))
                .collect::<Vec<_>>(),
        },
        "per_request": {
            "single_shard_queries": per_request(m.nodes.counters.single_shard, n),
            "multi_shard_queries": per_request(m.nodes.counters.multi_shard, n),
            "worker_connections_opened": per_request(m.nodes.counters.connections_made, n),
            "worker_connections_reused": per_request(m.nodes.counters.connections_reused, n),
        },
        "pgbench": pg(&m.pgbench.result),
        "pgbench_reference": pg(&m.pgbench_reference.result),
        "notes": m.notes,
    }))
}

fn case_json(plain: &Measured, citus: &Measured) -> anyhow::Result<Value> {
    let (p, c) = (service(plain)?, service(citus)?);
    Ok(json!({
        "case": citus.case.label(),
        "endpoint": citus.case.kind.endpoint(),
        "clients": citus.case.clients,
        "citus_over_plain_throughput": c.throughput() / p.throughput().max(1e-9),
        "plain": side_json(plain)?,
        "citus": side_json(citus)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::{Counters, NodeCosts, per_request, per_request_ms};

    #[test]
    fn rounds_add_up_per_worker() {
        let round = NodeCosts {
            workers: vec![("a".to_owned(), 1.5, 10), ("b".to_owned(), 0.5, 4)],
            counters: Counters {
                single_shard: 7,
                multi_shard: 1,
                connections_made: 2,
                connections_reused: 3,
            },
        };
        let mut total = NodeCosts::default();
        total.add(&round);
        total.add(&round);
        assert_eq!(total.workers.len(), 2);
        assert!((total.workers[0].1 - 3.0).abs() < 1e-9);
        assert_eq!(total.workers[1].2, 8);
        assert_eq!(total.counters.single_shard, 14);
        assert!((total.workers_cpu() - 4.0).abs() < 1e-9);
        // Plain PostgreSQL: nothing measured, nothing added.
        let mut plain = NodeCosts::default();
        plain.add(&NodeCosts::default());
        assert!(plain.workers.is_empty());
    }

    #[test]
    fn per_request_figures_survive_zero_requests() {
        assert!((per_request_ms(2.0, 1000) - 2.0).abs() < 1e-9);
        assert!((per_request(5, 0) - 5.0).abs() < 1e-9);
    }
}
