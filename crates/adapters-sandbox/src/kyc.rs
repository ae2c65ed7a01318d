//! A simulated KYC provider. It opens checks and, like a real provider, decides them later: when
//! the sandbox helper says so (the app applies that directly), or by itself after a configured
//! delay. Decisions it makes by itself wait in an inbox that the app drains, as it would receive a
//! real provider's callbacks.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::PortError;
use domain::ids::{ReceiverId, SubaccountId};
use domain::ports::{KycCheckRequest, KycProvider};
use domain::receiver::KycOutcome;
use uuid::Uuid;

/// One identity check the sandbox provider has open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxCheck {
    /// The provider's applicant id.
    pub applicant_id: String,
    /// The receiver being checked.
    pub receiver_id: ReceiverId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// When the provider decides by itself, if it does.
    pub decide_at: Option<DateTime<Utc>>,
    /// When its decision is sent again, after one that could not be applied.
    pub retry_at: Option<DateTime<Utc>>,
}

/// A decision the provider made by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxDecision {
    /// The provider's applicant id.
    pub applicant_id: String,
    /// When the decision first came due.
    pub due_since: DateTime<Utc>,
    /// The receiver.
    pub receiver_id: ReceiverId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// The outcome.
    pub outcome: KycOutcome,
}

/// The sandbox KYC provider.
///
/// Its open checks are kept in a B-tree rather than a hash map. Every receiver created in the
/// sandbox opens a check, and one that is never decided stays open, so the map only grows; a
/// hash map that grows doubles its table now and then and moves every entry while holding the
/// lock that every receiver's creation takes, blocking the thread of each HTTP worker that
/// creates a receiver meanwhile, with every request that worker serves (measured with 40-byte
/// ids: 8.6 ms to insert the 28 673rd check, 18 ms the 57 345th, on 2 cores with a build
/// running). A B-tree grows a node at a time: its slowest insert in the same measurement took
/// 0.08 ms.
#[derive(Debug, Default)]
pub struct SandboxKyc {
    checks: Mutex<BTreeMap<String, SandboxCheck>>,
    fail_next: Mutex<bool>,
    auto_decide: Option<(Duration, KycOutcome)>,
}

impl SandboxKyc {
    /// A provider that decides only when told (through the sandbox helper).
    pub fn new() -> Self {
        Self::default()
    }

    /// A provider that also decides every check by itself, `after` it was opened.
    pub fn deciding_after(after: Duration, outcome: KycOutcome) -> Self {
        Self {
            auto_decide: Some((after, outcome)),
            ..Self::default()
        }
    }

    /// The open check with this applicant id.
    pub fn check(&self, applicant_id: &str) -> Option<SandboxCheck> {
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(applicant_id)
            .cloned()
    }

