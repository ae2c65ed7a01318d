//! A cut-off the size of a payroll: closing a batch and recording its submission write more
//! rows than one set statement holds (the store writes at most 10 000 a statement, so that a
//! batch of 100 000 payouts stays within the statement timeout), and every row is written once.

use std::sync::Arc;

use diesel::sql_types::{SmallInt, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::batch::BatchStatus;
use domain::batch::ports::{BatchStore, ClosePlanner, RailReceipt};
use domain::events::OutboxEvent;
use domain::ids::EventId;
use domain::payout::PayoutStatus;
use uuid::Uuid;

use crate::rail_files::batch_with_payouts;
use crate::support::{Fixture, RandomIds, at};

const T0: i64 = 1_700_000_000_123_456;
const HOUR: i64 = 3_600_000_000;

/// One more payout than a set statement writes.
const PAYOUTS: usize = 10_001;

#[tokio::test]
async fn a_batch_of_more_payouts_than_one_statement_writes_closes_and_records_every_payout() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("payroll").await.id;
    let (batch, first) = batch_with_payouts(&fx, sub, 1).await;
    let pending = i16::from(PayoutStatus::Pending.code());
    let mut conn = fx.raw().await;
    // The batch open and due, with PAYOUTS pending payouts.
    diesel::sql_query("UPDATE batches SET status = 'open', batch_run_time = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(batch.as_uuid())
        .bind::<Timestamptz, _>(at(T0))
        .execute(&mut conn)
        .await
        .expect("open the batch");
    diesel::sql_query("UPDATE payouts SET status = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(first[0].as_uuid())
        .bind::<SmallInt, _>(pending)
        .execute(&mut conn)
        .await
        .expect("pending");
    diesel::sql_query(
        "INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
         status, batch_id, duplicate, created_at, updated_at) \
         SELECT gen_random_uuid(), p.subaccount_id, p.receiver_id, p.account_id, p.asset, \
         p.amount, p.fee, p.status, p.batch_id, p.duplicate, p.created_at, p.updated_at \
         FROM payouts p, generate_series(2, $2) WHERE p.id = $1",
    )
    .bind::<SqlUuid, _>(first[0].as_uuid())
    .bind::<diesel::sql_types::Integer, _>(i32::try_from(PAYOUTS).unwrap())
    .execute(&mut conn)
    .await
    .expect("copy payouts");

    let now = at(T0 + HOUR);
    let planner = ClosePlanner::new(now, Arc::new(RandomIds));
    let closed = fx
        .store
        .close_due_batch(&planner, at(T0 + 2 * HOUR))
        .await
        .unwrap()
        .expect("the due batch closes");
    assert_eq!(closed.batch.id, batch);
    assert_eq!(closed.batch.status, BatchStatus::Queue);
    assert_eq!(closed.batch.total_tx, i32::try_from(PAYOUTS).unwrap());
    assert_eq!(closed.payouts.len(), PAYOUTS);
    let batch_id = batch.as_uuid();
    let in_progress = fx
        .count_where(
            "SELECT count(*) AS n FROM payouts WHERE batch_id = $1 AND status = 3 \
             AND submitted_at IS NOT NULL",
            batch_id,
        )
        .await;
    assert_eq!(in_progress, i64::try_from(PAYOUTS).unwrap());
    // Each payout announced once, with the batch in its payload.
    let announced = fx
        .count_where(
            "SELECT count(DISTINCT e.object_id) AS n FROM outbox_events e \
             JOIN payouts p ON p.id = e.object_id \
             WHERE p.batch_id = $1 AND e.event_type = 'payoutUpdated' \
             AND e.payload ->> 'batch_id' = $1::text AND e.sequence = 1",
            batch_id,
        )
        .await;
    assert_eq!(announced, i64::try_from(PAYOUTS).unwrap());
    let events = fx
        .count_where(
            "SELECT count(*) AS n FROM outbox_events e JOIN payouts p ON p.id = e.object_id \
             WHERE p.batch_id = $1",
            batch_id,
        )
        .await;
    assert_eq!(events, i64::try_from(PAYOUTS).unwrap(), "no event twice");

    let receipts: Vec<RailReceipt> = closed
        .payouts
        .iter()
        .enumerate()
        .map(|(n, p)| RailReceipt {
            payout_id: p.id,
            provider_reference: format!("T{n:07}"),
        })
        .collect();
    let submitted = domain::batch::Batch {
        status: BatchStatus::InProgress,
        updated_at: now,
        ..closed.batch.clone()
    };
    let event = OutboxEvent::batch(EventId::from_uuid(Uuid::new_v4()), &submitted, now);
    assert!(
        fx.store
            .record_submission(&closed, &receipts, &submitted, &[event])
            .await
            .unwrap()
    );
    let referenced = fx
        .count_where(
            "SELECT count(DISTINCT provider_reference) AS n FROM payouts \
             WHERE batch_id = $1 AND provider_reference LIKE 'T%'",
            batch_id,
        )
        .await;
    assert_eq!(referenced, i64::try_from(PAYOUTS).unwrap());

    // Results come in: the batch finishes only once no payout is in progress, with what was
    // paid and what failed.
    let (last, rest) = closed.payouts.split_last().unwrap();
    let set_status = async |ids: Vec<Uuid>, status: PayoutStatus| {
        diesel::sql_query("UPDATE payouts SET status = $2 WHERE id = ANY($1)")
            .bind::<diesel::sql_types::Array<SqlUuid>, _>(ids)
            .bind::<SmallInt, _>(i16::from(status.code()))
            .execute(&mut fx.raw().await)
            .await
            .expect("set status");
    };
    set_status(
        rest.iter().map(|p| p.id.as_uuid()).collect(),
        PayoutStatus::Successful,
    )
    .await;
    let finish = async || {
        fx.store
            .finish_batch(batch, now, EventId::from_uuid(Uuid::new_v4()))
            .await
            .unwrap()
    };
    assert_eq!(finish().await, None, "one payout is still in progress");
    set_status(vec![last.id.as_uuid()], PayoutStatus::Failed).await;
    let finished = finish().await.expect("the batch finishes");
    assert_eq!(finished.total_failed, 1);
    assert_eq!(
        finished.process_amount,
        rest.iter().map(|p| p.amount.get()).sum::<i64>()
    );
    assert_eq!(finish().await, None, "finished once");
}
