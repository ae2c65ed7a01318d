//! Idempotency keys (docs/API.md, Idempotency keys). A POST carrying `idempotency-key` claims the
//! key for its subaccount before it runs. The first request's response is stored for 24 hours with
//! a fingerprint of the request; a retry with the same key and request gets that response again,
//! byte for byte; the same key with another request is refused (`IDEM002`), and so is a retry while
//! the first is still running (`IDEM001`).
//!
//! A claim is held under a lease. The request hands its claim ([`KeyClaim`]), inside a
//! [`WriteKey`], to the use case it runs, and the use case hands it to the store port that
//! writes: the store marks the key `committed` in the write's own transaction and, where the
//! response can be rendered from what is written, stores the response there too. So a claim
//! whose holder died can be taken over only when nothing was written (a retry then runs the
//! request afresh, never twice), and a write whose response was stored with it is replayed
//! even if its holder died right after committing.
//!
//! A new payout's request is cheaper still where its store allows ([`KeyMode::AdmittedByWrite`]): it claims
//! nothing before it runs, and its write records its nonce and inserts its key, completed with
//! the response, in the payout's own transaction; a write that cannot do all of that at once
//! writes nothing, and the request is then claimed as above and run again.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::auth::NonceUse;
use crate::error::PortError;
use crate::ids::SubaccountId;

/// How long a completed key answers retries.
pub const RETENTION: Duration = Duration::hours(24);

/// How long a request may run holding its claim before a retry may take an uncommitted claim
/// over. Longer than any request can take (the statement timeout bounds each query).
pub const LEASE: Duration = Duration::seconds(60);

/// The header.
pub const HEADER: &str = "idempotency-key";

/// The header answering a replay.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// A valid key: 1 to 255 visible ASCII characters (`!` to `~`: no space, as docs/API.md
/// describes keys and as `x-request-id` is read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses a header value.
    pub fn parse(raw: &str) -> Option<Self> {
        let valid = (1..=255).contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_graphic());
        valid.then(|| Self(raw.to_owned()))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What identifies "the same request": method, path with query, and body.
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [method.as_bytes(), path_and_query.as_bytes(), body] {
        hash.update(u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
        hash.update(part);
    }
    hash.finalize().into()
}

/// A key the running request holds: whose, which, and the lease that identifies this claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// The subaccount the key belongs to.
    pub subaccount: SubaccountId,
    /// The key.
    pub key: IdempotencyKey,
    /// The claim's lease; a write or completion applies only while the stored key still has
    /// exactly this lease (so a request that outlived it cannot write over a retry).
    pub lease_until: DateTime<Utc>,
}

/// A response as a replay answers it: status and body, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

/// Renders the response a write's result gets (the HTTP layer's success body), or `None` when
/// it cannot be rendered.
pub type RenderResponse<T> = Arc<dyn Fn(&T) -> Option<StoredResponse> + Send + Sync>;

/// A keyed, signed request admitted by its own write instead of before it: its nonce is
/// recorded and its key inserted, completed with the response, in the write's transaction, so
/// the request costs one transaction instead of two (a claim, then the write). Nothing marks
/// the request as running until that transaction commits: a store that cannot write all of it
/// at once (the nonce used before, the key present, or anything that would refuse the request)
/// writes none of it and answers that the request was not admitted; the request is then
/// admitted first, as any other is (its nonce recorded and its key claimed, with the answers
/// that gives: `AUTH106`, a replay, `IDEM001`, `IDEM002`), and run again under its claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The request's nonce, recorded by the write.
    pub nonce: NonceUse,
    /// The key, inserted by the write.
    pub key: IdempotencyKey,
    /// The request's [`fingerprint`].
    pub fingerprint: [u8; 32],
    /// When the key is recorded; it answers retries until `at + RETENTION`.
    pub at: DateTime<Utc>,
}

