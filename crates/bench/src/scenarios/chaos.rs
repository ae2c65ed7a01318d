//! `cargo xtask chaos`: fault tests of payoutd against a real PostgreSQL, printing a pass/fail
//! table (issue 6):
//! - **crash**: `kill -9` of the server during a payout load, then a restart: every
//!   acknowledged payout exists, no payout exists in part (each has its hold and its
//!   `payoutCreated`), `check-ledger` passes, every committed event is eventually delivered;
//! - **outage**: PostgreSQL stopped during a load: requests get 503 `SYS503` quickly (no crash,
//!   no hang), and the service recovers by itself once the database is back;
//! - **two instances** on one database and one webhook receiver: every event delivered once,
//!   no payout submitted twice, no nonce accepted twice.
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

use std::collections::HashSet;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::Env;
use crate::db::BenchDb;
use crate::load::Credentials;
use crate::receiver::Receiver;
use crate::report;
use crate::server::{Payoutd, Server, Tenant, new_master_key};

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

/// A signed client of one server.
#[derive(Clone)]
struct Api {
    client: reqwest::Client,
    base: String,
}

/// What one request got.
#[derive(Debug, Clone)]
enum Answer {
    /// An HTTP answer: status and body (JSON, or `null`).
    Http(u16, Value),
    /// No answer: the connection failed or timed out.
    Lost(String),
}

impl Api {
    fn new(base: &str) -> anyhow::Result<Self> {
        Ok(Self {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .build()?,
            base: base.to_owned(),
        })
    }

    async fn call(
        &self,
        key: &Credentials,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
    ) -> Answer {
        self.send(key, method, path, body, headers, key.sign_v1())
            .await
    }

    async fn send(
        &self,
        key: &Credentials,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
        signature: String,
    ) -> Answer {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("x-api-key", &key.api_key)
            .header("signature", signature);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(serde_json::to_vec(body).unwrap_or_default());
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                match response.bytes().await {
                    Ok(bytes) => Answer::Http(
                        status,
                        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    ),
                    Err(e) => Answer::Lost(e.to_string()),
                }
            }
            Err(e) => Answer::Lost(e.to_string()),
        }
    }

    /// A call that must answer 200; returns its payload.
    async fn ok(
        &self,
        key: &Credentials,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        match self.call(key, method, path, body, &[]).await {
            Answer::Http(200, body) => Ok(body["payload"].clone()),
            other => anyhow::bail!("{path} answered {other:?}"),
        }
    }
}

/// A fresh database with one funded subaccount (one key per client), its webhook pointed at
/// `receiver`, and `payees` receivers with KYC completed and a confirmed AUD account, created
/// through a first server that is then stopped.
struct World {
    db: BenchDb,
    payoutd: Payoutd,
    tenant: Tenant,
    /// (receiver id, account id).
    payees: Vec<(String, String)>,
    receiver: Receiver,
}

/// A fresh database `name` (a previous run's dropped): on every node of the cluster with
/// `--citus`.
async fn fresh_db(env: &Env, args: &Args, name: &str) -> anyhow::Result<BenchDb> {
    if args.citus {
        let db = BenchDb::citus(&env.server_url, name, CITUS_SHARD_COUNT).await?;
        db.drop_if_exists().await?;
        db.create_on_citus().await?;
        Ok(db)
    } else {
        let db = BenchDb::new(&env.server_url, name)?;
        db.drop_if_exists().await?;
        Ok(db)
    }
}

async fn world(
    env: &Env,
    args: &Args,
    name: &str,
    keys: usize,
    payees: usize,
) -> anyhow::Result<World> {
    let db = fresh_db(env, args, name).await?;
    let payoutd = Payoutd::new(&env.payoutd, &db.url, &new_master_key());
    payoutd.migrate().await?;
    let tenant = payoutd.tenant(name, keys).await?;
    payoutd
        .admin(&[
            "fund",
            "--subaccount",
            &tenant.subaccount_id,
            "--asset",
            "aud",
            "--amount",
            "1000000000",
            "--reason",
            "chaos bench float",
        ])
        .await?;
    let receiver = Receiver::start(1).await?;
    let hook = payoutd
        .admin(&[
            "set-webhook",
            "--subaccount",
            &tenant.subaccount_id,
            "--url",
            &receiver.url,
        ])
        .await?;
    receiver.set_secret(
        hook["webhook_secret"]
            .as_str()
            .context("set-webhook printed no webhook_secret")?,
    )?;
    let server = serve(env, &payoutd, &format!("{name}-setup"), &[]).await?;
    let api = Api::new(&server.base_url)?;
    let key = &tenant.keys[0];
    let mut made = Vec::with_capacity(payees);
    for n in 0..payees {
        made.push(payee(&api, key, &tenant.subaccount_id, n).await?);
    }
    server.stop().await?;
    Ok(World {
        db,
        payoutd,
        tenant,
        payees: made,
        receiver,
    })
}

