//! US ACH account details: the ABA routing number, the account number and the account type.
//!
//! Each type can only be built through its `parse`, which trims surrounding whitespace first.
//! The errors say what is wrong with the value only; mapping them to API error codes is the
//! caller's business.

use std::fmt;

use bank_codes::digits::is_ascii_digits;
use bank_codes::us_routing;

// ---------------------------------------------------------------------------------------------

/// Why an ABA routing number was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AbaRoutingNumberError {
    /// The input was empty or only whitespace.
    #[error("routing number is empty")]
    Empty,
    /// The input is not 9 ASCII digits.
    #[error("routing number must be 9 digits")]
    Format,
    /// The 3-7-1 check digit does not match.
    #[error("routing number checksum is not valid")]
    Checksum,
    /// The first two digits are not a Federal Reserve routing symbol (00-12, 21-32, 61-72, 80).
    #[error("routing number does not start with a Federal Reserve routing symbol")]
    UnknownInstitution,
}

/// A US ABA routing transit number: 9 ASCII digits whose 3-7-1 checksum holds and whose first
/// two digits are a Federal Reserve routing symbol (e.g. `021000021`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AbaRoutingNumber(String);

impl AbaRoutingNumber {
    /// Parses a routing number such as `011000015`.
    ///
    /// Checks, in order: 9 digits ([`Format`](AbaRoutingNumberError::Format)), the check digit
    /// ([`bank_codes::us_routing`]: 3(d1+d4+d7) + 7(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10);
    /// [`Checksum`](AbaRoutingNumberError::Checksum)), then the first two digits
    /// ([`UnknownInstitution`](AbaRoutingNumberError::UnknownInstitution)).
    pub fn parse(raw: &str) -> Result<Self, AbaRoutingNumberError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(AbaRoutingNumberError::Empty);
        }
        if !is_ascii_digits(text, 9..=9) {
            return Err(AbaRoutingNumberError::Format);
        }
        // A number failing the checksum is most likely a typo, so that is reported first; only
        // a well-formed number can be judged on its routing symbol.
        if !us_routing::is_valid(text) {
            return Err(AbaRoutingNumberError::Checksum);
        }
        let symbol: u8 = text
            .get(..2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(u8::MAX);
        // 00 is the US Government, 01-12 the twelve Federal Reserve districts, 21-32 thrift
        // institutions, 61-72 electronic transactions and 80 traveller's cheques.
        let known = matches!(symbol, 0..=12 | 21..=32 | 61..=72 | 80);
        if !known {
            return Err(AbaRoutingNumberError::UnknownInstitution);
        }
        Ok(Self(text.to_owned()))
    }

    /// The 9 digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AbaRoutingNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a US account number was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UsAccountNumberError {
    /// The input was empty or only whitespace.
    #[error("account number is empty")]
    Empty,
    /// The input is not 4 to 17 ASCII digits.
    #[error("account number must be 4 to 17 digits")]
    Format,
}

/// A US bank account number: 4 to 17 ASCII digits (the NACHA DFI account number field), leading
/// zeros kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UsAccountNumber(String);

impl UsAccountNumber {
    /// Parses an account number such as `000123456789`.
    pub fn parse(raw: &str) -> Result<Self, UsAccountNumberError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(UsAccountNumberError::Empty);
        }
        if !is_ascii_digits(text, 4..=17) {
            return Err(UsAccountNumberError::Format);
        }
        Ok(Self(text.to_owned()))
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UsAccountNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why an account type was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccountTypeError {
    /// The input was empty or only whitespace.
    #[error("account type is empty")]
    Empty,
    /// The input is neither `checking` nor `savings`.
    #[error("account type must be checking or savings")]
    Invalid,
}

/// The kind of a US or Canadian deposit account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
#[strum(const_into_str, ascii_case_insensitive)]
pub enum AccountType {
    /// A checking (chequing) account.
    #[strum(serialize = "checking")]
    Checking,
    /// A savings account.
    #[strum(serialize = "savings")]
    Savings,
}

impl AccountType {
    /// Parses `checking` or `savings`, ASCII case-insensitively (`Checking`, `SAVINGS`).
    pub fn parse(raw: &str) -> Result<Self, AccountTypeError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(AccountTypeError::Empty);
        }
        text.parse().map_err(|_| AccountTypeError::Invalid)
    }

    /// The lower-case wire name: `checking` or `savings`.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }
}

