//! `delivery`: webhook delivery throughput and the delay from commit to delivery.
//!
//! One fresh database `payoutd_bench_delivery` (migrated by payoutd), one subaccount, and a
//! webhook receiver inside this process ([`crate::receiver`]: hyper on `127.0.0.1:0`, `200` at
//! once, arrival time per `webhook-id`, a sample of signatures checked with an HMAC of its own)
//! set as the subaccount's postback URL with `payoutd admin set-webhook`. Then:
//!
//! 1. **Backlog (throughput).** Before the server starts, `--events` outbox events (default
//!    20 000) are inserted straight into `outbox_events`, as the stores write them: a
//!    `receiverCreated` payload, a fresh object id each (sequence 1, with its
//!    `outbox_sequences` row), `pending`, due now. Then a release `payoutd serve` starts (default
//!    delivery settings) and the clock runs from its spawn until the receiver has every event.
//!    events/s = events / that time; it must be at least `--min-throughput` (1 000).
//! 2. **Steady (latency).** With the server running and idle, events are inserted one per
//!    transaction on an open-loop schedule, `--rate` per second (300) for `--duration` seconds
//!    (20), taken in turn by 4 connections so that a slow commit does not hold up the next
//!    event. The instant each INSERT's commit returns is recorded by event id; latency =
//!    arrival at the receiver − commit. p50 and p99 must be at most `--max-latency-ms` (500).
//!
//! Both phases check that every event arrived exactly once and that the store recorded every
//! event `delivered` after one attempt. `--advisory` reports the verdicts without failing on
//! them (debug smoke runs).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Double, Nullable, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::Env;
use crate::db::BenchDb;
use crate::receiver::{Arrival, Receiver, ReceiverStats};
use crate::report;
use crate::server::{Payoutd, new_master_key};

/// Options of `delivery`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Events in the backlog delivered for the throughput figure.
    #[arg(long, default_value_t = 20_000)]
    events: u64,
    /// Events per second inserted during the latency phase (open loop, one transaction each).
    #[arg(long, default_value_t = 300.0)]
    rate: f64,
    /// Seconds the latency phase inserts for.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Lowest acceptable throughput, events per second.
    #[arg(long, default_value_t = 1000.0)]
    min_throughput: f64,
    /// Highest acceptable p50 and p99 of commit → delivery, milliseconds.
    #[arg(long, default_value_t = 500.0)]
    max_latency_ms: f64,
    /// Report the verdicts without failing on them (debug smoke runs are not judged).
    #[arg(long)]
    advisory: bool,
}

/// The database of the scenario.
const DATABASE: &str = "payoutd_bench_delivery";
/// The receiver checks the signature of the first request and of every this-many-th.
const SIGNATURE_SAMPLE: u64 = 50;
/// Rows per backlog INSERT.
const BATCH: usize = 2_000;
/// Connections the latency phase inserts on, taking events in turn: each event is still its
/// own transaction, but one slow commit does not hold up the schedule.
const INSERT_CONNECTIONS: u64 = 4;
/// A wait fails when nothing progresses for this long.
const STALL: Duration = Duration::from_secs(30);
/// After the last event arrived and was recorded: time for a duplicate to show up.
const GRACE: Duration = Duration::from_millis(500);
/// Environment variables that change delivery; passed through from the bench's environment
/// when set there, and reported.
const SERVER_KNOBS: [&str; 5] = [
    "PAYOUT_DELIVERY_POLL_MS",
    "PAYOUT_DELIVERY_BATCH",
    "PAYOUT_WEBHOOK_TIMEOUT_MS",
    "PAYOUT_DB_POOL_SIZE",
    "PAYOUT_WORKERS",
];

/// Events as the stores write them (`adapters-postgres` `outbox::insert_events`): one
/// `outbox_sequences` row per object and the event with its sequence in the payload, which is
/// a `receiverCreated` body (`domain::events::OutboxEvent::receiver`).
const INSERT_EVENTS: &str = "\
WITH ev AS (
  SELECT * FROM unnest($2::uuid[], $3::uuid[], $4::timestamptz[]) AS t(id, object_id, at)
), seq AS (
  INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence)
  SELECT object_id, $1, 1 FROM ev
)
INSERT INTO outbox_events
  (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at)
