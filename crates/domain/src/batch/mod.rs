//! Batches and the payout rail (docs/ARCHITECTURE.md, Money). A payout that becomes `pending` joins
//! the open batch of its (subaccount, asset); at the batch's run time a [`runner::BatchRunner`]
//! closes it, moves its payouts to `in_progress`, submits them through the [`ports::PayoutRail`]
//! and later records what the rail reports. Every step is a conditional change in the store, so
//! several runners (in one or many instances) never submit a payout twice or apply a result twice.

pub mod cutoff;
pub mod ports;
pub mod runner;

use chrono::{DateTime, Utc};
use strum::{EnumString, IntoStaticStr, VariantArray};

use crate::ids::{BatchId, SubaccountId};
use crate::money::Asset;

/// Where a batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(const_into_str)]
pub enum BatchStatus {
    /// Accepting pending payouts until its run time.
    #[strum(serialize = "open")]
    Open,
    /// Closed; its payouts are being submitted to the rail.
    #[strum(serialize = "queue")]
    Queue,
    /// Submitted; waiting for the rail's results.
    #[strum(serialize = "in_progress")]
    InProgress,
    /// Every payout has a result, and at least one was paid.
    #[strum(serialize = "settled")]
    Settled,
    /// Every payout failed.
    #[strum(serialize = "failed")]
    Failed,
    /// Nothing left to submit when it closed (every payout was cancelled).
    #[strum(serialize = "cancelled")]
    Cancelled,
}

impl BatchStatus {
    /// Every status.
    pub const ALL: &'static [BatchStatus] = Self::VARIANTS;

    /// The stored and shown name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The status with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }

    /// How a submitted batch ends once all `total_tx` payouts have a result, `total_failed` of
    /// them failures: `failed` when every one failed, else `settled`.
    pub const fn finished(total_tx: i32, total_failed: i32) -> Self {
        if total_tx > 0 && total_failed >= total_tx {
            BatchStatus::Failed
        } else {
            BatchStatus::Settled
        }
    }
}

/// A group of one subaccount's payouts in one asset, submitted to the rail together.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// Identifier (`batch_id`; the reference is `BATCH_<id>`).
    pub id: BatchId,
    /// The subaccount paying.
    pub subaccount_id: SubaccountId,
    /// The currency.
    pub asset: Asset,
    /// Where it is.
    pub status: BatchStatus,
    /// When it runs (closes and is submitted).
    pub batch_run_time: DateTime<Utc>,
    /// Payouts submitted (fixed when it closes).
    pub total_tx: i32,
    /// Their amounts, minor units (fixed when it closes).
    pub amount: i64,
    /// What the rail paid so far, minor units.
    pub process_amount: i64,
    /// Payouts the rail failed so far.
    pub total_failed: i32,
    /// When it opened.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &status in BatchStatus::ALL {
            assert_eq!(BatchStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(BatchStatus::parse("OPEN"), None);
    }

    #[test]
    fn a_batch_fails_only_when_every_payout_failed() {
        assert_eq!(BatchStatus::finished(3, 3), BatchStatus::Failed);
        assert_eq!(BatchStatus::finished(3, 2), BatchStatus::Settled);
        assert_eq!(BatchStatus::finished(3, 0), BatchStatus::Settled);
        assert_eq!(BatchStatus::finished(0, 0), BatchStatus::Settled);
    }
}
