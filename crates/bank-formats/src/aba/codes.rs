//! The code lists of the format: transaction codes, the detail record's indicator and the
//! return reason codes.

use std::fmt;

/// Transaction code of a detail record (positions 19–20).
///
/// The writer writes [`Credit`](Self::Credit) (50) for payments and
/// [`Debit`](Self::Debit) (13) for the self-balancing record; the parser reads every code of
/// the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionCode {
    /// 13: externally initiated debit.
    Debit,
    /// 50: externally initiated credit (the general credit code).
    Credit,
    /// 51: Australian Government security interest.
    GovernmentSecurityInterest,
    /// 52: family allowance.
    FamilyAllowance,
    /// 53: pay.
    Pay,
    /// 54: pension.
    Pension,
    /// 55: allotment.
    Allotment,
    /// 56: dividend.
    Dividend,
    /// 57: debenture or note interest.
    DebentureInterest,
}

impl TransactionCode {
    /// Every transaction code, in code order.
    pub const ALL: [Self; 9] = [
        Self::Debit,
        Self::Credit,
        Self::GovernmentSecurityInterest,
        Self::FamilyAllowance,
        Self::Pay,
        Self::Pension,
        Self::Allotment,
        Self::Dividend,
        Self::DebentureInterest,
    ];

    /// The two-digit code.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Debit => 13,
            Self::Credit => 50,
            Self::GovernmentSecurityInterest => 51,
            Self::FamilyAllowance => 52,
            Self::Pay => 53,
            Self::Pension => 54,
            Self::Allotment => 55,
            Self::Dividend => 56,
            Self::DebentureInterest => 57,
        }
    }

    /// The transaction code with this number.
    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.code() == code)
    }

    /// Whether the record moves money from the account (13): its amount counts in the file's
    /// debit total; every other code counts in the credit total.
    #[must_use]
    pub const fn is_debit(self) -> bool {
        matches!(self, Self::Debit)
    }
}

impl fmt::Display for TransactionCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}", self.code())
    }
}

/// The indicator of an originated detail record (position 18).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Indicator {
    /// Blank: no change. The writer writes only this.
    #[default]
    None,
    /// `N`: a new or varied BSB or account number.
    NewOrVaried,
    /// `W`: dividend paid to a resident of a country with a double-tax agreement.
    DividendWithholding,
    /// `X`: dividend paid to a resident of any other country.
    DividendNonResident,
    /// `Y`: interest paid to a non-resident.
    InterestNonResident,
}

impl Indicator {
    /// The character in the record.
    #[must_use]
    pub const fn as_char(self) -> char {
        match self {
            Self::None => ' ',
            Self::NewOrVaried => 'N',
            Self::DividendWithholding => 'W',
            Self::DividendNonResident => 'X',
            Self::InterestNonResident => 'Y',
        }
    }

    /// The indicator this character stands for.
    #[must_use]
    pub const fn from_char(c: char) -> Option<Self> {
        Some(match c {
            ' ' => Self::None,
            'N' => Self::NewOrVaried,
            'W' => Self::DividendWithholding,
            'X' => Self::DividendNonResident,
            'Y' => Self::InterestNonResident,
            _ => return None,
        })
    }
}

/// A return reason code (position 18 of a returned detail record, type 2): one digit.
///
/// Codes 1–6, 8 and 9 are assigned. 0 and 7 are not (the published NAB return layout leaves 7
/// without a meaning): they are read as [`Unassigned`](Self::Unassigned) and keep their digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReturnCode {
    /// 1: invalid BSB number.
    InvalidBsb,
    /// 2: payment stopped.
    PaymentStopped,
    /// 3: account closed.
    AccountClosed,
    /// 4: customer deceased.
    CustomerDeceased,
    /// 5: no account or incorrect account number.
    NoAccount,
    /// 6: refer to customer.
    ReferToCustomer,
    /// 8: invalid user ID number.
    InvalidUserId,
    /// 9: technically invalid.
    TechnicallyInvalid,
    /// A digit with no assigned meaning (0 or 7).
    Unassigned(u8),
}

