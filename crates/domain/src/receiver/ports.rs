//! Where receivers are kept.

use async_trait::async_trait;

use super::query::ReceiverFilter;
use super::{KycStatus, Receiver};
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::idempotency::WriteKey;
use crate::ids::{ReceiverId, SubaccountId};
use crate::paging::PageRequest;

/// Why a receiver could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum InsertReceiverError {
    /// Another receiver of the subaccount has this e-mail (case-insensitively).
    #[error("a receiver of this subaccount already has this e-mail")]
    DuplicateEmail,
    /// Another receiver of the subaccount has this reference.
    #[error("a receiver of this subaccount already has this reference")]
    DuplicateReference,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Receivers.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ReceiverStore: Send + Sync {
    /// Stores a new receiver and its events in one transaction, applying `key` to the request's
    /// idempotency key in that transaction ([`WriteKey::commit`] of `receiver`).
    ///
    /// # Errors
    /// `DuplicateEmail` / `DuplicateReference` when the subaccount already has a receiver with
    /// that e-mail (case-insensitive) or reference, also under concurrent inserts; then nothing,
    /// events included, was written.
    async fn insert_receiver(
        &self,
        receiver: &Receiver,
        events: &[OutboxEvent],
        key: &WriteKey<Receiver>,
    ) -> Result<(), InsertReceiverError>;

    /// The receiver with this id if it belongs to `subaccount`, else `Ok(None)`.
    async fn find_receiver(
        &self,
        subaccount: SubaccountId,
        id: ReceiverId,
    ) -> Result<Option<Receiver>, PortError>;

    /// The receivers with these ids that belong to `subaccount`, in one read, in no particular
    /// order; an id that is not one of them is left out.
    async fn find_receivers(
        &self,
        subaccount: SubaccountId,
        ids: &[ReceiverId],
    ) -> Result<Vec<Receiver>, PortError>;

    /// Applies a KYC decision made by the domain: sets `receiver`'s `status`, `kyc_status` and
    /// `updated_at` where the stored receiver (of its subaccount) still has KYC status
    /// `expected`, and writes `events`, in one transaction. `Ok(false)` when it no longer has
    /// (decided meanwhile, or unknown); then nothing was written. In the same transaction it
    /// locks the receiver's payouts waiting for the decision (`reaction.waiting_status()`) and
    /// applies [`PayoutReaction::plan`] to each, so they move with the decision. `key` is
    /// applied in the same transaction ([`WriteKey::commit`] of `receiver`).
    async fn apply_kyc(
        &self,
        receiver: &Receiver,
        expected: KycStatus,
        events: &[OutboxEvent],
        reaction: &crate::payout::change::PayoutReaction,
        key: &WriteKey<Receiver>,
    ) -> Result<bool, PortError>;

    /// Up to `page.limit + 1` receivers of `subaccount` matching `filter`, newest first
    /// (`created_at` desc, `id` desc), strictly after `page.after`. The extra row tells the
    /// caller another page exists.
    async fn list_receivers(
        &self,
        subaccount: SubaccountId,
        filter: &ReceiverFilter,
        page: &PageRequest,
    ) -> Result<Vec<Receiver>, PortError>;
}
