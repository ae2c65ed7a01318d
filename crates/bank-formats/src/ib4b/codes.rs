//! The transaction code of a direct credit and the dishonour reasons of payoutd's dishonour
//! file.

use std::fmt;

/// The transaction code of an IB4B transaction record. payoutd writes and reads direct credits
/// only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionCode {
    /// `50`: a direct credit.
    DirectCredit,
}

impl TransactionCode {
    /// The two digits in the file.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            TransactionCode::DirectCredit => "50",
        }
    }

    /// The code for its two digits.
    #[must_use]
    pub fn from_code(code: &str) -> Option<Self> {
        match code {
            "50" => Some(TransactionCode::DirectCredit),
            _ => None,
        }
    }
}

/// Why the receiving bank sent a direct credit back (dishonoured it), as payoutd's dishonour
/// file codes it. BNZ publishes no dishonour file; these codes are payoutd's own, named after
/// the reasons New Zealand banks give for dishonoured direct credits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DishonourReason {
    /// `01`: the account is closed.
    AccountClosed,
    /// `02`: no such account at the bank and branch.
    NoAccount,
    /// `03`: the account name does not match the other party's name.
    NameMismatch,
    /// `04`: the account holder has died.
    Deceased,
    /// `05`: the account holder refused the payment.
    PaymentRefused,
    /// `06`: the account cannot take credits for now (frozen, blocked).
    AccountBlocked,
    /// `07`: the account number is not a valid account number of the bank.
    InvalidAccountNumber,
    /// `08`: the payment was sent twice.
    DuplicatePayment,
    /// `09`: another reason, given in the record's text.
    Other,
}

impl DishonourReason {
    /// Every reason, in code order.
    pub const ALL: [DishonourReason; 9] = [
        DishonourReason::AccountClosed,
        DishonourReason::NoAccount,
        DishonourReason::NameMismatch,
        DishonourReason::Deceased,
        DishonourReason::PaymentRefused,
        DishonourReason::AccountBlocked,
        DishonourReason::InvalidAccountNumber,
        DishonourReason::DuplicatePayment,
        DishonourReason::Other,
    ];

    /// The two digits in the file.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            DishonourReason::AccountClosed => "01",
            DishonourReason::NoAccount => "02",
            DishonourReason::NameMismatch => "03",
            DishonourReason::Deceased => "04",
            DishonourReason::PaymentRefused => "05",
            DishonourReason::AccountBlocked => "06",
            DishonourReason::InvalidAccountNumber => "07",
            DishonourReason::DuplicatePayment => "08",
            DishonourReason::Other => "09",
        }
    }

    /// The reason for its two digits.
    #[must_use]
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.code() == code)
    }

    /// Its meaning, as the bank side writes it in the record's text field (at most 40
    /// characters of the IB4B set).
    #[must_use]
    pub const fn meaning(self) -> &'static str {
        match self {
            DishonourReason::AccountClosed => "Account closed",
            DishonourReason::NoAccount => "No account",
            DishonourReason::NameMismatch => "Account name does not match",
            DishonourReason::Deceased => "Account holder deceased",
            DishonourReason::PaymentRefused => "Payment refused by account holder",
            DishonourReason::AccountBlocked => "Account blocked",
            DishonourReason::InvalidAccountNumber => "Invalid account number",
            DishonourReason::DuplicatePayment => "Duplicate payment",
            DishonourReason::Other => "Other reason",
        }
    }

    /// Whether the reason says the account details are wrong or the account is gone, so that
    /// paying the same account again would fail too: closed, no account, name mismatch,
    /// deceased, invalid number. A refused, blocked or duplicate payment leaves the account
    /// usable.
    #[must_use]
    pub const fn account_is_invalid(self) -> bool {
        matches!(
            self,
            DishonourReason::AccountClosed
                | DishonourReason::NoAccount
                | DishonourReason::NameMismatch
                | DishonourReason::Deceased
                | DishonourReason::InvalidAccountNumber
        )
    }
}

impl fmt::Display for DishonourReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib4b::text::is_allowed_char;

    #[test]
    fn codes_round_trip_and_are_two_digits() {
        for reason in DishonourReason::ALL {
            assert_eq!(DishonourReason::from_code(reason.code()), Some(reason));
            assert_eq!(reason.code().len(), 2);
            assert!(reason.meaning().len() <= 40);
            assert!(reason.meaning().chars().all(is_allowed_char), "{reason:?}");
        }
        assert_eq!(DishonourReason::from_code("00"), None);
        assert_eq!(DishonourReason::from_code("10"), None);
        assert_eq!(
            TransactionCode::from_code("50"),
            Some(TransactionCode::DirectCredit)
        );
        assert_eq!(TransactionCode::from_code("52"), None);
    }

    #[test]
    fn account_is_invalid_per_code() {
        let invalid: Vec<&str> = DishonourReason::ALL
            .into_iter()
            .filter(|r| r.account_is_invalid())
            .map(DishonourReason::code)
            .collect();
        assert_eq!(invalid, ["01", "02", "03", "04", "07"]);
    }
}