impl ReturnCode {
    /// The assigned codes, in code order.
    pub const ASSIGNED: [Self; 8] = [
        Self::InvalidBsb,
        Self::PaymentStopped,
        Self::AccountClosed,
        Self::CustomerDeceased,
        Self::NoAccount,
        Self::ReferToCustomer,
        Self::InvalidUserId,
        Self::TechnicallyInvalid,
    ];

    /// The digit.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::InvalidBsb => 1,
            Self::PaymentStopped => 2,
            Self::AccountClosed => 3,
            Self::CustomerDeceased => 4,
            Self::NoAccount => 5,
            Self::ReferToCustomer => 6,
            Self::InvalidUserId => 8,
            Self::TechnicallyInvalid => 9,
            Self::Unassigned(digit) => digit,
        }
    }

    /// The code of this digit; `None` unless `digit` is 0–9.
    #[must_use]
    pub fn from_code(digit: u8) -> Option<Self> {
        if digit > 9 {
            return None;
        }
        Some(
            Self::ASSIGNED
                .into_iter()
                .find(|c| c.code() == digit)
                .unwrap_or(Self::Unassigned(digit)),
        )
    }

    /// Its meaning; `None` for an unassigned digit.
    #[must_use]
    pub const fn reason(self) -> Option<&'static str> {
        Some(match self {
            Self::InvalidBsb => "Invalid BSB number",
            Self::PaymentStopped => "Payment stopped",
            Self::AccountClosed => "Account closed",
            Self::CustomerDeceased => "Customer deceased",
            Self::NoAccount => "No account or incorrect account number",
            Self::ReferToCustomer => "Refer to customer",
            Self::InvalidUserId => "Invalid user ID number",
            Self::TechnicallyInvalid => "Technically invalid",
            Self::Unassigned(_) => return None,
        })
    }

    /// Whether the code says the account details are wrong or the account is gone, so that
    /// paying the same details again would fail again: 1 (invalid BSB), 3 (account closed),
    /// 4 (customer deceased: the account is frozen and will be closed) and 5 (no account or
    /// incorrect account number). 2 (stopped), 6 (refer to customer) may clear once the payee
    /// acts; 8 and 9 are the originator's errors, not the account's.
    #[must_use]
    pub const fn account_is_invalid(self) -> bool {
        matches!(
            self,
            Self::InvalidBsb | Self::AccountClosed | Self::CustomerDeceased | Self::NoAccount
        )
    }
}

impl fmt::Display for ReturnCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_codes_round_trip_and_classify() {
        let table = [
            (1, "Invalid BSB number", true),
            (2, "Payment stopped", false),
            (3, "Account closed", true),
            (4, "Customer deceased", true),
            (5, "No account or incorrect account number", true),
            (6, "Refer to customer", false),
            (8, "Invalid user ID number", false),
            (9, "Technically invalid", false),
        ];
        for (digit, reason, invalid) in table {
            let code = ReturnCode::from_code(digit);
            assert_eq!(code.map(ReturnCode::code), Some(digit));
            assert_eq!(code.and_then(ReturnCode::reason), Some(reason));
            assert_eq!(code.map(ReturnCode::account_is_invalid), Some(invalid));
        }
        for digit in [0, 7] {
            assert_eq!(
                ReturnCode::from_code(digit),
                Some(ReturnCode::Unassigned(digit))
            );
            assert_eq!(ReturnCode::Unassigned(digit).reason(), None);
            assert!(!ReturnCode::Unassigned(digit).account_is_invalid());
        }
        assert_eq!(ReturnCode::from_code(10), None);
    }

    #[test]
    fn transaction_codes() {
        for code in TransactionCode::ALL {
            assert_eq!(TransactionCode::from_code(code.code()), Some(code));
        }
        assert_eq!(TransactionCode::from_code(22), None);
        assert!(TransactionCode::Debit.is_debit());
        assert!(!TransactionCode::Credit.is_debit());
        assert_eq!(TransactionCode::Debit.to_string(), "13");
    }

    #[test]
    fn indicators() {
        for c in [' ', 'N', 'W', 'X', 'Y'] {
            assert_eq!(Indicator::from_char(c).map(Indicator::as_char), Some(c));
        }
        assert_eq!(Indicator::from_char('Z'), None);
    }
}
