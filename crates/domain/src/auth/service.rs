//! Authenticating one request.

use std::sync::Arc;

use chrono::Duration;

use super::signature::{self, SignatureHeader, SignatureVersion, SignedParts};
use super::{Caller, NonceDurability, NonceOutcome, NonceUse};
use crate::auth::ports::CredentialStore;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::ports::Clock;

/// The authentication-relevant parts of an HTTP request.
#[derive(Debug, Clone, Copy)]
pub struct SignedRequest<'a> {
    /// `x-api-key`, if sent.
    pub api_key: Option<&'a str>,
    /// `signature`, if sent.
    pub signature: Option<&'a str>,
    /// `x-signature-version`, if sent.
    pub signature_version: Option<&'a str>,
    /// HTTP method.
    pub method: &'a str,
    /// Path with query string, exactly as received.
    pub path_and_query: &'a str,
    /// Raw body.
    pub body: &'a [u8],
    /// Whether the request carries an idempotency key (a POST's nonce then need not be on
    /// disk before the request goes on: [`NonceDurability::WithNextCommit`]).
    pub carries_idempotency_key: bool,
}

/// Why a request is not authenticated.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Rejected with this `AUTH1xx` code.
    #[error("authentication failed: {}", .0.as_str())]
    Rejected(ErrorCode),
    /// The credential store failed.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Verifies API keys and signatures.
pub struct AuthService {
    credentials: Arc<dyn CredentialStore>,
    clock: Arc<dyn Clock>,
    window: Duration,
}

impl AuthService {
    /// `window` is the largest accepted distance between the client's nonce and server time.
    pub fn new(
        credentials: Arc<dyn CredentialStore>,
        clock: Arc<dyn Clock>,
        window: Duration,
    ) -> Self {
        Self {
            credentials,
            clock,
            window,
        }
    }

    /// Establishes who is calling, or why not, recording a POST's nonce as used.
    ///
    /// Order: headers present (`AUTH101`), well-formed (`AUTH103`), fresh (`AUTH105`), key known
    /// and active (`AUTH102`), version allowed (`AUTH107`), MAC matches in constant time
    /// (`AUTH104`), and for POST the nonce unused (`AUTH106`).
    pub async fn authenticate(&self, request: &SignedRequest<'_>) -> Result<Caller, AuthError> {
        let verified = self.verify(request).await?;
        if let Some(nonce) = &verified.nonce {
            self.record_nonce(nonce).await?;
        }
        Ok(verified.caller)
    }

    /// Every check of [`authenticate`](Self::authenticate) but the last: a POST's nonce is
    /// returned, not yet recorded. The caller must record it before the request goes on, with
    /// [`record_nonce`](Self::record_nonce) or together with the request's idempotency key
    /// (`IdempotencyService::claim_with_nonce`).
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn verify(&self, request: &SignedRequest<'_>) -> Result<Verified, AuthError> {
        let reject = |code| Err(AuthError::Rejected(code));
        let (Some(api_key), Some(raw_signature)) = (
            request.api_key.filter(|k| !k.is_empty()),
            request.signature.filter(|s| !s.is_empty()),
        ) else {
            return reject(ErrorCode::Auth101);
        };
        let Some(header) = SignatureHeader::parse(raw_signature) else {
            return reject(ErrorCode::Auth103);
        };
        let Some(version) = SignatureVersion::from_header(request.signature_version) else {
            return reject(ErrorCode::Auth103);
        };
        let now = self.clock.now();
        let distance = (now.timestamp_millis() - header.nonce).abs();
        if distance > self.window.num_milliseconds() {
            return reject(ErrorCode::Auth105);
        }
        let Some(credential) = self.credentials.find_credential(api_key).await? else {
            return reject(ErrorCode::Auth102);
        };
        if !credential.signature_policy.allows(version, request.method) {
            return reject(ErrorCode::Auth107);
        }
        let parts = SignedParts {
            version,
            nonce: header.nonce,
            api_key,
            method: request.method,
            path_and_query: request.path_and_query,
            body: request.body,
        };
        if !signature::verify(credential.secret.expose(), &parts, &header.mac) {
            return reject(ErrorCode::Auth104);
        }
        let nonce = request
            .method
            .eq_ignore_ascii_case("POST")
            .then_some(NonceUse {
                api_key: credential.id,
                subaccount: credential.subaccount_id,
                nonce: header.nonce,
                seen_at: now,
                durability: if request.carries_idempotency_key {
                    NonceDurability::WithNextCommit
                } else {
                    NonceDurability::Immediate
                },
            });
        Ok(Verified {
            caller: Caller {
                subaccount_id: credential.subaccount_id,
                api_key_id: credential.id,
            },
            nonce,
        })
    }

