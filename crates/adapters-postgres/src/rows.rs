//! Database rows, separate from domain entities, with exhaustive conversions both ways.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use uuid::Uuid;

use crate::schema::{payouts, receivers, subaccounts};
use domain::PortError;
use domain::auth::SignaturePolicy;
use domain::country::CountryCode;
use domain::ids::{BatchId, FeeGroupId, FeeTemplateId, LedgerEntryId, PayoutId, ReceiverAccountId};
use domain::ids::{MerchantId, ReceiverId, SubaccountId};
use domain::ledger::{LedgerEntry, LedgerEntryKind};
use domain::money::{Asset, Fee, MinorUnits, Percentage};
use domain::payout::{Payout, PayoutStatus};
use domain::receiver::values::{Gender, normalize_email};
use domain::receiver::{Address, KycStatus, Receiver, ReceiverStatus};
use domain::subaccount::FeeTemplate;
use domain::subaccount::{Subaccount, SubaccountAddress};

/// A `receivers` row, read and written whole.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = receivers, check_for_backend(diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct ReceiverRow {
    pub id: Uuid,
    pub subaccount_id: Uuid,
    pub first_name: String,
    pub middle_name: String,
    pub last_name: String,
    pub email: String,
    pub gender: Option<String>,
    pub dob: NaiveDate,
    pub dialcode: String,
    pub phone: String,
    pub address: String,
    pub address2: String,
    pub city: String,
    pub state: String,
    pub country: String,
    pub postcode: String,
    pub reference: Option<String>,
    pub applicant_id: String,
    pub status: i16,
    pub kyc_status: i16,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub email_normalized: String,
}

impl From<&Receiver> for ReceiverRow {
    fn from(r: &Receiver) -> Self {
        Self {
            id: r.id.as_uuid(),
            subaccount_id: r.subaccount_id.as_uuid(),
            first_name: r.first_name.clone(),
            middle_name: r.middle_name.clone(),
            last_name: r.last_name.clone(),
            email: r.email.clone(),
            gender: r.gender.map(|g| g.as_str().to_owned()),
            dob: r.dob,
            dialcode: r.dialcode.clone(),
            phone: r.phone.clone(),
            address: r.address.address.clone(),
            address2: r.address.address2.clone(),
            city: r.address.city.clone(),
            state: r.address.state.clone(),
            country: r.address.country.as_str().to_owned(),
            postcode: r.address.postcode.clone(),
            reference: r.reference.clone(),
            applicant_id: r.applicant_id.clone(),
            status: i16::from(r.status.code()),
            kyc_status: i16::from(r.kyc_status.code()),
            created_at: r.created_at,
            updated_at: r.updated_at,
            email_normalized: normalize_email(&r.email),
        }
    }
}

impl TryFrom<ReceiverRow> for Receiver {
    type Error = anyhow::Error;