/// Creates the `n`th payee of a subaccount through the API: a receiver with KYC completed and a
/// confirmed AUD account; returns (receiver id, account id).
async fn payee(
    api: &Api,
    key: &Credentials,
    subaccount_id: &str,
    n: usize,
) -> anyhow::Result<(String, String)> {
    let created = api
        .ok(
            key,
            reqwest::Method::POST,
            "/api/receiver",
            Some(&json!({
                "subaccount_id": subaccount_id, "first_name": "Chaos",
                "last_name": format!("Payee {}", letters(n)), "email": format!("payee{n}@example.com"),
                "gender": "F", "dob": "1990-01-31", "dialcode": "61", "phone": "0412345678",
                "address": "12 Smith St", "city": "Sydney", "state": "NSW",
                "country": "AUS", "postcode": "2000"
            })),
        )
        .await?;
    let receiver_id = text(&created, "receiver_id")?;
    api.ok(
        key,
        reqwest::Method::POST,
        "/api/test-helpers/kyc",
        Some(&json!({"receiver_id": receiver_id, "kyc_status": "completed"})),
    )
    .await?;
    let account = api
        .ok(
            key,
            reqwest::Method::POST,
            "/api/receiver-account/aud/direct-entry",
            Some(&json!({"receiver_id": receiver_id, "bsb": "012002", "account_number": format!("1234567{n:02}")})),
        )
        .await?;
    let account_id = text(&account, "receiver_account_id")?;
    api.ok(
        key,
        reqwest::Method::POST,
        "/api/test-helpers/account",
        Some(&json!({"receiver_account_id": account_id, "confirm_status": "confirmed"})),
    )
    .await?;
    Ok((receiver_id, account_id))
}

/// `n` in letters (names may not hold digits): 0 → "A", 25 → "Z", 26 → "BA", …
fn letters(mut n: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(char::from(b'A' + u8::try_from(n % 26).unwrap_or(0)));
        n /= 26;
        if n == 0 {
            break;
        }
    }
    out.iter().rev().collect()
}

fn text(object: &Value, name: &str) -> anyhow::Result<String> {
    object[name]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no `{name}` in {object}"))
}

async fn serve(
    env: &Env,
    payoutd: &Payoutd,
    name: &str,
    extra: &[(&str, &str)],
) -> anyhow::Result<Server> {
    let mut vars: Vec<(&str, &str)> = SERVER_ENV.to_vec();
    vars.extend_from_slice(extra);
    payoutd
        .serve_with(
            &env.out_dir.join(format!("payoutd-chaos-{name}.log")),
            &vars,
        )
        .await
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(diesel::QueryableByName)]
struct Id {
    #[diesel(sql_type = Text)]
    id: String,
}

async fn count(db: &BenchDb, sql: &str) -> anyhow::Result<i64> {
    let mut conn = db.connect().await?;
    Ok(diesel::sql_query(sql)
        .get_result::<Count>(&mut conn)
        .await
        .with_context(|| format!("running {sql}"))?
        .n)
}

async fn ids(db: &BenchDb, sql: &str) -> anyhow::Result<Vec<String>> {
    let mut conn = db.connect().await?;
    Ok(diesel::sql_query(sql)
        .load::<Id>(&mut conn)
        .await
        .with_context(|| format!("running {sql}"))?
        .into_iter()
        .map(|r| r.id)
        .collect())
}

