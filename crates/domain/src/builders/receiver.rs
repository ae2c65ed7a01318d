//! [`ReceiverBuilder`].

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::BUILT_AT_SECS;
use crate::country::CountryCode;
use crate::ids::{ReceiverId, SubaccountId};
use crate::receiver::values::Gender;
use crate::receiver::{Address, KycStatus, Receiver, ReceiverStatus};

/// Builds a [`Receiver`]. Unless set: Ada Lovelace (`ada@example.com`) of Sydney, Australia,
/// `active` with KYC `completed`, with id 3 and subaccount 2 (UUIDs from those numbers, the
/// receiver and subaccount of [`super::PayoutBuilder`]'s payout), created at [`BUILT_AT_SECS`].
#[derive(Debug, Clone)]
pub struct ReceiverBuilder {
    receiver: Receiver,
}

impl Default for ReceiverBuilder {
    fn default() -> Self {
        let at = DateTime::from_timestamp(BUILT_AT_SECS, 0).unwrap_or_default();
        let country = CountryCode::parse("AUS").unwrap_or_else(|e| panic!("{e}"));
        Self {
            receiver: Receiver {
                id: ReceiverId::from_uuid(Uuid::from_u128(3)),
                subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
                first_name: "Ada".to_owned(),
                middle_name: String::new(),
                last_name: "Lovelace".to_owned(),
                email: "ada@example.com".to_owned(),
                gender: Some(Gender::Female),
                dob: NaiveDate::from_ymd_opt(1990, 12, 10).unwrap_or_default(),
                dialcode: "61".to_owned(),
                phone: "412345678".to_owned(),
                address: Address {
                    address: "1 Example Street".to_owned(),
                    address2: String::new(),
                    city: "Sydney".to_owned(),
                    state: "NSW".to_owned(),
                    country,
                    postcode: "2000".to_owned(),
                },
                reference: None,
                applicant_id: "app_1".to_owned(),
                status: ReceiverStatus::Active,
                kyc_status: KycStatus::Completed,
                created_at: at,
                updated_at: at,
            },
        }
    }
}

impl ReceiverBuilder {
    /// The default receiver (see [`ReceiverBuilder`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the id.
    pub fn id(mut self, id: ReceiverId) -> Self {
        self.receiver.id = id;
        self
    }

    /// Sets the subaccount.
    pub fn subaccount(mut self, subaccount: SubaccountId) -> Self {
        self.receiver.subaccount_id = subaccount;
        self
    }

    /// Sets the first and last name.
    pub fn name(mut self, first: &str, last: &str) -> Self {
        first.clone_into(&mut self.receiver.first_name);
        last.clone_into(&mut self.receiver.last_name);
        self
    }

    /// Sets the e-mail address.
    pub fn email(mut self, email: &str) -> Self {
        email.clone_into(&mut self.receiver.email);
        self
    }

    /// Sets the KYC provider's applicant id.
    pub fn applicant_id(mut self, applicant_id: &str) -> Self {
        applicant_id.clone_into(&mut self.receiver.applicant_id);
        self
    }

    /// Sets the status.
    pub fn status(mut self, status: ReceiverStatus) -> Self {
        self.receiver.status = status;
        self
    }

    /// Sets the KYC status.
    pub fn kyc_status(mut self, kyc_status: KycStatus) -> Self {
        self.receiver.kyc_status = kyc_status;
        self
    }

    /// Sets when it was created, and last changed.
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.receiver.created_at = at;
        self.receiver.updated_at = at;
        self
    }

    /// The receiver.
    pub fn build(self) -> Receiver {
        self.receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::PayoutBuilder;

    #[test]
    fn defaults_are_the_built_payouts_active_receiver_with_kyc_completed() {
        let receiver = ReceiverBuilder::new().build();
        let payout = PayoutBuilder::new().build();
        assert_eq!(
            (receiver.id, receiver.subaccount_id),
            (payout.receiver_id, payout.subaccount_id)
        );
        assert_eq!(
            (receiver.status, receiver.kyc_status),
            (ReceiverStatus::Active, KycStatus::Completed)
        );
        assert_eq!(receiver.created_at, receiver.updated_at);
        assert_eq!(receiver.created_at.timestamp(), BUILT_AT_SECS);
    }

    #[test]
    fn created_at_moves_both_times() {
        let at = DateTime::from_timestamp(10, 0).unwrap_or_default();
        let receiver = ReceiverBuilder::new()
            .status(ReceiverStatus::Pending)
            .kyc_status(KycStatus::Pending)
            .created_at(at)
            .build();
        assert_eq!((receiver.created_at, receiver.updated_at), (at, at));
        assert_eq!(
            (receiver.status, receiver.kyc_status),
            (ReceiverStatus::Pending, KycStatus::Pending)
        );
    }
}
