//! The `receiver_accounts` row: account values sealed by the vault, matchable values as keyed
//! fingerprints. Its own module, so the account store and the payout write path (which reads
//! accounts to plan payouts) share it without importing each other.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use domain::PortError;
use domain::account::{
    AccountData, AccountField, AccountStatus, ConfirmStatus, PayoutMethod, ReceiverAccount,
};
use domain::ids::{ReceiverAccountId, ReceiverId, SubaccountId};
use uuid::Uuid;

use crate::schema::receiver_accounts;
use crate::vault::Vault;

/// The fingerprint columns of a row, one per matchable field.
#[derive(Default)]
pub(super) struct Fingerprints {
    bsb: Option<Vec<u8>>,
    account_number: Option<Vec<u8>>,
    routing_number: Option<Vec<u8>>,
    account_type: Option<Vec<u8>>,
    iban: Option<Vec<u8>>,
    bic: Option<Vec<u8>>,
    recipient: Option<Vec<u8>>,
}

impl Fingerprints {
    /// Where `field`'s fingerprint goes; `None` for a field that is not matchable.
    pub(super) fn column(&mut self, field: AccountField) -> Option<&mut Option<Vec<u8>>> {
        match field {
            AccountField::Bsb => Some(&mut self.bsb),
            AccountField::AccountNumber => Some(&mut self.account_number),
            AccountField::RoutingNumber => Some(&mut self.routing_number),
            AccountField::AccountType => Some(&mut self.account_type),
            AccountField::Iban => Some(&mut self.iban),
            AccountField::Bic => Some(&mut self.bic),
            AccountField::Recipient => Some(&mut self.recipient),
            AccountField::Name | AccountField::Description => None,
        }
    }
}

/// A `receiver_accounts` row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = receiver_accounts, check_for_backend(diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct AccountRow {
    pub(crate) id: Uuid,
    pub(super) subaccount_id: Uuid,
    pub(super) receiver_id: Uuid,
    pub(super) method: String,
    pub(super) asset: String,
    pub(super) status: String,
    pub(super) confirm_status: String,
    pub(super) data_ciphertext: Vec<u8>,
    pub(super) details_fingerprint: Vec<u8>,
    pub(super) fp_bsb: Option<Vec<u8>>,
    pub(super) fp_account_number: Option<Vec<u8>>,
    pub(super) fp_routing_number: Option<Vec<u8>>,
    pub(super) fp_account_type: Option<Vec<u8>>,
    pub(super) fp_iban: Option<Vec<u8>>,
    pub(super) fp_bic: Option<Vec<u8>>,
    pub(super) fp_recipient: Option<Vec<u8>>,
    pub(super) created_at: DateTime<Utc>,
    pub(super) updated_at: DateTime<Utc>,
}

/// What defines "the same details": the method and the matchable fields, in stored order.
pub(super) fn details(account: &ReceiverAccount) -> String {
    let mut details = account.method.name().to_owned();
    for (field, value) in account.data.expose_matchable() {
        details.push('\0');
        details.push_str(field.name());
        details.push('=');
        details.push_str(value);
    }
    details
}

fn context(id: Uuid) -> Vec<u8> {
    [b"account:".as_slice(), id.as_bytes()].concat()
}

