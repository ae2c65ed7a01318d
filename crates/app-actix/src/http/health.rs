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

/// `GET /metrics`: Prometheus text format (no API key: expose it to your scraper only).
pub async fn metrics(state: Data<AppState>) -> HttpResponse {
    let text = state.metrics.render(state.sampler.as_ref()).await;
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text)
}
