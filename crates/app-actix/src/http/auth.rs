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
use domain::idempotency::{
    ClaimOutcome, IdempotencyKey, KeyClaim, KeyMode, StoredResponse, WriteKey,
};
use std::sync::Arc;

/// An authenticated request: who is calling, the raw body they signed, and how its
/// idempotency key is settled.
#[derive(Debug)]
pub struct Authenticated {
    /// The caller.
    pub caller: Caller,
    /// The raw body.
    pub body: Bytes,
    /// How the request's idempotency key is settled, decided once, here: none, claimed before
    /// the request runs, or (a keyed, signed request taken by [`AdmittedInWrite`] where its
    /// write can) admitted by its write, which records its nonce and inserts its key; the write
    /// does both, or the request is admitted with [`Self::admit`] and its key is then claimed.
    /// Handed to the write through [`Self::write_key`].
    pub key: KeyMode,
}

impl Authenticated {
    /// The idempotency part of this request's write: its [`KeyMode`], and `render`, which
    /// renders the success response from what the write stores (so the store keeps it with
    /// the write).
    pub fn write_key<T>(
        &self,
        render: impl Fn(&T) -> Option<StoredResponse> + Send + Sync + 'static,
    ) -> WriteKey<T> {
        WriteKey::new(self.key.clone(), Arc::new(render))
    }

    /// Admits a request its write did not: records its nonce and claims its key, as every
    /// other keyed POST is admitted before it runs, with the same answers (`AUTH106` for a
    /// nonce used before, a replay, `IDEM001`, `IDEM002`). Its rate was counted when it
    /// arrived. Afterwards its key is [`KeyMode::Claimed`] (a request of another mode is left
    /// as it is).
    pub async fn admit(&mut self, req: &HttpRequest) -> Result<(), ApiError> {
        let KeyMode::AdmittedByWrite(admission) = &self.key else {
            return Ok(());
        };
        let Some(state) = req.app_data::<Data<AppState>>() else {
            return Err(ApiError::code(OPERATION, ErrorCode::Sys500));
        };
        let outcome = record_nonce_and_claim(
            state,
            req,
            self.caller,
            &admission.nonce,
            &admission.key,
            path_and_query(req),
            &self.body,
        )
        .await?;
        let claim = settle(req, &self.caller, admission.key.clone(), outcome)?;
        self.key = KeyMode::Claimed(claim);
        Ok(())
    }

    /// Records the caller of a request its write admitted, for the request log (as the
    /// extractor records every other caller once its nonce is).
    pub fn admitted(&self, req: &HttpRequest) {
        req.extensions_mut().insert(self.caller);
    }

    /// The idempotency part of a write whose response is known only after it (several
    /// transactions, say): the key is marked committed with the write and its response is
    /// stored afterwards.
    pub fn committing_key<T>(&self) -> WriteKey<T> {
        WriteKey::committing(self.key.claim().cloned())
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

/// Records a keyed POST's nonce and claims its key in one statement: `AUTH106` for a nonce
/// used before (the key untouched); otherwise the caller is recorded for the request log and
/// the claim's outcome returned, for [`settle`].
async fn record_nonce_and_claim(
    state: &Data<AppState>,
    req: &HttpRequest,
    caller: Caller,
    nonce: &NonceUse,
    key: &IdempotencyKey,
    path_and_query: &str,
    body: &[u8],
) -> Result<ClaimOutcome, ApiError> {
    let outcome = state
        .idempotency
        .claim_with_nonce(nonce, key, req.method().as_str(), path_and_query, body)
        .await
        .map_err(|e| ApiError::port(OPERATION, &e))?
        .ok_or_else(|| ApiError::code(OPERATION, ErrorCode::Auth106))?;
    req.extensions_mut().insert(caller);
    Ok(outcome)
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
    let outcome =
        record_nonce_and_claim(state, req, caller, nonce, &key, path_and_query, body).await?;
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

/// The path with its query, as signed.
fn path_and_query(req: &HttpRequest) -> &str {
    req.uri()
        .path_and_query()
        .map_or_else(|| req.path(), |p| p.as_str())
}

/// An authenticated request whose write may admit it: a keyed, signed POST is not admitted
/// here (its nonce recorded, its key claimed) when its use case's store can do both in the
/// write's own transaction; its [`Authenticated::key`] is then [`KeyMode::AdmittedByWrite`],
/// carrying what the write records.
/// Any other request is taken as [`Authenticated`] takes it. Its rate is counted on arrival,
/// before its nonce is known to be fresh.
#[derive(Debug)]
pub struct AdmittedInWrite(pub Authenticated);

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        authenticate(req, payload, false)
    }
}

impl FromRequest for AdmittedInWrite {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let authenticated = authenticate(req, payload, true);
        Box::pin(async move { authenticated.await.map(Self) })
    }
}

/// Reads the body and authenticates the request; admits it (its nonce, its key) unless
/// `in_write` and the write can.
fn authenticate(
    req: &HttpRequest,
    payload: &mut Payload,
    in_write: bool,
) -> LocalBoxFuture<'static, Result<Authenticated, ApiError>> {
    let req = req.clone();
    let body = Bytes::from_request(&req, payload);
    Box::pin(async move {
        let body = body.await.map_err(|e| {
            if e.as_response_error().status_code() == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE
            {
                ApiError::code("Request", ErrorCode::Req008)
            } else {
                ApiError::code("Request", ErrorCode::Req001)
            }
        })?;
        let Some(state) = req.app_data::<Data<AppState>>() else {
            return Err(ApiError::code(OPERATION, ErrorCode::Sys500));
        };
        let path_and_query = path_and_query(&req);
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
        if let (true, Some(RequestKey(key)), Some(nonce)) = (in_write, &key, &verified.nonce)
            && state
                .payouts
                .admits_in_write()
                .await
                .map_err(|e| ApiError::port(OPERATION, &e))?
        {
            state
                .rate_limit
                .check(caller.api_key_id)
                .map_err(ApiError::rate_limited)?;
            let admission = state.idempotency.admission(
                nonce,
                key,
                req.method().as_str(),
                path_and_query,
                &body,
            );
            return Ok(Authenticated {
                caller,
                body,
                key: KeyMode::AdmittedByWrite(admission),
            });
        }
        // The caller is recorded for the request log once its nonce is (a replay is not
        // authenticated).
        let claim = match (key, &verified.nonce) {
            (Some(RequestKey(key)), Some(nonce)) => Some(
                claim_with_nonce(state, &req, caller, nonce, key, path_and_query, &body).await?,
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
        Ok(Authenticated {
            caller,
            body,
            key: KeyMode::claimed(claim),
        })
    })
}