SELECT id, $1, object_id, 1, 'receiverCreated',
  jsonb_build_object(
    'event', 'receiverCreated', 'event_id', id::text, 'receiver_id', object_id::text,
    'subaccount_id', $1::text, 'subccount_id', $1::text, 'status', 'pending',
    'kyc_status', 'pending', 'timestamp', (extract(epoch FROM at) * 1000)::bigint,
    'sequence', 1),
  at, at
FROM ev";

/// Inserts one event per id (one statement, so one transaction).
async fn insert_events(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    ids: &[Uuid],
    objects: &[Uuid],
    at: &[DateTime<Utc>],
) -> anyhow::Result<()> {
    diesel::sql_query(INSERT_EVENTS)
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Array<SqlUuid>, _>(objects)
        .bind::<Array<Timestamptz>, _>(at)
        .execute(conn)
        .await
        .context("inserting outbox events")?;
    Ok(())
}

#[derive(QueryableByName, Debug, Clone, Copy, Default)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    pending: i64,
    #[diesel(sql_type = BigInt)]
    delivered: i64,
    #[diesel(sql_type = BigInt)]
    exhausted: i64,
    #[diesel(sql_type = BigInt)]
    attempts: i64,
    #[diesel(sql_type = BigInt)]
    attempts_not_delivered: i64,
}

async fn counts(conn: &mut AsyncPgConnection) -> anyhow::Result<Counts> {
    diesel::sql_query(
        "SELECT count(*) FILTER (WHERE status = 'pending') AS pending, \
                count(*) FILTER (WHERE status = 'delivered') AS delivered, \
                count(*) FILTER (WHERE status = 'exhausted') AS exhausted, \
                (SELECT count(*) FROM webhook_attempts) AS attempts, \
                (SELECT count(*) FROM webhook_attempts WHERE outcome <> 'delivered') \
                  AS attempts_not_delivered \
         FROM outbox_events",
    )
    .get_result::<Counts>(conn)
    .await
    .context("counting outbox events")
}

/// Waits until no event is pending (every attempt recorded); returns the counts then.
async fn wait_recorded(conn: &mut AsyncPgConnection) -> anyhow::Result<Counts> {
    let mut last = counts(conn).await?;
    let mut progress = Instant::now();
    while last.pending > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = counts(conn).await?;
        if now.pending < last.pending {
            progress = Instant::now();
        } else if progress.elapsed() > STALL {
            anyhow::bail!(
                "{} events still pending, none recorded for {STALL:?}",
                now.pending
            );
        }
        last = now;
    }
    Ok(last)
}

/// Server-side view of a set of events, from `webhook_attempts` (milliseconds): from the
/// event's `created_at` to the attempt's start, and the sender's own latency.
#[derive(QueryableByName, Debug, Clone, Copy, Default)]
struct Breakdown {
    #[diesel(sql_type = Nullable<Double>)]
    wait_p50: Option<f64>,
    #[diesel(sql_type = Nullable<Double>)]
    wait_p99: Option<f64>,
    #[diesel(sql_type = Nullable<Double>)]
    send_p50: Option<f64>,
    #[diesel(sql_type = Nullable<Double>)]
    send_p99: Option<f64>,
}

async fn breakdown(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> anyhow::Result<Breakdown> {
    diesel::sql_query(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY w) AS wait_p50, \
                percentile_cont(0.99) WITHIN GROUP (ORDER BY w) AS wait_p99, \
                percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS send_p50, \
                percentile_cont(0.99) WITHIN GROUP (ORDER BY s) AS send_p99 \
         FROM (SELECT (extract(epoch FROM a.attempted_at - e.created_at) * 1000)::float8 AS w, \
                      a.latency_ms::float8 AS s \
               FROM outbox_events e JOIN webhook_attempts a ON a.event_id = e.id \
               WHERE e.id = ANY($1)) t",
    )
    .bind::<Array<SqlUuid>, _>(ids)
    .get_result::<Breakdown>(conn)
    .await
    .context("reading webhook_attempts")
}

/// Arrivals of one phase's events, checked.
#[derive(Debug, Default)]
struct Tally {
    arrived: u64,
    missing: u64,
    duplicates: u64,
}

fn tally(arrivals: &[Option<Arrival>]) -> Tally {
    let mut tally = Tally::default();
    for arrival in arrivals {
        match arrival {
            Some(a) => {
                tally.arrived += 1;
                tally.duplicates += u64::from(a.count.saturating_sub(1));
            }
            None => tally.missing += 1,
        }
    }
    tally
}

