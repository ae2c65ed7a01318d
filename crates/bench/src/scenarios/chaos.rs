//! `cargo xtask chaos`: fault tests of payoutd against a real PostgreSQL, printing a pass/fail
//! table (issue 6):
//! - **crash**: `kill -9` of the server during a payout load, then a restart: every
//!   acknowledged payout exists, no payout exists in part (each has its hold and its
//!   `payoutCreated`), `check-ledger` passes, every committed event is eventually delivered;
//! - **outage**: PostgreSQL stopped during a load: requests get 503 `SYS503` quickly (no crash,
//!   no hang), and the service recovers by itself once the database is back;
//! - **two instances** on one database and one webhook receiver: every event delivered once,
//!   no payout submitted twice, no nonce accepted twice.

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
    /// How long the crash check's load runs before the `kill -9`, in milliseconds.
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
}

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
    let mut rows: Vec<(&str, Verdict)> = Vec::new();
    rows.push((
        "kill -9 during payout load",
        verdict(crash(env, args).await),
    ));
    rows.push((
        "PostgreSQL stopped during load",
        match (&args.pg_stop, &args.pg_start) {
            (Some(stop), Some(start)) => verdict(outage(env, args, stop, start).await),
            _ => {
                Verdict::Skip("needs a PostgreSQL that xtask controls (no DATABASE_URL)".to_owned())
            }
        },
    ));
    rows.push((
        "two instances, one database",
        verdict(two_instances(env, args).await),
    ));

    println!("\nchaos ({:.0} s)", started.elapsed().as_secs_f64());
    println!("{:<34} {:<6} details", "check", "result");
    let mut failed = false;
    let mut json_rows = Vec::new();
    for (name, verdict) in &rows {
        let (word, details) = match verdict {
            Verdict::Pass(d) => ("PASS", d),
            Verdict::Fail(d) => {
                failed = true;
                ("FAIL", d)
            }
            Verdict::Skip(d) => ("SKIP", d),
        };
        println!("{name:<34} {word:<6} {details}");
        json_rows.push(json!({"check": name, "result": word, "details": details}));
    }
    report::write_json(
        &env.out_dir.join("chaos.json"),
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

async fn world(env: &Env, name: &str, keys: usize, payees: usize) -> anyhow::Result<World> {
    let db = BenchDb::new(&env.server_url, name)?;
    db.drop_if_exists().await?;
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
        let created = api
            .ok(
                key,
                reqwest::Method::POST,
                "/api/receiver",
                Some(&json!({
                    "subaccount_id": tenant.subaccount_id, "first_name": "Chaos",
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
        made.push((receiver_id, account_id));
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

/// The crash check.
async fn crash(env: &Env, args: &Args) -> anyhow::Result<Result<String, String>> {
    let world = world(env, "payoutd_chaos_crash", args.clients, 4).await?;
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
    let partial = count(
        &world.db,
        "SELECT count(*) AS n FROM payouts p \
         WHERE NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.payout_id = p.id AND l.kind = 'payout_hold') \
            OR NOT EXISTS (SELECT 1 FROM outbox_events e WHERE e.object_id = p.id AND e.event_type = 'payoutCreated')",
    )
    .await?;
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
    let world = world(env, "payoutd_chaos_outage", args.clients, 1).await?;
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
    if slowest > Duration::from_secs(5) {
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
    let world = world(env, "payoutd_chaos_pair", args.clients, 4).await?;
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
