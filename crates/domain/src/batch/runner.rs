//! The batch runner: the background job that closes due batches and submits their payouts
//! (docs/ARCHITECTURE.md, Money), and the sandbox helpers that drive the same steps on demand.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::Duration;

use super::ports::{BatchStore, ClosePlanner, ClosedBatch, PayoutRail, RailOutcome, RailResult};
use super::{Batch, BatchStatus};
use crate::account::ports::AccountStore;
use crate::account::{AccountStatus, ReceiverAccount};
use crate::auth::Caller;
use crate::error::PortError;
use crate::events::{EventKind, OutboxEvent};
use crate::idempotency::WriteKey;
use crate::ids::{BatchId, EventId, PayoutId, ReceiverAccountId, SubaccountId};
use crate::money::Asset;
use crate::payout::change::{AccountFailure, PayoutChange, plan_change};
use crate::payout::ports::PayoutStore;
use crate::payout::{Payout, PayoutStatus, PayoutTrigger};
use crate::ports::{Clock, IdGenerator};

/// How many batches one pass closes (and takes over) at most, and how many submitted payouts
/// it asks the rail about.
const BATCHES_PER_PASS: usize = 16;
const RESULTS_PER_PASS: u32 = 500;

/// Most results [`BatchRunner::settle_results`] applies as one set: a set's changes and events
/// (a payout event's payload is a JSON tree of about 2 KiB) are let go before the next set is
/// planned, so a bank report answering a whole cut-off holds one set's worth at a time.
pub(crate) const SETTLE_SET_RESULTS: usize = 2_500;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunnerPass {
    /// Batches closed (including ones closed as cancelled).
    pub closed: usize,
    /// Batches submitted to the rail (including taken-over ones).
    pub submitted: usize,
    /// Payouts whose result was recorded.
    pub settled: usize,
    /// Batches finished.
    pub finished: usize,
}

impl RunnerPass {
    /// Whether the pass found anything to do.
    pub fn is_idle(&self) -> bool {
        *self == Self::default()
    }
}

/// Why a sandbox settlement was refused.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// No such payout or batch in the caller's subaccount.
    #[error("not found")]
    NotFound,
    /// The payout is not `in_progress` (carries its status), or the batch has no payout that is.
    #[error("not in progress")]
    NotInProgress(Option<PayoutStatus>),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Runs batches: closes due ones, submits them, records the rail's results, finishes them.
pub struct BatchRunner {
    batches: Arc<dyn BatchStore>,
    payouts: Arc<dyn PayoutStore>,
    accounts: Arc<dyn AccountStore>,
    rail: Arc<dyn PayoutRail>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    lease: Duration,
}

impl BatchRunner {
    /// Wires the runner; `lease` is how long a runner may take between closing a batch and
    /// recording its submission before another runner takes it over.
    pub fn new(
        batches: Arc<dyn BatchStore>,
        payouts: Arc<dyn PayoutStore>,
        accounts: Arc<dyn AccountStore>,
        rail: Arc<dyn PayoutRail>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        lease: Duration,
    ) -> Self {
        Self {
            batches,
            payouts,
            accounts,
            rail,
            clock,
            ids,
            lease,
        }
    }

