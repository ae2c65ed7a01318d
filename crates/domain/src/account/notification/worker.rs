//! Sending queued notifications and recording each attempt: [`NotificationWorker`].

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use futures_util::future::join_all;

use crate::account::notification::ports::NotificationStore;
use crate::account::notification::{Channel, Notification, NotificationId, NotificationOutcome};
use crate::account::ports::{ConfirmationRequest, Notifier, NotifyError};
use crate::error::PortError;
use crate::ports::{Clock, IdGenerator};

/// The longest error text recorded for an attempt.
const MAX_ERROR_CHARS: usize = 500;

/// How notifications are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationSettings {
    /// At most this many notifications are claimed (and sent concurrently) per pass.
    pub batch: u32,
    /// How long a claim lasts: longer than the slowest send, so a live instance keeps what it
    /// is sending, and short enough that a crashed one's claims come back soon.
    pub lease: Duration,
    /// Attempts in all, the first included; after the last one fails the notification is
    /// `failed`.
    pub max_attempts: u32,
    /// The delay after the first failed attempt; it doubles with each further failure.
    pub first_retry: Duration,
    /// The longest delay between two attempts.
    pub max_retry: Duration,
}

impl Default for NotificationSettings {
    /// 16 per pass, 2 min leases, 8 attempts, retries after about 30 s, 1 min, 2 min, … up to
    /// 1 h (about 1 h 30 min from the first attempt to the last).
    fn default() -> Self {
        Self {
            batch: 16,
            lease: Duration::from_secs(120),
            max_attempts: 8,
            first_retry: Duration::from_secs(30),
            max_retry: Duration::from_secs(3600),
        }
    }
}

/// What one pass of the retry job did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassReport {
    /// Notifications claimed.
    pub claimed: usize,
    /// Sent.
    pub sent: usize,
    /// Failed for now, rescheduled.
    pub retried: usize,
    /// Given up.
    pub failed: usize,
    /// Outcomes that could not be recorded (the lease brings them back).
    pub unrecorded: usize,
}

impl PassReport {
    fn count(&mut self, outcome: &NotificationOutcome, recorded: bool) {
        match outcome {
            _ if !recorded => self.unrecorded += 1,
            NotificationOutcome::Sent { .. } => self.sent += 1,
            NotificationOutcome::Retry { .. } => self.retried += 1,
            NotificationOutcome::Failed { .. } => self.failed += 1,
        }
    }
}

/// Sends notifications through the [`Notifier`] and records each attempt's outcome: sent,
/// retried later with exponential backoff and jitter, or failed (refused for good, or out of
/// attempts). The account use case makes each notification's first attempt; the retry job
/// ([`Self::run_due`]) makes the others.
pub struct NotificationWorker {
    store: Arc<dyn NotificationStore>,
    notifier: Arc<dyn Notifier>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    settings: NotificationSettings,
}