    /// Records a verified POST's nonce as used: `AUTH106` when it was used before.
    pub async fn record_nonce(&self, nonce: &NonceUse) -> Result<(), AuthError> {
        let outcome = self
            .credentials
            .record_nonce(
                nonce.api_key,
                nonce.subaccount,
                nonce.nonce,
                nonce.seen_at,
                nonce.durability,
            )
            .await?;
        match outcome {
            NonceOutcome::Fresh => Ok(()),
            NonceOutcome::Replayed => Err(AuthError::Rejected(ErrorCode::Auth106)),
        }
    }
}

/// A request whose signature checks out: who is calling, and for a POST the nonce still to be
/// recorded as used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The caller.
    pub caller: Caller,
    /// A POST's nonce; `None` for other methods, whose nonces are not single-use.
    pub nonce: Option<NonceUse>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::ports::MockCredentialStore;
    use crate::auth::{Credential, SignaturePolicy};
    use crate::ids::{ApiKeyId, SubaccountId};
    use crate::masking::Secret;
    use crate::ports::MockClock;
    use chrono::{DateTime, Utc};
    use mockall::predicate::eq;
    use uuid::Uuid;

    const NOW_MS: i64 = 1_700_000_000_000;

    fn clock() -> Arc<dyn Clock> {
        let mut clock = MockClock::new();
        clock
            .expect_now()
            .returning(|| DateTime::<Utc>::from_timestamp_millis(NOW_MS).unwrap_or_default());
        Arc::new(clock)
    }

    fn credential(policy: SignaturePolicy) -> Credential {
        Credential {
            id: ApiKeyId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
            secret: Secret::new("sk_test".to_owned()),
            signature_policy: policy,
        }
    }

    fn store(policy: SignaturePolicy, nonce: Option<NonceOutcome>) -> Arc<dyn CredentialStore> {
        let mut store = MockCredentialStore::new();
        store
            .expect_find_credential()
            .with(eq("pk_test"))
            .returning(move |_| Ok(Some(credential(policy))));
        store.expect_find_credential().returning(|_| Ok(None));
        match nonce {
            Some(outcome) => {
                store
                    .expect_record_nonce()
                    .times(1)
                    .returning(move |_, _, _, _, _| Ok(outcome));
            }
            None => {
                store.expect_record_nonce().never();
            }
        }
        Arc::new(store)
    }

    fn signed(version: SignatureVersion, nonce: i64, method: &str, body: &[u8]) -> String {
        signature::sign(
            "sk_test",
            &SignedParts {
                version,
                nonce,
                api_key: "pk_test",
                method,
                path_and_query: "/api/x?a=1",
                body,
            },
        )
    }

    fn request<'a>(
        sig: &'a str,
        method: &'a str,
        body: &'a [u8],
        version: Option<&'a str>,
    ) -> SignedRequest<'a> {
        SignedRequest {
            api_key: Some("pk_test"),
            signature: Some(sig),
            signature_version: version,
            method,
            path_and_query: "/api/x?a=1",
            body,
            carries_idempotency_key: false,
        }
    }

    fn code(result: Result<Caller, AuthError>) -> Option<ErrorCode> {
        match result {
            Err(AuthError::Rejected(code)) => Some(code),
            _ => None,
        }
    }

    fn service(store: Arc<dyn CredentialStore>) -> AuthService {
        AuthService::new(store, clock(), Duration::seconds(300))
    }

    #[tokio::test]
    async fn a_valid_v1_get_authenticates_without_recording_the_nonce() {
        let sig = signed(SignatureVersion::V1, NOW_MS - 1_000, "GET", b"");
        let caller = service(store(SignaturePolicy::AnyVersion, None))
            .authenticate(&request(&sig, "GET", b"", None))
            .await;
        assert_eq!(
            caller.ok().map(|c| c.subaccount_id),
            Some(credential(SignaturePolicy::AnyVersion).subaccount_id)
        );
    }

    #[tokio::test]
    async fn only_a_post_carrying_an_idempotency_key_skips_waiting_for_its_nonce_on_disk() {
        for (keyed, durability) in [
            (false, NonceDurability::Immediate),
            (true, NonceDurability::WithNextCommit),
        ] {
            let mut store = MockCredentialStore::new();
            store
                .expect_find_credential()
                .returning(|_| Ok(Some(credential(SignaturePolicy::AnyVersion))));
            store
                .expect_record_nonce()
                .withf(move |_, _, _, _, d| *d == durability)
                .times(1)
                .returning(|_, _, _, _, _| Ok(NonceOutcome::Fresh));
            let sig = signed(SignatureVersion::V1, NOW_MS, "POST", b"{}");
            let mut post = request(&sig, "POST", b"{}", None);
            post.carries_idempotency_key = keyed;
            assert!(service(Arc::new(store)).authenticate(&post).await.is_ok());
        }
    }

    #[tokio::test]
    async fn verify_hands_back_a_posts_nonce_unrecorded_and_no_nonce_for_a_get() {
        // `store(.., None)`: recording a nonce would fail the test.
        let svc = service(store(SignaturePolicy::AnyVersion, None));
        let sig = signed(SignatureVersion::V1, NOW_MS - 5, "POST", b"{}");
        let mut post = request(&sig, "POST", b"{}", None);
        post.carries_idempotency_key = true;
        let verified = svc.verify(&post).await.ok();
        let expected = credential(SignaturePolicy::AnyVersion);
        assert_eq!(
            verified,
            Some(Verified {
                caller: Caller {
                    subaccount_id: expected.subaccount_id,
                    api_key_id: expected.id,
                },
                nonce: Some(NonceUse {
                    api_key: expected.id,
                    subaccount: expected.subaccount_id,
                    nonce: NOW_MS - 5,
                    seen_at: DateTime::<Utc>::from_timestamp_millis(NOW_MS).unwrap_or_default(),
                    durability: NonceDurability::WithNextCommit,
                }),
            })
        );
        let get = signed(SignatureVersion::V1, NOW_MS, "GET", b"");
        let verified = svc.verify(&request(&get, "GET", b"", None)).await.ok();
        assert_eq!(verified.map(|v| v.nonce), Some(None));
        let forged = format!("{NOW_MS}.{}", "0".repeat(64));
        let refused = svc.verify(&request(&forged, "POST", b"{}", None)).await;
        assert!(matches!(
            refused,
            Err(AuthError::Rejected(ErrorCode::Auth104))
        ));
    }

    #[tokio::test]
    async fn a_post_records_its_nonce_and_a_replay_is_refused() {
        let sig = signed(SignatureVersion::V1, NOW_MS, "POST", b"{}");
        let fresh = service(store(
            SignaturePolicy::AnyVersion,
            Some(NonceOutcome::Fresh),
        ));
        assert!(
            fresh
                .authenticate(&request(&sig, "POST", b"{}", None))
                .await
                .is_ok()
        );
        let replay = service(store(
            SignaturePolicy::AnyVersion,
            Some(NonceOutcome::Replayed),
        ));
        assert_eq!(
            code(
                replay
                    .authenticate(&request(&sig, "POST", b"{}", None))
                    .await
            ),
            Some(ErrorCode::Auth106)
        );
    }

    #[tokio::test]
    async fn missing_malformed_unknown_forged_and_stale_are_refused() {
        let svc = service(store(SignaturePolicy::AnyVersion, None));
        let good = signed(SignatureVersion::V1, NOW_MS, "GET", b"");
        let mut no_key = request(&good, "GET", b"", None);
        no_key.api_key = None;
        assert_eq!(
            code(svc.authenticate(&no_key).await),
            Some(ErrorCode::Auth101)
        );
        let empty = request("", "GET", b"", None);
        assert_eq!(
            code(svc.authenticate(&empty).await),
            Some(ErrorCode::Auth101)
        );
        let malformed = request("12345.abc", "GET", b"", None);
        assert_eq!(
            code(svc.authenticate(&malformed).await),
            Some(ErrorCode::Auth103)
        );
        let bad_version = request(&good, "GET", b"", Some("7"));
        assert_eq!(
            code(svc.authenticate(&bad_version).await),
            Some(ErrorCode::Auth103)
        );
        let mut unknown = request(&good, "GET", b"", None);
        unknown.api_key = Some("pk_unknown");
        assert_eq!(
            code(svc.authenticate(&unknown).await),
            Some(ErrorCode::Auth102)
        );
        let forged = format!("{NOW_MS}.{}", "0".repeat(64));
        assert_eq!(
            code(svc.authenticate(&request(&forged, "GET", b"", None)).await),
            Some(ErrorCode::Auth104)
        );
        let stale = signed(SignatureVersion::V1, NOW_MS - 301_000, "GET", b"");
        assert_eq!(
            code(svc.authenticate(&request(&stale, "GET", b"", None)).await),
            Some(ErrorCode::Auth105)
        );
        let future = signed(SignatureVersion::V1, NOW_MS + 301_000, "GET", b"");
        assert_eq!(
            code(svc.authenticate(&request(&future, "GET", b"", None)).await),
            Some(ErrorCode::Auth105)
        );
        let edge = signed(SignatureVersion::V1, NOW_MS - 300_000, "GET", b"");
        assert!(
            svc.authenticate(&request(&edge, "GET", b"", None))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_captured_v1_get_signature_cannot_sign_a_post_of_a_new_subaccount() {
        // A v1 signature covers only nonce and key: the one a GET carried is valid on a POST.
        let captured = signed(SignatureVersion::V1, NOW_MS, "GET", b"");
        // Refused before its nonce is recorded: the store's record_nonce is never reached.
        let svc = service(store(SignaturePolicy::V2ForPosts, None));
        assert!(
            svc.authenticate(&request(&captured, "GET", b"", None))
                .await
                .is_ok()
        );
        assert_eq!(
            code(
                svc.authenticate(&request(&captured, "POST", b"{\"amount\":1}", None))
                    .await
            ),
            Some(ErrorCode::Auth107)
        );
        // The policy an operator chose for a v1-only client still takes it (once).
        let legacy = service(store(
            SignaturePolicy::AnyVersion,
            Some(NonceOutcome::Fresh),
        ));
        assert!(
            legacy
                .authenticate(&request(&captured, "POST", b"{}", None))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn v2_covers_method_path_and_body() {
        let svc = service(store(SignaturePolicy::V2Only, Some(NonceOutcome::Fresh)));
        let v1 = signed(SignatureVersion::V1, NOW_MS, "POST", b"{}");
        assert_eq!(
            code(svc.authenticate(&request(&v1, "POST", b"{}", None)).await),
            Some(ErrorCode::Auth107)
        );
        let v2 = signed(SignatureVersion::V2, NOW_MS, "POST", b"{}");
        let tampered = request(&v2, "POST", b"{\"x\":1}", Some("2"));
        assert_eq!(
            code(svc.authenticate(&tampered).await),
            Some(ErrorCode::Auth104)
        );
        assert!(
            svc.authenticate(&request(&v2, "POST", b"{}", Some("2")))
                .await
                .is_ok()
        );
    }
}
