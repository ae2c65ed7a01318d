//! The `Authenticated` extractor: reads the body (at most 64 KiB), verifies the request
//! signature against it, and records the caller for the request log.

use actix_web::dev::Payload;
use actix_web::web::{Bytes, Data};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use domain::ErrorCode;
use domain::auth::{AuthError, Caller, SignedRequest};
use futures_util::future::LocalBoxFuture;

use super::error::ApiError;
use super::idempotency::{ClaimedKey, Replayed, RequestKey};
use crate::state::AppState;
use domain::idempotency::{ClaimOutcome, IdempotencyKey};

/// An authenticated request: who is calling, and the raw body they signed.
#[derive(Debug)]
pub struct Authenticated {
    /// The caller.
    pub caller: Caller,
    /// The raw body.
    pub body: Bytes,
}

const OPERATION: &str = "Authentication";

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Claims the request's idempotency key for the caller; answers `IDEM001`/`IDEM002`, or marks
/// the request for a replay (the middleware answers with the stored response).
async fn claim(
    state: &Data<AppState>,
    req: &HttpRequest,
    caller: &Caller,
    key: IdempotencyKey,
    path_and_query: &str,
    body: &[u8],
) -> Result<(), ApiError> {
    let outcome = state
        .idempotency
        .claim(
            caller.subaccount_id,
            &key,
            req.method().as_str(),
            path_and_query,
            body,
        )
        .await
        .map_err(|e| ApiError::port("Request", &e))?;
    match outcome {
        ClaimOutcome::Claimed { lease_until } => {
            req.extensions_mut().insert(ClaimedKey {
                subaccount: caller.subaccount_id,
                key,
                lease_until,
            });
            Ok(())
        }
        ClaimOutcome::Replay { status, body } => {
            req.extensions_mut().insert(Replayed { status, body });
            // Replaced by the stored response in the middleware.
            Err(ApiError::code("Request", ErrorCode::Idem001))
        }
        ClaimOutcome::Mismatch => Err(ApiError::code("Request", ErrorCode::Idem002)),
        ClaimOutcome::InFlight => Err(ApiError::code("Request", ErrorCode::Idem001)),
        ClaimOutcome::ResponseLost => Err(ApiError::code("Request", ErrorCode::Idem003)),
    }
}

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let body = Bytes::from_request(&req, payload);
        Box::pin(async move {
            let body = body.await.map_err(|e| {
                if e.as_response_error().status_code()
                    == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE
                {
                    ApiError::code("Request", ErrorCode::Req008)
                } else {
                    ApiError::code("Request", ErrorCode::Req001)
                }
            })?;
            let Some(state) = req.app_data::<Data<AppState>>() else {
                return Err(ApiError::code(OPERATION, ErrorCode::Sys500));
            };
            let path_and_query = req
                .uri()
                .path_and_query()
                .map_or_else(|| req.path(), |p| p.as_str());
            let signed = SignedRequest {
                api_key: header(&req, "x-api-key"),
                signature: header(&req, "signature"),
                signature_version: header(&req, "x-signature-version"),
                method: req.method().as_str(),
                path_and_query,
                body: &body,
            };
            let caller = state
                .auth
                .authenticate(&signed)
                .await
                .map_err(|e| match e {
                    AuthError::Rejected(code) => ApiError::code(OPERATION, code),
                    AuthError::Port(e) => ApiError::port(OPERATION, &e),
                })?;
            req.extensions_mut().insert(caller);
            state
                .rate_limit
                .check(caller.api_key_id)
                .map_err(ApiError::rate_limited)?;
            let key = req.extensions().get::<RequestKey>().cloned();
            if let Some(RequestKey(key)) = key {
                claim(state, &req, &caller, key, path_and_query, &body).await?;
            }
            Ok(Self { caller, body })
        })
    }
}