/// The throughput phase.
struct Backlog {
    events: u64,
    insert: Duration,
    tally: Tally,
    /// From the server's spawn.
    ready: Duration,
    first: Duration,
    last: Duration,
    recorded: Duration,
    breakdown: Breakdown,
}

impl Backlog {
    /// Events per second from the server's spawn to the last arrival (the verdict's figure).
    fn throughput(&self) -> f64 {
        self.events as f64 / self.last.as_secs_f64().max(1e-9)
    }

    /// Events per second from the first arrival to the last.
    fn drain_rate(&self) -> f64 {
        self.events.saturating_sub(1) as f64 / (self.last - self.first).as_secs_f64().max(1e-9)
    }
}

/// The latency phase.
struct Steady {
    events: u64,
    /// From the first commit to the last.
    span: Duration,
    tally: Tally,
    /// Commit → arrival, microseconds.
    latency: Histogram<u64>,
    /// The INSERT's round trip, microseconds.
    commit: Histogram<u64>,
    /// How late each insert started against its scheduled instant, microseconds.
    behind: Histogram<u64>,
    /// Arrivals seen before the commit returned to the bench (counted as 0 µs).
    early: u64,
    breakdown: Breakdown,
}

impl Steady {
    fn achieved_rate(&self) -> f64 {
        self.events.saturating_sub(1) as f64 / self.span.as_secs_f64().max(1e-9)
    }
}

struct Measured {
    backlog: Backlog,
    steady: Steady,
    receiver: ReceiverStats,
    counts: Counts,
    knobs: BTreeMap<&'static str, String>,
}

/// Runs the scenario: both phases, the table, the JSON file, the verdict.
pub async fn run(env: &Env, args: &Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.events > 0, "--events must be at least 1");
    anyhow::ensure!(
        args.rate > 0.0 && args.duration > 0.0 && args.rate * args.duration >= 1.0,
        "--rate and --duration must give at least one event"
    );
    let db = BenchDb::new(&env.server_url, DATABASE)?;
    db.drop_if_exists().await?;
    let outcome = measure(env, args, &db).await;
    if env.keep_databases {
        eprintln!("payoutd-bench: kept database {} ({})", db.name, db.url);
    } else if let Err(e) = db.drop_if_exists().await {
        eprintln!("payoutd-bench: warning: could not drop {}: {e:#}", db.name);
    }
    let measured = outcome?;
    report_all(env, args, &measured)
}

