//! Request authentication (docs/API.md, Authentication): API keys, HMAC request signatures v1 and
//! v2, the freshness window and single-use POST nonces.

pub mod cache;
pub mod policy;
pub mod ports;
pub mod service;
pub mod signature;

use chrono::{DateTime, Utc};

use crate::ids::{ApiKeyId, SubaccountId};
use crate::masking::Secret;

pub use cache::{CachedCredentials, CredentialChanges};
pub use policy::SignaturePolicy;
pub use service::{AuthError, AuthService, SignedRequest, Verified};
pub use signature::{SignatureHeader, SignatureVersion};

/// An active API credential as the store returns it: the secret already decrypted.
#[derive(Debug, Clone)]
pub struct Credential {
    /// The credential's id.
    pub id: ApiKeyId,
    /// The subaccount the key belongs to (exactly one).
    pub subaccount_id: SubaccountId,
    /// The API secret, the HMAC key.
    pub secret: Secret<String>,
    /// Which signature versions the subaccount's requests may use.
    pub signature_policy: SignaturePolicy,
}

/// Who is calling: established by authentication, carried by every use case for tenancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// The caller's subaccount; every resource it touches must belong to it.
    pub subaccount_id: SubaccountId,
    /// The credential used.
    pub api_key_id: ApiKeyId,
}

impl Caller {
    /// Whether `raw` names the caller's own subaccount (docs/API.md, Tenancy).
    pub fn owns(&self, raw: &str) -> bool {
        SubaccountId::parse(raw) == Some(self.subaccount_id)
    }
}

/// When a POST nonce's record must be on disk.
///
/// A nonce recorded [`Immediate`](Self::Immediate)ly waits for the database to flush its
/// record, as any commit does. A request that carries an idempotency key need not wait: its
/// key, not its nonce, is what keeps it from running twice, and every answer such a request
/// gets after running (its write, its stored refusal, its released key) commits durably after
/// the nonce. The database's log is written and flushed in order, so that commit puts the
/// nonce on disk too, and a crash can lose the nonce only together with everything the
/// request did. Skipping the wait saves one flush (milliseconds on most disks) per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceDurability {
    /// On disk before the request goes on.
    Immediate,
    /// On disk with the request's next durable commit.
    WithNextCommit,
}

/// Whether a POST nonce was seen before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceOutcome {
    /// First use: accepted and recorded.
    Fresh,
    /// Already used with this key.
    Replayed,
}

/// A verified POST's nonce, to be recorded as used before the request goes on: a nonce is
/// single-use per API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonceUse {
    /// The credential that signed the request.
    pub api_key: ApiKeyId,
    /// Its subaccount.
    pub subaccount: SubaccountId,
    /// The nonce, milliseconds since the epoch as the client sent it.
    pub nonce: i64,
    /// When the server saw it.
    pub seen_at: DateTime<Utc>,
    /// When its record must be on disk.
    pub durability: NonceDurability,
}
