//! A simulated payout rail. Like a real one it accepts a batch, answers with a reference per
//! payout, and reports each payout's result later. Its behaviour depends only on what it is
//! given, so every server instance sharing a database gives the same answers:
//! - the reference is derived from the payout id, so submitting a payout again (a runner took
//!   over an abandoned batch) yields the same reference: idempotent, as the port requires;
//! - a payout's result is ready once `settle_after` has passed since it was submitted;
//! - an amount whose last two digits are `13` (say 1013 cents) fails with `receiver_is_invalid`,
//!   so tests can produce a rail failure; every other amount is paid.
//!
//! The sandbox's `status` helper can decide a payout before that.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use domain::PortError;
use domain::batch::Batch;
use domain::batch::ports::{BatchStore, PayoutRail, RailOutcome, RailReceipt, RailResult};
use domain::payout::Payout;
use domain::ports::Clock;

/// The minor units an amount ends with to be failed by the sandbox rail.
pub const FAILING_CENTS: i64 = 13;

/// How long the sandbox rail takes to settle a payout by default (docs/OPERATIONS.md,
/// Configuration, `PAYOUT_SANDBOX_RAIL_SETTLE_MS`).
pub const DEFAULT_SETTLE_AFTER: Duration = Duration::from_secs(5);

/// The sandbox rail.
pub struct SandboxRail {
    clock: Arc<dyn Clock>,
    settle_after: chrono::Duration,
    batches: Arc<dyn BatchStore>,
}

impl SandboxRail {
    /// A rail reporting each payout's result `settle_after` after its submission; the payouts
    /// submitted to it are those `batches` has in progress.
    pub fn new(
        clock: Arc<dyn Clock>,
        settle_after: Duration,
        batches: Arc<dyn BatchStore>,
    ) -> Self {
        Self {
            clock,
            settle_after: chrono::Duration::from_std(settle_after).unwrap_or(chrono::Duration::MAX),
            batches,
        }
    }

    /// The reference the rail gives `payout`.
    pub fn reference(payout: &Payout) -> String {
        format!("SBX-{}", payout.id.as_uuid().simple())
    }

    /// The result the rail reports for `payout`.
    pub fn result_for(payout: &Payout) -> RailResult {
        if payout.amount.get() % 100 == FAILING_CENTS {
            RailResult::Failed {
                code: None,
                receiver_is_invalid: true,
                reason: "sandbox: the receiving bank rejected the account".to_owned(),
            }
        } else {
            RailResult::Paid
        }
    }
}

#[async_trait]
impl PayoutRail for SandboxRail {
    async fn submit(
        &self,
        _batch: &Batch,
        payouts: &[Payout],
    ) -> Result<Vec<RailReceipt>, PortError> {
        Ok(payouts
            .iter()
            .map(|p| RailReceipt {
                payout_id: p.id,
                provider_reference: Self::reference(p),
            })
            .collect())
    }

    /// The longest-waiting submitted payouts are the first due (one delay for all), so the
    /// results are among the first `limit` of them.
    async fn results(&self, limit: u32) -> Result<Vec<RailOutcome>, PortError> {
        let now = self.clock.now();
        let payouts = self.batches.submitted_payouts(limit).await?;
        Ok(payouts
            .into_iter()
            .filter(|p| {
                p.submitted_at.is_some_and(|at| {
                    at.checked_add_signed(self.settle_after)
                        .is_some_and(|due| due <= now)
                })
            })
            .map(|p| RailOutcome {
                result: Self::result_for(&p),
                payout: p,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use domain::batch::ports::MockBatchStore;
    use domain::builders::PayoutBuilder;
    use domain::ids::{BatchId, PayoutId, SubaccountId};
    use domain::money::Asset;
    use domain::payout::PayoutStatus;
    use uuid::Uuid;

    struct Fixed(DateTime<Utc>);

    impl Clock for Fixed {
        fn now(&self) -> DateTime<Utc> {
            self.0
        }
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap_or_default()
    }

    fn payout(n: u128, amount: i64, submitted: Option<i64>) -> Payout {
        PayoutBuilder::new()
            .id(PayoutId::from_uuid(Uuid::from_u128(n)))
            .subaccount(SubaccountId::from_uuid(Uuid::from_u128(1)))
            .amount(amount)
            .status(PayoutStatus::InProgress)
            .submitted_at(submitted.map(at))
            .created_at(at(0))
            .build()
    }

    fn batch() -> Batch {
        Batch {
            id: BatchId::from_uuid(Uuid::from_u128(9)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(1)),
            asset: Asset::Aud,
            status: domain::batch::BatchStatus::Queue,
            batch_run_time: at(0),
            total_tx: 2,
            amount: 0,
            process_amount: 0,
            total_failed: 0,
            created_at: at(0),
            updated_at: at(0),
        }
    }

    #[tokio::test]
    async fn submitting_again_gives_the_same_references() {
        let mut batches = MockBatchStore::new();
        batches.expect_submitted_payouts().never();
        let rail = SandboxRail::new(
            Arc::new(Fixed(at(0))),
            Duration::from_secs(5),
            Arc::new(batches),
        );
        let payouts = [payout(10, 500, None), payout(11, 700, None)];
        let first = rail.submit(&batch(), &payouts).await;
        let again = rail.submit(&batch(), &payouts).await;
        assert_eq!(first.as_ref().ok(), again.as_ref().ok());
        let refs: Vec<_> = first
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.provider_reference)
            .collect();
        assert_eq!(refs.len(), 2);
        assert_ne!(refs[0], refs[1]);
    }

    #[tokio::test]
    async fn results_come_after_the_delay_and_13_fails() {
        let payouts = vec![
            payout(1, 500, Some(5)),  // due exactly now
            payout(2, 1013, Some(4)), // due, failing amount
            payout(3, 500, Some(6)),  // one second to go
            payout(4, 500, None),     // never submitted
        ];
        let mut batches = MockBatchStore::new();
        batches
            .expect_submitted_payouts()
            .with(mockall::predicate::eq(500))
            .times(1)
            .returning(move |_| Ok(payouts.clone()));
        let rail = SandboxRail::new(
            Arc::new(Fixed(at(10))),
            Duration::from_secs(5),
            Arc::new(batches),
        );
        let outcomes = rail.results(500).await.unwrap_or_default();
        assert_eq!(outcomes.len(), 2);
        assert_eq!(
            outcomes[0].payout.id,
            PayoutId::from_uuid(Uuid::from_u128(1))
        );
        assert_eq!(outcomes[0].result, RailResult::Paid);
        assert!(matches!(
            outcomes[1].result,
            RailResult::Failed {
                receiver_is_invalid: true,
                ..
            }
        ));
    }
}
