//! The `Authenticated` extractor: reads the body (at most 64 KiB), verifies the request
//! signature against it, and records the caller for the request log.

use actix_web::dev::Payload;
use actix_web::web::{Bytes, Data};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use domain::ErrorCode;
use domain::auth::{AuthError, Caller, NonceUse, SignedRequest};
use futures_util::future::LocalBoxFuture;

use super::error::ApiError;
use super::idempotency::{Replayed, RequestKey};
use crate::state::AppState;
use domain::idempotency::{ClaimOutcome, IdempotencyKey, KeyClaim, StoredResponse, WriteKey};
use std::sync::Arc;

/// An authenticated request: who is calling, the raw body they signed, and the idempotency
/// key it claimed.
#[derive(Debug)]
pub struct Authenticated {
    /// The caller.
    pub caller: Caller,
    /// The raw body.
    pub body: Bytes,
    /// The claim on the request's idempotency key, when it carries one: handed to the write
    /// through [`Self::write_key`].
    pub claim: Option<KeyClaim>,
}

impl Authenticated {
    /// The idempotency part of this request's write: its claim, and `render`, which renders
    /// the success response from what the write stores (so the store keeps it with the write).
    pub fn write_key<T>(
        &self,
        render: impl Fn(&T) -> Option<StoredResponse> + Send + Sync + 'static,
    ) -> WriteKey<T> {
        WriteKey::new(self.claim.clone(), Arc::new(render))
    }

    /// The idempotency part of a write whose response is known only after it (several
    /// transactions, say): the key is marked committed with the write and its response is
    /// stored afterwards.
    pub fn committing_key<T>(&self) -> WriteKey<T> {
        WriteKey::committing(self.claim.clone())
    }
}

const OPERATION: &str = "Authentication";

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Claims the request's idempotency key for the caller (a request whose nonce is already
/// recorded; see [`settle`]).
async fn claim(
    state: &Data<AppState>,
    req: &HttpRequest,
    caller: &Caller,
    key: IdempotencyKey,
    path_and_query: &str,
    body: &[u8],
) -> Result<KeyClaim, ApiError> {
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
    settle(req, caller, key, outcome)
}

/// What a claim on the request's key means for it: a claim of its own (recorded in the request
/// for the middleware, and returned for the write); `IDEM001`/`IDEM002`/`IDEM003`; or a replay
/// (marked in the request: the middleware answers with the stored response).
fn settle(
    req: &HttpRequest,
    caller: &Caller,
    key: IdempotencyKey,
    outcome: ClaimOutcome,
) -> Result<KeyClaim, ApiError> {
    match outcome {
        ClaimOutcome::Claimed { lease_until } => {
            let claim = KeyClaim {
                subaccount: caller.subaccount_id,
                key,
                lease_until,
            };
            req.extensions_mut().insert(claim.clone());
            Ok(claim)
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

fn auth_error(e: AuthError) -> ApiError {
    match e {
        AuthError::Rejected(code) => ApiError::code(OPERATION, code),
        AuthError::Port(e) => ApiError::port(OPERATION, &e),
    }
}

/// A keyed POST: records its nonce and claims its key in one statement, then takes its turn
/// from the rate limit. Counted after the nonce, like every request, so a replayed request
/// never spends its key's budget; a request refused for its rate gives a key it has just
/// claimed up again, so a retry with that key runs afresh.
async fn claim_with_nonce(
    state: &Data<AppState>,
    req: &HttpRequest,
    caller: Caller,
    nonce: &NonceUse,
    key: IdempotencyKey,
    path_and_query: &str,
    body: &[u8],
) -> Result<KeyClaim, ApiError> {
    let outcome = state
        .idempotency
        .claim_with_nonce(nonce, &key, req.method().as_str(), path_and_query, body)
        .await
        .map_err(|e| ApiError::port(OPERATION, &e))?
        .ok_or_else(|| ApiError::code(OPERATION, ErrorCode::Auth106))?;
    req.extensions_mut().insert(caller);
    if let Err(wait) = state.rate_limit.check(caller.api_key_id) {
        if let ClaimOutcome::Claimed { lease_until } = outcome {
            let claim = KeyClaim {
                subaccount: caller.subaccount_id,
                key,
                lease_until,
            };
            if let Err(e) = state.idempotency.release(&claim).await {
                // A retry then sees the key in flight until its lease ends.
                tracing::warn!(error = %e, "giving up the key of a rate-limited request failed");
            }
        }
        return Err(ApiError::rate_limited(wait));
    }
    settle(req, &caller, key, outcome)
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
            let key = req.extensions().get::<RequestKey>().cloned();
            let signed = SignedRequest {
                api_key: header(&req, "x-api-key"),
                signature: header(&req, "signature"),
                signature_version: header(&req, "x-signature-version"),
                method: req.method().as_str(),
                path_and_query,
                body: &body,
                carries_idempotency_key: key.is_some(),
            };
            let verified = state.auth.verify(&signed).await.map_err(auth_error)?;
            let caller = verified.caller;
            // The caller is recorded for the request log once its nonce is (a replay is not
            // authenticated).
            let claim = match (key, &verified.nonce) {
                (Some(RequestKey(key)), Some(nonce)) => Some(
                    claim_with_nonce(state, &req, caller, nonce, key, path_and_query, &body)
                        .await?,
                ),
                (key, nonce) => {
                    if let Some(nonce) = nonce {
                        state.auth.record_nonce(nonce).await.map_err(auth_error)?;
                    }
                    req.extensions_mut().insert(caller);
                    state
                        .rate_limit
                        .check(caller.api_key_id)
                        .map_err(ApiError::rate_limited)?;
                    match key {
                        Some(RequestKey(key)) => {
                            Some(claim(state, &req, &caller, key, path_and_query, &body).await?)
                        }
                        None => None,
                    }
                }
            };
            Ok(Self {
                caller,
                body,
                claim,
            })
        })
    }
}