    /// How many checks are open.
    pub fn open_checks(&self) -> usize {
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Makes the next `start_check` fail with `Unavailable`.
    pub fn fail_next_call(&self) {
        *self
            .fail_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
    }

    /// Removes and returns the decisions due at `now` (each check is decided once, unless
    /// [`Self::retry`] puts it back).
    pub fn take_due(&self, now: DateTime<Utc>) -> Vec<SandboxDecision> {
        let Some((_, outcome)) = self.auto_decide else {
            return Vec::new();
        };
        let mut checks = self.checks.lock().unwrap_or_else(PoisonError::into_inner);
        let due: Vec<String> = checks
            .iter()
            .filter(|(_, c)| c.retry_at.or(c.decide_at).is_some_and(|at| at <= now))
            .map(|(k, _)| k.clone())
            .collect();
        due.iter()
            .filter_map(|key| checks.remove(key))
            .filter_map(|c| {
                Some(SandboxDecision {
                    due_since: c.decide_at?,
                    applicant_id: c.applicant_id,
                    receiver_id: c.receiver_id,
                    subaccount_id: c.subaccount_id,
                    outcome,
                })
            })
            .collect()
    }

    /// Puts back a decision that could not be applied, to be taken again at `at`, as a real
    /// provider sends a callback again when it was not accepted.
    pub fn retry(&self, decision: SandboxDecision, at: DateTime<Utc>) {
        let check = SandboxCheck {
            applicant_id: decision.applicant_id.clone(),
            receiver_id: decision.receiver_id,
            subaccount_id: decision.subaccount_id,
            decide_at: Some(decision.due_since),
            retry_at: Some(at),
        };
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(decision.applicant_id, check);
    }
}

#[async_trait]
impl KycProvider for SandboxKyc {
    async fn start_check(&self, request: &KycCheckRequest) -> Result<String, PortError> {
        let fail = std::mem::take(
            &mut *self
                .fail_next
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if fail {
            return Err(PortError::Unavailable(anyhow::anyhow!(
                "sandbox KYC provider is unavailable"
            )));
        }
        let applicant_id = format!("sbx_app_{}", Uuid::new_v4().simple());
        let decide_at = self
            .auto_decide
            .and_then(|(after, _)| chrono::Duration::from_std(after).ok())
            .map(|after| Utc::now() + after);
        let check = SandboxCheck {
            applicant_id: applicant_id.clone(),
            receiver_id: request.receiver_id,
            subaccount_id: request.subaccount_id,
            decide_at,
            retry_at: None,
        };
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(applicant_id.clone(), check);
        Ok(applicant_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(n: u128) -> KycCheckRequest {
        KycCheckRequest {
            receiver_id: ReceiverId::from_uuid(Uuid::from_u128(n)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
            full_name: "Ada Lovelace".to_owned(),
            email: "ada@example.com".to_owned(),
        }
    }

    #[tokio::test]
    async fn opens_distinct_checks_and_remembers_them() {
        let kyc = SandboxKyc::new();
        let a = kyc.start_check(&request(1)).await.unwrap_or_default();
        let b = kyc.start_check(&request(1)).await.unwrap_or_default();
        assert!(a.starts_with("sbx_app_"));
        assert_ne!(a, b);
        assert_eq!(kyc.open_checks(), 2);
        assert_eq!(
            kyc.check(&a).map(|c| c.receiver_id),
            Some(request(1).receiver_id)
        );
        assert!(
            kyc.take_due(Utc::now() + chrono::Duration::days(365))
                .is_empty(),
            "never decides alone"
        );
    }

    #[tokio::test]
    async fn can_fail_like_an_outage_once() {
        let kyc = SandboxKyc::new();
        kyc.fail_next_call();
        assert!(matches!(
            kyc.start_check(&request(1)).await,
            Err(PortError::Unavailable(_))
        ));
        assert!(kyc.start_check(&request(1)).await.is_ok());
        assert_eq!(kyc.open_checks(), 1);
    }

    #[tokio::test]
    async fn decides_by_itself_after_the_delay_once() {
        let kyc = SandboxKyc::deciding_after(Duration::from_secs(60), KycOutcome::Failed);
        kyc.start_check(&request(7)).await.unwrap_or_default();
        assert!(kyc.take_due(Utc::now()).is_empty(), "not before the delay");
        let due = kyc.take_due(Utc::now() + chrono::Duration::seconds(61));
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].receiver_id, due[0].outcome),
            (request(7).receiver_id, KycOutcome::Failed)
        );
        assert!(
            kyc.take_due(Utc::now() + chrono::Duration::seconds(61))
                .is_empty(),
            "decided once"
        );
    }

    #[tokio::test]
    async fn a_decision_put_back_comes_due_again_at_its_retry_time_only() {
        let kyc = SandboxKyc::deciding_after(Duration::from_secs(60), KycOutcome::Completed);
        kyc.start_check(&request(8)).await.unwrap_or_default();
        let first = Utc::now() + chrono::Duration::seconds(61);
        let due = kyc.take_due(first);
        assert_eq!(due.len(), 1);
        let decision = due[0].clone();
        let again = first + chrono::Duration::seconds(5);
        kyc.retry(decision.clone(), again);
        assert_eq!(kyc.open_checks(), 1);
        assert!(kyc.take_due(first).is_empty(), "not before its retry time");
        let retried = kyc.take_due(again);
        assert_eq!(
            retried,
            std::slice::from_ref(&decision),
            "the same decision, first due as before"
        );
        assert!(retried[0].due_since < first);
        assert!(kyc.take_due(again).is_empty(), "taken once more, not twice");
    }
}
