//! The append-only ledger (docs/ARCHITECTURE.md, Money): every movement of a balance is an entry,
//! and a balance always equals the sum of its entries.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use strum::{EnumString, IntoStaticStr};

use crate::error::OperatorError;
use crate::ids::{LedgerEntryId, PayoutId, SubaccountId};
use crate::money::Asset;
use crate::subaccount::Balance;

/// A ledger movement of money (append-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerEntry {
    /// Entry id.
    pub id: LedgerEntryId,
    /// The subaccount whose balance moves.
    pub subaccount_id: SubaccountId,
    /// The asset.
    pub asset: Asset,
    /// What moved the money.
    pub kind: LedgerEntryKind,
    /// Change of `available`, minor units.
    pub available_delta: i64,
    /// Change of `pending`, minor units.
    pub pending_delta: i64,
    /// The payout it belongs to, for payout movements.
    pub payout_id: Option<PayoutId>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// Why a ledger entry exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr, EnumString)]
#[strum(const_into_str)]
pub enum LedgerEntryKind {
    /// An operator credited the balance.
    #[strum(serialize = "funding")]
    Funding,
    /// A payout's amount moved from available to pending when it was created.
    #[strum(serialize = "payout_hold")]
    PayoutHold,
    /// A payout's fee moved from available to pending when it was created.
    #[strum(serialize = "fee_hold")]
    FeeHold,
    /// A payout's held amount returned to available (cancelled or failed).
    #[strum(serialize = "payout_void")]
    PayoutVoid,
    /// A payout's held fee returned to available (cancelled or failed).
    #[strum(serialize = "fee_void")]
    FeeVoid,
    /// A paid payout's held amount left the balance (pending decreases).
    #[strum(serialize = "payout_post")]
    PayoutPost,
    /// A paid payout's held fee left the balance (pending decreases).
    #[strum(serialize = "fee_post")]
    FeePost,
    /// A paid payout's amount came back to available: the bank returned it. Its fee stays
    /// charged.
    #[strum(serialize = "payout_return")]
    PayoutReturn,
}

impl LedgerEntryKind {
    /// Stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The kind with this stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }
}

/// The ledger as operators move and audit it (admin CLI; docs/OPERATIONS.md, `payoutd admin …`).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Appends `entry` to the ledger and applies it to the balance, with `audit`, in one
    /// transaction; returns the new balance.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist; nothing was written.
    async fn apply_ledger_entry(
        &self,
        entry: &LedgerEntry,
        audit: &crate::audit::AuditEntry,
    ) -> Result<Balance, OperatorError>;

    /// Compares every balance with the sum of its ledger entries (docs/ARCHITECTURE.md, Money);
    /// returns how many balances were checked and every one that differs (including ledger entries
    /// with no balance row, and balance rows with no entries).
    async fn check_ledger(&self) -> Result<LedgerCheck, OperatorError>;
}

/// The outcome of a ledger check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerCheck {
    /// Balances (subaccount and asset pairs) checked.
    pub checked: u64,
    /// Those whose balance differs from the sum of their ledger entries.
    pub discrepancies: Vec<LedgerDiscrepancy>,
}

/// A balance that differs from its ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerDiscrepancy {
    /// The subaccount.
    pub subaccount_id: SubaccountId,
    /// The asset code.
    pub asset: String,
    /// `available` as stored.
    pub available: i64,
    /// `pending` as stored.
    pub pending: i64,
    /// The sum of the entries' `available_delta`.
    pub ledger_available: i64,
    /// The sum of the entries' `pending_delta`.
    pub ledger_pending: i64,
}