impl Admission {
    /// The subaccount the nonce and key belong to.
    pub fn subaccount(&self) -> SubaccountId {
        self.nonce.subaccount
    }

    /// Until when the key answers retries.
    pub fn expires_at(&self) -> DateTime<Utc> {
        self.at + RETENTION
    }
}

/// How a write settles its request's idempotency key: one of three modes, decided once, where
/// the request is taken (before its use case runs), and handed unchanged through the use case
/// to the store port that writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyMode {
    /// No key guards the write: an unkeyed request, a background job, a provider callback.
    Unkeyed,
    /// Claimed first: the request's nonce was recorded and its key claimed before it ran; the
    /// write marks the claim committed in its own transaction ([`WriteKey::commit`]).
    Claimed(KeyClaim),
    /// Admitted by the write itself ([`Admission`]): nothing is recorded before it runs; the
    /// write records the nonce and inserts the key, completed with the response
    /// ([`WriteKey::admit`]), or writes nothing and answers that the request was not admitted.
    AdmittedByWrite(Admission),
}

impl KeyMode {
    /// [`KeyMode::Claimed`] when the request carries a key (its `claim`), else
    /// [`KeyMode::Unkeyed`].
    pub fn claimed(claim: Option<KeyClaim>) -> Self {
        claim.map_or(Self::Unkeyed, Self::Claimed)
    }

    /// The claim, when the key was claimed first.
    pub fn claim(&self) -> Option<&KeyClaim> {
        match self {
            Self::Claimed(claim) => Some(claim),
            Self::Unkeyed | Self::AdmittedByWrite(_) => None,
        }
    }

    /// The admission, when the write admits its request.
    pub fn admission(&self) -> Option<&Admission> {
        match self {
            Self::AdmittedByWrite(admission) => Some(admission),
            Self::Unkeyed | Self::Claimed(_) => None,
        }
    }
}

/// The idempotency part of a write's unit of work, handed explicitly from the request through
/// the use case to the store port that writes: the request's [`KeyMode`], and how its success
/// response is rendered from the written `T` (none for a write whose response is known only
/// after it). The store applies a claim with [`WriteKey::commit`] inside the write's
/// transaction, and an admission with [`WriteKey::admit`].
pub struct WriteKey<T> {
    mode: KeyMode,
    render: Option<RenderResponse<T>>,
}

impl<T> WriteKey<T> {
    /// A write no idempotency key guards (a background job, a provider callback, a test).
    pub fn none() -> Self {
        Self {
            mode: KeyMode::Unkeyed,
            render: None,
        }
    }

    /// A write whose key is settled as `mode` says, whose success response is rendered by
    /// `render` (and stored with the key by the write).
    pub fn new(mode: KeyMode, render: RenderResponse<T>) -> Self {
        Self {
            mode,
            render: Some(render),
        }
    }

    /// A write guarded by `claim` whose response can only be known after it: the key is marked
    /// committed with the write, and its response is stored afterwards.
    pub fn committing(claim: Option<KeyClaim>) -> Self {
        Self {
            mode: KeyMode::claimed(claim),
            render: None,
        }
    }

    /// How the key is settled.
    pub fn mode(&self) -> &KeyMode {
        &self.mode
    }

    /// The claim, if the request carries a key and was admitted before its write.
    pub fn claim(&self) -> Option<&KeyClaim> {
        self.mode.claim()
    }

    /// The admission, if the write admits its request.
    pub fn admission(&self) -> Option<&Admission> {
        self.mode.admission()
    }

    /// Whether the request's key is settled by its write: claimed before it (and marked by
    /// it), or admitted by it.
    pub fn is_keyed(&self) -> bool {
        !matches!(self.mode, KeyMode::Unkeyed)
    }