impl fmt::Display for AccountType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn routing_number_accepts_real_numbers() {
        // Federal Reserve Bank of Boston, JPMorgan Chase (NY), Bank of America (NY and CA),
        // JPMorgan Chase (CA, a thrift symbol).
        for raw in [
            "011000015",
            "021000021",
            "026009593",
            "121000358",
            "322271627",
        ] {
            let number = AbaRoutingNumber::parse(raw).unwrap();
            assert_eq!(number.as_str(), raw);
            assert_eq!(number.to_string(), raw);
        }
        assert_eq!(
            AbaRoutingNumber::parse(" 021000021\n").unwrap().as_str(),
            "021000021"
        );
    }

    #[test]
    fn routing_number_rejects_bad_checksums() {
        for raw in [
            "021000022",
            "011000016",
            "121000359",
            "322271628",
            "000000001",
        ] {
            assert_eq!(
                AbaRoutingNumber::parse(raw),
                Err(AbaRoutingNumberError::Checksum),
                "{raw}"
            );
        }
    }

    #[test]
    fn routing_number_rejects_unknown_routing_symbols() {
        // Each passes the checksum: 3·d1 + 7·d2 + d9 ≡ 0 (mod 10).
        for raw in [
            "130000006",
            "200000004",
            "500000005",
            "730000008",
            "990000000",
        ] {
            assert_eq!(
                AbaRoutingNumber::parse(raw),
                Err(AbaRoutingNumberError::UnknownInstitution),
                "{raw}"
            );
        }
        // The edges of the known ranges are accepted.
        for raw in [
            "000000000",
            "120000003",
            "210000007",
            "610000005",
            "720000005",
        ] {
            assert!(AbaRoutingNumber::parse(raw).is_ok(), "{raw}");
        }
        assert_eq!(
            AbaRoutingNumber::parse("800000006").unwrap().as_str(),
            "800000006"
        );
    }

    #[test]
    fn routing_number_rejects_bad_format() {
        assert_eq!(
            AbaRoutingNumber::parse(""),
            Err(AbaRoutingNumberError::Empty)
        );
        assert_eq!(
            AbaRoutingNumber::parse("\t "),
            Err(AbaRoutingNumberError::Empty)
        );
        for raw in [
            "02100002",
            "0210000211",
            "021-000-021",
            "021 000 021",
            "02100002a",
            "０２１００００２１",
            "٠٢١٠٠٠٠٢١",
            "021000021\u{0301}",
            "💸",
        ] {
            assert_eq!(
                AbaRoutingNumber::parse(raw),
                Err(AbaRoutingNumberError::Format),
                "{raw}"
            );
        }
        assert_eq!(
            AbaRoutingNumber::parse(&"0".repeat(100_000)),
            Err(AbaRoutingNumberError::Format)
        );
    }

    #[test]
    fn account_number_accepts_four_to_seventeen_digits() {
        for raw in ["1234", "12345678901234567", "000123456789"] {
            assert_eq!(UsAccountNumber::parse(raw).unwrap().as_str(), raw);
        }
        assert_eq!(
            UsAccountNumber::parse("  4567 ").unwrap().to_string(),
            "4567"
        );
    }

    #[test]
    fn account_number_rejects_other_input() {
        assert_eq!(UsAccountNumber::parse(""), Err(UsAccountNumberError::Empty));
        for raw in [
            "123",
            "123456789012345678",
            "1234-5678",
            "1234 5678",
            "ABCD1234",
            "１２３４",
        ] {
            assert_eq!(
                UsAccountNumber::parse(raw),
                Err(UsAccountNumberError::Format),
                "{raw}"
            );
        }
        assert_eq!(
            UsAccountNumber::parse(&"7".repeat(100_000)),
            Err(UsAccountNumberError::Format)
        );
    }

    #[test]
    fn account_type_is_case_insensitive() {
        for (raw, expected) in [
            ("checking", AccountType::Checking),
            ("Checking", AccountType::Checking),
            (" CHECKING ", AccountType::Checking),
            ("savings", AccountType::Savings),
            ("SaViNgS", AccountType::Savings),
        ] {
            assert_eq!(AccountType::parse(raw), Ok(expected), "{raw}");
        }
        assert_eq!(AccountType::Checking.as_str(), "checking");
        assert_eq!(AccountType::Savings.to_string(), "savings");
    }

    #[test]
    fn account_type_rejects_other_input() {
        assert_eq!(AccountType::parse("  "), Err(AccountTypeError::Empty));
        for raw in [
            "chequing",
            "check",
            "saving",
            "current",
            "checking savings",
            "ＣＨＥＣＫＩＮＧ",
            "checkİng",
            "savingſ",
        ] {
            assert_eq!(
                AccountType::parse(raw),
                Err(AccountTypeError::Invalid),
                "{raw}"
            );
        }
        assert_eq!(
            AccountType::parse(&"checking".repeat(10_000)),
            Err(AccountTypeError::Invalid)
        );
    }
}
