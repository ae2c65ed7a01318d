//! `/healthz` (the process is up) and `/readyz` (database reachable, migrations applied).

use actix_web::HttpResponse;
use actix_web::web::Data;
use serde::Serialize;
use utoipa::ToSchema;

use super::envelope::{self, Success};
use super::error::ApiError;
use crate::state::AppState;

/// The payload of a probe.
#[derive(Serialize, ToSchema)]
pub struct Probe {
    /// `up` (`/healthz`) or `ready` (`/readyz`).
    #[schema(value_type = String, pattern = "^(up|ready)$")]
    status: &'static str,
}

/// `GET /healthz`.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "Operations",
    operation_id = "healthz",
    summary = "Liveness: the process is up",
    responses((status = 200, description = "`Service is up`", body = Success<Probe>)),
)]
pub async fn healthz() -> HttpResponse {
    envelope::ok("Service is up", Probe { status: "up" })
}

/// `GET /readyz`.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "Operations",
    operation_id = "readyz",
    summary = "Readiness: the database is reachable and every migration applied",
    responses(
        (status = 200, description = "`Service is ready`", body = Success<Probe>),
        (status = 500, response = super::schemas::InternalError),
        (status = 503, response = super::schemas::ServiceUnavailable),
    ),
)]
pub async fn readyz(state: Data<AppState>) -> Result<HttpResponse, ApiError> {
    state
        .readiness
        .check()
        .await
        .map_err(|e| ApiError::port("Readiness check", &e))?;
    Ok(envelope::ok("Service is ready", Probe { status: "ready" }))
}

/// `GET /metrics`: Prometheus text format (no API key: expose it to your scraper only).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "Operations",
    operation_id = "metrics",
    summary = "Prometheus metrics",
    description = "Prometheus text exposition format, all metrics prefixed `payoutd_` (see \
        docs/API.md). No API key: let only your scraper reach it.",
    responses((
        status = 200,
        description = "The metrics",
        content_type = "text/plain; version=0.0.4; charset=utf-8",
        body = String,
    )),
)]
pub async fn metrics(state: Data<AppState>) -> HttpResponse {
    let held = state
        .rail_callbacks
        .as_ref()
        .map_or(0, |callbacks| callbacks.bodies_held());
    state.metrics.observe_callback_bodies_held(held);
    let text = state.metrics.render(state.sampler.as_ref()).await;
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text)
}
