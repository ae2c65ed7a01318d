//! [`BatchBuilder`].

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::BUILT_AT_SECS;
use crate::batch::{Batch, BatchStatus};
use crate::ids::{BatchId, SubaccountId};
use crate::money::Asset;

/// Builds a [`Batch`]. Unless set: id 0xB, of subaccount 2 (UUIDs from those numbers; 2 is the
/// subaccount of [`super::PayoutBuilder`]'s payout), USD, `open` with no payouts counted, run,
/// created and updated at [`BUILT_AT_SECS`].
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    batch: Batch,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        let at = DateTime::from_timestamp(BUILT_AT_SECS, 0).unwrap_or_default();
        Self {
            batch: Batch {
                id: BatchId::from_uuid(Uuid::from_u128(0xB)),
                subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
                asset: Asset::Usd,
                status: BatchStatus::Open,
                batch_run_time: at,
                total_tx: 0,
                amount: 0,
                process_amount: 0,
                total_failed: 0,
                created_at: at,
                updated_at: at,
            },
        }
    }
}

impl BatchBuilder {
    /// The default batch (see [`BatchBuilder`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Its status.
    pub fn status(mut self, status: BatchStatus) -> Self {
        self.batch.status = status;
        self
    }

    /// Its payouts' count and sum, in minor units.
    pub fn totals(mut self, total_tx: i32, amount: i64) -> Self {
        self.batch.total_tx = total_tx;
        self.batch.amount = amount;
        self
    }

    /// When it runs, and when it was created and last updated.
    pub fn at(mut self, at: DateTime<Utc>) -> Self {
        self.batch.batch_run_time = at;
        self.batch.created_at = at;
        self.batch.updated_at = at;
        self
    }

    /// The batch.
    pub fn build(self) -> Batch {
        self.batch
    }
}
