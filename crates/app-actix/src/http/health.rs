//! `/healthz` (the process is up) and `/readyz` (database reachable, migrations applied).

use actix_web::HttpResponse;
use actix_web::web::Data;
use serde_json::json;

use super::envelope;
use super::error::ApiError;
use crate::state::AppState;

/// `GET /healthz`.
pub async fn healthz() -> HttpResponse {
    envelope::ok("Service is up", json!({"status": "up"}))
}

/// `GET /readyz`.
pub async fn readyz(state: Data<AppState>) -> Result<HttpResponse, ApiError> {
    state
        .readiness
        .check()
        .await
        .map_err(|e| ApiError::port("Readiness check", &e))?;
    Ok(envelope::ok("Service is ready", json!({"status": "ready"})))
}
