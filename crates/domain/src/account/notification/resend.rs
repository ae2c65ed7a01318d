//! Confirmation requests for operators: the queue as it stands, and sending a failed request
//! again (the console's confirmations page), audited in the same transaction.

use std::sync::Arc;

use serde_json::json;

use super::ports::{NotificationStore, Resend};
use super::{NotificationId, NotificationStatus, NotificationSummary};
use crate::audit::{AuditAction, AuditContext};
use crate::error::PortError;
use crate::ports::{Clock, IdGenerator};

/// Why a request was not sent again.
#[derive(Debug, thiserror::Error)]
pub enum ResendError {
    /// No confirmation request has this id (or the text is not an id).
    #[error("No confirmation request has this id.")]
    NotFound,
    /// Only a failed request is sent again; this one is pending or was sent.
    #[error("Only a failed request is sent again; this one is {}.", .0.as_str())]
    NotFailed(NotificationStatus),
    /// Its link can no longer confirm the account.
    #[error(
        "Its link can no longer confirm the account (it expired, was used, or the account is \
         confirmed): the merchant registers the account again to send a new one."
    )]
    LinkSpent,
    /// The store failed.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// The confirmation requests' use cases for operators.
#[derive(Clone)]
pub struct ConfirmationRequests {
    store: Arc<dyn NotificationStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl ConfirmationRequests {
    /// Over `store`.
    pub fn new(
        store: Arc<dyn NotificationStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self { store, clock, ids }
    }

    /// Up to `limit` requests, newest first, of one status or all: no recipient, no link.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    pub async fn list(
        &self,
        status: Option<NotificationStatus>,
        before: Option<NotificationId>,
        limit: u32,
    ) -> Result<Vec<NotificationSummary>, PortError> {
        self.store.list_notifications(status, before, limit).await
    }

    /// Sends the failed request whose id is `raw` again, from now, with a fresh retry schedule,
    /// recorded as `notification.resend` by `context`.
    ///
    /// # Errors
    /// [`ResendError`] says why nothing was changed; text that is not an id reads nothing.
    pub async fn resend(&self, raw: &str, context: &AuditContext) -> Result<(), ResendError> {
        let id = NotificationId::parse(raw.trim()).ok_or(ResendError::NotFound)?;
        let now = self.clock.now();
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::ConfirmationResent,
            "notification",
            id,
            Some(json!({"status": NotificationStatus::Failed.as_str()})),
            Some(json!({"status": NotificationStatus::Pending.as_str(), "attempts": 0})),
        );
        match self.store.resend_failed(id, now, &audit).await? {
            Resend::Queued => Ok(()),
            Resend::NotFailed(status) => Err(ResendError::NotFailed(status)),
            Resend::LinkSpent => Err(ResendError::LinkSpent),
            Resend::NotFound => Err(ResendError::NotFound),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::notification::ports::MockNotificationStore;
    use crate::ports::{MockClock, MockIdGenerator};
    use chrono::Utc;
    use uuid::Uuid;

    fn requests(store: MockNotificationStore) -> ConfirmationRequests {
        let mut clock = MockClock::new();
        clock.expect_now().returning(Utc::now);
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        ConfirmationRequests::new(Arc::new(store), Arc::new(clock), Arc::new(ids))
    }

    #[tokio::test]
    async fn text_that_is_not_an_id_changes_nothing() {
        let mut store = MockNotificationStore::new();
        store.expect_resend_failed().never();
        let requests = requests(store);
        for raw in ["", "x", "1; DROP TABLE notifications"] {
            assert!(matches!(
                requests.resend(raw, &AuditContext::cli(None)).await,
                Err(ResendError::NotFound)
            ));
        }
    }

    #[tokio::test]
    async fn a_failed_request_is_queued_with_its_audit_entry_naming_the_operator() {
        let id = NotificationId::from_uuid(Uuid::from_u128(5));
        let mut store = MockNotificationStore::new();
        store
            .expect_resend_failed()
            .withf(move |asked, _, audit| {
                *asked == id
                    && audit.action == AuditAction::ConfirmationResent
                    && audit.object_id == id.to_string()
                    && audit.actor.name() == "cli:ops"
                    && audit
                        .after
                        .as_ref()
                        .is_some_and(|a| a["status"] == "pending")
            })
            .times(1)
            .returning(|_, _, _| Ok(Resend::Queued));
        let done = requests(store)
            .resend(&format!(" {id} "), &AuditContext::cli(Some("ops")))
            .await;
        assert!(done.is_ok(), "{done:?}");
    }

    #[tokio::test]
    async fn every_refusal_of_the_store_is_said_in_words() {
        for (answer, words) in [
            (
                Resend::NotFailed(NotificationStatus::Sent),
                "this one is sent",
            ),
            (
                Resend::NotFailed(NotificationStatus::Pending),
                "this one is pending",
            ),
            (Resend::LinkSpent, "can no longer confirm"),
            (Resend::NotFound, "No confirmation request has this id."),
        ] {
            let mut store = MockNotificationStore::new();
            store
                .expect_resend_failed()
                .returning(move |_, _, _| Ok(answer));
            let refused = requests(store)
                .resend(&Uuid::from_u128(1).to_string(), &AuditContext::cli(None))
                .await;
            let said = refused.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(said.contains(words), "{answer:?}: {said}");
        }
    }
}
