//! An operator's cut-off now (`payoutd admin run-cutoff --method <asset/method>`): the open
//! batches of the method's currency that hold payouts are brought forward to run at once, as
//! their rail's next cut-off would run them. The serving instances' batch job then closes them
//! and files them at its next pass, with the effective date the rail's calendar gives a file
//! sent now: nothing here writes a file, so the filing has one home (the batch runner).
//!
//! Batches are kept per subaccount and currency, so a cut-off of one CAD method also brings
//! forward the CAD payouts of the other (`cad/eft` and `cad/digital` share their batches).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::json;

use super::Batch;
use crate::PortError;
use crate::account::PayoutMethod;
use crate::audit::{AuditAction, AuditContext, AuditEntry};
use crate::money::Asset;
use crate::ports::{Clock, IdGenerator};

/// What the store found for a cut-off of one currency.
#[derive(Debug, Clone, PartialEq)]
pub enum CutoffBatches {
    /// A batch of the currency is being submitted (closed, its lease running): nothing was
    /// brought forward.
    BeingSent {
        /// How many.
        batches: usize,
    },
    /// These open batches, each holding a payout, now run at the cut-off's time (none: nothing
    /// was waiting, and nothing was written).
    BroughtForward(Vec<Batch>),
}

/// Where a cut-off is asked for.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CutoffStore: Send + Sync {
    /// Unless a batch of `asset` is being submitted, sets the run time of every open batch of
    /// `asset` that holds a payout to `now`, and writes `audit` when there was one, in one
    /// transaction.
    ///
    /// # Errors
    /// When the store cannot be reached or the transaction fails (then nothing changed).
    async fn bring_forward_for_cutoff(
        &self,
        asset: Asset,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<CutoffBatches, PortError>;
}

/// Why a cut-off was not run.
#[derive(Debug, thiserror::Error)]
pub enum CutoffError {
    /// No open batch of the currency holds a payout.
    #[error("no payout of {} is waiting for a cut-off: nothing to file", method.route())]
    NothingWaiting {
        /// The method asked for.
        method: PayoutMethod,
    },
    /// A file of the currency is being sent.
    #[error(
        "{batches} batch(es) of {asset} are being sent to the rail now: run the cut-off again \
         once they are (payoutd admin rail-files shows them)"
    )]
    BeingSent {
        /// The currency.
        asset: Asset,
        /// How many.
        batches: usize,
    },
    /// The store failed.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Runs cut-offs on an operator's request.
#[derive(Clone)]
pub struct CutoffService {
    store: Arc<dyn CutoffStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl CutoffService {
    /// The service over `store`.
    pub fn new(
        store: Arc<dyn CutoffStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self { store, clock, ids }
    }

    /// Brings the open batches of `method`'s currency forward to run now, recorded in the audit
    /// log as `context`'s action. Returns the batches brought forward.
    ///
    /// # Errors
    /// [`CutoffError::NothingWaiting`] when no open batch holds a payout,
    /// [`CutoffError::BeingSent`] while a batch of the currency is being submitted, and
    /// [`CutoffError::Port`] when the store fails.
    pub async fn run_cutoff(
        &self,
        method: PayoutMethod,
        context: &AuditContext,
    ) -> Result<Vec<Batch>, CutoffError> {
        let asset = method.asset();
        let now = self.clock.now();
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::CutoffRun,
            "rail",
            method.route(),
            None,
            Some(json!({ "asset": asset.code(), "run_at": now })),
        );
        match self
            .store
            .bring_forward_for_cutoff(asset, now, &audit)
            .await?
        {
            CutoffBatches::BeingSent { batches } => Err(CutoffError::BeingSent { asset, batches }),
            CutoffBatches::BroughtForward(batches) if batches.is_empty() => {
                Err(CutoffError::NothingWaiting { method })
            }
            CutoffBatches::BroughtForward(batches) => Ok(batches),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ids::{BatchId, SubaccountId};
    use crate::ports::{MockClock, MockIdGenerator};
    use uuid::Uuid;

    fn service(store: MockCutoffStore) -> CutoffService {
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        let mut clock = MockClock::new();
        clock.expect_now().returning(Utc::now);
        CutoffService::new(Arc::new(store), Arc::new(clock), Arc::new(ids))
    }

    fn batch(asset: Asset) -> Batch {
        let now = Utc::now();
        Batch {
            id: BatchId::from_uuid(Uuid::new_v4()),
            subaccount_id: SubaccountId::from_uuid(Uuid::new_v4()),
            asset,
            status: super::super::BatchStatus::Open,
            batch_run_time: now,
            total_tx: 0,
            amount: 0,
            process_amount: 0,
            total_failed: 0,
            created_at: now,
            updated_at: now,
        }
    }

    #[tokio::test]
    async fn a_cutoff_brings_the_methods_currency_forward_and_is_audited_as_the_operator() {
        let mut store = MockCutoffStore::new();
        let brought = vec![batch(Asset::Usd)];
        let answer = brought.clone();
        store
            .expect_bring_forward_for_cutoff()
            .withf(|asset, _, audit| {
                *asset == Asset::Usd
                    && audit.action == AuditAction::CutoffRun
                    && audit.object_kind == "rail"
                    && audit.object_id == "usd/ach"
                    && audit.actor == AuditContext::cli(Some("ops")).actor
            })
            .times(1)
            .returning(move |_, _, _| Ok(CutoffBatches::BroughtForward(answer.clone())));
        let run = service(store)
            .run_cutoff(PayoutMethod::Ach, &AuditContext::cli(Some("ops")))
            .await
            .unwrap();
        assert_eq!(run, brought);
    }

    #[tokio::test]
    async fn nothing_waiting_and_a_file_being_sent_are_refused_in_words() {
        for (found, expected) in [
            (
                CutoffBatches::BroughtForward(Vec::new()),
                "no payout of usd/ach is waiting for a cut-off: nothing to file",
            ),
            (
                CutoffBatches::BeingSent { batches: 2 },
                "2 batch(es) of USD are being sent to the rail now",
            ),
        ] {
            let mut store = MockCutoffStore::new();
            store
                .expect_bring_forward_for_cutoff()
                .times(1)
                .returning(move |_, _, _| Ok(found.clone()));
            let refused = service(store)
                .run_cutoff(PayoutMethod::Ach, &AuditContext::cli(None))
                .await
                .unwrap_err();
            assert!(refused.to_string().starts_with(expected), "{refused}");
        }
    }

    #[tokio::test]
    async fn every_method_asks_for_its_own_currency() {
        for method in PayoutMethod::ALL.iter().copied() {
            let mut store = MockCutoffStore::new();
            let asset = method.asset();
            store
                .expect_bring_forward_for_cutoff()
                .withf(move |asked, _, _| *asked == asset)
                .times(1)
                .returning(move |asset, _, _| {
                    Ok(CutoffBatches::BroughtForward(vec![batch(asset)]))
                });
            let run = service(store)
                .run_cutoff(method, &AuditContext::cli(None))
                .await
                .unwrap();
            assert_eq!(run[0].asset, asset, "{method:?}");
        }
    }
}
