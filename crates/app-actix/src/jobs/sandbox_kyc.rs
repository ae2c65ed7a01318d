//! The sandbox KYC provider's decisions, applied as they come due.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use adapters_sandbox::{SandboxDecision, SandboxKyc};
use chrono::{DateTime, Utc};
use domain::idempotency::WriteKey;
use domain::receiver::service::KycOutcomeError;

use crate::state::AppState;

/// How long after a decision that could not be applied it is sent again.
const RETRY_AFTER: chrono::Duration = chrono::Duration::seconds(1);

/// How long a decision is sent again before the provider gives up on it (a receiver whose
/// creation never committed is never found).
const GIVE_UP_AFTER: chrono::Duration = chrono::Duration::minutes(10);

/// Applies the sandbox KYC provider's own decisions as they come due, as a real provider's
/// callbacks would be applied; an outcome for a receiver decided meanwhile is skipped. A
/// decision that could not be applied (its receiver not stored yet, since the check opens
/// before the receiver's transaction commits, or the database unavailable) is sent again a
/// second later, as a real provider sends a callback again, for up to ten minutes.
pub async fn run(state: web::Data<AppState>, kyc: Arc<SandboxKyc>) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        for decision in kyc.take_due(Utc::now()) {
            let id = decision.receiver_id.to_string();
            let result = state
                .receivers
                .apply_kyc_outcome(
                    decision.subaccount_id,
                    &id,
                    decision.outcome,
                    &WriteKey::none(),
                )
                .await;
            if let Err(e) = &result {
                tracing::info!(receiver_id = %id, error = %e, "sandbox KYC decision not applied");
            }
            if let Some(at) = retry_at(&result, &decision, Utc::now()) {
                kyc.retry(decision, at);
            }
        }
    }
}

/// When to send `decision` again after `result`, if at all: not once applied or decided
/// meanwhile; a second later while its receiver is not found or the database fails, until it
/// has been due for [`GIVE_UP_AFTER`].
fn retry_at<T>(
    result: &Result<T, KycOutcomeError>,
    decision: &SandboxDecision,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    match result {
        Ok(_) | Err(KycOutcomeError::AlreadyDecided(_)) => None,
        Err(KycOutcomeError::NotFound | KycOutcomeError::Port(_)) => {
            (now - decision.due_since < GIVE_UP_AFTER).then(|| now + RETRY_AFTER)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::PortError;
    use domain::ids::{ReceiverId, SubaccountId};
    use domain::receiver::{KycOutcome, KycStatus};
    use uuid::Uuid;

    fn decision(due_since: DateTime<Utc>) -> SandboxDecision {
        SandboxDecision {
            applicant_id: "sbx_app_1".to_owned(),
            due_since,
            receiver_id: ReceiverId::from_uuid(Uuid::new_v4()),
            subaccount_id: SubaccountId::from_uuid(Uuid::new_v4()),
            outcome: KycOutcome::Completed,
        }
    }

    #[test]
    fn a_decision_not_applied_is_sent_again_until_the_provider_gives_up() {
        let now = Utc::now();
        let fresh = decision(now - chrono::Duration::seconds(1));
        let not_found: Result<(), _> = Err(KycOutcomeError::NotFound);
        let down: Result<(), _> = Err(KycOutcomeError::Port(PortError::unknown("down")));
        assert_eq!(retry_at(&not_found, &fresh, now), Some(now + RETRY_AFTER));
        assert_eq!(retry_at(&down, &fresh, now), Some(now + RETRY_AFTER));
        let old = decision(now - GIVE_UP_AFTER);
        assert_eq!(retry_at(&not_found, &old, now), None);
        assert_eq!(retry_at(&down, &old, now), None);
    }

    #[test]
    fn a_decision_applied_or_decided_meanwhile_is_not_sent_again() {
        let now = Utc::now();
        let fresh = decision(now);
        assert_eq!(retry_at(&Ok(()), &fresh, now), None);
        let decided: Result<(), _> = Err(KycOutcomeError::AlreadyDecided(KycStatus::Failed));
        assert_eq!(retry_at(&decided, &fresh, now), None);
    }
}
