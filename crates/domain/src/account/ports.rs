//! The ports of the account use cases.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::account::{AccountField, ReceiverAccount};
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::ids::{ReceiverAccountId, ReceiverId, SubaccountId};

/// A confirmation token as stored: only its SHA-256, never the token itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfirmationToken {
    /// SHA-256 of the token text.
    pub hash: [u8; 32],
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

/// What a token opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenLookup {
    /// The account it confirms.
    pub account: ReceiverAccount,
    /// Who asks: the subaccount's names (shown to the receiver).
    pub merchant: MerchantNames,
    /// The receiver's first, middle and last name as the merchant registered them.
    pub receiver_names: [String; 3],
    /// When the token expires.
    pub expires_at: DateTime<Utc>,
    /// Whether it was used already.
    pub used: bool,
}

/// A subaccount's names as registered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MerchantNames {
    /// Its business (trading) name; may be empty.
    pub business_name: String,
    /// Its name.
    pub name: String,
}

impl MerchantNames {
    /// The name a receiver knows it by: the business name, or its name when that is empty.
    pub fn shown(&self) -> &str {
        let business = self.business_name.trim();
        if business.is_empty() {
            self.name.trim()
        } else {
            business
        }
    }
}

/// Why an account could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum InsertAccountError {
    /// The receiver already has an account with exactly these details.
    #[error("the receiver already has an account with these details")]
    Duplicate,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Receiver accounts. Values are encrypted at rest; matchable fields also get keyed
/// fingerprints, so matching and duplicate detection are index lookups, never decryption.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Stores a new account, its confirmation token, its events and the notification that asks
    /// the receiver to confirm it (`pending`, attempt 1, due at its `claimed_until`) in one
    /// transaction, applying `key` to the request's idempotency key there
    /// ([`WriteKey::commit`] of `account`).
    ///
    /// # Errors
    /// `Duplicate` when the receiver already has an account of the same method with the same
    /// matchable values (also under concurrent inserts); then nothing was written.
    async fn insert_account(
        &self,
        account: &ReceiverAccount,
        token: &ConfirmationToken,
        events: &[OutboxEvent],
        notification: &crate::account::notification::Notification,
        key: &crate::idempotency::WriteKey<ReceiverAccount>,
    ) -> Result<(), InsertAccountError>;

    /// The account with this id if it belongs to `subaccount`, else `Ok(None)`.
    async fn find_account(
        &self,
        subaccount: SubaccountId,
        id: ReceiverAccountId,
    ) -> Result<Option<ReceiverAccount>, PortError>;

    /// The accounts with these ids that belong to `subaccount`, in one read, in no particular
    /// order; an id that is not one of them is left out. (A file of a batch's payouts reads
    /// its accounts this way, not one round trip each.)
    async fn find_accounts(
        &self,
        subaccount: SubaccountId,
        ids: &[ReceiverAccountId],
    ) -> Result<Vec<ReceiverAccount>, PortError>;

    /// Every account of the receiver (of `subaccount`), oldest first.
    async fn list_accounts(
        &self,
        subaccount: SubaccountId,
        receiver: ReceiverId,
    ) -> Result<Vec<ReceiverAccount>, PortError>;

    /// The oldest account of `subaccount` whose matchable fields equal every given
    /// (field, normalised value) pair, or `Ok(None)`. `fields` is not empty, names each field
    /// once, and names only fields that are [`AccountField::matchable`].
    ///
    /// # Errors
    /// `PortError::Unknown` when a field is not matchable (the service never asks for one).
    async fn find_first_match(
        &self,
        subaccount: SubaccountId,
        fields: &[(AccountField, String)],
    ) -> Result<Option<ReceiverAccount>, PortError>;

    /// The token with this hash and its account, or `Ok(None)`. Reads only: looking a token up
    /// never spends it.
    async fn find_token(&self, hash: &[u8; 32]) -> Result<Option<TokenLookup>, PortError>;

    /// Applies a confirmation decided by the domain: sets `account`'s statuses where the stored
    /// account is still `unconfirmed` (and, with `token`, where that token is unused, marking it
    /// used), marks every other unused token of the account used too (a confirmed account's
    /// links are spent, however it was confirmed), and writes `events`, in one transaction. `Ok(false)` when the conditions no longer
    /// hold (confirmed meanwhile, token used); then nothing was written. In the same
    /// transaction it locks the account's `awaiting` payouts and applies `reaction` to each, so
    /// they become `pending` with the confirmation. `key` is applied in the same transaction
    /// ([`WriteKey::commit`](crate::idempotency::WriteKey::commit) of `account`).
    async fn confirm_account(
        &self,
        account: &ReceiverAccount,
        token: Option<[u8; 32]>,
        events: &[OutboxEvent],
        reaction: &crate::payout::change::PayoutReaction,
        key: &crate::idempotency::WriteKey<ReceiverAccount>,
    ) -> Result<bool, PortError>;
}

/// A request to the receiver to confirm an account's details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmationRequest {
    /// The account.
    pub account_id: ReceiverAccountId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// Where to send it (the receiver's e-mail).
    pub to_email: String,
    /// The receiver's phone, with dial code, for SMS.
    pub to_phone: String,
    /// The receiver's name, for the greeting.
    pub receiver_name: String,
    /// The link that confirms; carries the token, so treat it as a secret.
    pub confirm_url: crate::masking::Secret<String>,
    /// The details to show, masked.
    pub masked_details: Vec<(AccountField, String)>,
}

/// Why a confirmation request was not sent.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The provider refused this request for good (a `5xx` answer such as an unknown or
    /// refused recipient, or an address it cannot take): sending it again cannot succeed. The
    /// text is the provider's answer, never the link.
    #[error("the provider rejected the confirmation request: {0}")]
    Rejected(String),
    /// The provider could not be reached or failed for now (`Unavailable`: connection,
    /// timeout, `4xx`); sending again later may succeed.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Sends confirmation requests by e-mail or SMS.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Notifier: Send + Sync {
    /// Sends one confirmation request.
    ///
    /// # Errors
    /// `Port(PortError::Unavailable)` when the provider cannot be reached or refuses for now;
    /// `Rejected` when it refuses this request for good. Nothing was sent either way.
    async fn send_confirmation(&self, request: &ConfirmationRequest) -> Result<(), NotifyError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merchant_is_shown_by_its_business_name_else_its_name() {
        let names = |business: &str, name: &str| MerchantNames {
            business_name: business.to_owned(),
            name: name.to_owned(),
        };
        assert_eq!(names("Acme Payroll", "acme").shown(), "Acme Payroll");
        assert_eq!(names("  ", " acme ").shown(), "acme");
    }
}