/// A script that runs payoutd with `PAYOUT_WEBHOOK_ALLOW_PRIVATE=true` (the receiver is on
/// loopback) and otherwise exactly as [`Payoutd`] would. `exec` keeps the pid, so stopping
/// the server still signals payoutd itself.
fn allow_private_wrapper(env: &Env) -> anyhow::Result<PathBuf> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;

    let bin = std::fs::canonicalize(&env.payoutd)
        .with_context(|| format!("resolving {}", env.payoutd.display()))?;
    let bin = bin.to_str().context("the payoutd path is not UTF-8")?;
    let path = std::path::absolute(env.out_dir.join("payoutd-delivery.sh"))?;
    let script = format!(
        "#!/bin/sh\n\
         # Written by payoutd-bench (scenario delivery): the webhook receiver is on loopback.\n\
         PAYOUT_WEBHOOK_ALLOW_PRIVATE=true\n\
         export PAYOUT_WEBHOOK_ALLOW_PRIVATE\n\
         exec '{}' \"$@\"\n",
        bin.replace('\'', r"'\''")
    );
    let _ = std::fs::remove_file(&path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .and_then(|mut file| file.write_all(script.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

fn field(object: &Value, name: &str) -> anyhow::Result<String> {
    object
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("payoutd printed no `{name}` in {object}"))
}

async fn measure(env: &Env, args: &Args, db: &BenchDb) -> anyhow::Result<Measured> {
    let master_key = new_master_key();
    let payoutd = Payoutd::new(&env.payoutd, &db.url, &master_key);
    eprintln!(
        "payoutd-bench: [delivery] creating and migrating {}",
        db.name
    );
    payoutd.migrate().await?;
    let created = payoutd
        .admin(&[
            "create-subaccount",
            "--name",
            "Bench delivery",
            "--email",
            "bench@example.com",
        ])
        .await?;
    let subaccount_id = field(&created, "subaccount_id")?;
    let subaccount = Uuid::parse_str(&subaccount_id)?;

    let receiver = Receiver::start(SIGNATURE_SAMPLE).await?;
    let hook = payoutd
        .admin(&[
            "set-webhook",
            "--subaccount",
            &subaccount_id,
            "--url",
            &receiver.url,
        ])
        .await?;
    receiver.set_secret(&field(&hook, "webhook_secret")?)?;
    eprintln!("payoutd-bench: [delivery] receiver at {}", receiver.url);

    // 1. Backlog, inserted while no server runs.
    let n = usize::try_from(args.events)?;
    eprintln!("payoutd-bench: [delivery] inserting a backlog of {n} events");
    let mut conn = db.connect().await?;
    let backlog_ids: Vec<Uuid> = (0..n).map(|_| Uuid::new_v4()).collect();
    let inserting = Instant::now();
    let base = Utc::now() - chrono::Duration::microseconds(i64::try_from(n)? + 1);
    for (chunk_index, ids) in backlog_ids.chunks(BATCH).enumerate() {
        let objects: Vec<Uuid> = ids.iter().map(|_| Uuid::new_v4()).collect();
        // Distinct due times, in insertion order, all in the past.
        let at: Vec<DateTime<Utc>> = (0..ids.len())
            .map(|i| base + chrono::Duration::microseconds((chunk_index * BATCH + i) as i64))
            .collect();
        insert_events(&mut conn, subaccount, ids, &objects, &at).await?;
    }
    let insert = inserting.elapsed();
    diesel_async::SimpleAsyncConnection::batch_execute(
        &mut conn,
        "VACUUM (ANALYZE) outbox_events, outbox_sequences",
    )
    .await
    .context("VACUUM ANALYZE")?;

    let knobs: BTreeMap<&'static str, String> = SERVER_KNOBS
        .iter()
        .filter_map(|name| std::env::var(name).ok().map(|value| (*name, value)))
        .collect();
    for (name, value) in &knobs {
        eprintln!("payoutd-bench: [delivery] note: {name}={value} from the environment");
    }
    let serve = Payoutd::new(&allow_private_wrapper(env)?, &db.url, &master_key);
    let log = env.out_dir.join(format!("payoutd-delivery-{n}.log"));
    eprintln!("payoutd-bench: [delivery] starting payoutd serve; measuring the drain");
    let spawned = Instant::now();
    let server = serve.serve(&log).await?;
    let ready = spawned.elapsed();
    receiver.wait_for_distinct(n, STALL).await?;
    wait_recorded(&mut conn).await?;
    let recorded = spawned.elapsed();
    tokio::time::sleep(GRACE).await;
    let arrivals = receiver.arrivals_of(&backlog_ids);
    let since_spawn = |a: &Option<Arrival>| a.map(|a| a.first.saturating_duration_since(spawned));
    let first = arrivals
        .iter()
        .filter_map(since_spawn)
        .min()
        .unwrap_or_default();
    let last = arrivals
        .iter()
        .filter_map(since_spawn)
        .max()
        .unwrap_or_default();
    let backlog = Backlog {
        events: args.events,
        insert,
        tally: tally(&arrivals),
        ready,
        first,
        last,
        recorded,
        breakdown: breakdown(&mut conn, &backlog_ids).await?,
    };
    eprintln!(
        "payoutd-bench: [delivery] backlog: {} events in {:.2} s from spawn: {:.0} events/s",
        backlog.events,
        backlog.last.as_secs_f64(),
        backlog.throughput()
    );

    // 2. Steady inserts into the running, idle server.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let steady = steady(args, db, &mut conn, subaccount, &receiver, n).await?;
    eprintln!(
        "payoutd-bench: [delivery] steady: {} events at {:.0}/s, p50 {:.1} ms, p99 {:.1} ms",
        steady.events,
        steady.achieved_rate(),
        millis(&steady.latency, 0.5),
        millis(&steady.latency, 0.99)
    );
    server.stop().await?;
    let counts = counts(&mut conn).await?;
    Ok(Measured {
        backlog,
        steady,
        receiver: receiver.stats(),
        counts,
        knobs,
    })
}

/// One inserted event of the latency phase.
struct Inserted {
    index: u64,
    id: Uuid,
    committed: Instant,
    /// The INSERT's round trip.
    round_trip: Duration,
    /// How late it started against its schedule.
    behind: Duration,
}

/// Inserts events `first, first + step, ...` below `count` on connection `conn`, each in its
/// own transaction, event `i` at `start + i / rate`.
async fn insert_on_schedule(
    mut conn: AsyncPgConnection,
    subaccount: Uuid,
    (first, step, count): (u64, u64, u64),
    start: tokio::time::Instant,
    rate: f64,
) -> anyhow::Result<Vec<Inserted>> {
    let mut done = Vec::new();
    for index in (first..count).step_by(usize::try_from(step)?) {
        let due = start + Duration::from_secs_f64(index as f64 / rate);
        tokio::time::sleep_until(due).await;
        let behind = tokio::time::Instant::now().saturating_duration_since(due);
        let id = Uuid::new_v4();
        let sent = Instant::now();
        insert_events(
            &mut conn,
            subaccount,
            &[id],
            &[Uuid::new_v4()],
            &[Utc::now()],
        )
        .await?;
        let committed = Instant::now();
        done.push(Inserted {
            index,
            id,
            committed,
            round_trip: committed - sent,
            behind,
        });
    }
    Ok(done)
}

/// Inserts `rate × duration` events, one transaction each, on an open-loop schedule (spread
/// over [`INSERT_CONNECTIONS`] connections, so one slow commit does not delay the next event),
/// and measures commit → arrival.
async fn steady(
    args: &Args,
    db: &BenchDb,
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    receiver: &Receiver,
    already: usize,
) -> anyhow::Result<Steady> {
    let count = (args.rate * args.duration).round() as u64;
    eprintln!(
        "payoutd-bench: [delivery] inserting {count} events at {} per second",
        args.rate
    );
    let mut connections = Vec::new();
    for _ in 0..INSERT_CONNECTIONS {
        connections.push(db.connect().await?);
    }
    let start = tokio::time::Instant::now() + Duration::from_millis(10);
    let mut tasks = tokio::task::JoinSet::new();
    for (first, conn) in (0..).zip(connections) {
        tasks.spawn(insert_on_schedule(
            conn,
            subaccount,
            (first, INSERT_CONNECTIONS, count),
            start,
            args.rate,
        ));
    }
    let mut inserted = Vec::with_capacity(usize::try_from(count)?);
    while let Some(done) = tasks.join_next().await {
        inserted.extend(done??);
    }
    inserted.sort_by_key(|event| event.index);

    let mut commit = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut behind = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    for event in &inserted {
        commit.saturating_record(micros(event.round_trip));
        behind.saturating_record(micros(event.behind));
    }
    let span = match (
        inserted.iter().map(|e| e.committed).min(),
        inserted.iter().map(|e| e.committed).max(),
    ) {
        (Some(first), Some(last)) => last - first,
        _ => Duration::ZERO,
    };
    let ids: Vec<Uuid> = inserted.iter().map(|event| event.id).collect();
    receiver
        .wait_for_distinct(already + ids.len(), STALL)
        .await?;
    wait_recorded(conn).await?;
    tokio::time::sleep(GRACE).await;
    let arrivals = receiver.arrivals_of(&ids);
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut early = 0;
    for (arrival, event) in arrivals.iter().zip(&inserted) {
        if let Some(arrival) = arrival {
            if arrival.first < event.committed {
                early += 1;
            }
            latency.saturating_record(micros(
                arrival.first.saturating_duration_since(event.committed),
            ));
        }
    }
    Ok(Steady {
        events: count,
        span,
        tally: tally(&arrivals),
        latency,
        commit,
        behind,
        early,
        breakdown: breakdown(conn, &ids).await?,
    })
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

fn millis(h: &Histogram<u64>, quantile: f64) -> f64 {
    h.value_at_quantile(quantile) as f64 / 1000.0
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

/// Prints the tables and the verdict, writes the JSON file, and picks the exit code.
fn report_all(env: &Env, args: &Args, m: &Measured) -> anyhow::Result<ExitCode> {
    let (b, s) = (&m.backlog, &m.steady);
    println!();
    println!(
        "delivery: {} backlog events, then {} events/s for {} s, one subaccount, receiver on \
         loopback (answers 200 at once)",
        b.events, args.rate, args.duration
    );
    if !m.knobs.is_empty() {
        let knobs: Vec<String> = m.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("server settings from the environment: {}", knobs.join(" "));
    }
    println!();
    let header = format!(
        "{:<8}  {:>7}  {:>7}  {:>7}  {:>5}  {:>9}  {:>8}  {:>8}  {:>8}  {:>8}",
        "phase",
        "events",
        "arrived",
        "missing",
        "dups",
        "events/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    println!(
        "{:<8}  {:>7}  {:>7}  {:>7}  {:>5}  {:>9.0}  {:>8}  {:>8}  {:>8}  {:>8}",
        "backlog",
        b.events,
        b.tally.arrived,
        b.tally.missing,
        b.tally.duplicates,
        b.throughput(),
        "-",
        "-",
        "-",
        "-"
    );
    println!(
        "{:<8}  {:>7}  {:>7}  {:>7}  {:>5}  {:>9.0}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}",
        "steady",
        s.events,
        s.tally.arrived,
        s.tally.missing,
        s.tally.duplicates,
        s.achieved_rate(),
        millis(&s.latency, 0.5),
        millis(&s.latency, 0.9),
        millis(&s.latency, 0.99),
        s.latency.max() as f64 / 1000.0
    );
    println!();
    println!(
        "backlog: inserted in {:.2} s; from spawn: ready {:.2} s, first delivery {:.2} s, last {:.2} s \
         (first → last {:.0} events/s), all recorded {:.2} s",
        b.insert.as_secs_f64(),
        b.ready.as_secs_f64(),
        b.first.as_secs_f64(),
        b.last.as_secs_f64(),
        b.drain_rate(),
        b.recorded.as_secs_f64()
    );
    println!(
        "steady: commit (INSERT round trip) p50 {:.2} ms, p99 {:.2} ms; inserts behind schedule \
         p99 {:.1} ms, max {:.1} ms; {} arrivals seen before their commit returned",
        millis(&s.commit, 0.5),
        millis(&s.commit, 0.99),
        millis(&s.behind, 0.99),
        s.behind.max() as f64 / 1000.0,
        s.early
    );
    println!(
        "server side (webhook_attempts): created → attempt p50/p99 ms: backlog {}/{}, steady {}/{}; \
         send p50/p99 ms: backlog {}/{}, steady {}/{}",
        ms(b.breakdown.wait_p50),
        ms(b.breakdown.wait_p99),
        ms(s.breakdown.wait_p50),
        ms(s.breakdown.wait_p99),
        ms(b.breakdown.send_p50),
        ms(b.breakdown.send_p99),
        ms(s.breakdown.send_p50),
        ms(s.breakdown.send_p99)
    );
    let r = &m.receiver;
    println!(
        "receiver: {} requests, {} without a webhook-id; signatures checked {} (every \
         {SIGNATURE_SAMPLE}th), bad {}",
        r.requests, r.malformed, r.signatures_checked, r.signatures_bad
    );
    if let Some(why) = &r.first_bad {
        println!("first bad delivery: {why}");
    }
    let c = &m.counts;
    println!(
        "store: {} delivered, {} pending, {} exhausted; {} attempts, {} not delivered",
        c.delivered, c.pending, c.exhausted, c.attempts, c.attempts_not_delivered
    );

    let throughput = b.throughput();
    let (p50, p99) = (millis(&s.latency, 0.5), millis(&s.latency, 0.99));
    let checks = [
        (
            "throughput (events/s)",
            format!("{throughput:.0}"),
            format!(">= {}", args.min_throughput),
            throughput >= args.min_throughput,
        ),
        (
            "commit → delivery p50 (ms)",
            format!("{p50:.1}"),
            format!("<= {}", args.max_latency_ms),
            p50 <= args.max_latency_ms,
        ),
        (
            "commit → delivery p99 (ms)",
            format!("{p99:.1}"),
            format!("<= {}", args.max_latency_ms),
            p99 <= args.max_latency_ms,
        ),
    ];
    println!();
    let header = format!(
        "{:<28}  {:>9}  {:>9}  verdict",
        "target", "measured", "limit"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for (name, measured, limit, pass) in &checks {
        println!(
            "{name:<28}  {measured:>9}  {limit:>9}  {}{}",
            if *pass { "PASS" } else { "FAIL" },
            if args.advisory { " (advisory)" } else { "" }
        );
    }
    let pass = checks.iter().all(|(_, _, _, pass)| *pass);

    let expected = (b.events + s.events) as i64;
    let mut problems = Vec::new();
    if b.tally.missing + s.tally.missing > 0 {
        problems.push(format!(
            "{} events never arrived",
            b.tally.missing + s.tally.missing
        ));
    }
    if b.tally.duplicates + s.tally.duplicates > 0 {
        problems.push(format!(
            "{} deliveries were duplicates",
            b.tally.duplicates + s.tally.duplicates
        ));
    }
    if r.signatures_bad > 0 || r.signatures_checked == 0 || r.malformed > 0 {
        problems.push(format!(
            "{} of {} sampled deliveries failed the check, {} had no webhook-id",
            r.signatures_bad, r.signatures_checked, r.malformed
        ));
    }
    if c.delivered != expected || c.attempts != expected || c.attempts_not_delivered > 0 {
        problems.push(format!(
            "the store has {} delivered after {} attempts ({} not delivered), expected {expected} each",
            c.delivered, c.attempts, c.attempts_not_delivered
        ));
    }

    let histogram_json = |h: &Histogram<u64>| {
        let mut value = serde_json::Map::new();
        for (name, quantile) in report::QUANTILES {
            value.insert(format!("{name}_ms"), json!(millis(h, quantile)));
        }
        value.insert("mean_ms".to_owned(), json!(h.mean() / 1000.0));
        value.insert("max_ms".to_owned(), json!(h.max() as f64 / 1000.0));
        Value::Object(value)
    };
    let breakdown_json = |d: &Breakdown| {
        json!({
            "created_to_attempt_p50_ms": d.wait_p50,
            "created_to_attempt_p99_ms": d.wait_p99,
            "send_p50_ms": d.send_p50,
            "send_p99_ms": d.send_p99,
        })
    };
    let verdict = |pass: bool| if pass { "PASS" } else { "FAIL" };
    let json = json!({
        "scenario": "delivery",
        "machine": report::machine_json(),
        "load_average_after": report::load_average(),
        "config": {
            "events": b.events,
            "rate": args.rate,
            "duration_s": args.duration,
            "min_throughput": args.min_throughput,
            "max_latency_ms": args.max_latency_ms,
            "signature_sample": SIGNATURE_SAMPLE,
            "server_env": m.knobs,
        },
        "backlog": {
            "events": b.events,
            "arrived": b.tally.arrived,
            "missing": b.tally.missing,
            "duplicates": b.tally.duplicates,
            "insert_s": b.insert.as_secs_f64(),
            "ready_s": b.ready.as_secs_f64(),
            "first_arrival_s": b.first.as_secs_f64(),
            "last_arrival_s": b.last.as_secs_f64(),
            "all_recorded_s": b.recorded.as_secs_f64(),
            "events_per_second": throughput,
            "first_to_last_events_per_second": b.drain_rate(),
            "server_side": breakdown_json(&b.breakdown),
        },
        "steady": {
            "events": s.events,
            "arrived": s.tally.arrived,
            "missing": s.tally.missing,
            "duplicates": s.tally.duplicates,
            "achieved_rate": s.achieved_rate(),
            "behind_schedule": histogram_json(&s.behind),
            "arrivals_before_commit_returned": s.early,
            "commit_to_delivery": histogram_json(&s.latency),
            "insert_round_trip": histogram_json(&s.commit),
            "server_side": breakdown_json(&s.breakdown),
        },
        "receiver": {
            "requests": r.requests,
            "malformed": r.malformed,
            "signatures_checked": r.signatures_checked,
            "signatures_bad": r.signatures_bad,
            "first_bad": r.first_bad,
        },
        "store": {
            "delivered": c.delivered,
            "pending": c.pending,
            "exhausted": c.exhausted,
            "attempts": c.attempts,
            "attempts_not_delivered": c.attempts_not_delivered,
        },
        "verdicts": {
            "throughput": verdict(checks[0].3),
            "p50": verdict(checks[1].3),
            "p99": verdict(checks[2].3),
            "advisory": args.advisory,
        },
        "problems": problems,
    });
    let path = env.out_dir.join("delivery.json");
    report::write_json(&path, &json)?;
    println!("\nresults: {}", path.display());

    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("payoutd-bench: {problem}");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(if pass || args.advisory {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
