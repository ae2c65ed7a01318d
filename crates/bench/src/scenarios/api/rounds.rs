//! Measuring one case: the warm-up, the alternating rounds of payoutd, pgbench and the bare
//! endpoint (each with its CPU and memory), and the open loop.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::AsyncPgConnection;

use super::citus;
use super::workload::{ApiWorkload, Bare};
use super::{Case, CaseKind, Harness, Measured, OpenLoop, Plan, Side};
use crate::load::{LoadConfig, LoadResult};
use crate::pgbench::{PgbenchResult, PgbenchRun, Protocol};
use crate::procfs::{CpuMeter, CpuUse};
use crate::{bare, load, procfs};

#[derive(QueryableByName)]
pub(super) struct Due {
    #[diesel(sql_type = BigInt)]
    due: i64,
}

/// Outbox events due now and still pending.
pub(super) async fn due_events(conn: &mut AsyncPgConnection) -> anyhow::Result<i64> {
    use diesel_async::RunQueryDsl;
    let due: Due = diesel::sql_query(
        "SELECT count(*) AS due FROM outbox_events WHERE status = 'pending' AND next_attempt_at <= now()",
    )
    .get_result(conn)
    .await
    .context("counting due outbox events")?;
    Ok(due.due)
}

/// Waits (up to 5 s) until no pgbench connection is left.
pub(super) async fn pgbench_gone(conn: &mut AsyncPgConnection) -> anyhow::Result<()> {
    use diesel_async::RunQueryDsl;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let left: Due = diesel::sql_query(
            "SELECT count(*) AS due FROM pg_stat_activity WHERE application_name = 'pgbench'",
        )
        .get_result(conn)
        .await
        .context("counting pgbench connections")?;
        if left.due == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Which system a round measures.
#[derive(Debug, Clone, Copy)]
pub(super) enum System {
    Payoutd,
    Pgbench,
    Bare,
}

impl Harness<'_> {
    /// A block of sequence numbers no other run uses (new emails, references, keys).
    pub(super) fn seq_base(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq << 36
    }

    pub(super) fn load_config(
        &mut self,
        base_url: &str,
        clients: usize,
        duration: Duration,
    ) -> LoadConfig {
        LoadConfig {
            base_url: base_url.to_owned(),
            concurrency: clients,
            requests: u64::MAX,
            duration: Some(duration),
            first_seq: self.seq_base(),
            keys: self.keys.clone(),
            rate: None,
        }
    }

    /// Waits until the delivery worker has taken every due event; returns how many were due at
    /// first and how long it took.
    pub(super) async fn drain(&mut self) -> anyhow::Result<(i64, Duration)> {
        let started = Instant::now();
        let first = due_events(&mut self.conn).await?;
        let mut due = first;
        while due > 0 {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(120),
                "{due} outbox events still due after 120 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
            due = due_events(&mut self.conn).await?;
        }
        Ok((first, started.elapsed()))
    }

    pub(super) async fn measure(&mut self, case: Case) -> anyhow::Result<Measured> {
        let args = self.args;
        let workload = Arc::new(ApiWorkload {
            case,
            fixture: Arc::clone(&self.fixture),
        });
        let base_url = self.server.base_url.clone();
        let warmup = Duration::from_secs(args.warmup_seconds);
        let mut warm = None;
        if !warmup.is_zero() {
            let config = self.load_config(&base_url, case.clients, warmup);
            warm = Some(load::run(Arc::clone(&workload), &config).await?);
            self.drain().await?;
        }
        let body_bytes = warm.as_ref().map_or(256, |w| w.overall.mean_body_bytes());
        let bare_log = self
            .env
            .out_dir
            .join(format!("bare-http-{}.log", case.label()));
        let bare_server = match self.plan {
            Plan::Full => Some(bare::start(body_bytes, &bare_log).await?),
            Plan::Compare => None,
        };
        let round = Duration::from_secs(args.seconds).div_f64(args.rounds as f64);
        let pid = self.server.pid();
        let mut measured = Measured {
            case,
            service: Side::default(),
            pgbench: Side::default(),
            pgbench_simple: Side::default(),
            pgbench_reference: Side::default(),
            bare: Side::default(),
            bare_body_bytes: body_bytes,
            peak_rss_kib: None,
            rss_reset: true,
            backlog: (0, Duration::ZERO),
            open_loop: None,
            nodes: citus::NodeCosts::default(),
            notes: Vec::new(),
        };
        for r in 0..args.rounds {
            let order = if r % 2 == 0 {
                [System::Payoutd, System::Pgbench, System::Bare]
            } else {
                [System::Bare, System::Pgbench, System::Payoutd]
            };
            for system in order {
                match system {
                    System::Payoutd => {
                        if let Some(pid) = pid {
                            measured.rss_reset &= procfs::reset_peak_rss(pid);
                        }
                        let config = self.load_config(&base_url, case.clients, round);
                        let nodes =
                            citus::NodeMeter::start(&mut self.conn, &mut self.workers).await?;
                        let meter = CpuMeter::start(&mut self.conn, pid).await;
                        let result = load::run(Arc::clone(&workload), &config).await?;
                        let cpu = meter.stop(&mut self.conn, Instant::now()).await;
                        measured
                            .nodes
                            .add(&nodes.stop(&mut self.conn, &mut self.workers).await?);
                        let peak = pid.and_then(|pid| procfs::status_kib(pid, "VmHWM"));
                        measured.peak_rss_kib = measured.peak_rss_kib.max(peak);
                        let (due, took) = self.drain().await?;
                        measured.backlog = (measured.backlog.0.max(due), measured.backlog.1 + took);
                        eprintln!(
                            "payoutd-bench: [{}] round {}/{}: payoutd {:.0} req/s, p99 {:.2} ms, peak RSS {} MiB, {due} events due after it",
                            case.label(),
                            r + 1,
                            args.rounds,
                            result.throughput(),
                            result.overall.millis_at(0.99),
                            peak.map_or_else(
                                || "?".to_owned(),
                                |kib| format!("{:.1}", kib as f64 / 1024.0)
                            )
                        );
                        add_load(&mut measured.service, result, &cpu)?;
                    }
                    System::Pgbench => {
                        // The baseline for GET receiver is pgbench's select by primary
                        // key; the stack notes measured it with pgbench's default protocol,
                        // so that is measured too, for reference.
                        let protocols: &[Protocol] =
                            if case.kind == CaseKind::GetReceiver && self.plan == Plan::Full {
                                &[Protocol::Prepared, Protocol::Simple]
                            } else {
                                &[Protocol::Prepared]
                            };
                        for &protocol in protocols {
                            let scripts = case.kind.scripts();
                            if scripts.is_empty() {
                                continue;
                            }
                            let Some((result, cpu)) = self
                                .pgbench_round(case, scripts, "", round, r, protocol, None)
                                .await
                                .or_else(|e| self.tolerate_on_citus(e, &mut measured.notes))?
                            else {
                                continue;
                            };
                            eprintln!(
                                "payoutd-bench: [{}] round {}/{}: pgbench -M {} {:.0} tps",
                                case.label(),
                                r + 1,
                                args.rounds,
                                protocol.name(),
                                result.tps()
                            );
                            let side = match protocol {
                                Protocol::Prepared => &mut measured.pgbench,
                                Protocol::Simple => &mut measured.pgbench_simple,
                            };
                            match &mut side.result {
                                Some(total) => total.merge(&result)?,
                                None => side.result = Some(result),
                            }
                            side.cpu.add(&cpu);
                        }
                        if let Some((reference, _)) = case.kind.reference() {
                            let Some((result, cpu)) = self
                                .pgbench_round(
                                    case,
                                    &[reference],
                                    "-reference",
                                    round,
                                    r,
                                    Protocol::Prepared,
                                    None,
                                )
                                .await
                                .or_else(|e| self.tolerate_on_citus(e, &mut measured.notes))?
                            else {
                                continue;
                            };
                            eprintln!(
                                "payoutd-bench: [{}] round {}/{}: pgbench {reference} {:.0} tps",
                                case.label(),
                                r + 1,
                                args.rounds,
                                result.tps()
                            );
                            let side = &mut measured.pgbench_reference;
                            match &mut side.result {
                                Some(total) => total.merge(&result)?,
                                None => side.result = Some(result),
                            }
                            side.cpu.add(&cpu);
                        }
                    }
                    System::Bare => {
                        let Some(bare_server) = &bare_server else {
                            continue;
                        };
                        let config = self.load_config(&bare_server.base_url, case.clients, round);
                        let meter = CpuMeter::start(&mut self.conn, bare_server.pid()).await;
                        let result =
                            load::run(Arc::new(Bare(Arc::clone(&workload))), &config).await?;
                        let cpu = meter.stop(&mut self.conn, Instant::now()).await;
                        eprintln!(
                            "payoutd-bench: [{}] round {}/{}: bare endpoint {:.0} req/s",
                            case.label(),
                            r + 1,
                            args.rounds,
                            result.throughput()
                        );
                        add_load(&mut measured.bare, result, &cpu)?;
                    }
                }
            }
        }
        if let Some(bare_server) = bare_server {
            bare_server.stop().await?;
        }
        if self.plan == Plan::Full {
            measured.open_loop = self.open_loop(case, &workload, &measured, round).await?;
        }
        Ok(measured)
    }

    /// On Citus, a pgbench run that failed (a statement of a script that Citus refuses) is
    /// noted and left out, so that the other measurements still come; elsewhere it is an error.
    pub(super) fn tolerate_on_citus<T>(
        &self,
        error: anyhow::Error,
        notes: &mut Vec<String>,
    ) -> anyhow::Result<Option<T>> {
        if !self.db.is_citus() {
            return Err(error);
        }
        let note = format!("{error:#}");
        eprintln!("payoutd-bench: warning: on Citus: {note}");
        if !notes.contains(&note) {
            notes.push(note);
        }
        Ok(None)
    }

    /// The open-loop latency check of a case at the base concurrency with a script of its own:
    /// payoutd, then pgbench (same SQL, `--rate`), each at half payoutd's closed-loop rate in
    /// this run, for one round's time. In a closed loop latency is just clients / throughput;
    /// at a fixed arrival rate it shows what a request waits.
    pub(super) async fn open_loop(
        &mut self,
        case: Case,
        workload: &Arc<ApiWorkload>,
        measured: &Measured,
        duration: Duration,
    ) -> anyhow::Result<Option<OpenLoop>> {
        let scripts = case.kind.scripts();
        let closed = measured.service.result.as_ref().map(LoadResult::throughput);
        let (true, false, Some(closed)) = (
            case.clients == self.args.clients,
            scripts.is_empty(),
            closed,
        ) else {
            return Ok(None);
        };
        let rate = (closed / 2.0).max(1.0);
        let base_url = self.server.base_url.clone();
        let mut config = self.load_config(&base_url, case.clients, duration);
        config.rate = Some(rate);
        let payoutd = load::run(Arc::clone(workload), &config).await?;
        self.drain().await?;
        let pgbench = self
            .pgbench_round(
                case,
                scripts,
                "-open-loop",
                duration,
                0,
                Protocol::Prepared,
                Some(rate),
            )
            .await?
            .map(|(result, _)| result);
        eprintln!(
            "payoutd-bench: [{}] open loop at {rate:.0}/s: payoutd p99 {:.2} ms{}",
            case.label(),
            payoutd.overall.millis_at(0.99),
            pgbench
                .as_ref()
                .and_then(|pg| pg.millis_at(0.99))
                .map_or_else(String::new, |p99| format!(", pgbench p99 {p99:.2} ms"))
        );
        Ok(Some(OpenLoop {
            rate,
            payoutd,
            pgbench,
        }))
    }

    /// One pgbench round of `scripts` (names in `crates/bench/sql/`) at the case's concurrency,
    /// with its CPU use; `tag` tells the log files of different scripts apart.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn pgbench_round(
        &mut self,
        case: Case,
        scripts: &[&str],
        tag: &str,
        duration: Duration,
        round: u64,
        protocol: Protocol,
        rate: Option<f64>,
    ) -> anyhow::Result<Option<(PgbenchResult, CpuUse)>> {
        let Some(pgbench) = self.pgbench.clone() else {
            return Ok(None);
        };
        let scripts: Vec<(PathBuf, u32)> = scripts
            .iter()
            .filter_map(|name| {
                self.scripts
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, path)| (path.clone(), 1))
            })
            .collect();
        let suffix = match protocol {
            Protocol::Prepared => "",
            Protocol::Simple => "-simple",
        };
        let log = self.env.out_dir.join(format!(
            "pgbench-{}{tag}-{}{suffix}.log",
            case.label(),
            round + 1
        ));
        let url = self.db.url.clone();
        let vars = self.vars.clone();
        let run = PgbenchRun {
            url: &url,
            scripts: &scripts,
            clients: case.clients,
            threads: self.args.pgbench_threads,
            duration,
            vars: &vars,
            log: &log,
            protocol,
            rate,
        };
        let meter = CpuMeter::start(&mut self.conn, None).await;
        let result = pgbench.run(&run).await?;
        let ended = Instant::now();
        // pgbench's backends exit after it does; their CPU time is counted once the postmaster
        // has reaped them.
        pgbench_gone(&mut self.conn).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let cpu = meter.stop(&mut self.conn, ended).await;
        Ok(Some((result, cpu)))
    }
}

pub(super) fn add_load(
    side: &mut Side<LoadResult>,
    result: LoadResult,
    cpu: &CpuUse,
) -> anyhow::Result<()> {
    match &mut side.result {
        Some(total) => total.merge(result)?,
        None => side.result = Some(result),
    }
    side.cpu.add(cpu);
    Ok(())
}