    /// What the store writes to admit the request with `written` (see [`Admission`]): `None`
    /// without an admission, or when the response does not render (the write then cannot
    /// admit its request, and answers that it was not admitted).
    pub fn admit(&self, written: &T) -> Option<KeyAdmission<'_>> {
        let admission = self.admission()?;
        Some(KeyAdmission {
            admission,
            response: self.render(written)?,
        })
    }

    /// The success response of `written`, if this write has a renderer and it renders.
    pub fn render(&self, written: &T) -> Option<StoredResponse> {
        self.render.as_ref().and_then(|render| render(written))
    }

    /// What the store does with the key in the transaction that writes `written`: `None`
    /// without a claim; else mark the claim committed and, when the response renders, store
    /// it (completing the key).
    pub fn commit(&self, written: &T) -> Option<KeyCommit<'_>> {
        let claim = self.claim()?;
        Some(KeyCommit {
            claim,
            response: self.render(written),
        })
    }
}

// By hand: a derive would ask `T: Clone`, and only the mode and the shared renderer are copied.
impl<T> Clone for WriteKey<T> {
    fn clone(&self) -> Self {
        Self {
            mode: self.mode.clone(),
            render: self.render.clone(),
        }
    }
}

impl<T> fmt::Debug for WriteKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteKey")
            .field("mode", &self.mode)
            .field("renders", &self.render.is_some())
            .finish()
    }
}

/// What a store does with the request's key inside the write's transaction: mark `claim`
/// committed where its lease still holds (else roll the write back), and store `response`
/// with it when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCommit<'a> {
    /// The claim.
    pub claim: &'a KeyClaim,
    /// The response to store with the write (the key is then complete).
    pub response: Option<StoredResponse>,
}

/// What a store writes, inside the write's transaction, to admit its request: the nonce and
/// the key of `admission`, the key completed with `response`. All of it or, when the nonce or
/// the key is there already, nothing (the whole write rolls back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAdmission<'a> {
    /// The admission.
    pub admission: &'a Admission,
    /// The response stored with the key.
    pub response: StoredResponse,
}

/// A stored key as the store found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The fingerprint of the request that claimed it.
    pub fingerprint: Vec<u8>,
    /// Its response, once complete: status and body.
    pub response: Option<(u16, Vec<u8>)>,
    /// Whether the claiming request's write committed.
    pub committed: bool,
    /// Until when the claiming request holds it.
    pub locked_until: Option<DateTime<Utc>>,
    /// When it stops answering retries.
    pub expires_at: DateTime<Utc>,
}

/// What a request gets when it presents a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The request may run; it holds the key until `lease_until`.
    Claimed {
        /// The lease; also identifies this claim when completing or releasing it.
        lease_until: DateTime<Utc>,
    },
    /// Answer with the first request's response.
    Replay {
        /// Its HTTP status.
        status: u16,
        /// Its body, byte for byte.
        body: Vec<u8>,
    },
    /// The key was used with another request (`IDEM002`).
    Mismatch,
    /// The first request is still running (`IDEM001`).
    InFlight,
    /// The first request's write committed but its holder died before storing the response
    /// (`IDEM003`): it must not run again, and there is nothing to replay.
    ResponseLost,
}

/// What to do about an existing key, for a request with `fingerprint` at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Take it over as a new claim: it expired, or its holder died before writing.
    TakeOver,
    /// Answer with this.
    Answer(ClaimOutcome),
}

/// The rule for an existing key.
pub fn decide(stored: &StoredKey, fingerprint: &[u8; 32], now: DateTime<Utc>) -> Decision {
    if stored.expires_at <= now {
        return Decision::TakeOver;
    }
    if stored.fingerprint != fingerprint {
        return Decision::Answer(ClaimOutcome::Mismatch);
    }
    match (&stored.response, stored.committed, stored.locked_until) {
        (Some((status, body)), _, _) => Decision::Answer(ClaimOutcome::Replay {
            status: *status,
            body: body.clone(),
        }),
        // Its holder died before writing anything: running the request again is safe.
        (None, false, Some(lease)) if lease <= now => Decision::TakeOver,
        // It wrote, then died before storing the response: never run again, and say so
        // rather than "still running".
        (None, true, Some(lease)) if lease <= now => Decision::Answer(ClaimOutcome::ResponseLost),
        _ => Decision::Answer(ClaimOutcome::InFlight),
    }
}

