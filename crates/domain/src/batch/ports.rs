//! The batch runner's ports: where batches are kept, and the payout rail.

use std::fmt;
use std::sync::Arc;

use super::{Batch, BatchStatus};
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::ids::{BatchId, EventId, PayoutId, SubaccountId};
use crate::money::Asset;
use crate::payout::change::{PayoutChange, plan_change};
use crate::payout::{IllegalTransition, Payout, PayoutTrigger};
use crate::ports::IdGenerator;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// A batch a runner closed (or took over), with the payouts it must submit.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedBatch {
    /// The batch, in `queue`.
    pub batch: Batch,
    /// Its `in_progress` payouts.
    pub payouts: Vec<Payout>,
    /// The runner's lease: until then no other runner takes the batch over. It also identifies
    /// this claim, so a runner whose lease ran out cannot record over its successor.
    pub claimed_until: DateTime<Utc>,
}

/// What closing a batch writes besides its payouts' changes ([`ClosePlanner::submissions`]): the
/// batch after it and the batch's event.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedClose {
    /// The batch: `queue` with its totals, or `cancelled` when it has nothing to submit.
    pub batch: Batch,
    /// `batchUpdate`.
    pub events: Vec<OutboxEvent>,
}

/// Decides how a due batch closes. The store locks the batch and its pending payouts and asks
/// [`Self::plan`] for the batch and [`Self::submissions`] for the payouts, so the plan is exact
/// and commits in one transaction with the close. The store may ask for the submissions a part
/// of the payouts at a time and apply each part before planning the next (a batch of 100,000
/// payouts then never holds every payout's event in memory at once): each payout's change
/// depends on that payout alone.
#[derive(Clone)]
pub struct ClosePlanner {
    now: DateTime<Utc>,
    ids: Arc<dyn IdGenerator>,
}

impl fmt::Debug for ClosePlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClosePlanner")
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl ClosePlanner {
    /// A planner for closes at `now`.
    pub fn new(now: DateTime<Utc>, ids: Arc<dyn IdGenerator>) -> Self {
        Self { now, ids }
    }

    /// When the close happens.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// Closes `batch` (open) over its `pending` payouts: the batch goes to `queue` with their
    /// count and sum, or to `cancelled` when there is none. Each payout's own change is
    /// [`Self::submissions`].
    pub fn plan(&self, batch: &Batch, pending: &[Payout]) -> PlannedClose {
        let amount = pending.iter().map(|p| p.amount.get()).sum();
        let closed = Batch {
            status: if pending.is_empty() {
                BatchStatus::Cancelled
            } else {
                BatchStatus::Queue
            },
            total_tx: i32::try_from(pending.len()).unwrap_or(i32::MAX),
            amount,
            updated_at: self.now,
            ..batch.clone()
        };
        let event = OutboxEvent::batch(EventId::from_uuid(self.ids.new_id()), &closed, self.now);
        PlannedClose {
            batch: closed,
            events: vec![event],
        }
    }

    /// Each of `pending` (some or all of a closing batch's payouts) `in_progress`, submitted now,
    /// with its event.
    ///
    /// # Errors
    /// A payout that is not `pending`.
    pub fn submissions(&self, pending: &[Payout]) -> Result<Vec<PayoutChange>, IllegalTransition> {
        pending
            .iter()
            .map(|p| {
                plan_change(
                    p,
                    PayoutTrigger::Submitted,
                    self.now,
                    self.ids.as_ref(),
                    |p| {
                        p.submitted_at = Some(self.now);
                    },
                )
            })
            .collect()
    }
}

/// What the rail answered for one submitted payout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailReceipt {
    /// The payout.
    pub payout_id: PayoutId,
    /// The rail's reference for it (`provider_reference`, `payout_data.transaction_id`).
    pub provider_reference: String,
}

