//! A simulated KYC provider: opens checks, remembers them, and reports them open until the
//! sandbox decides their outcome.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use domain::PortError;
use domain::ids::ReceiverId;
use domain::ports::{KycCheckRequest, KycProvider};
use uuid::Uuid;

/// One identity check the sandbox provider has open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxCheck {
    /// The provider's applicant id.
    pub applicant_id: String,
    /// The receiver being checked.
    pub receiver_id: ReceiverId,
}

/// The sandbox KYC provider. `fail_next` makes the next call fail as an outage would.
#[derive(Debug, Default)]
pub struct SandboxKyc {
    checks: Mutex<HashMap<String, SandboxCheck>>,
    fail_next: Mutex<bool>,
}

impl SandboxKyc {
    /// A provider with no open checks.
    pub fn new() -> Self {
        Self::default()
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
        let check = SandboxCheck {
            applicant_id: applicant_id.clone(),
            receiver_id: request.receiver_id,
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
    use domain::ids::SubaccountId;

    fn request() -> KycCheckRequest {
        KycCheckRequest {
            receiver_id: ReceiverId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
            full_name: "Ada Lovelace".to_owned(),
            email: "ada@example.com".to_owned(),
        }
    }

    #[tokio::test]
    async fn opens_distinct_checks_and_remembers_them() {
        let kyc = SandboxKyc::new();
        let a = kyc.start_check(&request()).await.unwrap_or_default();
        let b = kyc.start_check(&request()).await.unwrap_or_default();
        assert!(a.starts_with("sbx_app_"));
        assert_ne!(a, b);
        assert_eq!(kyc.open_checks(), 2);
        assert_eq!(
            kyc.check(&a).map(|c| c.receiver_id),
            Some(request().receiver_id)
        );
    }

    #[tokio::test]
    async fn can_fail_like_an_outage_once() {
        let kyc = SandboxKyc::new();
        kyc.fail_next_call();
        assert!(matches!(
            kyc.start_check(&request()).await,
            Err(PortError::Unavailable(_))
        ));
        assert!(kyc.start_check(&request()).await.is_ok());
        assert_eq!(kyc.open_checks(), 1);
    }
}