impl AccountRow {
    pub(super) fn new(vault: &Vault, account: &ReceiverAccount) -> Result<Self, PortError> {
        let id = account.id.as_uuid();
        let pairs: Vec<(&str, &str)> = account
            .data
            .expose_pairs()
            .into_iter()
            .map(|(field, value)| (field.name(), value))
            .collect();
        let plain = serde_json::to_vec(&pairs).map_err(|e| PortError::Unknown(e.into()))?;
        let data_ciphertext = vault
            .seal(&plain, &context(id))
            .map_err(|e| PortError::unknown(format!("sealing account {id}: {e}")))?;
        // Only the matchable fields, in stored order, define "the same details"; each also gets
        // the fingerprint verify looks it up by.
        let details = details(account);
        let mut fingerprints = Fingerprints::default();
        for (field, value) in account.data.expose_matchable() {
            let column = fingerprints.column(field).ok_or_else(|| {
                PortError::unknown(format!(
                    "account field {} has no fingerprint column",
                    field.name()
                ))
            })?;
            *column = Some(vault.fingerprint(field.name(), value));
        }
        let Fingerprints {
            bsb: fp_bsb,
            account_number: fp_account_number,
            routing_number: fp_routing_number,
            account_type: fp_account_type,
            iban: fp_iban,
            bic: fp_bic,
            recipient: fp_recipient,
        } = fingerprints;
        Ok(Self {
            id,
            subaccount_id: account.subaccount_id.as_uuid(),
            receiver_id: account.receiver_id.as_uuid(),
            method: account.method.name().to_owned(),
            asset: account.method.asset().code().to_owned(),
            status: account.status.as_str().to_owned(),
            confirm_status: account.confirm_status.as_str().to_owned(),
            data_ciphertext,
            details_fingerprint: vault.fingerprint("details", &details),
            fp_bsb,
            fp_account_number,
            fp_routing_number,
            fp_account_type,
            fp_iban,
            fp_bic,
            fp_recipient,
            created_at: account.created_at,
            updated_at: account.updated_at,
        })
    }

    /// The row's ciphertext, and the row sealed and fingerprinted again by the vault's current
    /// key; `None` when it cannot be opened or read.
    pub(crate) fn resealed(self, vault: &Vault) -> Option<(Vec<u8>, Self)> {
        let old = self.data_ciphertext.clone();
        let account = self.into_domain(vault).ok()?;
        let new = Self::new(vault, &account).ok()?;
        Some((old, new))
    }

    /// The assignments of the sealed and fingerprinted columns (what a rotation rewrites).
    #[allow(clippy::type_complexity)]
    pub(crate) fn sealed_columns(
        &self,
    ) -> (
        diesel::dsl::Eq<receiver_accounts::data_ciphertext, &Vec<u8>>,
        diesel::dsl::Eq<receiver_accounts::details_fingerprint, &Vec<u8>>,
        diesel::dsl::Eq<receiver_accounts::fp_bsb, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_account_number, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_routing_number, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_account_type, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_iban, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_bic, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_recipient, &Option<Vec<u8>>>,
    ) {
        use receiver_accounts as t;
        (
            t::data_ciphertext.eq(&self.data_ciphertext),
            t::details_fingerprint.eq(&self.details_fingerprint),
            t::fp_bsb.eq(&self.fp_bsb),
            t::fp_account_number.eq(&self.fp_account_number),
            t::fp_routing_number.eq(&self.fp_routing_number),
            t::fp_account_type.eq(&self.fp_account_type),
            t::fp_iban.eq(&self.fp_iban),
            t::fp_bic.eq(&self.fp_bic),
            t::fp_recipient.eq(&self.fp_recipient),
        )
    }

    pub(crate) fn into_domain(self, vault: &Vault) -> Result<ReceiverAccount, PortError> {
        let plain = vault
            .open(&self.data_ciphertext, &context(self.id))
            .map_err(|e| PortError::unknown(format!("opening account {}: {e}", self.id)))?;
        let named: Vec<(String, String)> =
            serde_json::from_slice(&plain).map_err(|e| PortError::Unknown(e.into()))?;
        let pairs = named
            .into_iter()
            .map(|(name, value)| {
                AccountField::from_name(&name)
                    .map(|field| (field, value))
                    .ok_or_else(|| {
                        PortError::unknown(format!("account {} has unknown field {name}", self.id))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ReceiverAccount {
            id: ReceiverAccountId::from_uuid(self.id),
            receiver_id: ReceiverId::from_uuid(self.receiver_id),
            subaccount_id: SubaccountId::from_uuid(self.subaccount_id),
            method: PayoutMethod::from_name(&self.method).ok_or_else(|| {
                PortError::unknown(format!(
                    "account {} has unknown method {}",
                    self.id, self.method
                ))
            })?,
            data: AccountData::from_pairs(pairs),
            status: AccountStatus::parse(&self.status).ok_or_else(|| {
                PortError::unknown(format!("account {} has unknown status", self.id))
            })?,
            confirm_status: ConfirmStatus::parse(&self.confirm_status).ok_or_else(|| {
                PortError::unknown(format!("account {} has unknown confirm_status", self.id))
            })?,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}