/// Waits until every outbox event is delivered and the receiver got each of them.
async fn all_delivered(world: &World, within: Duration) -> anyhow::Result<Result<usize, String>> {
    let deadline = Instant::now() + within;
    loop {
        let undelivered = count(
            &world.db,
            "SELECT count(*) AS n FROM outbox_events WHERE status <> 'delivered'",
        )
        .await?;
        if undelivered == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Ok(Err(format!(
                "{undelivered} events still undelivered after {within:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let events: Vec<Uuid> = ids(&world.db, "SELECT id::text AS id FROM outbox_events")
        .await?
        .iter()
        .filter_map(|id| Uuid::parse_str(id).ok())
        .collect();
    let missing = world
        .receiver
        .arrivals_of(&events)
        .iter()
        .filter(|a| a.is_none())
        .count();
    if missing > 0 {
        return Ok(Err(format!(
            "{missing} of {} events marked delivered never reached the receiver",
            events.len()
        )));
    }
    Ok(Ok(events.len()))
}

fn payout_body(payee: &(String, String), amount: i64, reference: &str) -> Value {
    json!({
        "receiver_id": payee.0, "account_id": payee.1, "amount": amount,
        "currency": "AUD", "reference": reference
    })
}

/// Counts the payouts stored in part: without their hold or their `payoutCreated` event. The
/// subqueries name the subaccount, as Citus needs to join distributed tables.
const PARTIAL_PAYOUTS: &str = "SELECT count(*) AS n FROM payouts p \
     WHERE NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.subaccount_id = p.subaccount_id \
                       AND l.payout_id = p.id AND l.kind = 'payout_hold') \
        OR NOT EXISTS (SELECT 1 FROM outbox_events e WHERE e.subaccount_id = p.subaccount_id \
                       AND e.object_id = p.id AND e.event_type = 'payoutCreated')";

/// The crash check.
async fn crash(env: &Env, args: &Args) -> anyhow::Result<Result<String, String>> {
    let world = world(env, args, "payoutd_chaos_crash", args.clients, 4).await?;
    let server = serve(env, &world.payoutd, "crash-1", &[]).await?;
    let pid = server.pid().context("the server has no pid")?;
    let api = Api::new(&server.base_url)?;
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let mut workers = Vec::new();
    for w in 0..args.clients {
        let (api, stop, acknowledged) = (api.clone(), stop.clone(), acknowledged.clone());
        let key = world.tenant.keys[w % world.tenant.keys.len()].clone();
        let payees = world.payees.clone();
        workers.push(tokio::spawn(async move {
            let mut sent = 0u64;
            while !AtomicBool::load(&stop, Ordering::SeqCst) {
                let reference = format!("crash-{w}-{sent}");
                let payee = &payees[usize::try_from(sent).unwrap_or(0) % payees.len()];
                let body = payout_body(payee, 100, &reference);
                let answer = api
                    .call(
                        &key,
                        reqwest::Method::POST,
                        "/api/payout/single",
                        Some(&body),
                        &[("idempotency-key", reference.clone())],
                    )
                    .await;
                if let Answer::Http(200, body) = answer
                    && let Some(id) = body["payload"]["payout_id"].as_str()
                    && let Ok(mut acked) = acknowledged.lock()
                {
                    acked.push((reference, id.to_owned()));
                }
                sent += 1;
            }
            sent
        }));
    }
    // Bulk requests beside them, on the same balance: a kill may land inside one.
    let bulks = Arc::new(Mutex::new(Vec::<(String, Value)>::new()));
    let bulk_worker = {
        let (api, stop, bulks) = (api.clone(), stop.clone(), bulks.clone());
        let key = world.tenant.keys[0].clone();
        let payees = world.payees.clone();
        tokio::spawn(async move {
            let mut sent = 0u64;
            while !AtomicBool::load(&stop, Ordering::SeqCst) {
                let key_name = format!("bulkcrash-{sent}");
                let body = bulk_body(&payees, sent);
                let answer = api
                    .call(
                        &key,
                        reqwest::Method::POST,
                        "/api/payout/bulk",
                        Some(&body),
                        &[("idempotency-key", key_name.clone())],
                    )
                    .await;
                if let Answer::Http(200, body) = answer
                    && let Ok(mut acked) = bulks.lock()
                {
                    acked.push((key_name, body["payload"].clone()));
                }
                sent += 1;
            }
            sent
        })
    };
    if let Err(e) =
        first_acknowledged(|| acknowledged.lock().is_ok_and(|acked| !acked.is_empty())).await
    {
        AtomicBool::store(&stop, true, Ordering::SeqCst);
        return Err(e);
    }
    tokio::time::sleep(Duration::from_millis(args.kill_after_ms)).await;
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .context("running kill")?;
    anyhow::ensure!(killed.success(), "kill -9 {pid} failed");
    AtomicBool::store(&stop, true, Ordering::SeqCst);
    let mut sent = 0;
    for worker in workers {
        sent += worker.await?;
    }
    let bulks_sent = bulk_worker.await?;
    drop(server);
    let acked = acknowledged
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    if acked.is_empty() {
        return Ok(Err("no payout was acknowledged before the kill".to_owned()));
    }

    let server = serve(env, &world.payoutd, "crash-2", &[]).await?;
    let api = Api::new(&server.base_url)?;
    let key = &world.tenant.keys[0];
    for (reference, id) in &acked {
        let payout = api
            .ok(
                key,
                reqwest::Method::GET,
                &format!("/api/payout/{id}"),
                None,
            )
            .await
            .with_context(|| format!("acknowledged payout {reference}"))?;
        if payout["reference"] != reference.as_str() {
            return Ok(Err(format!("payout {id} lost its reference {reference}")));
        }
    }
    let stored = count(
        &world.db,
        "SELECT count(*) AS n FROM payouts WHERE reference LIKE 'crash-%'",
    )
    .await?;
    let partial = count(&world.db, PARTIAL_PAYOUTS).await?;
    if partial > 0 {
        return Ok(Err(format!(
            "{partial} payouts exist in part (no hold or no event)"
        )));
    }
    // A payout that committed without an answer was stored with its response, in its own
    // transaction: a retry with its key is answered with that payout, not run again.
    let unanswered = ids(
        &world.db,
        "SELECT reference || ' ' || id::text AS id FROM payouts WHERE reference LIKE 'crash-%' \
         ORDER BY reference",
    )
    .await?;
    let acked_refs: std::collections::HashSet<&str> =
        acked.iter().map(|(r, _)| r.as_str()).collect();
    let mut replayed = 0;
    for row in &unanswered {
        let Some((reference, id)) = row.split_once(' ') else {
            continue;
        };
        if acked_refs.contains(reference) {
            continue;
        }
        let Some((w, n)) = reference
            .strip_prefix("crash-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(w, n)| Some((w.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        else {
            return Ok(Err(format!("unexpected payout reference {reference}")));
        };
        let body = payout_body(&world.payees[n % world.payees.len()], 100, reference);
        let answer = api
            .call(
                &world.tenant.keys[w % world.tenant.keys.len()],
                reqwest::Method::POST,
                "/api/payout/single",
                Some(&body),
                &[("idempotency-key", reference.to_owned())],
            )
            .await;
        match answer {
            Answer::Http(200, body) if body["payload"]["payout_id"] == id => replayed += 1,
            other => {
                return Ok(Err(format!(
                    "the retry of {reference}, committed without an answer, got {other:?}"
                )));
            }
        }
    }
    let bulks_acked = bulks
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    let bulk_replayed = match check_bulks(&world, &api, bulks_sent, &bulks_acked).await? {
        Ok(n) => n,
        Err(failure) => return Ok(Err(failure)),
    };
    if world.payoutd.admin(&["check-ledger"]).await.is_err() {
        return Ok(Err("check-ledger reports a discrepancy".to_owned()));
    }
    let delivered = match all_delivered(&world, Duration::from_secs(60)).await? {
        Ok(n) => n,
        Err(failure) => return Ok(Err(failure)),
    };
    server.stop().await?;
    let unacked_committed = usize::try_from(stored)
        .unwrap_or(0)
        .saturating_sub(acked.len());
    Ok(Ok(format!(
        "{sent} sent, {} acknowledged and all found after restart, {unacked_committed} committed \
         without an answer ({replayed} replayed on retry); {bulks_sent} bulk requests of \
         {BULK_ITEMS}, {} acknowledged, none in part, {bulk_replayed} replayed identically; \
         ledger balanced, {delivered} events delivered",
        acked.len(),
        bulks_acked.len()
    )))
}

/// Waits until `acknowledged` says a payout of the load was acknowledged, so the fault lands
/// on a load that is running (a debug build's first payouts, on Citus especially, can take
/// longer than a smoke run's whole load phase); fails after 30 s.
async fn first_acknowledged(acknowledged: impl Fn() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !acknowledged() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "no payout was acknowledged within 30 s of starting the load"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Items of each bulk request of the crash check.
const BULK_ITEMS: u64 = 20;

/// The `n`th bulk request of the crash check: [`BULK_ITEMS`] payouts of 100, references
/// `bulkcrash-<n>-<item>`.
fn bulk_body(payees: &[(String, String)], n: u64) -> Value {
    let items: Vec<Value> = (0..BULK_ITEMS)
        .map(|i| {
            let payee = &payees[usize::try_from(n + i).unwrap_or(0) % payees.len()];
            payout_body(payee, 100, &format!("bulkcrash-{n}-{i}"))
        })
        .collect();
    json!({"payouts": items})
}

/// After the restart: every bulk request is in the database whole or not at all; each
/// acknowledged one's payouts are the ones it answered; and a retry of every request that
/// committed (acknowledged or not) is answered with the same payload, writing nothing more.
/// Returns how many were replayed.
async fn check_bulks(
    world: &World,
    api: &Api,
    sent: u64,
    acknowledged: &[(String, Value)],
) -> anyhow::Result<Result<usize, String>> {
    let answered: std::collections::HashMap<&str, &Value> = acknowledged
        .iter()
        .map(|(key, payload)| (key.as_str(), payload))
        .collect();
    let key = &world.tenant.keys[0];
    let mut replayed = 0;
    for n in 0..sent {
        let stored = ids(
            &world.db,
            &format!(
                "SELECT reference || ' ' || id::text AS id FROM payouts \
                 WHERE reference LIKE 'bulkcrash-{n}-%' ORDER BY reference"
            ),
        )
        .await?;
        let name = format!("bulkcrash-{n}");
        let expected = usize::try_from(BULK_ITEMS).unwrap_or(0);
        match (stored.len(), answered.get(name.as_str())) {
            (0, None) => continue,
            (0, Some(_)) => return Ok(Err(format!("acknowledged bulk request {name} was lost"))),
            (k, _) if k != expected => {
                return Ok(Err(format!(
                    "bulk request {name} is stored in part: {k} of {expected}"
                )));
            }
            _ => {}
        }
        let answer = api
            .call(
                key,
                reqwest::Method::POST,
                "/api/payout/bulk",
                Some(&bulk_body(&world.payees, n)),
                &[("idempotency-key", name.clone())],
            )
            .await;
        let Answer::Http(200, body) = answer else {
            return Ok(Err(format!(
                "the retry of bulk request {name} got {answer:?}"
            )));
        };
        let payload = &body["payload"];
        if let Some(first) = answered.get(name.as_str())
            && *first != payload
        {
            return Ok(Err(format!(
                "the retry of bulk request {name} answered differently"
            )));
        }
        let created: std::collections::BTreeSet<&str> = payload["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["payout_id"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let stored_ids: std::collections::BTreeSet<&str> = stored
            .iter()
            .filter_map(|row| row.split_once(' ').map(|(_, id)| id))
            .collect();
        if created != stored_ids {
            return Ok(Err(format!(
                "bulk request {name} answers payouts other than those stored"
            )));
        }
        replayed += 1;
    }
    Ok(Ok(replayed))
}

fn argv(raw: &str) -> anyhow::Result<Command> {
    let parts: Vec<String> =
        serde_json::from_str(raw).context("the command is not a JSON array")?;
    let (program, rest) = parts.split_first().context("empty command")?;
    let mut command = Command::new(program);
    command.args(rest);
    Ok(command)
}

async fn run_command(raw: &str) -> anyhow::Result<()> {
    let mut command = argv(raw)?;
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    anyhow::ensure!(
        output.status.success(),
        "`{raw}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

/// The outage check.
async fn outage(
    env: &Env,
    args: &Args,
    pg_stop: &str,
    pg_start: &str,
) -> anyhow::Result<Result<String, String>> {
    let world = world(env, args, "payoutd_chaos_outage", args.clients, 1).await?;
    let server = serve(env, &world.payoutd, "outage", &[]).await?;
    let api = Api::new(&server.base_url)?;
    let path = format!("/api/subaccount/{}", world.tenant.subaccount_id);
    // Warm: every client has answered once.
    api.ok(&world.tenant.keys[0], reqwest::Method::GET, &path, None)
        .await?;

    run_command(pg_stop).await?;
    let down_since = Instant::now();
    let outage = Duration::from_millis(args.outage_ms);
    let mut slowest = Duration::ZERO;
    let mut answers = 0;
    let mut wrong = Vec::new();
    while down_since.elapsed() < outage {
        let mut calls = Vec::new();
        for w in 0..args.clients {
            let (api, key, path) = (api.clone(), world.tenant.keys[w].clone(), path.clone());
            calls.push(tokio::spawn(async move {
                let started = Instant::now();
                let get = api.call(&key, reqwest::Method::GET, &path, None, &[]).await;
                (started.elapsed(), get)
            }));
        }
        for call in calls {
            let (took, answer) = call.await?;
            slowest = slowest.max(took);
            answers += 1;
            match answer {
                Answer::Http(503, body) if body["error"][0]["code"] == "SYS503" => {}
                Answer::Http(status, body) => wrong.push(format!("{status} {body}")),
                Answer::Lost(e) => wrong.push(format!("no answer: {e}")),
            }
        }
    }
    let health = reqwest::get(format!("{}/healthz", server.base_url)).await;
    let alive = health.is_ok_and(|r| r.status().is_success());
    run_command(pg_start).await?;
    let back = Instant::now();
    let recovered = loop {
        if let Answer::Http(200, _) = api
            .call(
                &world.tenant.keys[0],
                reqwest::Method::GET,
                &path,
                None,
                &[],
            )
            .await
        {
            break Some(back.elapsed());
        }
        if back.elapsed() > Duration::from_secs(30) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    server.stop().await?;
    if !wrong.is_empty() {
        return Ok(Err(format!(
            "{} of {answers} requests during the outage were not 503 SYS503, e.g. {}",
            wrong.len(),
            wrong[0]
        )));
    }
    if slowest > DOWN_BUDGET {
        return Ok(Err(format!("a request took {slowest:?} during the outage")));
    }
    if !alive {
        return Ok(Err("/healthz did not answer during the outage".to_owned()));
    }
    let Some(recovered) = recovered else {
        return Ok(Err(
            "no request succeeded within 30 s of PostgreSQL's restart".to_owned(),
        ));
    };
    Ok(Ok(format!(
        "{answers} requests during {:.1} s down: all 503 SYS503, slowest {:.0} ms; \
         serving again {:.0} ms after PostgreSQL was back",
        outage.as_secs_f64(),
        slowest.as_secs_f64() * 1000.0,
        recovered.as_secs_f64() * 1000.0
    )))
}

/// The two-instance check.
async fn two_instances(env: &Env, args: &Args) -> anyhow::Result<Result<String, String>> {
    let world = world(env, args, "payoutd_chaos_pair", args.clients, 4).await?;
    let batches = [
        ("PAYOUT_BATCH_INTERVAL_SECS", "1"),
        ("PAYOUT_BATCH_POLL_MS", "100"),
        ("PAYOUT_SANDBOX_RAIL_SETTLE_MS", "300"),
    ];
    let one = serve(env, &world.payoutd, "pair-1", &batches).await?;
    let two = serve(env, &world.payoutd, "pair-2", &batches).await?;
    let apis = [Api::new(&one.base_url)?, Api::new(&two.base_url)?];

    // Payouts through both instances.
    let mut workers = Vec::new();
    let per_client = args.payouts.div_ceil(args.clients.max(1));
    for w in 0..args.clients {
        let api = apis[w % 2].clone();
        let key = world.tenant.keys[w].clone();
        let payees = world.payees.clone();
        workers.push(tokio::spawn(async move {
            let mut ok = 0usize;
            for n in 0..per_client {
                let reference = format!("pair-{w}-{n}");
                let body = payout_body(&payees[n % payees.len()], 100, &reference);
                if let Answer::Http(200, _) = api
                    .call(
                        &key,
                        reqwest::Method::POST,
                        "/api/payout/single",
                        Some(&body),
                        &[],
                    )
                    .await
                {
                    ok += 1;
                }
            }
            ok
        }));
    }
    let mut created = 0;
    for worker in workers {
        created += worker.await?;
    }

    // The same signed request to both instances at once: exactly one may be accepted.
    let key = &world.tenant.keys[0];
    let verify = json!({
        "subaccount_id": world.tenant.subaccount_id,
        "account_data": {"bsb": "012002", "account_number": "123456700"}
    });
    let mut double = 0;
    let mut refused = 0;
    for _ in 0..args.replays {
        let signature = key.sign_v1();
        let (a, b) = tokio::join!(
            apis[0].send(
                key,
                reqwest::Method::POST,
                "/api/receiver-account/verify",
                Some(&verify),
                &[],
                signature.clone()
            ),
            apis[1].send(
                key,
                reqwest::Method::POST,
                "/api/receiver-account/verify",
                Some(&verify),
                &[],
                signature
            ),
        );
        let accepted = [a, b]
            .iter()
            .filter(|answer| matches!(answer, Answer::Http(200, _)))
            .count();
        double += usize::from(accepted > 1);
        refused += usize::from(accepted == 0);
    }

    // Batches run in both instances until every payout is paid.
    let deadline = Instant::now() + Duration::from_secs(60);
    let paid = loop {
        let paid = count(
            &world.db,
            "SELECT count(*) AS n FROM payouts WHERE status = 4",
        )
        .await?;
        if usize::try_from(paid).unwrap_or(0) >= created || Instant::now() > deadline {
            break paid;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let submitted_twice = count(
        &world.db,
        "SELECT count(*) AS n FROM (SELECT object_id FROM outbox_events \
         WHERE event_type = 'payoutUpdated' AND payload->>'status' = 'in_progress' \
         GROUP BY object_id HAVING count(*) > 1) twice",
    )
    .await?;
    let posted_twice = count(
        &world.db,
        "SELECT count(*) AS n FROM (SELECT payout_id FROM ledger_entries \
         WHERE kind = 'payout_post' GROUP BY payout_id HAVING count(*) > 1) twice",
    )
    .await?;
    let delivered = all_delivered(&world, Duration::from_secs(60)).await?;
    let duplicates: usize = {
        let events: Vec<Uuid> = ids(&world.db, "SELECT id::text AS id FROM outbox_events")
            .await?
            .iter()
            .filter_map(|id| Uuid::parse_str(id).ok())
            .collect();
        world
            .receiver
            .arrivals_of(&events)
            .iter()
            .flatten()
            .filter(|a| a.count > 1)
            .count()
    };
    let ledger = world.payoutd.admin(&["check-ledger"]).await;
    one.stop().await?;
    two.stop().await?;
    let mut problems = Vec::new();
    if usize::try_from(paid).unwrap_or(0) < created {
        problems.push(format!("{paid} of {created} payouts paid within 60 s"));
    }
    if submitted_twice > 0 {
        problems.push(format!("{submitted_twice} payouts submitted twice"));
    }
    if posted_twice > 0 {
        problems.push(format!("{posted_twice} payouts posted twice"));
    }
    if double > 0 {
        problems.push(format!("{double} nonces accepted by both instances"));
    }
    if refused > 0 {
        problems.push(format!(
            "{refused} signed requests refused by both instances"
        ));
    }
    if duplicates > 0 {
        problems.push(format!("{duplicates} events delivered more than once"));
    }
    if ledger.is_err() {
        problems.push("check-ledger reports a discrepancy".to_owned());
    }
    let delivered = match delivered {
        Ok(n) => n,
        Err(failure) => {
            problems.push(failure);
            0
        }
    };
    let distinct: HashSet<_> = world.payees.iter().collect();
    if !problems.is_empty() {
        return Ok(Err(problems.join("; ")));
    }
    Ok(Ok(format!(
        "{created} payouts through both instances to {} payees, all paid once; {} replayed \
         signatures accepted once each; {delivered} events delivered exactly once",
        distinct.len(),
        args.replays
    )))
}

/// A subaccount of the worker outage check: its key, its payee, and whether its shards live on
/// the worker that is stopped.
#[derive(Clone)]
struct Placed {
    key: Credentials,
    payee: (String, String),
    on_stopped_worker: bool,
}

/// What one payout request of the worker outage check got, and when.
struct Sample {
    /// The subaccount (index into the placed subaccounts).
    tenant: usize,
    reference: String,
    sent: Instant,
    took: Duration,
    answer: Answer,
}

#[derive(diesel::QueryableByName)]
struct NodePort {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    port: i32,
}

/// The port of the worker holding the shards of `subaccount_id` (every distributed table is
/// colocated with `receivers`, so one shard of it tells).
async fn worker_of(db: &BenchDb, subaccount_id: &str) -> anyhow::Result<u16> {
    let mut conn = db.connect().await?;
    let found: NodePort = diesel::sql_query(
        "SELECT n.nodeport AS port FROM pg_dist_placement p \
         JOIN pg_dist_node n ON n.groupid = p.groupid \
         WHERE p.shardid = get_shard_id_for_distribution_column('receivers', $1::uuid)",
    )
    .bind::<Text, _>(subaccount_id)
    .get_result(&mut conn)
    .await
    .with_context(|| format!("finding the worker of subaccount {subaccount_id}"))?;
    Ok(u16::try_from(found.port)?)
}

/// Subaccounts (funded, one key and one payee each) until each side, the worker `port` and the
/// others, has `per_side` of them; those beyond a full side are left unused.
async fn place_subaccounts(
    env: &Env,
    world_db: &BenchDb,
    payoutd: &Payoutd,
    port: u16,
    per_side: usize,
) -> anyhow::Result<Vec<Placed>> {
    let server = serve(env, payoutd, "worker-setup", &[]).await?;
    let api = Api::new(&server.base_url)?;
    let mut placed: Vec<Placed> = Vec::new();
    // Each subaccount lands on either side with even odds: 64 tries miss a side of 2 with a
    // probability below 1e-17.
    for n in 0..64 {
        let on_side = |stopped: bool| {
            placed
                .iter()
                .filter(|p| p.on_stopped_worker == stopped)
                .count()
        };
        if on_side(true) >= per_side && on_side(false) >= per_side {
            break;
        }
        let tenant = payoutd
            .tenant(&format!("chaos worker {}", letters(n)), 1)
            .await?;
        let on_stopped_worker = worker_of(world_db, &tenant.subaccount_id).await? == port;
        if on_side(on_stopped_worker) >= per_side {
            continue;
        }
        payoutd
            .admin(&[
                "fund",
                "--subaccount",
                &tenant.subaccount_id,
                "--asset",
                "aud",
                "--amount",
                "1000000000",
                "--reason",
                "chaos bench float",
            ])
            .await?;
        let key = tenant
            .keys
            .into_iter()
            .next()
            .context("the subaccount has no key")?;
        let payee = payee(&api, &key, &tenant.subaccount_id, 0).await?;
        placed.push(Placed {
            key,
            payee,
            on_stopped_worker,
        });
    }
    server.stop().await?;
    let stopped = placed.iter().filter(|p| p.on_stopped_worker).count();
    anyhow::ensure!(
        stopped >= per_side && placed.len() - stopped >= per_side,
        "64 subaccounts did not put {per_side} on each side of worker {port}"
    );
    Ok(placed)
}

/// The worker outage check (Citus).
async fn worker_outage(
    env: &Env,
    args: &Args,
    worker_stop: &str,
    worker_start: &str,
    port: u16,
) -> anyhow::Result<Result<String, String>> {
    let db = fresh_db(env, args, "payoutd_chaos_worker").await?;
    let payoutd = Payoutd::new(&env.payoutd, &db.url, &new_master_key());
    payoutd.migrate().await?;
    let per_side = (args.clients / 2).max(2);
    let placed = place_subaccounts(env, &db, &payoutd, port, per_side).await?;
    // The worker is stopped as a crash would stop it, so it starts again by replaying its WAL
    // since its last checkpoint. After a long run of tests on the same cluster that can be a
    // gigabyte, which a busy machine does not replay within the start's bound; the outage under
    // test is the load's, so its replay starts here.
    db.workers()
        .iter()
        .find(|worker| worker.port() == i32::from(port))
        .with_context(|| format!("no Citus worker of the database listens on port {port}"))?
        .checkpoint()
        .await?;
    let server = serve(env, &payoutd, "worker", &[]).await?;
    let api = Api::new(&server.base_url)?;

    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let mut clients = Vec::new();
    for (tenant, subaccount) in placed.iter().enumerate() {
        let (api, stop, samples, subaccount) = (
            api.clone(),
            stop.clone(),
            samples.clone(),
            subaccount.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !AtomicBool::load(&stop, Ordering::SeqCst) {
                let reference = format!("worker-{tenant}-{n}");
                n += 1;
                let body = payout_body(&subaccount.payee, 100, &reference);
                let sent = Instant::now();
                let answer = api
                    .call(
                        &subaccount.key,
                        reqwest::Method::POST,
                        "/api/payout/single",
                        Some(&body),
                        &[("idempotency-key", reference.clone())],
                    )
                    .await;
                let took = sent.elapsed();
                let failed = !matches!(answer, Answer::Http(200, _));
                if let Ok(mut samples) = samples.lock() {
                    samples.push(Sample {
                        tenant,
                        reference,
                        sent,
                        took,
                        answer,
                    });
                }
                if failed {
                    // Failures come back at once: pace them rather than spin.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }));
    }

    let warmed = first_acknowledged(|| {
        samples.lock().is_ok_and(|samples| {
            samples
                .iter()
                .any(|s| matches!(s.answer, Answer::Http(200, _)))
        })
    })
    .await;
    if let Err(e) = warmed {
        AtomicBool::store(&stop, true, Ordering::SeqCst);
        return Err(e);
    }
    tokio::time::sleep(Duration::from_millis(args.kill_after_ms)).await;
    let stopping = Instant::now();
    let stopped = run_command(worker_stop).await;
    let down_at = Instant::now();
    if let Err(e) = stopped {
        AtomicBool::store(&stop, true, Ordering::SeqCst);
        return Err(e.context("stopping the worker"));
    }
    tokio::time::sleep(Duration::from_millis(args.outage_ms)).await;
    let health = reqwest::get(format!("{}/healthz", server.base_url)).await;
    let alive = health.is_ok_and(|r| r.status().is_success());
    let up_from = Instant::now();
    run_command(worker_start)
        .await
        .context("starting the worker again")?;
    let up_at = Instant::now();
    // Load goes on until every subaccount has been served since the worker came back.
    let recovery_limit = Duration::from_secs(30);
    let recovered = loop {
        let served: HashSet<usize> = samples
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .iter()
            .filter(|s| s.sent >= up_at && matches!(s.answer, Answer::Http(200, _)))
            .map(|s| s.tenant)
            .collect();
        if served.len() == placed.len() {
            break Some(up_at.elapsed());
        }
        if up_at.elapsed() > recovery_limit {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // A little more load, served normally, before the checks.
    tokio::time::sleep(Duration::from_millis(500)).await;
    AtomicBool::store(&stop, true, Ordering::SeqCst);
    for client in clients {
        client.await?;
    }
    let samples = std::mem::take(&mut *samples.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);

    let mut problems = Vec::new();
    if !alive {
        problems.push("/healthz did not answer while the worker was down".to_owned());
    }
    let Some(recovered) = recovered else {
        server.stop().await?;
        return Ok(Err(format!(
            "not every subaccount was served within {recovery_limit:?} of the worker's restart"
        )));
    };
    // While the worker was down (requests sent after it stopped and answered before it was
    // started again): its subaccounts get 503 SYS503 quickly, the others succeed.
    let (mut refused, mut served, mut slowest) = (0usize, 0usize, Duration::ZERO);
    let mut wrong = Vec::new();
    for sample in samples
        .iter()
        .filter(|s| s.sent >= down_at && s.sent + s.took <= up_from)
    {
        let expected_down = placed[sample.tenant].on_stopped_worker;
        match (&sample.answer, expected_down) {
            (Answer::Http(503, body), true) if body["error"][0]["code"] == "SYS503" => {
                refused += 1;
                slowest = slowest.max(sample.took);
            }
            (Answer::Http(200, _), false) => served += 1,
            (answer, _) => wrong.push(format!(
                "{} (subaccount on the {} worker): {answer:?}",
                sample.reference,
                if expected_down { "stopped" } else { "running" }
            )),
        }
    }
    if !wrong.is_empty() {
        problems.push(format!(
            "{} requests while the worker was down got the wrong answer, e.g. {}",
            wrong.len(),
            wrong[0]
        ));
    }
    if refused == 0 || served == 0 {
        problems.push(format!(
            "while the worker was down, {refused} requests of its subaccounts were refused and \
             {served} of the others served: both must be some"
        ));
    }
    if slowest > DOWN_BUDGET {
        problems.push(format!(
            "a request of the stopped worker's subaccounts took {slowest:?}"
        ));
    }
    // After each subaccount's first success since the restart, everything succeeds.
    let mut first_served: Vec<Option<Instant>> = vec![None; placed.len()];
    for sample in samples.iter().filter(|s| s.sent >= up_at) {
        if matches!(sample.answer, Answer::Http(200, _)) {
            let first = &mut first_served[sample.tenant];
            *first = Some(first.map_or(sample.sent, |t| t.min(sample.sent)));
        }
    }
    let failed_after: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            first_served[s.tenant].is_some_and(|first| s.sent > first)
                && !matches!(s.answer, Answer::Http(200, _))
        })
        .collect();
    if let Some(first) = <[&Sample]>::first(&failed_after) {
        problems.push(format!(
            "{} requests failed after their subaccount was served again, e.g. {}: {:?}",
            failed_after.len(),
            first.reference,
            first.answer
        ));
    }

    // Nothing acknowledged is lost, nothing is stored in part, and a payout committed without
    // an answer (its 503 came after the commit reached the worker) is replayed on retry.
    let acknowledged: std::collections::HashMap<&str, &str> = samples
        .iter()
        .filter_map(|s| match &s.answer {
            Answer::Http(200, body) => body["payload"]["payout_id"]
                .as_str()
                .map(|id| (s.reference.as_str(), id)),
            _ => None,
        })
        .collect();
    let stored: std::collections::HashMap<String, String> = ids(
        &db,
        "SELECT reference || ' ' || id::text AS id FROM payouts WHERE reference LIKE 'worker-%'",
    )
    .await?
    .into_iter()
    .filter_map(|row| {
        row.split_once(' ')
            .map(|(reference, id)| (reference.to_owned(), id.to_owned()))
    })
    .collect();
    let lost: Vec<&&str> = acknowledged
        .iter()
        .filter(|(reference, id)| stored.get(**reference).map(String::as_str) != Some(**id))
        .map(|(reference, _)| reference)
        .collect();
    if let Some(reference) = <[&&str]>::first(&lost) {
        problems.push(format!(
            "{} acknowledged payouts are missing or changed, e.g. {reference}",
            lost.len()
        ));
    }
    let partial = count(&db, PARTIAL_PAYOUTS).await?;
    if partial > 0 {
        problems.push(format!(
            "{partial} payouts exist in part (no hold or no event)"
        ));
    }
    let by_reference: std::collections::HashMap<&str, usize> = samples
        .iter()
        .map(|s| (s.reference.as_str(), s.tenant))
        .collect();
    let mut replayed = 0;
    let mut unanswered = 0;
    // Every payout committed without an answer, and a sample of the acknowledged ones.
    let retries = stored
        .iter()
        .filter(|(reference, _)| !acknowledged.contains_key(reference.as_str()))
        .inspect(|_| unanswered += 1)
        .chain(
            stored
                .iter()
                .filter(|(reference, _)| acknowledged.contains_key(reference.as_str()))
                .take(20),
        )
        .collect::<Vec<_>>();
    for (reference, id) in retries {
        let Some(&tenant) = by_reference.get(reference.as_str()) else {
            problems.push(format!("payout {reference} was never sent"));
            continue;
        };
        let subaccount = &placed[tenant];
        let answer = api
            .call(
                &subaccount.key,
                reqwest::Method::POST,
                "/api/payout/single",
                Some(&payout_body(&subaccount.payee, 100, reference)),
                &[("idempotency-key", reference.clone())],
            )
            .await;
        match answer {
            Answer::Http(200, body) if body["payload"]["payout_id"] == id.as_str() => {
                replayed += 1;
            }
            other => {
                problems.push(format!("the retry of {reference} got {other:?}"));
                break;
            }
        }
    }
    if check_ledger(&payoutd).await.is_err() {
        problems.push("check-ledger reports a discrepancy".to_owned());
    }
    server.stop().await?;
    if !problems.is_empty() {
        return Ok(Err(problems.join("; ")));
    }
    let stopped_side = placed.iter().filter(|p| p.on_stopped_worker).count();
    Ok(Ok(format!(
        "{} subaccounts ({stopped_side} on the stopped worker): worker down {:.1} s (stop took \
         {:.0} ms); meanwhile {refused} requests of its subaccounts all 503 SYS503, slowest \
         {:.0} ms, and {served} of the others served; every subaccount served again {:.0} ms \
         after the restart; {} acknowledged payouts all stored, none in part, {unanswered} \
         committed without an answer, {replayed} retries replayed; ledger balanced",
        placed.len(),
        (up_from - down_at).as_secs_f64(),
        (down_at - stopping).as_secs_f64() * 1000.0,
        slowest.as_secs_f64() * 1000.0,
        recovered.as_secs_f64() * 1000.0,
        acknowledged.len(),
    )))
}

/// `payoutd admin check-ledger`: fails on a discrepancy.
async fn check_ledger(payoutd: &Payoutd) -> anyhow::Result<()> {
    payoutd.admin(&["check-ledger"]).await.map(drop)
}