impl NotificationWorker {
    /// A worker over the store and the notifier.
    pub fn new(
        store: Arc<dyn NotificationStore>,
        notifier: Arc<dyn Notifier>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        settings: NotificationSettings,
    ) -> Self {
        Self {
            store,
            notifier,
            clock,
            ids,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &NotificationSettings {
        &self.settings
    }

    /// A new e-mail notification of `request`, recorded at `now` and claimed for its first
    /// attempt for one lease.
    pub fn prepare(
        &self,
        id: NotificationId,
        request: ConfirmationRequest,
        now: DateTime<Utc>,
    ) -> Notification {
        Notification {
            id,
            channel: Channel::Email,
            request,
            attempt: 1,
            created_at: now,
            // Whole microseconds, as stored, so the claim compares equal once stored.
            claimed_until: (now + lease(self.settings.lease)).trunc_subsecs(6),
        }
    }

    /// The delay before the attempt after failed attempt `attempt` (from 1): `first_retry`
    /// doubled for each earlier failure, at most `max_retry`, of which a random part in the
    /// upper half is taken ("equal jitter"), so instances retrying together spread out while
    /// the delays still grow.
    pub fn retry_delay(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(30);
        let full = self
            .settings
            .first_retry
            .saturating_mul(1u32 << exponent)
            .min(self.settings.max_retry);
        let bytes = self.ids.random_bytes();
        let mut eight = [0u8; 8];
        eight.copy_from_slice(&bytes[..8]);
        // A fraction in [0, 1) from 53 random bits.
        let fraction = (u64::from_be_bytes(eight) >> 11) as f64 / (1u64 << 53) as f64;
        full / 2 + (full / 2).mul_f64(fraction)
    }

    /// What attempt `attempt` leads to, given the notifier's answer at `now`.
    fn outcome(
        &self,
        attempt: u32,
        sent: Result<(), NotifyError>,
        now: DateTime<Utc>,
    ) -> NotificationOutcome {
        match sent {
            Ok(()) => NotificationOutcome::Sent { at: now },
            Err(NotifyError::Rejected(reason)) => NotificationOutcome::Failed {
                at: now,
                error: bounded(format!("rejected: {reason}")),
            },
            Err(NotifyError::Port(e)) if attempt >= self.settings.max_attempts => {
                NotificationOutcome::Failed {
                    at: now,
                    error: bounded(format!("gave up after {attempt} attempts: {e}")),
                }
            }
            Err(NotifyError::Port(e)) => NotificationOutcome::Retry {
                retry_at: now + lease(self.retry_delay(attempt)),
                error: bounded(e.to_string()),
            },
        }
    }

    /// Sends `notification` (an attempt the caller holds) and records the outcome, which it
    /// returns. When the outcome cannot be recorded (logged), the notification stays claimed
    /// until its lease ends and is attempted again: a request can be sent twice, never lost.
    pub async fn attempt(&self, notification: &Notification) -> NotificationOutcome {
        self.attempt_recorded(notification).await.0
    }

    /// [`Self::attempt`], also saying whether recording failed.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(notification = %notification.id, attempt = notification.attempt)
    )]
    async fn attempt_recorded(&self, notification: &Notification) -> (NotificationOutcome, bool) {
        let sent = self.notifier.send_confirmation(&notification.request).await;
        let outcome = self.outcome(notification.attempt, sent, self.clock.now());
        match &outcome {
            NotificationOutcome::Sent { .. } => {}
            NotificationOutcome::Retry { retry_at, error } => tracing::warn!(
                notification = %notification.id,
                attempt = notification.attempt,
                %retry_at,
                error = %error,
                "confirmation request not sent; retrying later"
            ),
            NotificationOutcome::Failed { error, .. } => tracing::warn!(
                notification = %notification.id,
                attempt = notification.attempt,
                error = %error,
                "confirmation request failed for good"
            ),
        }
        match self.store.record_outcome(notification, &outcome).await {
            Ok(true) => (outcome, true),
            Ok(false) => {
                tracing::info!(
                    notification = %notification.id,
                    attempt = notification.attempt,
                    "notification outcome not recorded: its claim had passed to a later attempt"
                );
                (outcome, true)
            }
            Err(e) => {
                tracing::warn!(
                    notification = %notification.id,
                    attempt = notification.attempt,
                    error = %e,
                    "recording a notification outcome failed; it is attempted again after its lease"
                );
                (outcome, false)
            }
        }
    }

    /// One pass of the retry job: claims the due notifications and attempts them concurrently,
    /// recording each outcome.
    ///
    /// # Errors
    /// When the claim fails; a failure to record one outcome is counted in the report.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn run_due(&self) -> Result<PassReport, PortError> {
        let now = self.clock.now();
        let claimed = self
            .store
            .claim_due(now, self.settings.batch, now + lease(self.settings.lease))
            .await?;
        let mut report = PassReport {
            claimed: claimed.len(),
            ..PassReport::default()
        };
        for (outcome, recorded) in join_all(claimed.iter().map(|n| self.attempt_recorded(n))).await
        {
            report.count(&outcome, recorded);
        }
        Ok(report)
    }
}

fn lease(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}

fn bounded(mut text: String) -> String {
    if let Some((cut, _)) = text.char_indices().nth(MAX_ERROR_CHARS) {
        text.truncate(cut);
    }
    text
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
