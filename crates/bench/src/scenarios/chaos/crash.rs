//! The crash check: `kill -9` of the server during a load of single and bulk payouts, then a
//! restart.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use super::Args;
use super::client::{Answer, Api};
use super::world::{
    PARTIAL_PAYOUTS, World, all_delivered, count, first_acknowledged, ids, payout_body, serve,
    world,
};
use crate::Env;

/// The crash check.
pub(super) async fn crash(env: &Env, args: &Args) -> anyhow::Result<Result<String, String>> {
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
    let delivered = match all_delivered(&world.db, &world.receiver, Duration::from_secs(60)).await?
    {
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
pub(super) const BULK_ITEMS: u64 = 20;

/// The `n`th bulk request of the crash check: [`BULK_ITEMS`] payouts of 100, references
/// `bulkcrash-<n>-<item>`.
pub(super) fn bulk_body(payees: &[(String, String)], n: u64) -> Value {
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
pub(super) async fn check_bulks(
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
