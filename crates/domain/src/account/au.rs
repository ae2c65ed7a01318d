//! Australian direct-entry (BECS) account details: the BSB and the account number.
//!
//! Each type can only be built through its `parse`, which trims surrounding whitespace first.
//! The errors say what is wrong with the value only; mapping them to API error codes is the
//! caller's business.

use std::fmt;

use bank_codes::digits::is_ascii_digits;

// ---------------------------------------------------------------------------------------------

/// Why a BSB was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BsbError {
    /// The input was empty or only whitespace.
    #[error("BSB is empty")]
    Empty,
    /// The input is not 6 digits (optionally written `NNN-NNN` or `NNN NNN`).
    #[error("BSB must be 6 digits")]
    Format,
}

/// An Australian bank-state-branch number: 6 ASCII digits, stored without a separator
/// (e.g. `012002`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bsb(String);

impl Bsb {
    /// Parses a BSB such as `012002`, `012-002` or `012 002`.
    ///
    /// The only separator accepted is a single `-` or space between the third and fourth
    /// digits, the two ways BSBs are printed.
    pub fn parse(raw: &str) -> Result<Self, BsbError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(BsbError::Empty);
        }
        let mut digits = String::with_capacity(6);
        for (index, c) in text.chars().enumerate() {
            match (index, c) {
                (3, '-' | ' ') if digits.len() == 3 => {}
                (_, '0'..='9') if digits.len() < 6 => digits.push(c),
                _ => return Err(BsbError::Format),
            }
        }
        if digits.len() != 6 {
            return Err(BsbError::Format);
        }
        Ok(Self(digits))
    }

    /// The 6 digits, without a separator.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Bsb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why an Australian account number was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuAccountNumberError {
    /// The input was empty or only whitespace.
    #[error("account number is empty")]
    Empty,
    /// The input is not 5 to 9 ASCII digits.
    #[error("account number must be 5 to 9 digits")]
    Format,
}

/// An Australian bank account number: 5 to 9 ASCII digits, leading zeros kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuAccountNumber(String);

impl AuAccountNumber {
    /// Parses an account number such as `12345678`.
    pub fn parse(raw: &str) -> Result<Self, AuAccountNumberError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(AuAccountNumberError::Empty);
        }
        if !is_ascii_digits(text, 5..=9) {
            return Err(AuAccountNumberError::Format);
        }
        Ok(Self(text.to_owned()))
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AuAccountNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bsb_accepts_six_digits_with_or_without_separator() {
        for (raw, stored) in [
            ("012002", "012002"),
            ("012-002", "012002"),
            ("012 002", "012002"),
            ("  062-000\t", "062000"),
            ("000000", "000000"),
        ] {
            let bsb = Bsb::parse(raw).unwrap();
            assert_eq!(bsb.as_str(), stored, "{raw}");
            assert_eq!(bsb.to_string(), stored);
        }
    }

    #[test]
    fn bsb_rejects_empty_input() {
        assert_eq!(Bsb::parse(""), Err(BsbError::Empty));
        assert_eq!(Bsb::parse(" \t\n"), Err(BsbError::Empty));
    }

    #[test]
    fn bsb_rejects_anything_but_six_digits() {
        for raw in [
            "01200",
            "0120021",
            "01-2002",
            "0120-02",
            "012--002",
            "012_002",
            "012 - 002",
            "-012002",
            "012002-",
            "01200a",
            "０１２００２",
            "٠١٢٠٠٢",
            "012\u{0301}002",
            "🇦🇺",
        ] {
            assert_eq!(Bsb::parse(raw), Err(BsbError::Format), "{raw}");
        }
        assert_eq!(Bsb::parse(&"1".repeat(100_000)), Err(BsbError::Format));
    }

    #[test]
    fn account_number_accepts_five_to_nine_digits() {
        for raw in ["12345", "123456789", "000123456", " 98765432 "] {
            assert_eq!(
                AuAccountNumber::parse(raw).unwrap().as_str(),
                raw.trim(),
                "{raw}"
            );
        }
    }

    #[test]
    fn account_number_rejects_other_input() {
        assert_eq!(
            AuAccountNumber::parse(" "),
            Err(AuAccountNumberError::Empty)
        );
        for raw in [
            "1234",
            "1234567890",
            "1234-5678",
            "12 345678",
            "12345678x",
            "１２３４５",
            "12345\u{0000}",
            "ß12345",
        ] {
            assert_eq!(
                AuAccountNumber::parse(raw),
                Err(AuAccountNumberError::Format),
                "{raw}"
            );
        }
        assert_eq!(
            AuAccountNumber::parse(&"9".repeat(100_000)),
            Err(AuAccountNumberError::Format)
        );
    }
}
