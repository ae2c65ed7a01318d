//! The outbox's history for operators: events with their attempts, and resending them.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use strum::{EnumString, IntoStaticStr, VariantArray};
use uuid::Uuid;

use crate::error::OperatorError;
use crate::ids::{EventId, SubaccountId};

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

/// The outbox's history as operators inspect and replay it (admin CLI).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait EventHistoryStore: Send + Sync {
    /// The subaccount's events, newest first, optionally only those with `status` or created at
    /// or after `since`, after `before` (the last event of the previous page: none when it is
    /// not one of the subaccount's events), at most `limit`, each with its delivery attempts
    /// (oldest first).
    async fn list_events(
        &self,
        subaccount: SubaccountId,
        status: Option<EventStatus>,
        since: Option<DateTime<Utc>>,
        before: Option<EventId>,
        limit: u32,
    ) -> Result<Vec<EventSummary>, OperatorError>;

    /// Queues the selected events for delivery again now, with a fresh retry schedule (their
    /// attempt history is kept), and writes `audit` in the same transaction when any was;
    /// returns how many were queued.
    async fn resend_events(
        &self,
        selection: &ResendSelection,
        now: DateTime<Utc>,
        audit: &crate::audit::AuditEntry,
    ) -> Result<u64, OperatorError>;
}
