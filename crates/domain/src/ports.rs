//! The ports: every way the core reaches the outside world. Each trait's doc comment is its
//! contract; adapters' tests check exactly those lines.
//!
//! Stores are shaped by use case, not by table: a call that changes state is one database
//! transaction in the adapter, including the outbox events passed with it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use strum::{EnumString, IntoStaticStr, VariantArray};
use uuid::Uuid;

use crate::auth::{Credential, NonceOutcome};
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::idempotency::WriteKey;
use crate::ids::{ApiKeyId, EventId, PayoutId, ReceiverId, SubaccountId};
use crate::masking::Secret;
use crate::money::Asset;
use crate::paging::PageRequest;
use crate::receiver::query::ReceiverFilter;
use crate::receiver::{KycStatus, Receiver};
use crate::subaccount::{Balance, FeeTemplate, Subaccount};

/// The current time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// Identifiers and unpredictable tokens.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait IdGenerator: Send + Sync {
    /// A new random (v4) UUID.
    fn new_id(&self) -> Uuid;
    /// 32 bytes from a cryptographically secure source, for keys, secrets and tokens.
    fn random_bytes(&self) -> [u8; 32];
}

/// What the KYC provider needs to open an identity check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KycCheckRequest {
    /// The receiver being checked.
    pub receiver_id: ReceiverId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// Full name as registered.
    pub full_name: String,
    /// E-mail the provider contacts.
    pub email: String,
}

/// The identity-verification provider.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait KycProvider: Send + Sync {
    /// Opens an identity check and returns the provider's applicant id. The outcome arrives
    /// later, asynchronously.
    ///
    /// # Errors
    /// `PortError::Unavailable` when the provider cannot be reached; nothing was opened.
    async fn start_check(&self, request: &KycCheckRequest) -> Result<String, PortError>;
}

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

/// Subaccounts and their balances.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SubaccountStore: Send + Sync {
    /// The subaccount with this id, or `Ok(None)`.
    async fn find_subaccount(&self, id: SubaccountId) -> Result<Option<Subaccount>, PortError>;

    /// The balance of `subaccount` in `asset`; zero when it never had activity in that asset.
    async fn balance(&self, subaccount: SubaccountId, asset: Asset) -> Result<Balance, PortError>;
}

/// API credentials and request nonces.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// The active (not revoked) credential with this API key, its secret decrypted, or
    /// `Ok(None)`.
    async fn find_credential(&self, api_key: &str) -> Result<Option<Credential>, PortError>;

    /// Records that `nonce` was used with this credential. `Replayed` when it was recorded
    /// before, by this or any other server instance sharing the database.
    async fn record_nonce(
        &self,
        api_key: ApiKeyId,
        subaccount: SubaccountId,
        nonce: i64,
        seen_at: DateTime<Utc>,
    ) -> Result<NonceOutcome, PortError>;
}

/// A subaccount as an operator creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubaccount {
    /// The full record; fields the operator did not set are empty.
    pub subaccount: Subaccount,
}

/// A ledger movement of money (append-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerEntry {
    /// Entry id.
    pub id: Uuid,
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

