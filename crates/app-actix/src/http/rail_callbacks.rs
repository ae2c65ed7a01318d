//! `POST /rail/interac/callback`: the Interac e-Transfer partner pushes each status report here
//! as soon as it writes it (the same reports payoutd also polls). No API key: the partner signs
//! the body with the shared secret of the `cad/digital` rail (`X-Partner-Signature:
//! t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`), and a signature older or newer than the
//! tolerance is refused, so a captured callback cannot be replayed later. Within the tolerance
//! a replay is harmless: the report is handed to the inbound processor under its `report_id`,
//! exactly as a polled report, and a document already recorded (same name, same SHA-256) is not
//! applied again.
//!
//! What can be refused without the body is refused before a byte of it is read (see
//! [`crate::partner_callbacks`]); the refusals of strangers are counted, not logged one by one.

use actix_web::http::header::CONTENT_LENGTH;
use actix_web::web::{Data, Payload};
use actix_web::{HttpRequest, HttpResponse};
use adapters_rails::interac::SIGNATURE_HEADER;
use domain::ErrorCode;
use futures_util::StreamExt;

use super::error::ApiError;
use crate::partner_callbacks::{CallbackRefused, MAX_CALLBACK_BYTES};
use crate::state::AppState;
use crate::telemetry::CallbackRefusal;

const OPERATION: &str = "Interac callback";

/// Reads the body, at most [`MAX_CALLBACK_BYTES`] (a chunked body declares no length).
async fn read_body(mut payload: Payload) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| ApiError::code(OPERATION, ErrorCode::Req001))?;
        if body.len() + chunk.len() > MAX_CALLBACK_BYTES {
            return Err(refused(CallbackRefused::counted(CallbackRefusal::TooLarge)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The answer to a refused callback.
fn refused(refusal: CallbackRefused) -> ApiError {
    match refusal {
        CallbackRefused::Counted(reason) => match reason {
            CallbackRefusal::Unsigned => ApiError::code_with_message(
                OPERATION,
                ErrorCode::Auth101,
                "Missing X-Partner-Signature header".to_owned(),
            ),
            CallbackRefusal::MalformedSignature
            | CallbackRefusal::StaleSignature
            | CallbackRefusal::BadSignature => ApiError::code(OPERATION, ErrorCode::Auth104),
            CallbackRefusal::TooLarge => ApiError::code(OPERATION, ErrorCode::Req008),
            CallbackRefusal::Busy => {
                ApiError::code(OPERATION, ErrorCode::Sys503).retry_after(BUSY_RETRY_AFTER_SECS)
            }
        },
        CallbackRefused::NotAReport => ApiError::code(OPERATION, ErrorCode::Req001),
        CallbackRefused::Store(e) => ApiError::port(OPERATION, &e),
    }
}

/// The `retry-after` of a callback refused because too many bodies are held.
const BUSY_RETRY_AFTER_SECS: u64 = 1;

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
        (300 s) from payoutd's clock is refused. A missing (`AUTH101`), malformed or stale \
        (`AUTH104`) signature header and a `Content-Length` over 4 MiB (`REQ008`) are refused \
        before the body is read; at most 8 bodies are held at once, each until its report is \
        applied, and a callback beyond that is refused with 503 `SYS503` and `retry-after: 1`. \
        Pushed reports are applied one at a time, and a callback is answered once its report \
        is. The report is applied exactly as the same report read by polling: each payment's `deposited` settles its payout, \
        `declined`, `expired`, `cancelled` and `failed` fail it with the partner's code while \
        it is in progress. A report already recorded (pushed twice, replayed, or polled first) \
        changes nothing and answers 204 again; a report that contradicts an earlier one (a \
        failure after a deposit) or a report id seen again with other content is recorded as \
        an anomaly for operators, changes nothing and answers 204. Bodies up to 4 MiB.",
    request_body(content_type = "application/json", description = "A status report.", content = Object),
    params(
        ("X-Partner-Signature" = String, Header, description = "`t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">` (several `v1` values while a secret is rotated)"),
    ),
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
    let header = |name| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
    };
    // actix has refused a malformed Content-Length before the handler runs.
    let declared_length =
        header(CONTENT_LENGTH.as_str()).and_then(|value| value.parse::<u64>().ok());
    let admitted = callbacks
        .admit(header(SIGNATURE_HEADER), declared_length)
        .map_err(refused)?;
    let body = read_body(payload).await?;
    match callbacks.receive(admitted, &body).await {
        Ok(Some(pass)) => {
            state.metrics.observe_inbound_pass(&pass);
            Ok(HttpResponse::NoContent().finish())
        }
        Ok(None) => Err(ApiError::code("Request", ErrorCode::Req006)),
        Err(refusal) => Err(refused(refusal)),
    }
}
