//! Where subaccounts, their balances and their settings are kept.

use async_trait::async_trait;

use super::{Balance, FeeTemplate, Subaccount};
use crate::audit::AuditEntry;
use crate::auth::SignaturePolicy;
use crate::error::{OperatorError, PortError};
use crate::ids::SubaccountId;
use crate::money::Asset;

/// Subaccounts and their balances.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SubaccountStore: Send + Sync {
    /// The subaccount with this id, or `Ok(None)`.
    async fn find_subaccount(&self, id: SubaccountId) -> Result<Option<Subaccount>, PortError>;

    /// The balance of `subaccount` in `asset`; zero when it never had activity in that asset.
    async fn balance(&self, subaccount: SubaccountId, asset: Asset) -> Result<Balance, PortError>;
}

/// A subaccount as an operator creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubaccount {
    /// The full record; fields the operator did not set are empty.
    pub subaccount: Subaccount,
}

/// Setting subaccounts up (admin CLI and console): creation, fee templates and the signature
/// policy. Each change is written with its audit entry in one transaction.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SubaccountSetupStore: Send + Sync {
    /// Stores a new subaccount and `audit`.
    async fn create_subaccount(
        &self,
        new: &NewSubaccount,
        audit: &AuditEntry,
    ) -> Result<(), PortError>;

    /// Creates or replaces the subaccount's fee template for the template's asset, with
    /// `audit`, whose `before` the store sets to the template replaced (`asset`, `fixed`,
    /// `percentage`, `min_amount`; none for the asset's first), read in the same transaction.
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist; nothing was written.
    async fn upsert_fee_template(
        &self,
        subaccount: SubaccountId,
        template: &FeeTemplate,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError>;

    /// Sets which signature versions the subaccount's requests may use; every instance applies
    /// it from the subaccount's next request. `audit` is written when the policy changed,
    /// with `before` set by the store to the policy replaced (`signature_policy`).
    ///
    /// # Errors
    /// `SubaccountNotFound` when the subaccount does not exist.
    async fn set_signature_policy(
        &self,
        subaccount: SubaccountId,
        policy: SignaturePolicy,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError>;
}
