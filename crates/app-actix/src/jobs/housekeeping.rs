//! Housekeeping every 60 s: expired nonces and idempotency keys are purged, and idle rate-limit
//! buckets forgotten.

use std::time::Duration;

use actix_web::web;
use adapters_postgres::{NONCE_RETENTION, PgStore};
use domain::idempotency::IdempotencyStore;

use crate::state::AppState;

/// Runs until aborted.
pub async fn run(store: PgStore, state: web::Data<AppState>) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tick.tick().await;
        let cutoff = chrono::Utc::now() - NONCE_RETENTION;
        if let Err(e) = store.purge_nonces(cutoff).await {
            tracing::warn!(error = %e, "purging expired nonces failed");
        }
        state.rate_limit.forget_idle();
        if let Err(e) = IdempotencyStore::purge_expired(&store, chrono::Utc::now()).await {
            tracing::warn!(error = %e, "purging expired idempotency keys failed");
        }
    }
}
