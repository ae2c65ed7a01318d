//! The sandbox KYC provider's decisions, applied as they come due.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use adapters_sandbox::SandboxKyc;
use domain::idempotency::WriteKey;

use crate::state::AppState;

/// Applies the sandbox KYC provider's own decisions as they come due, as a real provider's
/// callbacks would be applied; an outcome for a receiver decided meanwhile is skipped.
pub async fn run(state: web::Data<AppState>, kyc: Arc<SandboxKyc>) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        for decision in kyc.take_due(chrono::Utc::now()) {
            let id = decision.receiver_id.to_string();
            if let Err(e) = state
                .receivers
                .apply_kyc_outcome(
                    decision.subaccount_id,
                    &id,
                    decision.outcome,
                    &WriteKey::none(),
                )
                .await
            {
                tracing::info!(receiver_id = %id, error = %e, "sandbox KYC decision not applied");
            }
        }
    }
}
