//! `idempotency-key` on POST routes (contract §7.9).
//!
//! The middleware validates the header (`IDEM201`), runs the request inside a claim slot (so
//! the request's write marks the key committed in its own transaction), and afterwards stores
//! the response for replays, or gives the key up after a server error. The claim itself is made
//! by the [`Authenticated`](super::auth::Authenticated) extractor, because keys belong to the
//! authenticated subaccount: an unauthenticated request never touches them.

use actix_web::body::{BoxBody, MessageBody, to_bytes};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web::Data;
use actix_web::{HttpMessage, HttpResponse, ResponseError};
use chrono::{DateTime, Utc};
use domain::ErrorCode;
use domain::idempotency::{HEADER, IdempotencyKey, REPLAYED_HEADER};
use domain::ids::SubaccountId;

use super::error::ApiError;
use crate::state::AppState;

/// The request's key, for the extractor to claim (request extensions).
#[derive(Debug, Clone)]
pub struct RequestKey(pub IdempotencyKey);

/// The claim the extractor made (request extensions).
#[derive(Debug, Clone)]
pub struct ClaimedKey {
    /// Whose key.
    pub subaccount: SubaccountId,
    /// The key.
    pub key: IdempotencyKey,
    /// The claim's lease.
    pub lease_until: DateTime<Utc>,
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
    let response = adapters_postgres::within_claim_slot(
        adapters_postgres::ClaimSlot::default(),
        next.call(req),
    )
    .await?;
    let replayed = response.request().extensions_mut().remove::<Replayed>();
    if let Some(replayed) = replayed {
        let (request, _) = response.into_parts();
        return Ok(ServiceResponse::new(request, replay(replayed)));
    }
    let claimed = response.request().extensions().get::<ClaimedKey>().cloned();
    let (Some(claimed), Some(state)) = (claimed, state) else {
        return Ok(response.map_into_boxed_body());
    };
    let status = response.status().as_u16();
    let (request, response) = response.into_parts();
    let (head, body) = response.into_parts();
    let body = match to_bytes(body).await {
        Ok(body) => body,
        Err(_) => {
            // Nothing to store: let a retry run afresh (if nothing was written).
            let _ = state
                .idempotency
                .finish(
                    claimed.subaccount,
                    &claimed.key,
                    claimed.lease_until,
                    500,
                    b"",
                )
                .await;
            let failed = ApiError::code("Request", ErrorCode::Sys500).error_response();
            return Ok(ServiceResponse::new(request, failed));
        }
    };
    if let Err(e) = state
        .idempotency
        .finish(
            claimed.subaccount,
            &claimed.key,
            claimed.lease_until,
            status,
            &body,
        )
        .await
    {
        // The response still goes out; a retry then sees the key in flight until its lease
        // ends (or, if nothing was written, runs afresh).
        tracing::warn!(error = %e, "storing an idempotent response failed");
    }
    Ok(ServiceResponse::new(
        request,
        head.set_body(body).map_into_boxed_body(),
    ))
}
