//! Receivers: the people a subaccount pays, with their KYC state.

pub mod input;
pub mod operator;
pub mod ports;
pub mod query;
pub mod service;
pub mod status;
pub mod values;

use chrono::{DateTime, NaiveDate, Utc};

use crate::country::CountryCode;
use crate::ids::{ReceiverId, SubaccountId};
pub use status::{KycOutcome, KycStatus, KycTransition, ReceiverStatus};
use values::Gender;

/// A receiver's postal address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// First street line.
    pub address: String,
    /// Additional street information; empty when not given.
    pub address2: String,
    /// City.
    pub city: String,
    /// State or region.
    pub state: String,
    /// ISO 3166 alpha-3 country.
    pub country: CountryCode,
    /// Postcode.
    pub postcode: String,
}

/// A person a subaccount pays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receiver {
    /// Identifier.
    pub id: ReceiverId,
    /// The owning subaccount.
    pub subaccount_id: SubaccountId,
    /// Given name.
    pub first_name: String,
    /// Middle name; empty when not given.
    pub middle_name: String,
    /// Family name.
    pub last_name: String,
    /// E-mail as given; unique per subaccount, compared case-insensitively.
    pub email: String,
    /// `M` or `F`, when given.
    pub gender: Option<Gender>,
    /// Date of birth.
    pub dob: NaiveDate,
    /// Country dial code digits.
    pub dialcode: String,
    /// Phone number digits.
    pub phone: String,
    /// Postal address.
    pub address: Address,
    /// The caller's own reference, unique per subaccount when given.
    pub reference: Option<String>,
    /// The KYC provider's applicant id.
    pub applicant_id: String,
    /// Lifecycle status.
    pub status: ReceiverStatus,
    /// KYC status.
    pub kyc_status: KycStatus,
    /// When the receiver was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl Receiver {
    /// The receiver's name as a person reads it ([`full_name`]).
    pub fn full_name(&self) -> String {
        full_name([&self.first_name, &self.middle_name, &self.last_name])
    }
}

/// A name as a person reads it: the non-empty parts (first, middle, last), trimmed, separated
/// by one space.
pub fn full_name<S: AsRef<str>>(parts: [S; 3]) -> String {
    parts
        .iter()
        .map(|part| part.as_ref().trim())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod name_tests {
    use super::full_name;

    #[test]
    fn a_name_joins_its_non_empty_parts() {
        assert_eq!(full_name(["Ada", "", "Lovelace"]), "Ada Lovelace");
        assert_eq!(full_name([" Ada ", "B.", "King"]), "Ada B. King");
        assert_eq!(full_name(["", " ", ""]), "");
    }
}
