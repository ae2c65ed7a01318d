//! The payout use cases' storage.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::model::Payout;
use super::query::PayoutFilter;
use super::status::PayoutStatus;
use crate::account::ReceiverAccount;
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::ids::{PayoutId, ReceiverAccountId, SubaccountId};
use crate::money::{Asset, MinorUnits};
use crate::paging::PageRequest;
use crate::ports::LedgerEntry;
use crate::receiver::Receiver;
use crate::subaccount::FeeTemplate;

/// A payout as a list shows it: with its receiver and account.
#[derive(Debug, Clone)]
pub struct PayoutListItem {
    /// The payout.
    pub payout: Payout,
    /// Its receiver.
    pub receiver: Receiver,
    /// The account paid into.
    pub account: ReceiverAccount,
}

/// Why a payout was not stored.
#[derive(Debug, thiserror::Error)]
pub enum InsertPayoutError {
    /// The available balance does not cover the payout's total (`PAYO207`).
    #[error("insufficient balance")]
    InsufficientBalance,
    /// Another payout of the subaccount has this reference (`PAYO206`).
    #[error("reference already used")]
    DuplicateReference,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Payouts and the money they hold.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayoutStore: Send + Sync {
    /// The subaccount's fee template for `asset`, if it has one.
    async fn fee_template(
        &self,
        subaccount: SubaccountId,
        asset: Asset,
    ) -> Result<Option<FeeTemplate>, PortError>;

    /// Whether the subaccount has a payout to `account` of `amount` in `asset` created at or
    /// after `since` (the duplicate warning).
    async fn similar_payout_since(
        &self,
        subaccount: SubaccountId,
        account: ReceiverAccountId,
        amount: MinorUnits,
        asset: Asset,
        since: DateTime<Utc>,
    ) -> Result<bool, PortError>;

    /// The payout with this id if it belongs to `subaccount`, with its ledger entries (oldest
    /// first), or `Ok(None)`.
    async fn find_payout(
        &self,
        subaccount: SubaccountId,
        id: PayoutId,
    ) -> Result<Option<(Payout, Vec<LedgerEntry>)>, PortError>;

    /// Applies a status change decided by the domain, in one transaction: sets `payout`'s
    /// status and `updated_at` where the stored payout still has status `expected`, applies the
    /// sum of `entries`' deltas to the balance (never below zero), appends `entries` and writes
    /// `events`. `Ok(false)` when the payout is no longer in `expected` (changed meanwhile);
    /// then nothing was written.
    async fn apply_transition(
        &self,
        payout: &Payout,
        expected: PayoutStatus,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
    ) -> Result<bool, PortError>;

    /// Up to `page.limit + 1` payouts of `subaccount` matching `filter`, newest first
    /// (`created_at` desc, `id` desc), strictly after `page.after`, each with its receiver and
    /// account (the list object shows them).
    async fn list_payouts(
        &self,
        subaccount: SubaccountId,
        filter: &PayoutFilter,
        page: &PageRequest,
    ) -> Result<Vec<PayoutListItem>, PortError>;

    /// Stores a new payout in one transaction: moves its total from `available` to `pending`
    /// with one conditional update (never below zero, also under concurrent requests), appends
    /// `entries` to the ledger, inserts the payout and writes `events`.
    ///
    /// # Errors
    /// `InsufficientBalance` when `available` does not cover the total (or the subaccount never
    /// had a balance in the asset); `DuplicateReference` when the reference is taken. Then
    /// nothing, events included, was written.
    async fn insert_payout(
        &self,
        payout: &Payout,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
    ) -> Result<(), InsertPayoutError>;
}