    /// One pass of the job: closes and submits due batches, takes over abandoned ones, records
    /// the rail's results and finishes the batches they complete.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn run_once(&self) -> Result<RunnerPass, PortError> {
        let mut pass = RunnerPass::default();
        // The next due batch is closed while the one before it is submitted: the work of one at
        // the database overlaps the other's here (writing its files), on two connections.
        // Submissions stay one at a time, in the order the batches were closed, so a rail's
        // files are numbered and sent in that order. After a failure nothing more is closed,
        // but the batch closed beside the failed one is still submitted (not left in `queue`
        // for its lease), and the pass then fails.
        let mut next = self.close_next().await?;
        let mut closes = 1;
        let mut failure = None;
        while let Some(closed) = next.take() {
            pass.closed += 1;
            let submitted = if failure.is_none() && closes < BATCHES_PER_PASS {
                closes += 1;
                let (submitted, following) =
                    futures_util::future::join(self.submit(&closed), self.close_next()).await;
                match following {
                    Ok(following) => next = following,
                    Err(e) => failure = Some(e),
                }
                submitted
            } else {
                self.submit(&closed).await
            };
            match submitted {
                Ok(submitted) => pass.submitted += usize::from(submitted),
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        for _ in 0..BATCHES_PER_PASS {
            let now = self.clock.now();
            let Some(closed) = self
                .batches
                .reclaim_stale_batch(now, now + self.lease)
                .await?
            else {
                break;
            };
            pass.submitted += usize::from(self.submit(&closed).await?);
        }
        let outcomes = self.rail.results(RESULTS_PER_PASS).await?;
        if !outcomes.is_empty() {
            let (settled, finished) = self.settle_all(&outcomes).await?;
            pass.settled += settled;
            pass.finished += finished;
        }
        Ok(pass)
    }

    /// Closes one due batch, if any, under a lease from now.
    async fn close_next(&self) -> Result<Option<ClosedBatch>, PortError> {
        let now = self.clock.now();
        let planner = ClosePlanner::new(now, self.ids.clone());
        self.batches
            .close_due_batch(&planner, now + self.lease)
            .await
    }

    /// Records the rail's `outcomes` as [`Self::settle`] records each, but applied as one set
    /// ([`PayoutStore::apply_transitions`]), and finishes each batch they touched once. Returns
    /// how many were applied and how many batches finished.
    async fn settle_all(&self, outcomes: &[RailOutcome]) -> Result<(usize, usize), PortError> {
        let results: Vec<(&Payout, &RailResult)> = outcomes
            .iter()
            .map(|outcome| (&outcome.payout, &outcome.result))
            .collect();
        let (applied, finished) = self.apply_results(&results).await?;
        Ok((applied.iter().filter(|a| **a).count(), finished))
    }

    /// Records each result of `results` for its payout as [`Self::settle`] records one (a
    /// bank report's answers, decided by the inbound processor), but applied in sets
    /// ([`PayoutStore::apply_transitions`], at most 2,500 a set), and finishes
    /// each batch they touched once.
    /// Returns, for each result in order, whether it was applied: not when its payout's status
    /// takes no such result, or the payout was no longer in the status it was read in (changed
    /// meanwhile; nothing was written for it).
    ///
    /// # Errors
    /// `PortError` when the stores fail; results applied before the failure stay applied.
    #[tracing::instrument(level = "debug", skip_all, fields(results = results.len()))]
    pub async fn settle_results(
        &self,
        results: &[(Payout, RailResult)],
    ) -> Result<Vec<bool>, PortError> {
        let results: Vec<(&Payout, &RailResult)> = results.iter().map(|(p, r)| (p, r)).collect();
        let (applied, _) = self.apply_results(&results).await?;
        Ok(applied)
    }

    /// Plans each result for its payout ([`Self::plan_settlement`]), applies the planned changes
    /// in sets of at most [`SETTLE_SET_RESULTS`] and finishes each batch they touched once,
    /// after the last set (not for a return after settlement, as [`Self::settle`]). Returns
    /// whether each result was applied, in order, and how many batches finished.
    async fn apply_results(
        &self,
        results: &[(&Payout, &RailResult)],
    ) -> Result<(Vec<bool>, usize), PortError> {
        let mut applied = vec![false; results.len()];
        let mut touched = BTreeSet::new();
        for (set, part) in results.chunks(SETTLE_SET_RESULTS).enumerate() {
            let known = self.accounts_failed_by(part).await?;
            let mut positions = Vec::with_capacity(part.len());
            let mut changes = Vec::with_capacity(part.len());
            for (offset, (payout, result)) in part.iter().enumerate() {
                if let Some((change, trigger)) =
                    self.plan_settlement(payout, result, Some(&known)).await?
                {
                    let finishes = change
                        .payout
                        .batch_id
                        .filter(|_| trigger != PayoutTrigger::Returned);
                    positions.push((set * SETTLE_SET_RESULTS + offset, finishes));
                    changes.push(change);
                }
            }
            if changes.is_empty() {
                continue;
            }
            let written = self.payouts.apply_transitions(&changes).await?;
            drop(changes);
            for ((position, finishes), written) in positions.into_iter().zip(written) {
                if !written {
                    continue;
                }
                if let Some(flag) = applied.get_mut(position) {
                    *flag = true;
                }
                touched.extend(finishes);
            }
        }
        let mut finished = 0;
        for batch in touched {
            finished += usize::from(self.finish(batch).await?.is_some());
        }
        Ok((applied, finished))
    }

    /// The accounts of the payouts whose result says the receiver is invalid (the accounts
    /// those results fail), read in one set per subaccount.
    async fn accounts_failed_by(
        &self,
        results: &[(&Payout, &RailResult)],
    ) -> Result<HashMap<ReceiverAccountId, ReceiverAccount>, PortError> {
        let mut wanted: BTreeMap<SubaccountId, BTreeSet<ReceiverAccountId>> = BTreeMap::new();
        for (payout, result) in results {
            if let RailResult::Failed {
                receiver_is_invalid: true,
                ..
            }
            | RailResult::Returned {
                receiver_is_invalid: true,
                ..
            } = result
            {
                wanted
                    .entry(payout.subaccount_id)
                    .or_default()
                    .insert(payout.account_id);
            }
        }
        let mut known = HashMap::new();
        for (subaccount, ids) in wanted {
            let ids: Vec<ReceiverAccountId> = ids.into_iter().collect();
            for account in self.accounts.find_accounts(subaccount, &ids).await? {
                known.insert(account.id, account);
            }
        }
        Ok(known)
    }

    /// Submits a closed batch's payouts and records the receipts. `Ok(false)` when there was
    /// nothing to submit or another runner took the batch over meanwhile.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(batch = %closed.batch.id, payouts = closed.payouts.len())
    )]
    async fn submit(&self, closed: &ClosedBatch) -> Result<bool, PortError> {
        if closed.payouts.is_empty() || closed.batch.status != BatchStatus::Queue {
            return Ok(false);
        }
        // A rail error leaves the batch in `queue`; once the lease runs out a runner takes it
        // over and submits again (the rail is idempotent by payout id).
        let receipts = self.rail.submit(&closed.batch, &closed.payouts).await?;
        let now = self.clock.now();
        let submitted = Batch {
            status: BatchStatus::InProgress,
            updated_at: now,
            ..closed.batch.clone()
        };
        let event = OutboxEvent::batch(EventId::from_uuid(self.ids.new_id()), &submitted, now);
        self.batches
            .record_submission(closed, &receipts, &submitted, &[event])
            .await
    }

    /// Records the rail's `result` for an `in_progress` payout: `successful` (hold posted) or
    /// `failed` (hold voided, and the account failed when the rail says the receiver is
    /// invalid), then finishes its batch if that was the last result. A
    /// [`RailResult::Returned`] for a `successful` payout is the bank's return of a paid payout:
    /// `failed`, its amount back in available (`payout_return`), its fee kept, its batch left as
    /// it finished. Returns whether the result was applied (not already recorded) and whether
    /// the batch finished. `key` is applied with the payout's transition.
    #[tracing::instrument(level = "debug", skip_all, fields(payout = %payout.id))]
    pub async fn settle(
        &self,
        payout: &Payout,
        result: &RailResult,
        key: &WriteKey<Payout>,
    ) -> Result<(bool, bool), PortError> {
        let Some((change, trigger)) = self.plan_settlement(payout, result, None).await? else {
            // Not in progress any more: the result was recorded already.
            return Ok((false, false));
        };
        if !self.payouts.apply_transition(&change, key).await? {
            return Ok((false, false));
        }
        // A return after settlement changes the payout and the balance, not its finished
        // batch, which reports what was sent and settled.
        let finished = match payout.batch_id {
            Some(batch) if trigger != PayoutTrigger::Returned => {
                self.finish(batch).await?.is_some()
            }
            _ => false,
        };
        Ok((true, finished))
    }

    /// The change that records `result` for `payout`, with the trigger it takes, or `None`
    /// when the payout's status takes none (the result was recorded already). `known`: the
    /// accounts read already (a set's), where the payout's account is looked up instead of
    /// being read alone.
    async fn plan_settlement(
        &self,
        payout: &Payout,
        result: &RailResult,
        known: Option<&HashMap<ReceiverAccountId, ReceiverAccount>>,
    ) -> Result<Option<(PayoutChange, PayoutTrigger)>, PortError> {
        let now = self.clock.now();
        let (trigger, invalid, reason, code) = match result {
            RailResult::Paid => (PayoutTrigger::RailSucceeded, false, None, None),
            RailResult::Failed {
                code,
                receiver_is_invalid,
                reason,
            } => (
                PayoutTrigger::RailFailed,
                *receiver_is_invalid,
                Some(reason.clone()),
                code.clone(),
            ),
            RailResult::Returned {
                code,
                reason,
                receiver_is_invalid,
            } => (
                // A payout the rail reported paid can still come back (docs/API.md, Payouts,
                // Lifecycle).
                if payout.status == PayoutStatus::Successful {
                    PayoutTrigger::Returned
                } else {
                    PayoutTrigger::RailFailed
                },
                *receiver_is_invalid,
                Some(reason.clone()),
                Some(code.clone()),
            ),
        };
        let Ok(mut change) = plan_change(payout, trigger, now, self.ids.as_ref(), |p| {
            p.receiver_is_invalid = invalid;
            p.failure_reason = reason;
            p.return_code = code;
        }) else {
            return Ok(None);
        };
        if invalid {
            change.account_failure = self.account_failure(payout, known).await?;
        }
        Ok(Some((change, trigger)))
    }

    /// The account's side of a failure with `receiver_is_invalid`: `failed`, with
    /// `accountUpdate` (docs/API.md, `/confirm/{token}`).
    async fn account_failure(
        &self,
        payout: &Payout,
        known: Option<&HashMap<ReceiverAccountId, ReceiverAccount>>,
    ) -> Result<Option<AccountFailure>, PortError> {
        let account = match known {
            Some(known) => known.get(&payout.account_id).cloned(),
            None => {
                self.accounts
                    .find_account(payout.subaccount_id, payout.account_id)
                    .await?
            }
        };
        let Some(account) = account else {
            return Ok(None);
        };
        if account.status == AccountStatus::Failed {
            return Ok(None);
        }
        let now = self.clock.now();
        let failed = crate::account::ReceiverAccount {
            status: AccountStatus::Failed,
            updated_at: now,
            ..account
        };
        let event = OutboxEvent::account(
            EventKind::AccountUpdate,
            EventId::from_uuid(self.ids.new_id()),
            &failed,
            now,
        );
        Ok(Some(AccountFailure {
            account_id: failed.id,
            updated_at: now,
            event,
        }))
    }

    async fn finish(&self, batch: BatchId) -> Result<Option<Batch>, PortError> {
        self.batches
            .finish_batch(
                batch,
                self.clock.now(),
                EventId::from_uuid(self.ids.new_id()),
            )
            .await
    }

    /// Runs the caller's open batch in `asset` now (sandbox `batch/run`): brings its run time
    /// forward and runs a pass. Returns the batch as it is afterwards; `Ok(None)` when the
    /// subaccount has no open batch in `asset`.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, asset = %asset)
    )]
    pub async fn run_open_batch_now(
        &self,
        caller: &Caller,
        asset: Asset,
    ) -> Result<Option<Batch>, PortError> {
        let Some(batch) = self
            .batches
            .bring_forward_open_batch(caller.subaccount_id, asset, self.clock.now())
            .await?
        else {
            return Ok(None);
        };
        self.run_once().await?;
        self.batches
            .find_batch(caller.subaccount_id, batch.id)
            .await
    }

    /// The caller's batch, as it is now.
    pub async fn find_batch(
        &self,
        caller: &Caller,
        id: BatchId,
    ) -> Result<Option<Batch>, PortError> {
        self.batches.find_batch(caller.subaccount_id, id).await
    }

    /// Settles the caller's `in_progress` payout as the rail would (sandbox `status` helper).
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, payout = %id)
    )]
    pub async fn settle_payout(
        &self,
        caller: &Caller,
        id: PayoutId,
        result: &RailResult,
        key: &WriteKey<Payout>,
    ) -> Result<(), SettleError> {
        let (payout, _) = self
            .payouts
            .find_payout(caller.subaccount_id, id)
            .await?
            .ok_or(SettleError::NotFound)?;
        if payout.status != PayoutStatus::InProgress {
            return Err(SettleError::NotInProgress(Some(payout.status)));
        }
        let (applied, _) = self.settle(&payout, result, key).await?;
        if applied {
            Ok(())
        } else {
            Err(SettleError::NotInProgress(None))
        }
    }

    /// Settles every `in_progress` payout of the caller's batch (sandbox `status` helper), each
    /// in its own transaction, each applying `key`.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, batch = %batch)
    )]
    pub async fn settle_batch(
        &self,
        caller: &Caller,
        batch: BatchId,
        result: &RailResult,
        key: &WriteKey<Payout>,
    ) -> Result<usize, SettleError> {
        self.batches
            .find_batch(caller.subaccount_id, batch)
            .await?
            .ok_or(SettleError::NotFound)?;
        let payouts = self
            .batches
            .in_progress_payouts(caller.subaccount_id, batch)
            .await?;
        let mut settled = 0;
        for payout in &payouts {
            settled += usize::from(self.settle(payout, result, key).await?.0);
        }
        if settled == 0 {
            return Err(SettleError::NotInProgress(None));
        }
        Ok(settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::ports::MockAccountStore;
    use crate::batch::ports::{MockBatchStore, MockPayoutRail};
    use crate::builders::{PayoutBuilder, ReceiverAccountBuilder};
    use crate::ids::SubaccountId;
    use crate::payout::ports::MockPayoutStore;
    use crate::ports::{MockClock, MockIdGenerator};
    use chrono::{DateTime, Utc};
    use uuid::Uuid;

    pub(super) fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default()
    }

    /// Payout 1 of subaccount 2, to receiver 3's account 4 (the builder's ids), submitted in
    /// batch 5.
    fn in_progress() -> Payout {
        PayoutBuilder::new()
            .amount(1_013)
            .status(PayoutStatus::InProgress)
            .batch(BatchId::from_uuid(Uuid::from_u128(5)))
            .provider_reference("SBX-1")
            .submitted_at(now())
            .created_at(now())
            .build()
    }

    fn runner(
        batches: MockBatchStore,
        payouts: MockPayoutStore,
        accounts: MockAccountStore,
        rail: MockPayoutRail,
    ) -> BatchRunner {
        let mut clock = MockClock::new();
        clock.expect_now().returning(now);
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        BatchRunner::new(
            Arc::new(batches),
            Arc::new(payouts),
            Arc::new(accounts),
            Arc::new(rail),
            Arc::new(clock),
            Arc::new(ids),
            Duration::seconds(60),
        )
    }

    #[tokio::test]
    async fn an_invalid_receiver_fails_the_payout_and_its_account_together() {
        let mut accounts = MockAccountStore::new();
        accounts.expect_find_account().returning(|_, id| {
            Ok(Some(
                ReceiverAccountBuilder::new()
                    .id(id)
                    .created_at(now())
                    .build(),
            ))
        });
        let mut payouts = MockPayoutStore::new();
        payouts
            .expect_apply_transition()
            .withf(|change, _| {
                change.payout.status == PayoutStatus::Failed
                    && change.payout.receiver_is_invalid
                    && change
                        .account_failure
                        .as_ref()
                        .is_some_and(|f| f.event.payload["status"] == "failed")
            })
            .times(1)
            .returning(|_, _| Ok(true));
        let mut batches = MockBatchStore::new();
        batches
            .expect_finish_batch()
            .withf(|batch, _, _| *batch == BatchId::from_uuid(Uuid::from_u128(5)))
            .times(1)
            .returning(|_, _, _| Ok(None));
        let runner = runner(batches, payouts, accounts, MockPayoutRail::new());
        let result = RailResult::Failed {
            code: None,
            receiver_is_invalid: true,
            reason: "closed".to_owned(),
        };
        let outcome = runner
            .settle(&in_progress(), &result, &WriteKey::none())
            .await;
        assert_eq!(outcome.ok(), Some((true, false)));
    }

    fn returned(code: &str, invalid: bool) -> RailResult {
        RailResult::Returned {
            code: code.to_owned(),
            reason: "Insufficient funds".to_owned(),
            receiver_is_invalid: invalid,
        }
    }

    #[tokio::test]
    async fn a_return_of_a_paid_payout_gives_the_amount_back_and_leaves_the_batch() {
        let paid = Payout {
            status: PayoutStatus::Successful,
            ..in_progress()
        };
        let mut payouts = MockPayoutStore::new();
        payouts
            .expect_apply_transition()
            .withf(|change, _| {
                change.expected == PayoutStatus::Successful
                    && change.payout.status == PayoutStatus::Failed
                    && change.payout.return_code.as_deref() == Some("R01")
                    && change.payout.failure_reason.as_deref() == Some("Insufficient funds")
                    && change.balance_delta() == (1_013, 0)
                    && change.account_failure.is_none()
            })
            .times(1)
            .returning(|_, _| Ok(true));
        // No finish_batch expectation: the settled batch is not touched.
        let runner = runner(
            MockBatchStore::new(),
            payouts,
            MockAccountStore::new(),
            MockPayoutRail::new(),
        );
        let outcome = runner
            .settle(&paid, &returned("R01", false), &WriteKey::none())
            .await;
        assert_eq!(outcome.ok(), Some((true, false)));
    }

    #[tokio::test]
    async fn a_bank_refusal_of_a_payout_in_progress_fails_it_with_its_code() {
        let mut payouts = MockPayoutStore::new();
        payouts
            .expect_apply_transition()
            .withf(|change, _| {
                change.expected == PayoutStatus::InProgress
                    && change.payout.status == PayoutStatus::Failed
                    && change.payout.return_code.as_deref() == Some("R01")
                    && change.balance_delta() == (1_013, -1_013)
            })
            .times(1)
            .returning(|_, _| Ok(true));
        let mut batches = MockBatchStore::new();
        batches
            .expect_finish_batch()
            .times(1)
            .returning(|_, _, _| Ok(None));
        let runner = runner(
            batches,
            payouts,
            MockAccountStore::new(),
            MockPayoutRail::new(),
        );
        let outcome = runner
            .settle(&in_progress(), &returned("R01", false), &WriteKey::none())
            .await;
        assert_eq!(outcome.ok(), Some((true, false)));
    }

    #[tokio::test]
    async fn a_return_of_a_failed_payout_is_never_applied_again() {
        let failed = Payout {
            status: PayoutStatus::Failed,
            return_code: Some("R01".to_owned()),
            ..in_progress()
        };
        // No store expectation at all: nothing is written.
        let runner = runner(
            MockBatchStore::new(),
            MockPayoutStore::new(),
            MockAccountStore::new(),
            MockPayoutRail::new(),
        );
        let outcome = runner
            .settle(&failed, &returned("R01", false), &WriteKey::none())
            .await;
        assert_eq!(outcome.ok(), Some((false, false)));
    }

    #[tokio::test]
    async fn a_result_for_a_payout_settled_meanwhile_changes_nothing() {
        let mut payouts = MockPayoutStore::new();
        payouts
            .expect_apply_transition()
            .times(1)
            .returning(|_, _| Ok(false));
        let mut batches = MockBatchStore::new();
        batches.expect_finish_batch().never();
        let runner = runner(
            batches,
            payouts,
            MockAccountStore::new(),
            MockPayoutRail::new(),
        );
        let outcome = runner
            .settle(&in_progress(), &RailResult::Paid, &WriteKey::none())
            .await;
        assert_eq!(outcome.ok(), Some((false, false)));
        // A payout no longer in progress is not even attempted.
        let done = Payout {
            status: PayoutStatus::Successful,
            ..in_progress()
        };
        let outcome = runner
            .settle(&done, &RailResult::Paid, &WriteKey::none())
            .await;
        assert_eq!(outcome.ok(), Some((false, false)));
    }

    #[tokio::test]
    async fn a_refusal_never_undoes_a_paid_payout_only_a_return_does() {
        let mut payouts = MockPayoutStore::new();
        payouts.expect_apply_transition().never();
        let mut batches = MockBatchStore::new();
        batches.expect_finish_batch().never();
        let runner = runner(
            batches,
            payouts,
            MockAccountStore::new(),
            MockPayoutRail::new(),
        );
        let paid = Payout {
            status: PayoutStatus::Successful,
            ..in_progress()
        };
        let refused = RailResult::Failed {
            code: Some("AC04".to_owned()),
            receiver_is_invalid: true,
            reason: "closed account".to_owned(),
        };
        let outcome = runner.settle(&paid, &refused, &WriteKey::none()).await;
        assert_eq!(outcome.ok(), Some((false, false)));
    }

    #[tokio::test]
    async fn a_rail_that_fails_leaves_the_batch_for_a_later_takeover() {
        let closed = ClosedBatch {
            batch: Batch {
                id: BatchId::from_uuid(Uuid::from_u128(5)),
                subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
                asset: Asset::Aud,
                status: BatchStatus::Queue,
                batch_run_time: now(),
                total_tx: 1,
                amount: 1_013,
                process_amount: 0,
                total_failed: 0,
                created_at: now(),
                updated_at: now(),
            },
            payouts: vec![in_progress()],
            claimed_until: now() + Duration::seconds(60),
        };
        let mut batches = MockBatchStore::new();
        let mut once = Some(closed);
        batches
            .expect_close_due_batch()
            .returning(move |_, _| Ok(once.take()));
        batches.expect_record_submission().never();
        let mut rail = MockPayoutRail::new();
        rail.expect_submit()
            .times(1)
            .returning(|_, _| Err(PortError::Unavailable(anyhow::anyhow!("rail down"))));
        the_pass_fails_unavailable(batches, rail).await;
    }

    /// One pass over `batches` and `rail` (no payout or account store reached) fails as
    /// unavailable.
    pub(super) async fn the_pass_fails_unavailable(batches: MockBatchStore, rail: MockPayoutRail) {
        let runner = runner(
            batches,
            MockPayoutStore::new(),
            MockAccountStore::new(),
            rail,
        );
        assert!(matches!(
            runner.run_once().await,
            Err(PortError::Unavailable(_))
        ));
    }

    /// A payout of batch 5 (payout id `n`) in progress.
    pub(super) fn in_progress_numbered(n: u128) -> Payout {
        let mut payout = in_progress();
        payout.id = PayoutId::from_uuid(Uuid::from_u128(100 + n));
        payout
    }

    fn nothing_due(batches: &mut MockBatchStore) {
        batches.expect_close_due_batch().returning(|_, _| Ok(None));
        batches
            .expect_reclaim_stale_batch()
            .returning(|_, _| Ok(None));
    }

    #[tokio::test]
    async fn results_beyond_a_set_are_applied_a_set_at_a_time_and_the_batch_finished_once() {
        let n = SETTLE_SET_RESULTS + 1;
        let results: Vec<(Payout, RailResult)> = (1..=n)
            .map(|i| (in_progress_numbered(i as u128), RailResult::Paid))
            .collect();
        let mut batches = MockBatchStore::new();
        batches
            .expect_finish_batch()
            .times(1)
            .returning(|_, _, _| Ok(None));
        let mut payouts = MockPayoutStore::new();
        payouts.expect_apply_transition().never();
        let sizes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = sizes.clone();
        payouts
            .expect_apply_transitions()
            .times(2)
            .returning(move |changes| {
                if let Ok(mut seen) = seen.lock() {
                    seen.push(changes.len());
                }
                // The last of each set changed meanwhile.
                Ok((0..changes.len()).map(|i| i + 1 < changes.len()).collect())
            });
        let mut accounts = MockAccountStore::new();
        accounts.expect_find_accounts().never();
        let runner = runner(batches, payouts, accounts, MockPayoutRail::new());
        let applied = runner
            .settle_results(&results)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            *sizes.lock().unwrap_or_else(|e| e.into_inner()),
            [SETTLE_SET_RESULTS, 1]
        );
        assert_eq!(applied.len(), n);
        let not_applied: Vec<usize> = (0..n).filter(|&i| !applied[i]).collect();
        assert_eq!(not_applied, [SETTLE_SET_RESULTS - 1, SETTLE_SET_RESULTS]);
    }

    #[tokio::test]
    async fn a_pass_applies_the_rails_results_as_one_set_and_finishes_each_batch_once() {
        let submitted: Vec<Payout> = (1..=2).map(in_progress_numbered).collect();
        let mut batches = MockBatchStore::new();
        nothing_due(&mut batches);
        // The rail, not the runner, says which payouts have a result.
        batches.expect_submitted_payouts().never();
        batches
            .expect_finish_batch()
            .with(
                mockall::predicate::eq(BatchId::from_uuid(Uuid::from_u128(5))),
                mockall::predicate::always(),
                mockall::predicate::always(),
            )
            .times(1)
            .returning(|_, _, _| Ok(None));
        let mut rail = MockPayoutRail::new();
        rail.expect_results()
            .with(mockall::predicate::eq(RESULTS_PER_PASS))
            .times(1)
            .returning(move |_| {
                // Paid and refused.
                Ok(vec![
                    RailOutcome {
                        payout: submitted[0].clone(),
                        result: RailResult::Paid,
                    },
                    RailOutcome {
                        payout: submitted[1].clone(),
                        result: RailResult::Failed {
                            code: Some("R03".to_owned()),
                            receiver_is_invalid: false,
                            reason: "no account".to_owned(),
                        },
                    },
                ])
            });
        let mut payouts = MockPayoutStore::new();
        payouts.expect_apply_transition().never();
        payouts
            .expect_apply_transitions()
            .withf(|changes| {
                changes.len() == 2
                    && changes[0].payout.status == PayoutStatus::Successful
                    && changes[1].payout.status == PayoutStatus::Failed
                    && changes[1].payout.return_code.as_deref() == Some("R03")
                    && changes
                        .iter()
                        .all(|c| c.expected == PayoutStatus::InProgress)
            })
            .times(1)
            // The second changed meanwhile (another runner settled it).
            .returning(|_| Ok(vec![true, false]));
        let runner = runner(batches, payouts, MockAccountStore::new(), rail);
        let pass = runner.run_once().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pass.settled, 1);
        assert_eq!(pass.finished, 0);
    }

    #[tokio::test]
    async fn a_pass_whose_results_are_all_recorded_already_writes_nothing() {
        let mut done = in_progress_numbered(1);
        done.status = PayoutStatus::Successful;
        let mut batches = MockBatchStore::new();
        nothing_due(&mut batches);
        batches.expect_finish_batch().never();
        let mut rail = MockPayoutRail::new();
        rail.expect_results().returning(move |_| {
            Ok(vec![RailOutcome {
                payout: done.clone(),
                result: RailResult::Paid,
            }])
        });
        let mut payouts = MockPayoutStore::new();
        payouts.expect_apply_transitions().never();
        let runner = runner(batches, payouts, MockAccountStore::new(), rail);
        let pass = runner.run_once().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pass.settled, 0);
    }
}

/// The batches of a pass: closed while the one before is submitted, submitted in order.
#[cfg(test)]
#[path = "runner_pass_tests.rs"]
mod pass_tests;
