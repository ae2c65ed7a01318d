//! The outbox as the delivery worker sees it.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::policy::NextStep;
use super::sender::DeliveryOutcome;
use crate::error::{OperatorError, PortError};
use crate::ids::{EventId, SubaccountId};
use crate::masking::Secret;

/// What one claim took: the events to send, and how many due events had nowhere to go.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    /// Events claimed for one attempt each; every one has an enabled endpoint.
    pub events: Vec<ClaimedEvent>,
    /// Due events given up by the claim itself because their subaccount has no enabled
    /// postback URL (none set, or disabled after a 410): each one's attempt is recorded as
    /// `skipped` and the event is exhausted, in the claim's own statement. An operator can
    /// resend them once an endpoint is set.
    pub skipped: usize,
}

impl Claim {
    /// Due events the claim took, sent or given up; equal to the limit when more may be due.
    pub fn taken(&self) -> usize {
        self.events.len() + self.skipped
    }
}

/// A due event, claimed by one worker for one attempt: a delivery job, not the event itself.
/// The [`OutboxEvent`](crate::events::OutboxEvent) stays in the outbox; each attempt at it gets a
/// new `ClaimedEvent` (its own `attempt` and `claimed_until`) carrying what that attempt needs:
/// the body as it will be signed, the endpoint and the secrets.
#[derive(Debug, Clone)]
pub struct ClaimedEvent {
    /// The event (and `webhook-id`).
    pub event_id: EventId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// This attempt's number, 1-based.
    pub attempt: u32,
    /// The claim's lease deadline as stored: together with `attempt` it identifies this claim,
    /// so a worker whose claim was taken over (lease expired, or the event resent) can never
    /// record over the new one.
    pub claimed_until: DateTime<Utc>,
    /// The webhook body, exactly as it will be signed and sent.
    pub body: Vec<u8>,
    /// The subaccount's postback URL.
    pub url: String,
    /// Signing secrets: the current one, then the previous one while a rotation overlaps.
    pub secrets: Vec<Secret<String>>,
}

/// What to record about one attempt.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    /// When it was made.
    pub attempted_at: DateTime<Utc>,
    /// How it ended.
    pub outcome: DeliveryOutcome,
    /// How long it took.
    pub latency: Duration,
    /// What happens to the event next.
    pub next: NextStep,
}

/// The outbox's delivery side.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DeliveryStore: Send + Sync {
    /// Takes up to `limit` pending events that are due at `now` and not claimed by a live
    /// worker, oldest due first, and increments each one's attempt count. An event whose
    /// subaccount has an enabled postback URL is claimed for `lease` (held until
    /// `now + lease`) and returned to be sent; any other is given up at once, in the same
    /// transaction: exhausted, with a `skipped` attempt (no status, latency 0, attempted at
    /// `now`) and `no enabled postback URL` as its error, and only counted in
    /// [`Claim::skipped`]. Concurrent callers (any number of instances) never take the same
    /// event; an event whose claimer died is claimable again once its lease has passed.
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Claim, PortError>;

    /// Records the attempt and applies `record.next` (delivered, retry at, exhausted, or
    /// disable the endpoint and exhaust), releasing the claim, in one transaction. Applies only
    /// while this exact claim holds (same attempt, same lease deadline, still pending);
    /// `Ok(false)` otherwise (the lease ran out and another worker took over, or an operator
    /// resent the event), and then nothing was written.
    async fn record_attempt(
        &self,
        event: &ClaimedEvent,
        record: &AttemptRecord,
    ) -> Result<bool, PortError>;

    /// [`DeliveryStore::record_attempt`] for several attempts in one transaction (one commit
    /// instead of one per event). Each applies under its own claim as above; the result says,
    /// in order, which ones did.
    async fn record_attempts(
        &self,
        done: &[(ClaimedEvent, AttemptRecord)],
    ) -> Result<Vec<bool>, PortError>;
}

/// Why a webhook URL was refused: the guard's words, fit to show the operator (they name the
/// host and the address, never the rest of the URL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TargetRefused(pub String);

/// The delivery worker's address guard, asked before an endpoint is stored: a URL the worker
/// would refuse to deliver to (a scheme other than http(s), credentials, port 0, a literal
/// address inside a private, loopback, link-local or reserved range unless the deployer allows
/// private targets) is refused when it is set, by the CLI and the console alike, not discovered
/// at the first delivery.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait WebhookTargetGuard: Send + Sync {
    /// Checks `url` (already trimmed).
    ///
    /// # Errors
    /// [`TargetRefused`] with the reason when deliveries to `url` would be refused. Host names
    /// are not resolved here (the worker checks what they resolve to at each connection).
    fn check_target(&self, url: &str) -> Result<(), TargetRefused>;
}

/// Webhook endpoints as operators set them up (admin CLI): URL and signing secrets.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WebhookEndpointStore: Send + Sync {
    /// Sets the postback URL and the webhook signing secret (encrypted at rest), with `audit`,
    /// whose `before` the store sets to the URL replaced (`postback_url`, null when none).
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist; nothing was written.
    async fn set_webhook(
        &self,
        subaccount: SubaccountId,
        url: &str,
        secret: &Secret<String>,
        audit: &crate::audit::AuditEntry,
    ) -> Result<(), OperatorError>;

    /// Makes `secret` the webhook signing secret and keeps the current one as the previous
    /// secret until `previous_until`: deliveries until then carry both signatures. `audit` is
    /// written in the same transaction.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist; `NoWebhook` when it has no
    /// webhook secret to rotate (use `set_webhook`). Nothing was written.
    async fn rotate_webhook_secret(
        &self,
        subaccount: SubaccountId,
        secret: &Secret<String>,
        previous_until: DateTime<Utc>,
        audit: &crate::audit::AuditEntry,
    ) -> Result<(), OperatorError>;
}