    fn try_from(row: ReceiverRow) -> anyhow::Result<Self> {
        let code = |value: i16| u8::try_from(value).ok();
        let status = code(row.status)
            .and_then(ReceiverStatus::from_code)
            .ok_or_else(|| {
                anyhow::anyhow!("receiver {} has unknown status {}", row.id, row.status)
            })?;
        let kyc_status = code(row.kyc_status)
            .and_then(KycStatus::from_code)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "receiver {} has unknown kyc_status {}",
                    row.id,
                    row.kyc_status
                )
            })?;
        let gender = match row.gender.as_deref() {
            None => None,
            Some(raw) => Some(
                Gender::parse(raw)
                    .map_err(|_| anyhow::anyhow!("receiver {} has bad gender", row.id))?,
            ),
        };
        let country = CountryCode::parse(&row.country)
            .map_err(|_| anyhow::anyhow!("receiver {} has bad country", row.id))?;
        Ok(Receiver {
            id: ReceiverId::from_uuid(row.id),
            subaccount_id: SubaccountId::from_uuid(row.subaccount_id),
            first_name: row.first_name,
            middle_name: row.middle_name,
            last_name: row.last_name,
            email: row.email,
            gender,
            dob: row.dob,
            dialcode: row.dialcode,
            phone: row.phone,
            address: Address {
                address: row.address,
                address2: row.address2,
                city: row.city,
                state: row.state,
                country,
                postcode: row.postcode,
            },
            reference: row.reference,
            applicant_id: row.applicant_id,
            status,
            kyc_status,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

/// A `subaccounts` row without its encrypted webhook secret.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = subaccounts, check_for_backend(diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct SubaccountRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub name: String,
    pub title: String,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub dob: Option<NaiveDate>,
    pub provider_status: String,
    pub business_name: String,
    pub business_or_individual: String,
    pub support_email: String,
    pub mobile_dialcode: String,
    pub mobile: String,
    pub home_phone_dialcode: String,
    pub home_telephone: String,
    pub address: String,
    pub suburb: String,
    pub state: String,
    pub country: String,
    pub postcode: String,
    pub has_passed_kyc: String,
    pub kyc_status: String,
    pub postback_url: Option<String>,
    /// Written as `signature_policy = 'v2'` for instances of the previous version, and read as
    /// `v2` when set (the previous version's `require-signature-v2` sets only it).
    pub require_signature_v2: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub signature_policy: String,
}

impl From<&Subaccount> for SubaccountRow {
    fn from(s: &Subaccount) -> Self {
        Self {
            id: s.id.as_uuid(),
            merchant_id: s.merchant_id.as_uuid(),
            name: s.name.clone(),
            title: s.title.clone(),
            first_name: s.first_name.clone(),
            last_name: s.last_name.clone(),
            email: s.email.clone(),
            dob: s.dob,
            provider_status: s.provider_status.clone(),
            business_name: s.business_name.clone(),
            business_or_individual: s.business_or_individual.clone(),
            support_email: s.support_email.clone(),
            mobile_dialcode: s.mobile_dialcode.clone(),
            mobile: s.mobile.clone(),
            home_phone_dialcode: s.home_phone_dialcode.clone(),
            home_telephone: s.home_telephone.clone(),
            address: s.address.address.clone(),
            suburb: s.address.suburb.clone(),
            state: s.address.state.clone(),
            country: s.address.country.clone(),
            postcode: s.address.postcode.clone(),
            has_passed_kyc: s.has_passed_kyc.clone(),
            kyc_status: s.kyc_status.clone(),
            postback_url: s.postback_url.clone(),
            require_signature_v2: s.signature_policy == SignaturePolicy::V2Only,
            created_at: s.created_at,
            updated_at: s.created_at,
            signature_policy: s.signature_policy.as_str().to_owned(),
        }
    }
}

/// A subaccount's policy from its two columns: `v2` where the previous version required v2, else
/// its `signature_policy` (whose CHECK allows only known names: anything else reads as the
/// strictest).
pub fn signature_policy(require_signature_v2: bool, stored: &str) -> SignaturePolicy {
    if require_signature_v2 {
        return SignaturePolicy::V2Only;
    }
    SignaturePolicy::parse(stored).unwrap_or(SignaturePolicy::V2Only)
}

impl From<SubaccountRow> for Subaccount {
    fn from(row: SubaccountRow) -> Self {
        Self {
            id: SubaccountId::from_uuid(row.id),
            merchant_id: MerchantId::from_uuid(row.merchant_id),
            name: row.name,
            title: row.title,
            first_name: row.first_name,
            last_name: row.last_name,
            email: row.email,
            dob: row.dob,
            provider_status: row.provider_status,
            business_name: row.business_name,
            business_or_individual: row.business_or_individual,
            support_email: row.support_email,
            mobile_dialcode: row.mobile_dialcode,
            mobile: row.mobile,
            home_phone_dialcode: row.home_phone_dialcode,
            home_telephone: row.home_telephone,
            address: SubaccountAddress {
                address: row.address,
                suburb: row.suburb,
                state: row.state,
                country: row.country,
                postcode: row.postcode,
            },
            has_passed_kyc: row.has_passed_kyc,
            kyc_status: row.kyc_status,
            postback_url: row.postback_url,
            signature_policy: signature_policy(row.require_signature_v2, &row.signature_policy),
            created_at: row.created_at,
        }
    }
}

/// A `payouts` row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = payouts, check_for_backend(diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct PayoutRow {
    pub(crate) id: Uuid,
    pub(crate) subaccount_id: Uuid,
    pub(crate) receiver_id: Uuid,
    pub(crate) account_id: Uuid,
    pub(crate) asset: String,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) fee_template_id: Option<Uuid>,
    pub(crate) fee_group_id: Option<Uuid>,
    pub(crate) fee_fixed: Option<i64>,
    pub(crate) fee_percentage: Option<i32>,
    pub(crate) fee_min_amount: Option<i64>,
    pub(crate) reference: Option<String>,
    pub(crate) note: String,
    pub(crate) status: i16,
    pub(crate) batch_id: Option<Uuid>,
    pub(crate) provider_reference: String,
    pub(crate) duplicate: bool,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) submitted_at: Option<DateTime<Utc>>,
    pub(crate) receiver_is_invalid: bool,
    pub(crate) failure_reason: Option<String>,
    pub(crate) return_code: Option<String>,
}

