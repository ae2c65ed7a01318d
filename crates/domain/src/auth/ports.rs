//! Where API credentials and request nonces are kept.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Credential, NonceDurability, NonceOutcome};
use crate::error::{OperatorError, PortError};
use crate::ids::{ApiKeyId, SubaccountId};
use crate::masking::Secret;

/// API credentials and request nonces.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// The active (not revoked) credential with this API key, its secret decrypted, or
    /// `Ok(None)`.
    async fn find_credential(&self, api_key: &str) -> Result<Option<Credential>, PortError>;

    /// Records that `nonce` was used with this credential. `Replayed` when it was recorded
    /// before, by this or any other server instance sharing the database. `durability` says
    /// whether the record must be on disk before this returns (see [`NonceDurability`]); it is
    /// visible to other instances at once either way.
    async fn record_nonce(
        &self,
        api_key: ApiKeyId,
        subaccount: SubaccountId,
        nonce: i64,
        seen_at: DateTime<Utc>,
        durability: NonceDurability,
    ) -> Result<NonceOutcome, PortError>;
}

/// Issuing and revoking API credentials (admin CLI).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    /// Stores a new API credential, the secret encrypted at rest, with `audit`.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist.
    async fn insert_credential(
        &self,
        id: ApiKeyId,
        subaccount: SubaccountId,
        api_key: &str,
        secret: &Secret<String>,
        created_at: DateTime<Utc>,
        audit: &crate::audit::AuditEntry,
    ) -> Result<(), OperatorError>;

    /// Revokes an active API key at once, with `audit`.
    ///
    /// # Errors
    /// `KeyNotFound` when no active key has this value; nothing was written.
    async fn revoke_credential(
        &self,
        api_key: &str,
        at: DateTime<Utc>,
        audit: &crate::audit::AuditEntry,
    ) -> Result<(), OperatorError>;
}
