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

/// What closing a batch writes: the batch after it, its payouts' changes and the batch's event.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedClose {
    /// The batch: `queue` with its totals, or `cancelled` when it has nothing to submit.
    pub batch: Batch,
    /// `pending` → `in_progress` for each payout.
    pub changes: Vec<PayoutChange>,
    /// `batchUpdate`.
    pub events: Vec<OutboxEvent>,
}

/// Decides how a due batch closes. The store locks the batch and its pending payouts and asks
/// [`Self::plan`], so the plan is exact and commits in one transaction with the close.
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

    /// Closes `batch` (open) over its `pending` payouts: each becomes `in_progress` (submitted
    /// now); the batch goes to `queue` with their count and sum, or to `cancelled` when there is
    /// none.
    pub fn plan(
        &self,
        batch: &Batch,
        pending: &[Payout],
    ) -> Result<PlannedClose, IllegalTransition> {
        let changes = pending
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
            .collect::<Result<Vec<_>, _>>()?;
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
        Ok(PlannedClose {
            batch: closed,
            changes,
            events: vec![event],
        })
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
