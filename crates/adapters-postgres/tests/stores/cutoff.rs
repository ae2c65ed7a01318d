//! `CutoffStore` (an operator's `run-cutoff`): what the store refuses and what it writes.

use chrono::{Duration, Utc};
use diesel::sql_types::{Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::batch::cutoff::{CutoffBatches, CutoffStore};
use domain::money::Asset;
use uuid::Uuid;

use crate::support::{Fixture, audit_entry};

/// A USD batch of `subaccount` in `status`, claimed until `claimed_until`, running in an hour.
async fn batch(fx: &Fixture, subaccount: Uuid, status: &str, claimed: bool) -> Uuid {
    let id = Uuid::new_v4();
    let now = Utc::now();
    let mut conn = fx.raw().await;
    diesel::sql_query(format!(
        "INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, total_tx, amount, \
         process_amount, total_failed, claimed_until, created_at, updated_at) \
         VALUES ($1, $2, 'USD', '{status}', $3, 0, 0, 0, 0, {}, $4, $4)",
        if claimed { "$3" } else { "NULL" }
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(subaccount)
    .bind::<Timestamptz, _>(now + Duration::hours(1))
    .bind::<Timestamptz, _>(now)
    .execute(&mut conn)
    .await
    .unwrap();
    id
}

async fn audit_rows(fx: &Fixture, id: Uuid) -> i64 {
    fx.count_where("SELECT count(*) AS n FROM audit_log WHERE id = $1", id)
        .await
}

/// A cut-off of `asset` now, with a fresh audit entry: what the store found, and how many audit
/// rows it wrote for it.
async fn cutoff(fx: &Fixture, asset: Asset) -> (CutoffBatches, i64) {
    let audit = audit_entry();
    let found = fx
        .store
        .bring_forward_for_cutoff(asset, Utc::now(), &audit)
        .await
        .unwrap();
    (found, audit_rows(fx, audit.id.as_uuid()).await)
}

#[tokio::test]
async fn a_batch_being_sent_refuses_the_cutoff_and_nothing_waiting_writes_nothing() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;

    // An open batch without a pending payout is not waiting: nothing changes, no audit row.
    let open = batch(&fx, sub.as_uuid(), "open", false).await;
    assert_eq!(
        cutoff(&fx, Asset::Usd).await,
        (CutoffBatches::BroughtForward(Vec::new()), 0)
    );
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM batches WHERE id = $1 AND batch_run_time > now()",
            open
        )
        .await,
        1,
        "its run time is untouched"
    );

    // A closed batch whose lease runs: its file is on its way; refused, nothing written.
    batch(&fx, sub.as_uuid(), "queue", true).await;
    assert_eq!(
        cutoff(&fx, Asset::Usd).await,
        (CutoffBatches::BeingSent { batches: 1 }, 0)
    );

    // Another currency is not held up by it.
    assert_eq!(
        cutoff(&fx, Asset::Eur).await,
        (CutoffBatches::BroughtForward(Vec::new()), 0)
    );
}
