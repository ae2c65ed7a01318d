//! Subaccounts (the tenants), their balances and fee templates.

pub mod directory;
pub mod ports;
pub mod service;

use chrono::{DateTime, NaiveDate, Utc};

use crate::auth::SignaturePolicy;
use crate::ids::{FeeGroupId, FeeTemplateId, MerchantId, SubaccountId};
use crate::money::{Asset, Percentage};

/// A merchant's subaccount: the tenant every receiver, account and payout belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subaccount {
    /// Identifier.
    pub id: SubaccountId,
    /// The owning merchant.
    pub merchant_id: MerchantId,
    /// Display name (`suba_name`).
    pub name: String,
    /// Title of the contact person.
    pub title: String,
    /// Contact first name.
    pub first_name: String,
    /// Contact last name.
    pub last_name: String,
    /// Contact e-mail.
    pub email: String,
    /// Contact date of birth.
    pub dob: Option<NaiveDate>,
    /// Status at the upstream provider (`kassi_status` on the wire), e.g. `ACCEPTED`.
    pub provider_status: String,
    /// Registered business name.
    pub business_name: String,
    /// `B` for a business, `I` for an individual.
    pub business_or_individual: String,
    /// Support e-mail.
    pub support_email: String,
    /// Mobile dial code, with a leading plus.
    pub mobile_dialcode: String,
    /// Mobile number.
    pub mobile: String,
    /// Home phone dial code, with a leading plus.
    pub home_phone_dialcode: String,
    /// Home phone number.
    pub home_telephone: String,
    /// Postal address.
    pub address: SubaccountAddress,
    /// `N/A` until the subaccount's own KYC is assessed.
    pub has_passed_kyc: String,
    /// The subaccount's own KYC status.
    pub kyc_status: String,
    /// Where webhooks go; `None` until an operator sets it.
    pub postback_url: Option<String>,
    /// Which signature versions its requests may use.
    pub signature_policy: SignaturePolicy,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// A subaccount's postal address (the provider's field names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubaccountAddress {
    /// Street.
    pub address: String,
    /// Suburb.
    pub suburb: String,
    /// State.
    pub state: String,
    /// Country alpha-3.
    pub country: String,
    /// Postcode.
    pub postcode: String,
}

/// A subaccount's money in one asset, in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    /// The asset.
    pub asset: Asset,
    /// Spendable now.
    pub available: i64,
    /// Held for payouts in flight.
    pub pending: i64,
}

impl Balance {
    /// The balance of an asset with no activity.
    pub const fn zero(asset: Asset) -> Self {
        Self {
            asset,
            available: 0,
            pending: 0,
        }
    }
}

/// How a subaccount is charged for payouts in one asset (docs/API.md, `POST /api/payout/single`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeeTemplate {
    /// `feetemplate_id`.
    pub id: FeeTemplateId,
    /// `feegroup_id`.
    pub group_id: FeeGroupId,
    /// The asset it applies to.
    pub asset: Asset,
    /// Fixed part, minor units.
    pub fixed: i64,
    /// Percentage of the amount.
    pub percentage: Percentage,
    /// The smallest fee charged, minor units.
    pub min_amount: i64,
}
