//! The codes of Standard 005: logical record types and the return reason codes of returned
//! items.

use std::fmt;

/// The logical record type of a detail record (position 1). Every segment of a record is of its
/// record's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    /// `C`: credit transactions (the originator pays the payees).
    Credit,
    /// `D`: debit transactions (the originator collects from the payors).
    Debit,
    /// `I`: returned credit transactions (the payee's institution sends a credit back).
    ReturnedCredit,
    /// `J`: returned debit transactions.
    ReturnedDebit,
}

impl RecordType {
    /// The record type character.
    #[must_use]
    pub const fn as_char(self) -> char {
        match self {
            Self::Credit => 'C',
            Self::Debit => 'D',
            Self::ReturnedCredit => 'I',
            Self::ReturnedDebit => 'J',
        }
    }

    /// The record type of `c`, if it is a detail record type.
    #[must_use]
    pub const fn from_char(c: char) -> Option<Self> {
        match c {
            'C' => Some(Self::Credit),
            'D' => Some(Self::Debit),
            'I' => Some(Self::ReturnedCredit),
            'J' => Some(Self::ReturnedDebit),
            _ => None,
        }
    }

    /// Whether segments of this type are returned items (`I`, `J`), which carry the original
    /// item's trace number and a return reason code.
    #[must_use]
    pub const fn is_return(self) -> bool {
        matches!(self, Self::ReturnedCredit | Self::ReturnedDebit)
    }

    /// Whether the trailer counts segments of this type with the credits (`C`, `I`) rather than
    /// the debits (`D`, `J`).
    #[must_use]
    pub const fn is_credit_side(self) -> bool {
        matches!(self, Self::Credit | Self::ReturnedCredit)
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_char())
    }
}

/// A return reason code of a returned item: three digits, 900 to 999 (the published codes are
/// listed in [`RETURN_CODES`]; others are kept as read, with no meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReturnCode(u16);

/// The published return reason codes: code, meaning, and whether the code says the account
/// details are wrong or the account is gone (the account cannot take payments as it is).
pub const RETURN_CODES: &[(u16, &str, bool)] = &[
    (900, "Edit reject", false),
    (901, "NSF (debit only)", false),
    (902, "Cannot trace", true),
    (903, "Payment stopped/recalled", false),
    (904, "Post/stale dated", false),
    (905, "Account closed", true),
    (906, "Account transferred", true),
    (907, "No chequing privileges", true),
    (908, "Funds not cleared (debit only)", false),
    (909, "Currency/account mismatch", true),
    (910, "Payor/payee deceased", true),
    (911, "Account frozen", false),
    (912, "Invalid/incorrect account number", true),
    (914, "Incorrect payor/payee name", true),
    (915, "Refused by payor/payee", false),
    (916, "Not in accordance with agreement - personal", false),
    (917, "Agreement revoked - personal", false),
    (918, "No pre-notification - personal", false),
    (919, "Not in accordance with agreement - business", false),
    (920, "Agreement revoked - business", false),
    (921, "No pre-notification - business", false),
    (922, "Customer initiated return", false),
    (990, "Institution in default", false),
];

impl ReturnCode {
    /// The code `value`; `None` unless it is between 900 and 999.
    #[must_use]
    pub const fn new(value: u16) -> Option<Self> {
        if value >= 900 && value <= 999 {
            Some(Self(value))
        } else {
            None
        }
    }

    /// The code's number.
    #[must_use]
    pub const fn value(self) -> u16 {
        self.0
    }

    fn entry(self) -> Option<&'static (u16, &'static str, bool)> {
        RETURN_CODES.iter().find(|(code, _, _)| *code == self.0)
    }

    /// The published meaning, `None` for a code not in [`RETURN_CODES`].
    #[must_use]
    pub fn reason(self) -> Option<&'static str> {
        self.entry().map(|(_, reason, _)| *reason)
    }

    /// Whether the code says the account details are wrong or the account is gone: 902, 905,
    /// 906, 907, 909, 910, 912 and 914. Unknown codes say not.
    #[must_use]
    pub fn account_is_invalid(self) -> bool {
        self.entry().is_some_and(|(_, _, invalid)| *invalid)
    }
}

impl fmt::Display for ReturnCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:03}", self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_code_table_is_sorted_unique_and_in_range() {
        for pair in RETURN_CODES.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{pair:?}");
        }
        for (code, reason, _) in RETURN_CODES {
            assert!(ReturnCode::new(*code).is_some(), "{code}");
            assert!(!reason.is_empty());
        }
    }

    #[test]
    fn codes_know_their_meaning_and_account_verdict() {
        let code = |n| ReturnCode::new(n).unwrap();
        assert_eq!(code(905).reason(), Some("Account closed"));
        for invalid in [902, 905, 906, 907, 909, 910, 912, 914] {
            assert!(code(invalid).account_is_invalid(), "{invalid}");
        }
        for valid in [900, 901, 903, 904, 908, 911, 915, 922, 990, 999] {
            assert!(!code(valid).account_is_invalid(), "{valid}");
        }
        assert_eq!(code(999).reason(), None);
        assert_eq!(code(912).to_string(), "912");
        assert_eq!(ReturnCode::new(899), None);
        assert_eq!(ReturnCode::new(1000), None);
    }

    #[test]
    fn record_types_round_trip() {
        for t in [
            RecordType::Credit,
            RecordType::Debit,
            RecordType::ReturnedCredit,
            RecordType::ReturnedDebit,
        ] {
            assert_eq!(RecordType::from_char(t.as_char()), Some(t));
        }
        assert_eq!(RecordType::from_char('A'), None);
        assert!(
            RecordType::ReturnedCredit.is_return() && RecordType::ReturnedCredit.is_credit_side()
        );
        assert!(!RecordType::Debit.is_credit_side());
    }
}
