//! Housekeeping every 60 s: expired nonces and idempotency keys are purged, idle rate-limit
//! buckets forgotten, and the events counted rather than written (connections actix closed on
//! an error, refused partner callbacks: see [`crate::telemetry`]) since the last pass logged as
//! one line per kind.

use std::time::Duration;

use actix_web::web;
use adapters_postgres::{NONCE_RETENTION, PgStore};
use domain::idempotency::IdempotencyStore;

use crate::state::AppState;
use crate::telemetry::Counted;

/// Runs until aborted.
pub async fn run(store: PgStore, state: web::Data<AppState>) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    let mut logged: Vec<u64> = Counted::ALL.iter().map(|kind| kind.total()).collect();
    loop {
        tick.tick().await;
        for (kind, last) in Counted::ALL.iter().zip(logged.iter_mut()) {
            *last = kind.log_since(*last);
        }
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
