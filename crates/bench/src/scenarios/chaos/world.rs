//! What the checks share: the seeded world (database, subaccount, payees, webhook receiver),
//! the servers, counts in the database, the wait for every delivery, the ledger check and the
//! operator's commands that stop and start a database.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;

use super::client::Api;
use super::{Args, CITUS_SHARD_COUNT, SERVER_ENV};
use crate::Env;
use crate::db::BenchDb;
use crate::load::Credentials;
use crate::receiver::Receiver;
use crate::server::{Payoutd, Server, Tenant, new_master_key};

/// A fresh database with one funded subaccount (one key per client), its webhook pointed at
/// `receiver`, and `payees` receivers with KYC completed and a confirmed AUD account, created
/// through a first server that is then stopped.
pub(super) struct World {
    pub(super) db: BenchDb,
    pub(super) payoutd: Payoutd,
    pub(super) tenant: Tenant,
    /// (receiver id, account id).
    pub(super) payees: Vec<(String, String)>,
    pub(super) receiver: Receiver,
}

/// A fresh database `name` (a previous run's dropped): on every node of the cluster with
/// `--citus`.
pub(super) async fn fresh_db(env: &Env, args: &Args, name: &str) -> anyhow::Result<BenchDb> {
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

pub(super) async fn world(
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
pub(super) async fn payee(
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
pub(super) fn letters(mut n: usize) -> String {
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

pub(super) fn text(object: &Value, name: &str) -> anyhow::Result<String> {
    object[name]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no `{name}` in {object}"))
}

pub(super) async fn serve(
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
pub(super) struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(diesel::QueryableByName)]
pub(super) struct Id {
    #[diesel(sql_type = Text)]
    id: String,
}

pub(super) async fn count(db: &BenchDb, sql: &str) -> anyhow::Result<i64> {
    let mut conn = db.connect().await?;
    Ok(diesel::sql_query(sql)
        .get_result::<Count>(&mut conn)
        .await
        .with_context(|| format!("running {sql}"))?
        .n)
}

pub(super) async fn ids(db: &BenchDb, sql: &str) -> anyhow::Result<Vec<String>> {
    let mut conn = db.connect().await?;
    Ok(diesel::sql_query(sql)
        .load::<Id>(&mut conn)
        .await
        .with_context(|| format!("running {sql}"))?
        .into_iter()
        .map(|r| r.id)
        .collect())
}

/// Waits until every outbox event of `db` is delivered, then checks `receiver` got each event
/// delivered; returns how many.
pub(super) async fn all_delivered(
    db: &BenchDb,
    receiver: &Receiver,
    within: Duration,
) -> anyhow::Result<Result<usize, String>> {
    let deadline = Instant::now() + within;
    loop {
        let undelivered = count(
            db,
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
    // The events delivered by now (a server still running may write more, not delivered yet).
    let events: Vec<Uuid> = ids(
        db,
        "SELECT id::text AS id FROM outbox_events WHERE status = 'delivered'",
    )
    .await?
    .iter()
    .filter_map(|id| Uuid::parse_str(id).ok())
    .collect();
    let missing = receiver
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

pub(super) fn payout_body(payee: &(String, String), amount: i64, reference: &str) -> Value {
    json!({
        "receiver_id": payee.0, "account_id": payee.1, "amount": amount,
        "currency": "AUD", "reference": reference
    })
}

/// Counts the payouts stored in part: without their hold or their `payoutCreated` event. The
/// subqueries name the subaccount, as Citus needs to join distributed tables.
pub(super) const PARTIAL_PAYOUTS: &str = "SELECT count(*) AS n FROM payouts p \
     WHERE NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.subaccount_id = p.subaccount_id \
                       AND l.payout_id = p.id AND l.kind = 'payout_hold') \
        OR NOT EXISTS (SELECT 1 FROM outbox_events e WHERE e.subaccount_id = p.subaccount_id \
                       AND e.object_id = p.id AND e.event_type = 'payoutCreated')";

/// Waits until `acknowledged` says a payout of the load was acknowledged, so the fault lands
/// on a load that is running (a debug build's first payouts, on Citus especially, can take
/// longer than a smoke run's whole load phase); fails after 30 s.
pub(super) async fn first_acknowledged(acknowledged: impl Fn() -> bool) -> anyhow::Result<()> {
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

pub(super) fn argv(raw: &str) -> anyhow::Result<Command> {
    let parts: Vec<String> =
        serde_json::from_str(raw).context("the command is not a JSON array")?;
    let (program, rest) = parts.split_first().context("empty command")?;
    let mut command = Command::new(program);
    command.args(rest);
    Ok(command)
}

pub(super) async fn run_command(raw: &str) -> anyhow::Result<()> {
    let mut command = argv(raw)?;
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    anyhow::ensure!(
        output.status.success(),
        "`{raw}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

/// `payoutd admin check-ledger`: fails on a discrepancy.
pub(super) async fn check_ledger(payoutd: &Payoutd) -> anyhow::Result<()> {
    payoutd.admin(&["check-ledger"]).await.map(drop)
}