/// Why an operator command could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The subaccount does not exist.
    #[error("subaccount not found")]
    SubaccountNotFound,
    /// The API key does not exist or is already revoked.
    #[error("API key not found or already revoked")]
    KeyNotFound,
    /// The subaccount has no webhook secret yet.
    #[error("the subaccount has no webhook configured; use set-webhook first")]
    NoWebhook,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// The operator commands' storage (admin CLI, contract §13).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OperatorStore: Send + Sync {
    /// Stores a new subaccount.
    async fn create_subaccount(&self, new: &NewSubaccount) -> Result<(), PortError>;

    /// Stores a new API credential, the secret encrypted at rest.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist.
    async fn insert_credential(
        &self,
        id: ApiKeyId,
        subaccount: SubaccountId,
        api_key: &str,
        secret: &Secret<String>,
        created_at: DateTime<Utc>,
    ) -> Result<(), OperatorError>;

    /// Revokes an active API key at once.
    ///
    /// # Errors
    /// `KeyNotFound` when no active key has this value.
    async fn revoke_credential(
        &self,
        api_key: &str,
        at: DateTime<Utc>,
    ) -> Result<(), OperatorError>;

    /// Sets the postback URL and the webhook signing secret (encrypted at rest).
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist.
    async fn set_webhook(
        &self,
        subaccount: SubaccountId,
        url: &str,
        secret: &Secret<String>,
    ) -> Result<(), OperatorError>;

    /// Appends `entry` to the ledger and applies it to the balance in one transaction; returns
    /// the new balance.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist; nothing was written.
    async fn apply_ledger_entry(&self, entry: &LedgerEntry) -> Result<Balance, OperatorError>;

    /// Creates or replaces the subaccount's fee template for the template's asset.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist.
    async fn upsert_fee_template(
        &self,
        subaccount: SubaccountId,
        template: &FeeTemplate,
    ) -> Result<(), OperatorError>;

    /// Makes every request of the subaccount require signature version 2.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist.
    async fn require_signature_v2(&self, subaccount: SubaccountId) -> Result<(), OperatorError>;

    /// Makes `secret` the webhook signing secret and keeps the current one as the previous
    /// secret until `previous_until`: deliveries until then carry both signatures.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist; `NoWebhook` when it has no
    /// webhook secret to rotate (use `set_webhook`).
    async fn rotate_webhook_secret(
        &self,
        subaccount: SubaccountId,
        secret: &Secret<String>,
        previous_until: DateTime<Utc>,
    ) -> Result<(), OperatorError>;

    /// The subaccount's events, newest first, optionally only those with `status` or created at
    /// or after `since`, at most `limit`, each with its delivery attempts (oldest first).
    async fn list_events(
        &self,
        subaccount: SubaccountId,
        status: Option<EventStatus>,
        since: Option<DateTime<Utc>>,
        limit: u32,
    ) -> Result<Vec<EventSummary>, OperatorError>;

    /// Compares every balance with the sum of its ledger entries (contract §7.3); returns how
    /// many balances were checked and every one that differs (including ledger entries with no
    /// balance row, and balance rows with no entries).
    async fn check_ledger(&self) -> Result<LedgerCheck, OperatorError>;

    /// Queues the selected events for delivery again now, with a fresh retry schedule (their
    /// attempt history is kept); returns how many were queued.
    async fn resend_events(
        &self,
        selection: &ResendSelection,
        now: DateTime<Utc>,
    ) -> Result<u64, OperatorError>;
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

/// Where an outbox event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, VariantArray, IntoStaticStr, EnumString)]
#[strum(const_into_str)]
pub enum EventStatus {
    /// Waiting for its next attempt.
    #[strum(serialize = "pending")]
    Pending,
    /// Delivered (a 2xx answer).
    #[strum(serialize = "delivered")]
    Delivered,
    /// Given up: no attempts left, no endpoint, or the endpoint answered 410.
    #[strum(serialize = "exhausted")]
    Exhausted,
}

impl EventStatus {
    /// Every status.
    pub const ALL: &'static [EventStatus] = Self::VARIANTS;

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The status with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }
}

/// One event with its delivery history (for operators).
#[derive(Debug, Clone, PartialEq)]
pub struct EventSummary {
    /// Event id.
    pub id: EventId,
    /// Event name, e.g. `receiverCreated`.
    pub event_type: String,
    /// The object it is about: a receiver, account, payout or batch, as
    /// [`OutboxEvent::object_id`], hence a plain `Uuid`.
    pub object_id: Uuid,
    /// Its sequence among the object's events.
    pub sequence: i32,
    /// Delivery status (`pending`, `delivered`, `exhausted`).
    pub status: String,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// When it is next due (pending events).
    pub next_attempt_at: DateTime<Utc>,
    /// When it was delivered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// Every attempt, oldest first.
    pub attempts: Vec<AttemptSummary>,
}

/// One recorded delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSummary {
    /// When.
    pub attempted_at: DateTime<Utc>,
    /// Its number in the retry schedule.
    pub attempt: i32,
    /// `delivered`, `failed`, `gone`, `refused` or `skipped`.
    pub outcome: String,
    /// The endpoint's status code, when it answered.
    pub status_code: Option<i16>,
    /// Duration in milliseconds.
    pub latency_ms: i32,
    /// A short, secret-free error.
    pub error: Option<String>,
}

/// Which events to resend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResendSelection {
    /// One event, whatever its status.
    One(EventId),
    /// Every event of a subaccount created in `[since, until)`.
    Range {
        /// The subaccount.
        subaccount: SubaccountId,
        /// From (inclusive).
        since: DateTime<Utc>,
        /// To (exclusive).
        until: DateTime<Utc>,
    },
}
