//! The payout use cases' storage.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::change::PayoutChange;
use super::model::Payout;
use super::query::PayoutFilter;
use crate::account::ReceiverAccount;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::ids::{BatchId, PayoutId, ReceiverAccountId, ReceiverId, SubaccountId};
use crate::ledger::LedgerEntry;
use crate::money::{Asset, MinorUnits};
use crate::paging::PageRequest;
use crate::receiver::Receiver;
use crate::subaccount::FeeTemplate;
use crate::validation::ValidationErrors;

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
    /// The receiver's KYC or the account's confirmation or status changed since the payout was
    /// planned (its initial status or payability is out of date); plan it again.
    #[error("receiver or account changed meanwhile")]
    Stale,
    /// The write was to admit its request ([`Admission`](crate::idempotency::Admission)) and
    /// could not write all of it at once; it wrote nothing. Admit the request first, then run
    /// it again.
    #[error("the write could not admit its request")]
    NotAdmitted,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A planned payout with the ledger entries of its hold and its events, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPayout {
    /// The payout (its `batch_id` is set by the store).
    pub payout: Payout,
    /// Its hold entries.
    pub entries: Vec<LedgerEntry>,
    /// Its events (`payoutCreated`).
    pub events: Vec<OutboxEvent>,
}

/// One item of a bulk payout request as the store receives it, in request order.
#[derive(Debug, Clone, PartialEq)]
pub enum BulkSlot {
    /// Refused before storing (its checks failed); the store writes nothing for it.
    Rejected(ValidationErrors),
    /// To store as [`PayoutStore::insert_payout`] would.
    Insert(Box<NewPayout>),
}

/// What became of one item of a bulk payout request.
#[derive(Debug, Clone, PartialEq)]
pub enum BulkItemOutcome {
    /// The payout was created (or, in an atomic request that failed, would have been).
    Created(PayoutId),
    /// The item was refused, with its problems.
    Failed(ValidationErrors),
}

/// The answer to a bulk payout request: one outcome per item, in request order.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkPayoutResult {
    /// Whether every item had to be created or none.
    pub atomic: bool,
    /// Per item, in request order.
    pub items: Vec<BulkItemOutcome>,
}

impl BulkPayoutResult {
    /// How many items were refused.
    pub fn failed(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, BulkItemOutcome::Failed(_)))
            .count()
    }

    /// How many payouts were written: none when an atomic request had a failure.
    pub fn created(&self) -> usize {
        if self.atomic && self.failed() > 0 {
            return 0;
        }
        self.items.len() - self.failed()
    }

    /// Whether anything was written.
    pub fn written(&self) -> bool {
        self.created() > 0
    }
}

/// What a bulk item reports for a store refusal: `PAYO207` on `amount`, `PAYO206` on
/// `reference`, `PAYO211` on `receiver_id` for a receiver or account that changed meanwhile.
/// `None` for an infrastructure failure (the whole request fails).
pub fn bulk_item_error(e: &InsertPayoutError) -> Option<ValidationErrors> {
    let (code, field) = match e {
        InsertPayoutError::InsufficientBalance => (ErrorCode::Payo207, "amount"),
        InsertPayoutError::DuplicateReference => (ErrorCode::Payo206, "reference"),
        InsertPayoutError::Stale => (ErrorCode::Payo211, "receiver_id"),
        InsertPayoutError::NotAdmitted | InsertPayoutError::Port(_) => return None,
    };
    let mut errors = ValidationErrors::default();
    errors.push(code, field);
    Some(errors)
}

/// What planning new payouts asks the store ([`PayoutStore::planning_facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanningQuery {
    /// Receivers named by the requests.
    pub receivers: Vec<ReceiverId>,
    /// Accounts named by the requests.
    pub accounts: Vec<ReceiverAccountId>,
    /// Assets whose fee templates apply.
    pub assets: Vec<Asset>,
    /// Account, amount and asset of each request, for the duplicate warning.
    pub similar: Vec<(ReceiverAccountId, MinorUnits, Asset)>,
    /// How far back an earlier payout makes a new one a duplicate.
    pub since: DateTime<Utc>,
}

/// What the store answers to a [`PlanningQuery`].
#[derive(Debug, Clone, Default)]
pub struct PlanningFacts {
    /// The receivers found, by id (only the subaccount's).
    pub receivers: HashMap<ReceiverId, Receiver>,
    /// The accounts found, by id (only the subaccount's).
    pub accounts: HashMap<ReceiverAccountId, ReceiverAccount>,
    /// The subaccount's fee templates of the assets asked for.
    pub fee_templates: HashMap<Asset, FeeTemplate>,
    /// The `similar` triples the subaccount paid since `since`.
    pub paid_since: HashSet<(ReceiverAccountId, MinorUnits, Asset)>,
}