/// How the rail ended a payout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RailResult {
    /// Paid.
    Paid,
    /// Not paid: refused before payment. Never undoes a payout the rail paid.
    Failed {
        /// The bank's code, when it gave one (`AC04`, `DECLINED`).
        code: Option<String>,
        /// The receiver's account cannot be paid (the account becomes `failed`).
        receiver_is_invalid: bool,
        /// The rail's reason.
        reason: String,
    },
    /// The receiving bank sent it back, with a code (production rails): a payout not yet
    /// settled fails; a settled one is returned, its amount back in the balance.
    Returned {
        /// The bank's code (`R03`, `AC04`).
        code: String,
        /// What the code means.
        reason: String,
        /// The code says the account details are wrong or the account is gone (the account
        /// becomes `failed`).
        receiver_is_invalid: bool,
    },
}

/// The rail's result for one submitted payout.
#[derive(Debug, Clone, PartialEq)]
pub struct RailOutcome {
    /// The payout, as read with its result (`in_progress`).
    pub payout: Payout,
    /// What happened.
    pub result: RailResult,
}

/// The payout rail: the bank or provider that moves the money (docs/ARCHITECTURE.md, Ports by job).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayoutRail: Send + Sync {
    /// Submits `payouts` of `batch`. Must be idempotent by payout id: a runner that took over
    /// a batch whose previous runner died may submit the same payouts again, and the rail must
    /// then answer with the receipts it gave the first time rather than pay twice.
    async fn submit(
        &self,
        batch: &Batch,
        payouts: &[Payout],
    ) -> Result<Vec<RailReceipt>, PortError>;

    /// Up to `limit` of the payouts submitted to the rail and still `in_progress` whose result
    /// the rail has, each with it (none for those still running). A payout whose result is in
    /// is found however many others wait for theirs: a rail never hides a due payout behind
    /// payouts that are not (a file answered or at its effective date is found among any number
    /// of files waiting for a later one).
    ///
    /// # Errors
    /// `PortError` when what the rail knows cannot be read; nothing is changed.
    async fn results(&self, limit: u32) -> Result<Vec<RailOutcome>, PortError>;
}

