//! A simulated e-mail/SMS provider: records every confirmation request it would send, so the
//! sandbox (and tests) can read the confirmation link a receiver would get.

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use domain::PortError;
use domain::account::ports::{ConfirmationRequest, Notifier, NotifyError};

/// The sandbox notifier. `fail_next_call` makes the next send fail as an outage would.
#[derive(Debug, Default)]
pub struct SandboxNotifier {
    sent: Mutex<Vec<ConfirmationRequest>>,
    fail_next: Mutex<bool>,
}

impl SandboxNotifier {
    /// A notifier that has sent nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every request sent so far, oldest first.
    pub fn sent(&self) -> Vec<ConfirmationRequest> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Makes the next send fail with `Unavailable`.
    pub fn fail_next_call(&self) {
        *self
            .fail_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
    }
}

#[async_trait]
impl Notifier for SandboxNotifier {
    async fn send_confirmation(&self, request: &ConfirmationRequest) -> Result<(), NotifyError> {
        let fail = std::mem::take(
            &mut *self
                .fail_next
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if fail {
            return Err(NotifyError::Port(PortError::Unavailable(anyhow::anyhow!(
                "sandbox notifier is unavailable"
            ))));
        }
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::ids::{ReceiverAccountId, SubaccountId};
    use domain::masking::Secret;
    use uuid::Uuid;

    fn request() -> ConfirmationRequest {
        ConfirmationRequest {
            account_id: ReceiverAccountId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
            to_email: "ada@example.com".to_owned(),
            to_phone: "+61412345678".to_owned(),
            receiver_name: "Ada Lovelace".to_owned(),
            confirm_url: Secret::new("http://x/confirm/t".to_owned()),
            masked_details: vec![(domain::account::AccountField::Bsb, "012 ***".to_owned())],
        }
    }

    #[tokio::test]
    async fn records_what_it_sends_and_can_fail_once() {
        let notifier = SandboxNotifier::new();
        notifier.fail_next_call();
        assert!(notifier.send_confirmation(&request()).await.is_err());
        assert!(notifier.send_confirmation(&request()).await.is_ok());
        assert_eq!(notifier.sent(), vec![request()]);
    }
}
