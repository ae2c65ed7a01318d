//! The outbox as the delivery worker sees it.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::policy::NextStep;
use super::sender::DeliveryOutcome;
use crate::error::PortError;
use crate::ids::{EventId, SubaccountId};
use crate::masking::Secret;

/// A due event, claimed by one worker for one attempt.
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
    /// The subaccount's postback URL; `None` when it has none.
    pub url: Option<String>,
    /// Whether the endpoint was disabled (it answered 410).
    pub endpoint_disabled: bool,
    /// Signing secrets: the current one, then the previous one while a rotation overlaps.
    pub secrets: Vec<Secret<String>>,
}

/// What to record about one attempt.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    /// When it was made.
    pub attempted_at: DateTime<Utc>,
    /// How it ended; `None` when no request was made (no endpoint, or a disabled one).
    pub outcome: Option<DeliveryOutcome>,
    /// How long it took.
    pub latency: Duration,
    /// What happens to the event next.
    pub next: NextStep,
}

/// The outbox's delivery side.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DeliveryStore: Send + Sync {
    /// Claims up to `limit` pending events that are due at `now` and not claimed by a live
    /// worker, oldest due first, for `lease`: increments each one's attempt count and holds it
    /// until `now + lease`. Concurrent callers (any number of instances) never claim the same
    /// event; an event whose claimer died is claimable again once its lease has passed.
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Vec<ClaimedEvent>, PortError>;

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
