//! Every field a receiver account can carry, described once.
//!
//! Each property of a field is one exhaustive `match` below, so a new field does not compile
//! until its wire name, masking, matching, normalisation, place in a payout response and role in
//! a bank file are all stated. Everything else (the HTTP body reader, the OpenAPI document, the
//! masking of responses and events, the verify filter, the stored fingerprints, the payout's
//! `receiver_account`) is derived from these answers rather than from lists of names.

use bank_codes::digits::is_ascii_digits;
use strum::VariantArray;

use crate::account::au::Bsb;
use crate::account::ca::CaRoutingNumber;
use crate::account::nz::NzAccountNumber;
use crate::account::sepa::{Bic, Iban};
use crate::account::us::{AbaRoutingNumber, AccountType};
use crate::receiver::values::EmailAddress;

/// A field of a receiver account's `account_data`. The declaration order is the stored order
/// ([`AccountField::ALL`] and `Ord` follow it): append new fields at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, VariantArray)]
pub enum AccountField {
    /// `bsb`: an Australian branch (6 digits).
    Bsb,
    /// `account_number`: the account within its bank or branch.
    AccountNumber,
    /// `routing_number`: an ABA routing number, or a Canadian institution and transit.
    RoutingNumber,
    /// `account_type`: `checking` or `savings`.
    AccountType,
    /// `iban`: an International Bank Account Number.
    Iban,
    /// `bic`: the bank's Business Identifier Code.
    Bic,
    /// `recipient`: the payee's e-mail address.
    Recipient,
    /// `name`: the payee's name.
    Name,
    /// `description`: free text for the payee.
    Description,
}

/// How a field's value may be shown outside the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// It identifies the account: always masked ([`crate::masking::MaskedValue`]), and the only
    /// kind of field an account event carries.
    Masked,
    /// It only describes the account (a type, a bank code, a name): shown as stored.
    Shown,
}

/// Where a field's value appears in a payout's `receiver_account` (which has one slot of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayoutAccountSlot {
    /// `bsb`.
    Bsb,
    /// `bank_code`: the bank's routing number or BIC.
    BankCode,
    /// `account_number`: the account number, IBAN or e-mail recipient.
    AccountNumber,
}

/// What a field is to a payment rail writing a bank file or a partner request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RailRole {
    /// Identifies the receiving bank or branch (BSB, routing number, BIC).
    ReceivingBank,
    /// Identifies the account at that bank (account number, IBAN).
    Account,
    /// Chooses the transaction code (checking or savings).
    AccountKind,
    /// The address a notification-based payment is sent to (e-mail).
    Address,
    /// The payee's name as the rail carries it.
    PayeeName,
    /// Remittance information for the payee.
    Remittance,
}

impl AccountField {
    /// Every field, in stored order (the declaration order). Matchable fields keep this relative
    /// order in the details fingerprint, so it must never be reordered (append new fields at the
    /// end).
    pub const ALL: &'static [AccountField] = Self::VARIANTS;

