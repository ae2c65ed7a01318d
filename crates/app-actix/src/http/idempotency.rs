//! `idempotency-key` on POST routes (docs/API.md, Idempotency keys).
//!
//! The middleware validates the header (`IDEM201`) and afterwards stores the response for
//! replays, or gives the key up after a server error. The claim itself is made by the
//! [`Authenticated`](super::auth::Authenticated) extractor, because keys belong to the
//! authenticated subaccount: an unauthenticated request never touches them. The extractor
//! hands the claim to the handler, which hands it to its use case in a
//! [`WriteKey`](domain::idempotency::WriteKey) with the renderer of its success response; the
//! store marks the key committed and stores that response in the write's own transaction.
//! [`written`] answers with exactly those bytes and marks the response
//! [`StoredWithWrite`], so the middleware stores only the responses of requests that wrote
//! nothing (refusals) or could not render theirs before committing. A payout whose write admits
//! its request ([`AdmittedInWrite`](super::auth::AdmittedInWrite)) has no claim until that write
//! commits with its key, or sends the request back to be claimed.

use actix_web::body::{BoxBody, MessageBody, to_bytes};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web::Data;
use actix_web::{HttpMessage, HttpResponse, ResponseError};
use domain::ErrorCode;
use domain::idempotency::{
    HEADER, IdempotencyKey, KeyClaim, REPLAYED_HEADER, StoredResponse, WriteKey,
};

use super::error::ApiError;
use crate::state::AppState;

/// The request's key, for the extractor to claim (request extensions).
#[derive(Debug, Clone)]
pub struct RequestKey(pub IdempotencyKey);

/// Marks a response (response extensions) whose body the store already kept with the write,
/// in the write's transaction: the middleware leaves the key as the write completed it.
#[derive(Debug, Clone, Copy)]
pub struct StoredWithWrite;

/// The success response of a write: the body `key` renders for `written`, which, when the
/// request carries a key, is the response the store kept with the write (the same bytes a
/// replay answers with). `SYS500` if it does not render. Only for use cases whose success
/// means the write committed with `key`; one that can succeed without writing (an account
/// confirmed already) takes a [`WriteKey::committing`] key and lets the middleware store its
/// response.
pub fn written<T>(
    operation: &'static str,
    key: &WriteKey<T>,
    written: &T,
) -> Result<HttpResponse, ApiError> {
    let Some(stored) = key.render(written) else {
        return Err(ApiError::code(operation, ErrorCode::Sys500));
    };
    let status = actix_web::http::StatusCode::from_u16(stored.status)
        .map_err(|_| ApiError::code(operation, ErrorCode::Sys500))?;
    let mut response = HttpResponse::build(status)
        .insert_header((CONTENT_TYPE, "application/json"))
        .body(stored.body);
    if key.is_keyed() {
        response.extensions_mut().insert(StoredWithWrite);
    }
    Ok(response)
}

/// The stored response to answer with instead of running the request (request extensions).
#[derive(Debug, Clone)]
pub struct Replayed {
    /// Its status.
    pub status: u16,
    /// Its body.
    pub body: Vec<u8>,
}

fn replay(replayed: Replayed) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(replayed.status)
        .unwrap_or(actix_web::http::StatusCode::OK);
    HttpResponse::build(status)
        .insert_header((CONTENT_TYPE, "application/json"))
        .insert_header((
            HeaderName::from_static(REPLAYED_HEADER),
            HeaderValue::from_static("true"),
        ))
        .body(replayed.body)
}

/// The middleware (use with `actix_web::middleware::from_fn`, inside the request context).
pub async fn idempotency(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let raw = req.headers().get(HEADER).cloned();
    let Some(raw) = raw.filter(|_| req.method() == Method::POST) else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    let Some(key) = raw.to_str().ok().and_then(IdempotencyKey::parse) else {
        let refused = ApiError::code("Request", ErrorCode::Idem201).error_response();
        return Ok(req.into_response(refused));
    };
    req.extensions_mut().insert(RequestKey(key));
    let state = req.app_data::<Data<AppState>>().cloned();
    let response = next.call(req).await?;
    let replayed = response.request().extensions_mut().remove::<Replayed>();
    if let Some(replayed) = replayed {
        let (request, _) = response.into_parts();
        return Ok(ServiceResponse::new(request, replay(replayed)));
    }
    let claimed = response.request().extensions().get::<KeyClaim>().cloned();
    let stored_with_write = response
        .response()
        .extensions()
        .get::<StoredWithWrite>()
        .is_some();
    let (Some(claimed), Some(state), false) = (claimed, state, stored_with_write) else {
        return Ok(response.map_into_boxed_body());
    };
    let status = response.status().as_u16();
    let (request, response) = response.into_parts();
    let (head, body) = response.into_parts();
    let body = match to_bytes(body).await {
        Ok(body) => body,
        Err(_) => {
            // Nothing to store: let a retry run afresh (if nothing was written).
            let failed = StoredResponse {
                status: 500,
                body: Vec::new(),
            };
            let _ = state.idempotency.finish(&claimed, &failed).await;
            let failed = ApiError::code("Request", ErrorCode::Sys500).error_response();
            return Ok(ServiceResponse::new(request, failed));
        }
    };
    let answered = StoredResponse {
        status,
        body: body.to_vec(),
    };
    if let Err(e) = state.idempotency.finish(&claimed, &answered).await {
        // The response still goes out; a retry then sees the key in flight until its lease
        // ends (or, if nothing was written, runs afresh).
        tracing::warn!(error = %e, "storing an idempotent response failed");
    }
    Ok(ServiceResponse::new(
        request,
        head.set_body(body).map_into_boxed_body(),
    ))
}
