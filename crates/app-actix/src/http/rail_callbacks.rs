//! `POST /rail/interac/callback`: the Interac e-Transfer partner pushes each status report here
//! as soon as it writes it (the same reports payoutd also polls). No API key: the partner signs
//! the body with the shared secret of the `cad/digital` rail (`X-Partner-Signature:
//! t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`), and a signature older or newer than the
//! tolerance is refused, so a captured callback cannot be replayed later. Within the tolerance
//! a replay is harmless: the report is handed to the inbound processor under its `report_id`,
//! exactly as a polled report, and a document already recorded (same name, same SHA-256) is not
//! applied again.

use actix_web::web::{Data, Payload};
use actix_web::{HttpRequest, HttpResponse};
use domain::ErrorCode;
use futures_util::StreamExt;

use super::error::ApiError;
use crate::partner_callbacks::CallbackRefused;
use crate::state::AppState;

/// The largest callback body read: a status report of a large batch, with room to spare.
pub const MAX_CALLBACK_BYTES: usize = 4 * 1024 * 1024;

const OPERATION: &str = "Interac callback";

/// Reads the body, at most [`MAX_CALLBACK_BYTES`].
async fn read_body(mut payload: Payload) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| ApiError::code(OPERATION, ErrorCode::Req001))?;
        if body.len() + chunk.len() > MAX_CALLBACK_BYTES {
            return Err(ApiError::code(OPERATION, ErrorCode::Req008));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[utoipa::path(
    post,
    path = "/rail/interac/callback",
    tag = "Rails",
    operation_id = "interacCallback",
    summary = "A status report pushed by the Interac e-Transfer partner (not for merchants)",
    description = "Production mode with a `cad/digital` rail only (otherwise 404 `REQ006`). \
        No API key: the body, a status report of the partner protocol, is signed with the \
        rail's shared secret in `X-Partner-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \
        \"<t>.<body>\">`, checked in constant time; a timestamp further than the tolerance \
        (300 s) from payoutd's clock is refused. The report is applied exactly as the same \
        report read by polling: each payment's `deposited` settles its payout, `declined`, \
        `expired`, `cancelled` and `failed` fail it with the partner's code while it is in \
        progress. A report already recorded (pushed twice, replayed, or polled first) changes \
        nothing and answers 204 again; a report that contradicts an earlier one (a failure \
        after a deposit) or a report id seen again with other content is recorded as an \
        anomaly for operators, changes nothing and answers 204. Bodies up to 4 MiB.",
    request_body(content_type = "application/json", description = "A status report.", content = Object),
    responses(
        (status = 204, description = "Recorded (now or before); the partner stops retrying"),
        (status = 400, response = super::schemas::BadRequest),
        (status = 401, response = super::schemas::Unauthorized),
        (status = 404, response = super::schemas::NotFound),
        (status = 413, response = super::schemas::PayloadTooLarge),
        (status = 503, response = super::schemas::ServiceUnavailable),
    ),
)]
pub async fn interac(
    state: Data<AppState>,
    request: HttpRequest,
    payload: Payload,
) -> Result<HttpResponse, ApiError> {
    let Some(callbacks) = state.rail_callbacks.as_ref() else {
        return Err(ApiError::code("Request", ErrorCode::Req006));
    };
    let body = read_body(payload).await?;
    let signature = request
        .headers()
        .get("x-partner-signature")
        .and_then(|value| value.to_str().ok());
    match callbacks.receive(signature, &body).await {
        Ok(Some(pass)) => {
            state.metrics.observe_inbound_pass(&pass);
            Ok(HttpResponse::NoContent().finish())
        }
        Ok(None) => Err(ApiError::code("Request", ErrorCode::Req006)),
        Err(CallbackRefused::Unsigned) => Err(ApiError::code(OPERATION, ErrorCode::Auth101)),
        Err(CallbackRefused::Signature) => Err(ApiError::code(OPERATION, ErrorCode::Auth104)),
        Err(CallbackRefused::NotAReport) => Err(ApiError::code(OPERATION, ErrorCode::Req001)),
        Err(CallbackRefused::Store(e)) => Err(ApiError::port(OPERATION, &e)),
    }
}