impl From<&Payout> for PayoutRow {
    fn from(p: &Payout) -> Self {
        let t = p.fee_template.as_ref();
        Self {
            id: p.id.as_uuid(),
            subaccount_id: p.subaccount_id.as_uuid(),
            receiver_id: p.receiver_id.as_uuid(),
            account_id: p.account_id.as_uuid(),
            asset: p.asset.code().to_owned(),
            amount: p.amount.get(),
            fee: p.fee.get(),
            fee_template_id: t.map(|t| t.id.as_uuid()),
            fee_group_id: t.map(|t| t.group_id.as_uuid()),
            fee_fixed: t.map(|t| t.fixed),
            fee_percentage: t.and_then(|t| i32::try_from(t.percentage.ten_thousandths()).ok()),
            fee_min_amount: t.map(|t| t.min_amount),
            reference: p.reference.clone(),
            note: p.note.clone(),
            status: i16::from(p.status.code()),
            batch_id: p.batch_id.map(|b| b.as_uuid()),
            provider_reference: p.provider_reference.clone(),
            duplicate: p.duplicate,
            created_at: p.created_at,
            updated_at: p.updated_at,
            submitted_at: p.submitted_at,
            receiver_is_invalid: p.receiver_is_invalid,
            failure_reason: p.failure_reason.clone(),
            return_code: p.return_code.clone(),
        }
    }
}

impl TryFrom<PayoutRow> for Payout {
    type Error = PortError;

    fn try_from(r: PayoutRow) -> Result<Self, PortError> {
        let asset = Asset::parse(&r.asset)
            .ok_or_else(|| PortError::unknown(format!("payout {} has asset {}", r.id, r.asset)))?;
        let fee_template = match (
            r.fee_template_id,
            r.fee_group_id,
            r.fee_fixed,
            r.fee_percentage,
            r.fee_min_amount,
        ) {
            (Some(id), Some(group_id), Some(fixed), Some(percentage), Some(min_amount)) => {
                Some(FeeTemplate {
                    id: FeeTemplateId::from_uuid(id),
                    group_id: FeeGroupId::from_uuid(group_id),
                    asset,
                    fixed,
                    percentage: u32::try_from(percentage)
                        .ok()
                        .and_then(|p| Percentage::from_ten_thousandths(p).ok())
                        .ok_or_else(|| {
                            PortError::unknown(format!(
                                "payout {} has fee percentage {percentage}",
                                r.id
                            ))
                        })?,
                    min_amount,
                })
            }
            _ => None,
        };
        Ok(Payout {
            id: PayoutId::from_uuid(r.id),
            subaccount_id: SubaccountId::from_uuid(r.subaccount_id),
            receiver_id: ReceiverId::from_uuid(r.receiver_id),
            account_id: ReceiverAccountId::from_uuid(r.account_id),
            asset,
            amount: MinorUnits::new(r.amount).map_err(|_| {
                PortError::unknown(format!("payout {} has amount {}", r.id, r.amount))
            })?,
            fee: Fee::new(r.fee)
                .map_err(|_| PortError::unknown(format!("payout {} has fee {}", r.id, r.fee)))?,
            fee_template,
            reference: r.reference,
            note: r.note,
            status: u8::try_from(r.status)
                .ok()
                .and_then(PayoutStatus::from_code)
                .ok_or_else(|| {
                    PortError::unknown(format!("payout {} has status {}", r.id, r.status))
                })?,
            batch_id: r.batch_id.map(BatchId::from_uuid),
            provider_reference: r.provider_reference,
            duplicate: r.duplicate,
            submitted_at: r.submitted_at,
            receiver_is_invalid: r.receiver_is_invalid,
            failure_reason: r.failure_reason,
            return_code: r.return_code,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// A `ledger_entries` row as the payout reads select it.
pub(crate) type EntryRow = (
    Uuid,
    Uuid,
    String,
    String,
    i64,
    i64,
    Option<Uuid>,
    DateTime<Utc>,
);

/// The ledger entry of an [`EntryRow`].
pub(crate) fn entry(row: EntryRow) -> Result<LedgerEntry, PortError> {
    let (id, subaccount, asset, kind, available_delta, pending_delta, payout_id, created_at) = row;
    Ok(LedgerEntry {
        id: LedgerEntryId::from_uuid(id),
        subaccount_id: SubaccountId::from_uuid(subaccount),
        asset: Asset::parse(&asset)
            .ok_or_else(|| PortError::unknown(format!("ledger entry {id} has asset {asset}")))?,
        kind: LedgerEntryKind::parse(&kind)
            .ok_or_else(|| PortError::unknown(format!("ledger entry {id} has kind {kind}")))?,
        available_delta,
        pending_delta,
        payout_id: payout_id.map(PayoutId::from_uuid),
        created_at,
    })
}
