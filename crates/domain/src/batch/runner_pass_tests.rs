//! A pass's batches: the next due batch is closed while the one before it is submitted, and
//! submissions are made one at a time in the order the batches were closed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::Notify;

use super::tests::{in_progress_numbered, now, the_pass_fails_unavailable};
use super::*;
use crate::account::ports::MockAccountStore;
use crate::batch::ports::{MockBatchStore, MockPayoutRail, RailReceipt};
use crate::builders::BatchBuilder;
use crate::payout::ports::MockPayoutStore;
use crate::ports::{MockClock, MockIdGenerator};
use uuid::Uuid;

/// Batch `n` of subaccount 2, closed with one payout in progress.
fn closed(n: u128) -> ClosedBatch {
    let mut batch = BatchBuilder::new()
        .status(BatchStatus::Queue)
        .totals(1, 1_013)
        .at(now())
        .build();
    batch.id = BatchId::from_uuid(Uuid::from_u128(n));
    let mut payout = in_progress_numbered(n);
    payout.batch_id = Some(batch.id);
    ClosedBatch {
        batch,
        payouts: vec![payout],
        claimed_until: now() + Duration::seconds(60),
    }
}

/// A rail whose submission of a batch waits until the store is asked for the batch after it
/// (`closes` is told so), and which records the batches it was given in order.
struct WaitsForTheNextClose {
    closes: Arc<Notify>,
    submitted: Mutex<Vec<BatchId>>,
}

#[async_trait]
impl PayoutRail for WaitsForTheNextClose {
    async fn submit(
        &self,
        batch: &Batch,
        payouts: &[Payout],
    ) -> Result<Vec<RailReceipt>, PortError> {
        self.submitted.lock().unwrap().push(batch.id);
        tokio::time::timeout(std::time::Duration::from_secs(10), self.closes.notified())
            .await
            .map_err(|_| PortError::unknown("the next batch was not closed during a submission"))?;
        Ok(receipts(payouts))
    }

    async fn results(&self, _limit: u32) -> Result<Vec<RailOutcome>, PortError> {
        Ok(Vec::new())
    }
}

/// The runner over `batches` and a rail that submits only while the next batch is closed.
fn runner_waiting_for_closes(
    batches: MockBatchStore,
    closes: Arc<Notify>,
) -> (BatchRunner, Arc<WaitsForTheNextClose>) {
    let rail = Arc::new(WaitsForTheNextClose {
        closes,
        submitted: Mutex::new(Vec::new()),
    });
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    let mut ids = MockIdGenerator::new();
    ids.expect_new_id().returning(Uuid::new_v4);
    let runner = BatchRunner::new(
        Arc::new(batches),
        Arc::new(MockPayoutStore::new()),
        Arc::new(MockAccountStore::new()),
        rail.clone(),
        Arc::new(clock),
        Arc::new(ids),
        Duration::seconds(60),
    );
    (runner, rail)
}

/// Batches 1, 2 and 3 due, then none; each call after the first tells `closes` (the first
/// has no submission beside it).
fn three_due(batches: &mut MockBatchStore, closes: &Arc<Notify>) {
    let mut due = vec![closed(3), closed(2), closed(1)];
    let calls = Mutex::new(0_u32);
    let closes = closes.clone();
    batches
        .expect_close_due_batch()
        .times(4)
        .returning(move |_, _| {
            let mut calls = calls.lock().unwrap();
            *calls += 1;
            if *calls > 1 {
                closes.notify_one();
            }
            Ok(due.pop())
        });
    batches
        .expect_reclaim_stale_batch()
        .returning(|_, _| Ok(None));
}

#[tokio::test]
async fn the_next_batch_is_closed_while_one_is_submitted_and_they_are_submitted_in_order() {
    let closes = Arc::new(Notify::new());
    let mut batches = MockBatchStore::new();
    three_due(&mut batches, &closes);
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let order = recorded.clone();
    batches.expect_record_submission().times(3).returning(
        move |closed, receipts, submitted, events| {
            assert_eq!(receipts.len(), closed.payouts.len());
            assert_eq!(submitted.status, BatchStatus::InProgress);
            assert_eq!(events.len(), 1);
            order.lock().unwrap().push(closed.batch.id);
            Ok(true)
        },
    );
    let (runner, rail) = runner_waiting_for_closes(batches, closes.clone());
    // Every submission has a close beside it, the last one's finding nothing due.
    let pass = runner.run_once().await.unwrap();
    assert_eq!((pass.closed, pass.submitted), (3, 3));
    let ids: Vec<BatchId> = (1..=3)
        .map(|n| BatchId::from_uuid(Uuid::from_u128(n)))
        .collect();
    assert_eq!(
        *rail.submitted.lock().unwrap(),
        ids,
        "submitted in the order closed"
    );
    assert_eq!(
        *recorded.lock().unwrap(),
        ids,
        "recorded in the order closed"
    );
}

/// A receipt for each of `payouts`.
fn receipts(payouts: &[Payout]) -> Vec<RailReceipt> {
    payouts
        .iter()
        .map(|p| RailReceipt {
            payout_id: p.id,
            provider_reference: format!("R-{}", p.id),
        })
        .collect()
}

#[tokio::test]
async fn after_a_failed_submission_the_batch_closed_beside_it_is_submitted_and_no_more_closed() {
    let mut batches = MockBatchStore::new();
    let mut due = vec![closed(3), closed(2), closed(1)];
    batches
        .expect_close_due_batch()
        .times(2)
        .returning(move |_, _| Ok(due.pop()));
    batches.expect_reclaim_stale_batch().never();
    batches
        .expect_record_submission()
        .times(1)
        .withf(|closed, _, _, _| closed.batch.id == BatchId::from_uuid(Uuid::from_u128(2)))
        .returning(|_, _, _, _| Ok(true));
    let mut rail = MockPayoutRail::new();
    rail.expect_submit()
        .times(1)
        .withf(|batch, _| batch.id == BatchId::from_uuid(Uuid::from_u128(1)))
        .returning(|_, _| Err(PortError::Unavailable(anyhow::anyhow!("rail down"))));
    rail.expect_submit()
        .times(1)
        .withf(|batch, _| batch.id == BatchId::from_uuid(Uuid::from_u128(2)))
        .returning(|_, payouts| Ok(receipts(payouts)));
    the_pass_fails_unavailable(batches, rail).await;
}

#[tokio::test]
async fn a_close_that_fails_beside_a_submission_ends_the_pass_after_recording_it() {
    let mut batches = MockBatchStore::new();
    let mut calls = 0;
    batches
        .expect_close_due_batch()
        .times(2)
        .returning(move |_, _| {
            calls += 1;
            if calls == 1 {
                Ok(Some(closed(1)))
            } else {
                Err(PortError::Unavailable(anyhow::anyhow!("database down")))
            }
        });
    batches.expect_reclaim_stale_batch().never();
    batches
        .expect_record_submission()
        .times(1)
        .returning(|_, _, _, _| Ok(true));
    let mut rail = MockPayoutRail::new();
    rail.expect_submit()
        .times(1)
        .returning(|_, payouts| Ok(receipts(payouts)));
    the_pass_fails_unavailable(batches, rail).await;
}