/// Batches and the changes of their lifecycle.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BatchStore: Send + Sync {
    /// Closes one open batch whose run time is at or before `planner.now()`, in one transaction:
    /// locks it and its `pending` payouts, applies [`ClosePlanner::plan`] (the payouts'
    /// changes, the batch's status and totals, the events) and sets the lease to `lease_until`.
    /// `Ok(None)` when no batch is due.
    async fn close_due_batch(
        &self,
        planner: &ClosePlanner,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClosedBatch>, PortError>;

    /// Takes over one `queue` batch whose lease ran out before `now` (its runner died between
    /// closing and recording the submission): a new lease until `lease_until`, and its
    /// `in_progress` payouts to submit again.
    async fn reclaim_stale_batch(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClosedBatch>, PortError>;

    /// Records the rail's receipts for `closed` and moves the batch to `in_progress` (its
    /// payouts are there already) with `events`, where the batch is still in `queue` under this claim.
    /// `Ok(false)` when another runner took it over meanwhile; then nothing was written.
    async fn record_submission(
        &self,
        closed: &ClosedBatch,
        receipts: &[RailReceipt],
        submitted: &Batch,
        events: &[OutboxEvent],
    ) -> Result<bool, PortError>;

    /// Up to `limit` `in_progress` payouts of submitted batches, longest waiting first (the
    /// sandbox rail's results: with one delay for every payout, the longest waiting are the
    /// first due).
    async fn submitted_payouts(&self, limit: u32) -> Result<Vec<Payout>, PortError>;

    /// Ends the batch if it is submitted and none of its payouts is still `in_progress`: its
    /// status by [`BatchStatus::finished`], `process_amount` and `total_failed` from its
    /// payouts, and a `batchUpdate` event with `event_id`. `Ok(None)` when it is not finished
    /// (or was finished already).
    async fn finish_batch(
        &self,
        batch: BatchId,
        now: DateTime<Utc>,
        event_id: EventId,
    ) -> Result<Option<Batch>, PortError>;

    /// Moves the run time of the subaccount's open batch in `asset` to `now` (the sandbox's
    /// run-now helper) and returns it; `Ok(None)` when there is no open batch.
    async fn bring_forward_open_batch(
        &self,
        subaccount: SubaccountId,
        asset: Asset,
        now: DateTime<Utc>,
    ) -> Result<Option<Batch>, PortError>;

    /// The subaccount's batch with this id.
    async fn find_batch(
        &self,
        subaccount: SubaccountId,
        id: BatchId,
    ) -> Result<Option<Batch>, PortError>;

    /// The batch's payouts that are `in_progress`.
    async fn in_progress_payouts(
        &self,
        subaccount: SubaccountId,
        batch: BatchId,
    ) -> Result<Vec<Payout>, PortError>;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::builders::{BatchBuilder, PayoutBuilder};
    use crate::events::EventKind;
    use crate::payout::PayoutStatus;
    use crate::ports::MockIdGenerator;
    use uuid::Uuid;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap_or_default()
    }

    fn planner() -> ClosePlanner {
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        ClosePlanner::new(at(60), Arc::new(ids))
    }

    fn open_batch() -> Batch {
        BatchBuilder::new().at(at(0)).build()
    }

    fn pending(n: u128, amount: i64) -> Payout {
        PayoutBuilder::new()
            .id(PayoutId::from_uuid(Uuid::from_u128(100 + n)))
            .amount(amount)
            .batch(BatchId::from_uuid(Uuid::from_u128(0xB)))
            .created_at(at(0))
            .build()
    }

    #[test]
    fn a_close_queues_the_batch_with_every_pending_payouts_count_and_sum() {
        let payouts = [pending(1, 1_000), pending(2, 2_500), pending(3, 40)];
        let plan = planner().plan(&open_batch(), &payouts);
        assert_eq!(plan.batch.status, BatchStatus::Queue);
        assert_eq!((plan.batch.total_tx, plan.batch.amount), (3, 3_540));
        assert_eq!(plan.batch.updated_at, at(60));
        assert_eq!(plan.events.len(), 1);
        assert_eq!(plan.events[0].kind, EventKind::BatchUpdate);
        assert_eq!(plan.events[0].payload["status"], "queue");
    }

    #[test]
    fn a_close_with_nothing_pending_cancels_the_batch() {
        let plan = planner().plan(&open_batch(), &[]);
        assert_eq!(plan.batch.status, BatchStatus::Cancelled);
        assert_eq!((plan.batch.total_tx, plan.batch.amount), (0, 0));
    }

    #[test]
    fn submissions_put_each_payout_in_progress_with_its_event_whatever_the_parts() {
        let payouts: Vec<Payout> = (1..=5).map(|n| pending(n, 100)).collect();
        let planner = planner();
        let whole = planner.submissions(&payouts).unwrap();
        let mut parts = planner.submissions(&payouts[..2]).unwrap();
        parts.extend(planner.submissions(&payouts[2..]).unwrap());
        for changes in [&whole, &parts] {
            assert_eq!(changes.len(), payouts.len());
            for (change, payout) in changes.iter().zip(&payouts) {
                assert_eq!(change.payout.id, payout.id);
                assert_eq!(change.expected, PayoutStatus::Pending);
                assert_eq!(change.payout.status, PayoutStatus::InProgress);
                assert_eq!(change.payout.submitted_at, Some(at(60)));
                assert!(
                    change
                        .events
                        .iter()
                        .any(|e| e.object_id == payout.id.as_uuid()
                            && e.payload["status"] == "in_progress")
                );
            }
        }
    }

    #[test]
    fn a_payout_that_is_not_pending_is_refused() {
        let mut payout = pending(1, 100);
        payout.status = PayoutStatus::Successful;
        assert!(planner().submissions(&[pending(2, 100), payout]).is_err());
    }
}