/// Where keys are kept.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims `key` of `subaccount` for a request with `fingerprint` at `now`: a new key (or
    /// one [`decide`] lets it take over) becomes this request's, leased until `now + LEASE`
    /// and kept until `now + RETENTION`; otherwise the decision's answer. The request hands
    /// the claim to its write as a [`KeyClaim`] in a [`WriteKey`].
    async fn claim(
        &self,
        subaccount: SubaccountId,
        key: &IdempotencyKey,
        fingerprint: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, PortError>;

    /// Records a POST's `nonce` as used (as `CredentialStore::record_nonce` does, with its
    /// durability) and, only when it was not used before, claims `key` of the nonce's
    /// subaccount as [`claim`](Self::claim) does: in one statement and one commit where the
    /// store can, since every keyed POST needs both. `Ok(None)` when the nonce was used before:
    /// the request is a replay, and its key is left untouched.
    async fn claim_with_nonce(
        &self,
        nonce: &NonceUse,
        key: &IdempotencyKey,
        fingerprint: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<Option<ClaimOutcome>, PortError>;

    /// Stores `response` for `claim` where the claim is still this request's (same lease, not
    /// yet complete). `Ok(false)` when it is not.
    async fn complete(
        &self,
        claim: &KeyClaim,
        response: &StoredResponse,
    ) -> Result<bool, PortError>;

    /// Gives `claim` up when its request failed without writing (a 5xx), so a retry runs
    /// afresh. A claim whose write committed is kept (and stays in flight until its lease ends).
    async fn release(&self, claim: &KeyClaim) -> Result<(), PortError>;

    /// Deletes keys that stopped answering retries before `now`; returns how many.
    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, PortError>;
}

/// Claims and settles keys for the requests that carry them.
pub struct IdempotencyService {
    store: std::sync::Arc<dyn IdempotencyStore>,
    clock: std::sync::Arc<dyn crate::ports::Clock>,
}

impl IdempotencyService {
    /// Wires the service to its ports.
    pub fn new(
        store: std::sync::Arc<dyn IdempotencyStore>,
        clock: std::sync::Arc<dyn crate::ports::Clock>,
    ) -> Self {
        Self { store, clock }
    }

    /// Claims `key` for the caller's request (`method`, `path_and_query`, `body`).
    pub async fn claim(
        &self,
        subaccount: SubaccountId,
        key: &IdempotencyKey,
        method: &str,
        path_and_query: &str,
        body: &[u8],
    ) -> Result<ClaimOutcome, PortError> {
        let fingerprint = fingerprint(method, path_and_query, body);
        self.store
            .claim(subaccount, key, fingerprint, self.clock.now())
            .await
    }

    /// Records the caller's POST `nonce` and, when it is fresh, claims `key` for the request
    /// (`method`, `path_and_query`, `body`), in one step: `Ok(None)` when the nonce was used
    /// before (a replay, `AUTH106`; the key is untouched).
    pub async fn claim_with_nonce(
        &self,
        nonce: &NonceUse,
        key: &IdempotencyKey,
        method: &str,
        path_and_query: &str,
        body: &[u8],
    ) -> Result<Option<ClaimOutcome>, PortError> {
        let fingerprint = fingerprint(method, path_and_query, body);
        self.store
            .claim_with_nonce(nonce, key, fingerprint, self.clock.now())
            .await
    }

    /// The [`Admission`] of the caller's POST (`method`, `path_and_query`, `body`, signed with
    /// `nonce`, carrying `key`), for a write that admits its request itself.
    pub fn admission(
        &self,
        nonce: &NonceUse,
        key: &IdempotencyKey,
        method: &str,
        path_and_query: &str,
        body: &[u8],
    ) -> Admission {
        Admission {
            nonce: *nonce,
            key: key.clone(),
            fingerprint: fingerprint(method, path_and_query, body),
            at: self.clock.now(),
        }
    }

    /// Gives a new claim up without storing an answer, so a retry with the key runs afresh (a
    /// request refused before it ran, for its rate).
    pub async fn release(&self, claim: &KeyClaim) -> Result<(), PortError> {
        self.store.release(claim).await
    }

    /// Settles a claimed key once its request answered, unless its write already stored the
    /// response: a server error (`status` 5xx) gives the key up for a retry to run afresh;
    /// anything else is stored for replays.
    pub async fn finish(
        &self,
        claim: &KeyClaim,
        response: &StoredResponse,
    ) -> Result<(), PortError> {
        if response.status >= 500 {
            self.store.release(claim).await
        } else {
            self.store.complete(claim, response).await.map(|_| ())
        }
    }

    /// Deletes expired keys.
    pub async fn purge_expired(&self) -> Result<u64, PortError> {
        self.store.purge_expired(self.clock.now()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap_or_default()
    }

    fn stored(response: Option<(u16, Vec<u8>)>, committed: bool, lease: i64) -> StoredKey {
        StoredKey {
            fingerprint: fingerprint("POST", "/api/x", b"{}").to_vec(),
            response,
            committed,
            locked_until: Some(at(lease)),
            expires_at: at(86_400),
        }
    }

    #[test]
    fn an_admitting_key_admits_with_its_rendered_answer_and_claims_nothing() {
        let nonce = NonceUse {
            api_key: crate::ids::ApiKeyId::from_uuid(uuid::Uuid::from_u128(1)),
            subaccount: SubaccountId::from_uuid(uuid::Uuid::from_u128(2)),
            nonce: 1_700_000_000_000,
            seen_at: at(0),
            durability: crate::auth::NonceDurability::Immediate,
        };
        let admission = Admission {
            nonce,
            key: IdempotencyKey::parse("k").unwrap_or_else(|| unreachable!()),
            fingerprint: fingerprint("POST", "/api/x", b"{}"),
            at: at(10),
        };
        let render = |n: &u16| {
            (*n > 0).then(|| StoredResponse {
                status: *n,
                body: b"ok".to_vec(),
            })
        };
        let key = WriteKey::new(
            KeyMode::AdmittedByWrite(admission.clone()),
            Arc::new(render),
        );
        assert!(key.is_keyed());
        assert_eq!(key.claim(), None);
        assert_eq!(key.commit(&200), None, "nothing to mark: no claim");
        let admitted = key.admit(&200);
        assert_eq!(
            admitted,
            Some(KeyAdmission {
                admission: &admission,
                response: StoredResponse {
                    status: 200,
                    body: b"ok".to_vec()
                }
            })
        );
        assert_eq!(admission.subaccount(), nonce.subaccount);
        assert_eq!(admission.expires_at(), at(10) + RETENTION);
        // An answer that does not render cannot be stored with the key: nothing to admit with.
        assert_eq!(key.admit(&0), None);
        // An unkeyed write, and a key claimed before its write, admit nothing.
        let unkeyed: WriteKey<u16> = WriteKey::new(KeyMode::Unkeyed, Arc::new(render));
        assert!(!unkeyed.is_keyed());
        assert_eq!(unkeyed.admit(&200), None);
        let claimed: WriteKey<u16> = WriteKey::new(KeyMode::Claimed(claim()), Arc::new(render));
        assert!(claimed.is_keyed());
        assert_eq!(claimed.admit(&200), None);
        assert_eq!(claimed.admission(), None);
    }

    #[test]
    fn a_mode_is_claimed_only_with_a_claim_and_admitted_only_with_an_admission() {
        assert_eq!(KeyMode::claimed(None), KeyMode::Unkeyed);
        let mode = KeyMode::claimed(Some(claim()));
        assert_eq!(mode, KeyMode::Claimed(claim()));
        assert_eq!(mode.claim(), Some(&claim()));
        assert_eq!(mode.admission(), None);
        assert_eq!(KeyMode::Unkeyed.claim(), None);
        assert_eq!(KeyMode::Unkeyed.admission(), None);
    }

    #[test]
    fn keys_are_1_to_255_visible_characters() {
        assert!(IdempotencyKey::parse("a").is_some());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_some());
        assert!(IdempotencyKey::parse("order-42/retry_1:{x}~!").is_some());
        for bad in [
            String::new(),
            "k".repeat(256),
            "tab\there".to_owned(),
            " padded".to_owned(),
            "order 42".to_owned(),
            "naïve".to_owned(),
        ] {
            assert!(IdempotencyKey::parse(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_separates_its_parts() {
        let a = fingerprint("POST", "/api/a", b"{}");
        assert_eq!(a, fingerprint("POST", "/api/a", b"{}"));
        assert_ne!(a, fingerprint("POST", "/api/a", b"{ }"));
        assert_ne!(a, fingerprint("POST", "/api/b", b"{}"));
        // Moving bytes between parts changes it.
        assert_ne!(
            fingerprint("POST", "/api/ab", b"c"),
            fingerprint("POST", "/api/a", b"bc")
        );
    }

    #[test]
    fn the_rule_for_an_existing_key() {
        let same = fingerprint("POST", "/api/x", b"{}");
        let other = fingerprint("POST", "/api/x", b"{\"a\":1}");
        let done = stored(Some((200, b"{\"ok\":1}".to_vec())), true, 60);
        assert_eq!(
            decide(&done, &same, at(10)),
            Decision::Answer(ClaimOutcome::Replay {
                status: 200,
                body: b"{\"ok\":1}".to_vec()
            })
        );
        assert_eq!(
            decide(&done, &other, at(10)),
            Decision::Answer(ClaimOutcome::Mismatch)
        );
        // Running, within its lease.
        let running = stored(None, false, 60);
        assert_eq!(
            decide(&running, &same, at(10)),
            Decision::Answer(ClaimOutcome::InFlight)
        );
        // Its holder died before writing: taken over once the lease ends.
        assert_eq!(decide(&running, &same, at(60)), Decision::TakeOver);
        // It wrote and is still within its lease: running.
        let wrote = stored(None, true, 60);
        assert_eq!(
            decide(&wrote, &same, at(10)),
            Decision::Answer(ClaimOutcome::InFlight)
        );
        // It wrote, then died before storing the response: never run again, said so.
        assert_eq!(
            decide(&wrote, &same, at(600)),
            Decision::Answer(ClaimOutcome::ResponseLost)
        );
        // Expired keys are new keys, whatever the request.
        assert_eq!(decide(&done, &other, at(86_400)), Decision::TakeOver);
    }

    fn claim() -> KeyClaim {
        KeyClaim {
            subaccount: SubaccountId::from_uuid(uuid::Uuid::from_u128(7)),
            key: IdempotencyKey::parse("k-7").unwrap_or_else(|| unreachable!()),
            lease_until: at(60),
        }
    }

    #[test]
    fn a_write_key_commits_only_a_claim_and_stores_what_renders() {
        let render: RenderResponse<u16> = Arc::new(|n: &u16| {
            (*n != 0).then(|| StoredResponse {
                status: 200,
                body: n.to_string().into_bytes(),
            })
        });
        // No key: nothing to do in the transaction, but the response still renders.
        let unkeyed = WriteKey::new(KeyMode::Unkeyed, Arc::clone(&render));
        assert_eq!(unkeyed.commit(&5), None);
        assert_eq!(unkeyed.render(&5).map(|r| r.body), Some(b"5".to_vec()));
        // A key: committed with the write, and completed with the rendered response.
        let keyed = WriteKey::new(KeyMode::Claimed(claim()), render);
        let commit = keyed.commit(&5).unwrap_or_else(|| unreachable!());
        assert_eq!(commit.claim, &claim());
        assert_eq!(
            commit.response,
            Some(StoredResponse {
                status: 200,
                body: b"5".to_vec()
            })
        );
        // A result that does not render still commits the key (its response comes later).
        assert_eq!(keyed.commit(&0).map(|c| c.response), Some(None));
        // A write whose response comes later only commits.
        let later = WriteKey::<u16>::committing(Some(claim()));
        assert_eq!(later.commit(&5).map(|c| c.response), Some(None));
        assert_eq!(WriteKey::<u16>::none().commit(&5), None);
        assert!(format!("{keyed:?}").contains("renders: true"));
    }

    #[tokio::test]
    async fn a_server_error_releases_the_key_and_anything_else_is_stored() {
        let claim = KeyClaim {
            subaccount: SubaccountId::from_uuid(uuid::Uuid::from_u128(1)),
            key: IdempotencyKey::parse("k-1").unwrap_or_else(|| unreachable!()),
            lease_until: at(60),
        };
        let mut store = MockIdempotencyStore::new();
        store.expect_release().times(1).returning(|_| Ok(()));
        store
            .expect_complete()
            .withf(|_, response| response.status == 400 && response.body == b"{}")
            .times(1)
            .returning(|_, _| Ok(true));
        let mut clock = crate::ports::MockClock::new();
        clock.expect_now().returning(|| at(0));
        let service =
            IdempotencyService::new(std::sync::Arc::new(store), std::sync::Arc::new(clock));
        let answered = |status, body: &[u8]| StoredResponse {
            status,
            body: body.to_vec(),
        };
        assert!(service.finish(&claim, &answered(503, b"x")).await.is_ok());
        assert!(service.finish(&claim, &answered(400, b"{}")).await.is_ok());
    }

    #[tokio::test]
    async fn a_nonce_and_key_are_claimed_with_the_requests_fingerprint_at_the_clocks_time() {
        let nonce = NonceUse {
            api_key: crate::ids::ApiKeyId::from_uuid(uuid::Uuid::from_u128(3)),
            subaccount: SubaccountId::from_uuid(uuid::Uuid::from_u128(1)),
            nonce: 1_700_000_000_000,
            seen_at: at(0),
            durability: crate::auth::NonceDurability::WithNextCommit,
        };
        let expected = fingerprint("POST", "/api/payout/single", b"{}");
        let mut store = MockIdempotencyStore::new();
        store
            .expect_claim_with_nonce()
            .withf(move |n, k, f, now| {
                *n == nonce && k.as_str() == "k-1" && *f == expected && *now == at(5)
            })
            .times(1)
            .returning(|_, _, _, now| {
                Ok(Some(ClaimOutcome::Claimed {
                    lease_until: now + LEASE,
                }))
            });
        store
            .expect_claim_with_nonce()
            .returning(|_, _, _, _| Ok(None));
        let mut clock = crate::ports::MockClock::new();
        clock.expect_now().returning(|| at(5));
        let service =
            IdempotencyService::new(std::sync::Arc::new(store), std::sync::Arc::new(clock));
        let key = IdempotencyKey::parse("k-1").unwrap_or_else(|| unreachable!());
        let claimed = service
            .claim_with_nonce(&nonce, &key, "POST", "/api/payout/single", b"{}")
            .await;
        assert_eq!(
            claimed.ok().flatten(),
            Some(ClaimOutcome::Claimed {
                lease_until: at(5) + LEASE
            })
        );
        // Another body is another fingerprint (the store's answer here: a replayed nonce).
        let replayed = service
            .claim_with_nonce(&nonce, &key, "POST", "/api/payout/single", b"{ }")
            .await;
        assert_eq!(replayed.ok(), Some(None));
    }
}
