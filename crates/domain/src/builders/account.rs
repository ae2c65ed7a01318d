//! [`ReceiverAccountBuilder`].

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::BUILT_AT_SECS;
use crate::account::au::{AuAccountNumber, Bsb};
use crate::account::input::AccountDetails;
use crate::account::{
    AccountData, AccountField, AccountStatus, ConfirmStatus, PayoutMethod, ReceiverAccount,
};
use crate::ids::{ReceiverAccountId, ReceiverId, SubaccountId};
use crate::receiver::Receiver;

/// Builds a [`ReceiverAccount`]. Unless set: a `completed` and `confirmed` (payable)
/// direct-entry account, BSB `012002` and account number `123456789`, with id 4, receiver 3 and
/// subaccount 2 (UUIDs from those numbers, the account, receiver and subaccount of
/// [`super::PayoutBuilder`]'s payout), created and last changed at [`BUILT_AT_SECS`].
#[derive(Debug, Clone)]
pub struct ReceiverAccountBuilder {
    account: ReceiverAccount,
}

impl Default for ReceiverAccountBuilder {
    fn default() -> Self {
        let at = DateTime::from_timestamp(BUILT_AT_SECS, 0).unwrap_or_default();
        let details = AccountDetails::DirectEntry {
            bsb: Bsb::parse("012002").unwrap_or_else(|e| panic!("{e}")),
            account_number: AuAccountNumber::parse("123456789").unwrap_or_else(|e| panic!("{e}")),
        };
        Self {
            account: ReceiverAccount {
                id: ReceiverAccountId::from_uuid(Uuid::from_u128(4)),
                receiver_id: ReceiverId::from_uuid(Uuid::from_u128(3)),
                subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
                method: details.method(),
                data: AccountData::from_details(&details),
                status: AccountStatus::Completed,
                confirm_status: ConfirmStatus::Confirmed,
                created_at: at,
                updated_at: at,
            },
        }
    }
}

impl ReceiverAccountBuilder {
    /// The default account (see [`ReceiverAccountBuilder`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The account's id.
    pub fn id(mut self, id: ReceiverAccountId) -> Self {
        self.account.id = id;
        self
    }

    /// The owning receiver.
    pub fn receiver(mut self, receiver: ReceiverId) -> Self {
        self.account.receiver_id = receiver;
        self
    }

    /// The receiver's subaccount.
    pub fn subaccount(mut self, subaccount: SubaccountId) -> Self {
        self.account.subaccount_id = subaccount;
        self
    }

    /// The owning receiver and its subaccount, both from `owner`.
    pub fn owner(self, owner: &Receiver) -> Self {
        self.receiver(owner.id).subaccount(owner.subaccount_id)
    }

    /// The method and the fields of parsed details, normalised as the create use case stores
    /// them.
    pub fn details(mut self, details: &AccountDetails) -> Self {
        self.account.method = details.method();
        self.account.data = AccountData::from_details(details);
        self
    }

    /// The method alone (its fields stay as they are: set them with [`Self::data`]).
    pub fn method(mut self, method: PayoutMethod) -> Self {
        self.account.method = method;
        self
    }

    /// The fields, as stored and unchecked (for a test about what a rail or a reader does with
    /// given values).
    pub fn data(mut self, pairs: &[(AccountField, &str)]) -> Self {
        self.account.data = AccountData::from_pairs(
            pairs
                .iter()
                .map(|&(field, value)| (field, value.to_owned()))
                .collect(),
        );
        self
    }

    /// Whether it can be paid.
    pub fn status(mut self, status: AccountStatus) -> Self {
        self.account.status = status;
        self
    }

    /// Whether the receiver confirmed the details.
    pub fn confirm_status(mut self, confirm_status: ConfirmStatus) -> Self {
        self.account.confirm_status = confirm_status;
        self
    }

    /// When it was created, and last changed.
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.account.created_at = at;
        self.account.updated_at = at;
        self
    }

    /// When it last changed (after [`Self::created_at`], which sets it too).
    pub fn updated_at(mut self, at: DateTime<Utc>) -> Self {
        self.account.updated_at = at;
        self
    }

    /// The account.
    pub fn build(self) -> ReceiverAccount {
        self.account
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::input::RawAccount;
    use crate::builders::{PayoutBuilder, ReceiverBuilder};

    #[test]
    fn defaults_are_a_payable_account_of_the_built_payouts_receiver() {
        let account = ReceiverAccountBuilder::new().build();
        let payout = PayoutBuilder::new().build();
        assert_eq!(
            (account.id, account.receiver_id, account.subaccount_id),
            (payout.account_id, payout.receiver_id, payout.subaccount_id)
        );
        assert_eq!(ReceiverBuilder::new().build().id, account.receiver_id);
        assert_eq!(
            (account.status, account.confirm_status),
            (AccountStatus::Completed, ConfirmStatus::Confirmed)
        );
        assert_eq!(account.created_at, account.updated_at);
        assert_eq!(account.created_at.timestamp(), BUILT_AT_SECS);
    }

    #[test]
    fn default_details_are_what_the_create_use_case_would_store() {
        let raw = RawAccount {
            receiver_id: Some("r".to_owned()),
            bsb: Some("012-002".to_owned()),
            account_number: Some("123456789".to_owned()),
            ..RawAccount::default()
        };
        let parsed = crate::account::input::AccountInput::parse(PayoutMethod::DirectEntry, &raw)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let account = ReceiverAccountBuilder::new().build();
        assert_eq!(account.method, PayoutMethod::DirectEntry);
        assert_eq!(account.data, AccountData::from_details(&parsed.details));
    }

    #[test]
    fn owner_sets_receiver_and_subaccount_and_data_replaces_every_field() {
        let owner = ReceiverBuilder::new()
            .id(ReceiverId::from_uuid(Uuid::from_u128(30)))
            .subaccount(SubaccountId::from_uuid(Uuid::from_u128(20)))
            .build();
        let account = ReceiverAccountBuilder::new()
            .owner(&owner)
            .method(PayoutMethod::Ach)
            .data(&[(AccountField::RoutingNumber, "011000015")])
            .build();
        assert_eq!(
            (account.receiver_id, account.subaccount_id),
            (owner.id, owner.subaccount_id)
        );
        assert_eq!(
            account.data.expose_pairs(),
            [(AccountField::RoutingNumber, "011000015")]
        );
    }

    #[test]
    fn created_at_moves_both_times_and_updated_at_only_its_own() {
        let at = |s| DateTime::from_timestamp(s, 0).unwrap_or_default();
        let account = ReceiverAccountBuilder::new()
            .created_at(at(10))
            .updated_at(at(20))
            .build();
        assert_eq!((account.created_at, account.updated_at), (at(10), at(20)));
    }
}
