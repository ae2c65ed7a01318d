//! The ports every use case may need: time, randomness and the KYC provider. The stores live
//! beside the entities they keep (`receiver::ports`, `account::ports`, `payout::ports`,
//! `subaccount::ports`, `auth::ports`, `ledger`, `delivery::ports`, `delivery::history`,
//! `batch::ports`, `rail::transport`). Each trait's doc comment is its contract; adapters' tests
//! check exactly those lines.
//!
//! Stores are shaped by use case, not by table: a call that changes state is one database
//! transaction in the adapter, including the outbox events passed with it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::PortError;
use crate::ids::{ReceiverId, SubaccountId};

/// The current time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// Identifiers and unpredictable tokens.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait IdGenerator: Send + Sync {
    /// A new random (v4) UUID.
    fn new_id(&self) -> Uuid;
    /// 32 bytes from a cryptographically secure source, for keys, secrets and tokens.
    fn random_bytes(&self) -> [u8; 32];
}

/// What the KYC provider needs to open an identity check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KycCheckRequest {
    /// The receiver being checked.
    pub receiver_id: ReceiverId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// Full name as registered.
    pub full_name: String,
    /// E-mail the provider contacts.
    pub email: String,
}

/// The identity-verification provider.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait KycProvider: Send + Sync {
    /// Opens an identity check and returns the provider's applicant id. The outcome arrives
    /// later, asynchronously.
    ///
    /// # Errors
    /// `PortError::Unavailable` when the provider cannot be reached; nothing was opened.
    async fn start_check(&self, request: &KycCheckRequest) -> Result<String, PortError>;
}
