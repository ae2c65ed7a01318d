//! Per-request context: the `x-request-id` (echoed when the client sent a sane one, else
//! generated) and one log line per request with id, route, subaccount, status and latency.

use std::time::Instant;

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use domain::auth::Caller;
use tracing::Instrument;
use uuid::Uuid;

/// The request's id, in request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

const HEADER: &str = "x-request-id";

fn client_id(req: &ServiceRequest) -> Option<String> {
    let raw = req.headers().get(HEADER)?.to_str().ok()?;
    let sane = !raw.is_empty() && raw.len() <= 128 && raw.bytes().all(|b| b.is_ascii_graphic());
    sane.then(|| raw.to_owned())
}

/// The middleware (use with `actix_web::middleware::from_fn`).
pub async fn request_context(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = client_id(&req).unwrap_or_else(|| Uuid::new_v4().to_string());
    req.extensions_mut().insert(RequestId(id.clone()));
    let started = Instant::now();
    let method = req.method().clone();
    // Everything logged while handling the request (e.g. a 5xx cause) carries its id.
    let span = tracing::info_span!("request", request_id = %id);
    let mut response = next.call(req).instrument(span).await?;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(HEADER), value);
    }
    let request = response.request();
    let pattern = request.match_pattern();
    let route = pattern
        .as_deref()
        .unwrap_or(crate::metrics::RoutePattern::UNMATCHED);
    let subaccount = request
        .extensions()
        .get::<Caller>()
        .map(|c| c.subaccount_id.to_string());
    let latency = started.elapsed().as_secs_f64();
    if let Some(state) = request.app_data::<actix_web::web::Data<crate::state::AppState>>() {
        state.metrics.observe_request(
            &method,
            pattern.as_deref(),
            response.status().as_u16(),
            latency,
        );
    }
    tracing::info!(
        request_id = %id,
        method = %method,
        route = %route,
        subaccount = subaccount.as_deref().unwrap_or("-"),
        status = response.status().as_u16(),
        latency_ms = latency * 1000.0,
        "request"
    );
    Ok(response)
}
