//! The store of queued notifications.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::account::notification::{
    Notification, NotificationId, NotificationOutcome, NotificationStatus, NotificationSummary,
};
use crate::audit::AuditEntry;
use crate::error::PortError;

/// What asking to send a confirmation request again did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend {
    /// It is `pending` again from now, with a fresh retry schedule; the audit entry is written.
    Queued,
    /// It is not `failed` (it is pending, or was sent): nothing was changed.
    NotFailed(NotificationStatus),
    /// Its link can no longer confirm the account (the link expired, was used, or the
    /// account is confirmed): nothing was changed.
    LinkSpent,
    /// No notification has this id.
    NotFound,
}

/// Queued notifications. A new one is written with its account
/// ([`AccountStore::insert_account`](crate::account::ports::AccountStore::insert_account)); this
/// port claims the due ones and records outcomes. Recipients and links are encrypted at rest.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait NotificationStore: Send + Sync {
    /// Takes up to `limit` `pending` notifications whose `next_attempt_at` is at or before
    /// `now`, oldest due first, skipping rows another instance is claiming at the same moment:
    /// each one's attempt count goes up and its `next_attempt_at` becomes `claimed_until`, so no
    /// other instance takes it before then. Returned with the new attempt number.
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        claimed_until: DateTime<Utc>,
    ) -> Result<Vec<Notification>, PortError>;

    /// Records the outcome of the attempt `notification` holds: `sent` (with `sent_at`),
    /// `pending` again from `retry_at`, or `failed`, with the error. Only while the stored
    /// notification is still `pending` under that claim (the same attempt number and
    /// `next_attempt_at` = `claimed_until`); `Ok(false)` (nothing written) otherwise.
    async fn record_outcome(
        &self,
        notification: &Notification,
        outcome: &NotificationOutcome,
    ) -> Result<bool, PortError>;

    /// Sends the failed notification `id` again: in one transaction, where it is still
    /// `failed` and its account's confirmation link is unused and unexpired at `now`, it
    /// becomes `pending` with no attempts, due at `now`, its last error cleared, and `audit` is
    /// written; otherwise nothing is written and the answer says why.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read or written (then nothing was written).
    async fn resend_failed(
        &self,
        id: NotificationId,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<Resend, PortError>;

    /// Up to `limit` notifications, newest first, of one status or all, after `before` (the
    /// last of the previous page: none when it is not a notification), for operators: no
    /// recipient and no link.
    async fn list_notifications(
        &self,
        status: Option<NotificationStatus>,
        before: Option<NotificationId>,
        limit: u32,
    ) -> Result<Vec<NotificationSummary>, PortError>;
}
