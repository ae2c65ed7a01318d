//! Confirmation requests queued for sending: recorded with the account they belong to, sent
//! through the [`Notifier`](crate::account::ports::Notifier), retried with backoff and recorded
//! (`pending` → `sent` | `failed`), so a failure never loses the account or its link.

pub mod ports;
pub mod resend;
pub mod worker;

use std::fmt;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::account::ports::ConfirmationRequest;
use crate::ids::{ReceiverAccountId, SubaccountId};

/// A queued notification's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NotificationId(Uuid);

impl NotificationId {
    /// Wraps an id produced by the id generator or read back from storage.
    pub const fn from_uuid(uuid: Uuid) -> Self {
        Self(uuid)
    }

    /// The underlying UUID.
    pub const fn as_uuid(&self) -> Uuid {
        self.0
    }

    /// The id written as a UUID, or `None`.
    pub fn parse(raw: &str) -> Option<Self> {
        Uuid::parse_str(raw).ok().map(Self)
    }
}

impl fmt::Display for NotificationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

/// Where a notification goes. Confirmation requests go by e-mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum Channel {
    /// E-mail to the receiver's address.
    Email,
}

impl Channel {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The channel with this stored name.
    pub fn parse(name: &str) -> Option<Self> {
        name.parse().ok()
    }
}

/// Where a notification is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum NotificationStatus {
    /// Not sent yet; attempted (again) from `next_attempt_at`.
    Pending,
    /// The provider accepted it.
    Sent,
    /// Given up: refused for good by the provider, or out of attempts.
    Failed,
}

impl NotificationStatus {
    /// Every status, in order.
    pub const ALL: [Self; 3] = [Self::Pending, Self::Sent, Self::Failed];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The status with this stored name.
    pub fn parse(name: &str) -> Option<Self> {
        name.parse().ok()
    }
}

/// A notification to attempt: its request, which attempt this is (1 for the first) and until
/// when the attempt's claim lasts.
///
/// The attempt number and the claim's end identify the claim: an outcome is recorded only for
/// the claim the store last handed out, so an instance whose lease ran out cannot overwrite a
/// later attempt's outcome, and an outcome is never recorded twice.
///
/// A new notification is recorded with its account already claimed by its creator for attempt
/// 1, which the creator makes right after the commit; a creator that dies first leaves it to
/// the retry job once `claimed_until` has passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Its id.
    pub id: NotificationId,
    /// The channel.
    pub channel: Channel,
    /// What to send (the link inside is a secret).
    pub request: ConfirmationRequest,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// Until when this attempt's claim lasts (the stored `next_attempt_at` while it runs).
    pub claimed_until: DateTime<Utc>,
}

/// The outcome of one attempt, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationOutcome {
    /// Accepted by the provider.
    Sent {
        /// When.
        at: DateTime<Utc>,
    },
    /// Failed for now; attempted again at `retry_at`.
    Retry {
        /// When the next attempt is due.
        retry_at: DateTime<Utc>,
        /// Why this one failed (never the link).
        error: String,
    },
    /// Given up.
    Failed {
        /// When.
        at: DateTime<Utc>,
        /// Why (never the link).
        error: String,
    },
}

impl NotificationOutcome {
    /// The status the notification has after this outcome.
    pub fn status(&self) -> NotificationStatus {
        match self {
            Self::Sent { .. } => NotificationStatus::Sent,
            Self::Retry { .. } => NotificationStatus::Pending,
            Self::Failed { .. } => NotificationStatus::Failed,
        }
    }
}

/// What an operator sees of a notification: no recipient, no link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationSummary {
    /// Its id.
    pub id: NotificationId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// The account it asks to confirm.
    pub account_id: ReceiverAccountId,
    /// The channel.
    pub channel: Channel,
    /// Its status.
    pub status: NotificationStatus,
    /// Attempts made (or started) so far.
    pub attempts: u32,
    /// When the next attempt is due (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// When it was sent.
    pub sent_at: Option<DateTime<Utc>>,
}
