//! An operator cancelling a payout (the console): the merchant's cancel (docs/API.md,
//! `POST /api/payout/{id}/cancel`) planned the same way, from `awaiting`, `unassessed` or
//! `pending` only, its hold released, its `payoutUpdated` event written, and the operator's
//! audit entry written in the same conditional change.

use std::sync::Arc;

use super::change::plan_change;
use super::model::Payout;
use super::ports::PayoutStore;
use super::service::CancelPayoutError;
use super::status::PayoutTrigger;
use crate::audit::{AuditAction, AuditContext};
use crate::idempotency::WriteKey;
use crate::ids::{PayoutId, SubaccountId};
use crate::ports::{Clock, IdGenerator};

/// Payout changes operators make.
#[derive(Clone)]
pub struct OperatorPayouts {
    payouts: Arc<dyn PayoutStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl OperatorPayouts {
    /// Over `payouts`.
    pub fn new(
        payouts: Arc<dyn PayoutStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            payouts,
            clock,
            ids,
        }
    }

    /// Cancels payout `raw_id` of `subaccount` for the operator of `context`.
    ///
    /// # Errors
    /// [`CancelPayoutError::NotFound`] for a malformed id or no such payout of `subaccount`
    /// (nothing is written); [`CancelPayoutError::NotCancellable`] with the status it is in
    /// (read again when it changed meanwhile); [`CancelPayoutError::Port`] when the store fails.
    pub async fn cancel(
        &self,
        subaccount: SubaccountId,
        raw_id: &str,
        context: &AuditContext,
    ) -> Result<Payout, CancelPayoutError> {
        let id = PayoutId::parse(raw_id.trim()).ok_or(CancelPayoutError::NotFound)?;
        let (payout, _) = self
            .payouts
            .find_payout(subaccount, id)
            .await?
            .ok_or(CancelPayoutError::NotFound)?;
        let expected = payout.status;
        let mut change = plan_change(
            &payout,
            PayoutTrigger::Cancel,
            self.clock.now(),
            self.ids.as_ref(),
            |_| {},
        )
        .map_err(|e| CancelPayoutError::NotCancellable(e.from))?;
        change.audit = Some(context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::PayoutCancelled,
            "payout",
            id,
            Some(serde_json::json!({"status": expected.as_str()})),
            Some(serde_json::json!({
                "status": change.payout.status.as_str(),
                "subaccount_id": subaccount.to_string(),
                "amount": change.payout.amount.get(),
                "fee": change.payout.fee.get(),
            })),
        ));
        if self
            .payouts
            .apply_transition(&change, &WriteKey::none())
            .await?
        {
            return Ok(change.payout);
        }
        let now = self
            .payouts
            .find_payout(subaccount, id)
            .await?
            .map_or(expected, |(p, _)| p.status);
        Err(CancelPayoutError::NotCancellable(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::PayoutBuilder;
    use crate::payout::PayoutStatus;
    use crate::payout::ports::MockPayoutStore;
    use crate::ports::{MockClock, MockIdGenerator};
    use uuid::Uuid;

    fn service(payouts: MockPayoutStore) -> OperatorPayouts {
        let mut clock = MockClock::new();
        clock.expect_now().returning(chrono::Utc::now);
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        OperatorPayouts::new(Arc::new(payouts), Arc::new(clock), Arc::new(ids))
    }

    fn context() -> AuditContext {
        AuditContext::cli(Some("ops"))
    }

    #[tokio::test]
    async fn a_pending_payout_is_cancelled_with_the_operators_entry_in_the_same_change() {
        let payout = PayoutBuilder::new().status(PayoutStatus::Pending).build();
        let (sub, id) = (payout.subaccount_id, payout.id);
        let found = payout.clone();
        let mut store = MockPayoutStore::new();
        store
            .expect_find_payout()
            .times(1)
            .returning(move |_, _| Ok(Some((found.clone(), Vec::new()))));
        store
            .expect_apply_transition()
            .withf(move |change, _| {
                change.payout.status == PayoutStatus::Cancelled
                    && change.audit.as_ref().is_some_and(|a| {
                        a.action == AuditAction::PayoutCancelled
                            && a.object_id == id.to_string()
                            && a.actor.name() == "cli:ops"
                            && a.before == Some(serde_json::json!({"status": "pending"}))
                    })
            })
            .times(1)
            .returning(|_, _| Ok(true));
        let cancelled = service(store)
            .cancel(sub, &id.to_string(), &context())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cancelled.status, PayoutStatus::Cancelled);
    }

    #[tokio::test]
    async fn a_sent_payout_or_a_bad_id_writes_nothing() {
        let payout = PayoutBuilder::new()
            .status(PayoutStatus::InProgress)
            .build();
        let sub = payout.subaccount_id;
        let id = payout.id.to_string();
        let mut store = MockPayoutStore::new();
        store
            .expect_find_payout()
            .times(1)
            .returning(move |_, _| Ok(Some((payout.clone(), Vec::new()))));
        store.expect_apply_transition().never();
        let service = service(store);
        assert!(matches!(
            service.cancel(sub, &id, &context()).await,
            Err(CancelPayoutError::NotCancellable(PayoutStatus::InProgress))
        ));
        assert!(matches!(
            service.cancel(sub, "not-an-id", &context()).await,
            Err(CancelPayoutError::NotFound)
        ));
    }

    #[tokio::test]
    async fn a_payout_changed_meanwhile_is_reported_where_it_is_now() {
        let payout = PayoutBuilder::new().status(PayoutStatus::Pending).build();
        let sub = payout.subaccount_id;
        let id = payout.id.to_string();
        let mut sent = payout.clone();
        sent.status = PayoutStatus::InProgress;
        let mut store = MockPayoutStore::new();
        let mut reads = vec![sent, payout];
        store
            .expect_find_payout()
            .times(2)
            .returning(move |_, _| Ok(reads.pop().map(|p| (p, Vec::new()))));
        store
            .expect_apply_transition()
            .times(1)
            .returning(|_, _| Ok(false));
        assert!(matches!(
            service(store).cancel(sub, &id, &context()).await,
            Err(CancelPayoutError::NotCancellable(PayoutStatus::InProgress))
        ));
    }
}
