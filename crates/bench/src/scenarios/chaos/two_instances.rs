//! The two-instance check: two servers on one database and one webhook receiver.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use super::Args;
use super::client::{Answer, Api};
use super::world::{all_delivered, count, ids, payout_body, serve, world};
use crate::Env;

/// The two-instance check.
pub(super) async fn two_instances(
    env: &Env,
    args: &Args,
) -> anyhow::Result<Result<String, String>> {
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
    let delivered = all_delivered(&world.db, &world.receiver, Duration::from_secs(60)).await?;
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
