//! The worker outage check (Citus): one worker stopped during a payout load of subaccounts on
//! both workers, then started again.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;

use super::client::{Answer, Api};
use super::world::{
    PARTIAL_PAYOUTS, check_ledger, count, first_acknowledged, fresh_db, ids, letters, payee,
    payout_body, run_command, serve,
};
use super::{Args, DOWN_BUDGET};
use crate::Env;
use crate::db::BenchDb;
use crate::load::Credentials;
use crate::server::{Payoutd, new_master_key};

/// A subaccount of the worker outage check: its key, its payee, and whether its shards live on
/// the worker that is stopped.
#[derive(Clone)]
pub(super) struct Placed {
    key: Credentials,
    payee: (String, String),
    on_stopped_worker: bool,
}

/// What one payout request of the worker outage check got, and when.
pub(super) struct Sample {
    /// The subaccount (index into the placed subaccounts).
    tenant: usize,
    reference: String,
    sent: Instant,
    took: Duration,
    answer: Answer,
}

#[derive(diesel::QueryableByName)]
pub(super) struct NodePort {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    port: i32,
}

/// The port of the worker holding the shards of `subaccount_id` (every distributed table is
/// colocated with `receivers`, so one shard of it tells).
pub(super) async fn worker_of(db: &BenchDb, subaccount_id: &str) -> anyhow::Result<u16> {
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
pub(super) async fn place_subaccounts(
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
pub(super) async fn worker_outage(
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
