//! Housekeeping every 60 s: expired nonces and idempotency keys are purged, idle rate-limit
//! buckets forgotten, and the connections actix closed on an error since the last pass logged
//! as one line (they are counted, not written one by one: see [`crate::telemetry`]).

use std::time::Duration;

use actix_web::web;
use adapters_postgres::{NONCE_RETENTION, PgStore};
use domain::idempotency::IdempotencyStore;

use crate::state::AppState;

/// Runs until aborted.
pub async fn run(store: PgStore, state: web::Data<AppState>) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    let mut connection_errors = crate::telemetry::connection_errors();
    loop {
        tick.tick().await;
        let now = crate::telemetry::connection_errors();
        if now > connection_errors {
            tracing::warn!(
                count = now - connection_errors,
                "connections closed on a malformed request or a connection error in the last minute"
            );
        }
        connection_errors = now;
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