/// Payouts and the money they hold.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayoutStore: Send + Sync {
    /// Everything planning new payouts of `subaccount` reads, for any number of requests at
    /// once: the receivers and accounts asked for that belong to the subaccount, its fee
    /// templates for the assets asked for, and which of the `similar` (account, amount, asset)
    /// it has paid since `query.since` (the duplicate warning).
    async fn planning_facts(
        &self,
        subaccount: SubaccountId,
        query: &PlanningQuery,
    ) -> Result<PlanningFacts, PortError>;

    /// The payout with this id if it belongs to `subaccount`, with its ledger entries (oldest
    /// first), or `Ok(None)`.
    async fn find_payout(
        &self,
        subaccount: SubaccountId,
        id: PayoutId,
    ) -> Result<Option<(Payout, Vec<LedgerEntry>)>, PortError>;

    /// The payouts of `keys` (subaccount, payout), without their ledger entries, in one read
    /// (a bank report's payouts at once), in no particular order. A key whose payout does not
    /// exist, or belongs to another subaccount, has none.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn find_payouts(
        &self,
        keys: &[(SubaccountId, PayoutId)],
    ) -> Result<Vec<Payout>, PortError>;

    /// Applies a planned change in one transaction: where the stored payout still has status
    /// `change.expected`, sets its status and the fields the change sets, applies the entries'
    /// deltas to the balance (never below zero), appends the entries, fails the account of
    /// `change.account_failure` and writes the events. A payout that becomes `pending` joins
    /// the open batch of its subaccount and asset (the batch's id and run time are added to its
    /// events). `Ok(false)` when the payout is no longer in `expected` (changed meanwhile); then
    /// nothing was written. `key` is applied in the same transaction ([`WriteKey::commit`] of
    /// the payout as written, batch included).
    ///
    /// [`WriteKey::commit`]: crate::idempotency::WriteKey::commit
    async fn apply_transition(
        &self,
        change: &PayoutChange,
        key: &crate::idempotency::WriteKey<Payout>,
    ) -> Result<bool, PortError>;

    /// Applies `changes` (no idempotency key: the rail's results of many payouts) as
    /// [`Self::apply_transition`] applies each: in one transaction, with one statement per kind
    /// of write where that gives the same result, when every payout is still in the status its
    /// change expects; otherwise each in a transaction of its own, so that one payout changed
    /// meanwhile does not hold back the others. Returns, in order, whether each was applied.
    async fn apply_transitions(&self, changes: &[PayoutChange]) -> Result<Vec<bool>, PortError>;

    /// Up to `page.limit + 1` payouts of `subaccount` matching `filter`, newest first
    /// (`created_at` desc, `id` desc), strictly after `page.after`, each with its receiver and
    /// account (the list object shows them).
    async fn list_payouts(
        &self,
        subaccount: SubaccountId,
        filter: &PayoutFilter,
        page: &PageRequest,
    ) -> Result<Vec<PayoutListItem>, PortError>;

    /// Stores a new payout in one transaction: locks its receiver and account against changes
    /// (and fails with `Stale` when their KYC, confirmation or status no longer give the
    /// payout's initial status, or no longer allow paying them), moves its total from
    /// `available` to `pending` with one conditional update (never below zero, also under
    /// concurrent requests), inserts the payout, joins the open batch when it starts `pending`,
    /// appends `entries` to the ledger and writes `events`, and applies `key` to the request's
    /// idempotency key ([`WriteKey::commit`] of the payout as written, batch included), or
    /// admits the request with it ([`WriteKey::admit`]: its nonce recorded, its key inserted
    /// with the response) where [`Self::admits_in_write`] says it can.
    /// Returns the batch joined.
    ///
    /// [`WriteKey::commit`]: crate::idempotency::WriteKey::commit
    /// [`WriteKey::admit`]: crate::idempotency::WriteKey::admit
    ///
    /// # Errors
    /// `InsufficientBalance` when `available` does not cover the total (or the subaccount never
    /// had a balance in the asset); `DuplicateReference` when the reference is taken; `Stale` as
    /// above. Then nothing, events included, was written. A write that admits its request
    /// answers `NotAdmitted` instead of any of these, and when its nonce or key is there
    /// already: the request is then admitted on its own and run again, and gets its answer then.
    async fn insert_payout(
        &self,
        payout: &Payout,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
        key: &crate::idempotency::WriteKey<Payout>,
    ) -> Result<Option<BatchId>, InsertPayoutError>;

    /// Whether [`Self::insert_payout`] can admit its request itself
    /// ([`Admission`](crate::idempotency::Admission)), in the write's own transaction. A
    /// store that cannot answers `false`, and requests are admitted before they run.
    async fn admits_in_write(&self) -> Result<bool, PortError>;

    /// Stores the items of a bulk payout request in one transaction, in order: each
    /// [`BulkSlot::Insert`] as [`Self::insert_payout`] stores one payout (parties checked, hold
    /// by a conditional update that never takes `available` below zero, batch joined, ledger
    /// entries, events), each in its own savepoint so that a refused item (`PAYO207` when the
    /// balance left by the items before no longer covers it, `PAYO206` for a reference taken,
    /// `PAYO211` stale parties: see [`bulk_item_error`]) writes nothing and does not affect the
    /// others. `Rejected` slots are copied to the result. When `atomic` and any item failed,
    /// the whole transaction rolls back (nothing written, the key not applied); otherwise `key`
    /// is applied in the same transaction ([`WriteKey::commit`] of the result).
    ///
    /// [`WriteKey::commit`]: crate::idempotency::WriteKey::commit
    async fn insert_payout_bulk(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &crate::idempotency::WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, PortError>;
}