    /// The field's JSON name.
    pub const fn name(self) -> &'static str {
        match self {
            AccountField::Bsb => "bsb",
            AccountField::AccountNumber => "account_number",
            AccountField::RoutingNumber => "routing_number",
            AccountField::AccountType => "account_type",
            AccountField::Iban => "iban",
            AccountField::Bic => "bic",
            AccountField::Recipient => "recipient",
            AccountField::Name => "name",
            AccountField::Description => "description",
        }
    }

    /// The field with this JSON name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|field| field.name() == name)
    }

    /// Whether the value is masked when shown.
    pub const fn visibility(self) -> Visibility {
        match self {
            AccountField::Bsb
            | AccountField::AccountNumber
            | AccountField::RoutingNumber
            | AccountField::Iban
            | AccountField::Recipient => Visibility::Masked,
            AccountField::AccountType
            | AccountField::Bic
            | AccountField::Name
            | AccountField::Description => Visibility::Shown,
        }
    }

    /// Whether verify can look an account up by this field (it then has a keyed fingerprint,
    /// and takes part in "the same details twice").
    pub const fn matchable(self) -> bool {
        match self {
            AccountField::Bsb
            | AccountField::AccountNumber
            | AccountField::RoutingNumber
            | AccountField::AccountType
            | AccountField::Iban
            | AccountField::Bic
            | AccountField::Recipient => true,
            AccountField::Name | AccountField::Description => false,
        }
    }

    /// The matchable fields, in stored order.
    pub fn matchable_fields() -> impl Iterator<Item = AccountField> {
        Self::ALL.iter().copied().filter(|field| field.matchable())
    }

    /// Where the value appears in a payout's `receiver_account`, if anywhere.
    pub const fn payout_slot(self) -> Option<PayoutAccountSlot> {
        match self {
            AccountField::Bsb => Some(PayoutAccountSlot::Bsb),
            AccountField::RoutingNumber | AccountField::Bic => Some(PayoutAccountSlot::BankCode),
            AccountField::AccountNumber | AccountField::Iban | AccountField::Recipient => {
                Some(PayoutAccountSlot::AccountNumber)
            }
            AccountField::AccountType | AccountField::Name | AccountField::Description => None,
        }
    }

    /// What the value is to a payment rail.
    pub const fn rail_role(self) -> RailRole {
        match self {
            AccountField::Bsb | AccountField::RoutingNumber | AccountField::Bic => {
                RailRole::ReceivingBank
            }
            AccountField::AccountNumber | AccountField::Iban => RailRole::Account,
            AccountField::AccountType => RailRole::AccountKind,
            AccountField::Recipient => RailRole::Address,
            AccountField::Name => RailRole::PayeeName,
            AccountField::Description => RailRole::Remittance,
        }
    }

    /// Normalises a verify `account_data` value the way create stores it, so stored and queried
    /// values compare equal. `None` when the value cannot be any stored value of this field
    /// (which then matches nothing), and for every field that is not matchable.
    ///
    /// - `bsb`: the 6 digits of a valid BSB (`012-002` gives `012002`);
    /// - `account_number`: shared by four methods. A value with `-` or space separators must be
    ///   a valid New Zealand number and gives its 16 digits; any other value must be 4 to 17
    ///   ASCII digits (the union of the Australian, US, Canadian and New Zealand lengths) and is
    ///   kept as it is;
    /// - `routing_number`: a valid ABA routing number, or a valid Canadian routing number in its
    ///   electronic form (the paper form `TTTTT-III` is converted);
    /// - `account_type`: `checking` or `savings`, lower-cased;
    /// - `iban`: a valid SEPA IBAN, electronic form;
    /// - `bic`: a valid BIC, upper-cased;
    /// - `recipient`: a valid e-mail address, lower-cased.
    pub fn normalize_for_match(self, value: &str) -> Option<String> {
        let text = value.trim();
        match self {
            AccountField::Bsb => Bsb::parse(text).ok().map(|bsb| bsb.as_str().to_owned()),
            AccountField::AccountNumber => {
                if text.contains(['-', ' ']) {
                    NzAccountNumber::parse(text)
                        .ok()
                        .map(|number| number.as_str().to_owned())
                } else {
                    is_ascii_digits(text, 4..=17).then(|| text.to_owned())
                }
            }
            AccountField::RoutingNumber => AbaRoutingNumber::parse(text)
                .map(|number| number.as_str().to_owned())
                .or_else(|_| CaRoutingNumber::parse(text).map(|number| number.as_str().to_owned()))
                .ok(),
            AccountField::AccountType => AccountType::parse(text)
                .ok()
                .map(|account_type| account_type.as_str().to_owned()),
            AccountField::Iban => Iban::parse(text).ok().map(|iban| iban.as_str().to_owned()),
            AccountField::Bic => Bic::parse(text).ok().map(|bic| bic.as_str().to_owned()),
            AccountField::Recipient => EmailAddress::parse(text)
                .ok()
                .map(|recipient| recipient.normalized()),
            AccountField::Name | AccountField::Description => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for &field in AccountField::ALL {
            assert_eq!(AccountField::from_name(field.name()), Some(field));
        }
        let mut names: Vec<&str> = AccountField::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), AccountField::ALL.len());
        assert_eq!(AccountField::from_name("sort_code"), None);
        assert_eq!(AccountField::from_name("Bsb"), None);
    }

    #[test]
    fn all_is_in_declaration_order() {
        // `AccountData` sorts its pairs by `Ord`, which must give the stored order.
        assert!(AccountField::ALL.is_sorted());
    }

    #[test]
    fn the_stored_order_of_matchable_fields_is_fixed() {
        // The details fingerprint of every stored account depends on this order.
        let names: Vec<&str> = AccountField::matchable_fields().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "bsb",
                "account_number",
                "routing_number",
                "account_type",
                "iban",
                "bic",
                "recipient"
            ]
        );
    }

    #[test]
    fn every_identifier_is_masked() {
        // A field that identifies an account on a bank file must never be shown in clear.
        for &field in AccountField::ALL {
            if matches!(field.rail_role(), RailRole::Account | RailRole::Address)
                || field.payout_slot() == Some(PayoutAccountSlot::AccountNumber)
            {
                assert_eq!(field.visibility(), Visibility::Masked, "{field:?}");
            }
        }
    }

    #[test]
    fn fields_that_are_not_matchable_normalise_to_nothing() {
        for &field in AccountField::ALL {
            if !field.matchable() {
                assert_eq!(field.normalize_for_match("Jane"), None, "{field:?}");
            }
        }
    }
}
