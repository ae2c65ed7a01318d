//! Money: supported assets, amounts in integer minor units, fee percentages. Never floats.

use std::fmt;

use strum::{EnumString, IntoStaticStr, VariantArray};

/// A currency the service pays out in (AUD, USD, CAD, EUR, NZD).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    VariantArray,
    IntoStaticStr,
    EnumString,
)]
#[strum(const_into_str, ascii_case_insensitive)]
pub enum Asset {
    /// Australian dollar.
    #[strum(serialize = "AUD")]
    Aud,
    /// US dollar.
    #[strum(serialize = "USD")]
    Usd,
    /// Canadian dollar.
    #[strum(serialize = "CAD")]
    Cad,
    /// Euro.
    #[strum(serialize = "EUR")]
    Eur,
    /// New Zealand dollar.
    #[strum(serialize = "NZD")]
    Nzd,
}

impl Asset {
    /// Every supported asset.
    pub const ALL: &'static [Asset] = Self::VARIANTS;

    /// Parses an ISO 4217 code, case-insensitively (the provider's API accepts `aud`).
    pub fn parse(raw: &str) -> Option<Asset> {
        raw.trim().parse().ok()
    }

    /// The upper-case ISO 4217 code.
    pub const fn code(self) -> &'static str {
        self.into_str()
    }
}

impl fmt::Display for Asset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The largest amount one operation may move: 10^12 minor units (docs/API.md, Conventions,
/// Values).
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;

/// A positive amount in minor units (cents), at most [`MAX_AMOUNT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MinorUnits(i64);

/// Why a text or number is not an amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Not a whole number of minor units (decimal point, sign, letters, empty).
    #[error("amount must be a whole number of minor units")]
    NotAnInteger,
    /// Zero or below, or above [`MAX_AMOUNT`].
    #[error("amount must be between 1 and 10^12")]
    OutOfRange,
}

impl MinorUnits {
    /// Checks the range of an integer amount.
    pub fn new(value: i64) -> Result<Self, AmountError> {
        if (1..=MAX_AMOUNT).contains(&value) {
            Ok(Self(value))
        } else {
            Err(AmountError::OutOfRange)
        }
    }

    /// Parses a string of ASCII digits (the provider's API documents `amount` as a string).
    pub fn parse(raw: &str) -> Result<Self, AmountError> {
        let raw = raw.trim();
        if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AmountError::NotAnInteger);
        }
        // More than 13 digits cannot be in range; this also keeps the parse from overflowing.
        if raw.trim_start_matches('0').len() > 13 {
            return Err(AmountError::OutOfRange);
        }
        raw.parse::<i64>()
            .map_err(|_| AmountError::NotAnInteger)
            .and_then(Self::new)
    }

    /// The amount in minor units.
    pub const fn get(self) -> i64 {
        self.0
    }
}

/// A fee in minor units: zero (no template, or one that charges nothing) or more. Not a
/// [`MinorUnits`]: a fee can be zero, and a template's fixed part and minimum (each up to
/// [`MAX_AMOUNT`]) plus up to 100 % of an amount can go beyond [`MAX_AMOUNT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fee(i64);

/// Why a number is not a fee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a fee cannot be negative")]
pub struct NegativeFee;

impl Fee {
    /// No fee.
    pub const ZERO: Fee = Fee(0);

    /// Checks that a fee is not negative (a stored one, say).
    pub const fn new(value: i64) -> Result<Self, NegativeFee> {
        if value >= 0 {
            Ok(Self(value))
        } else {
            Err(NegativeFee)
        }
    }

    /// `value` as a fee, a negative value counting as none (for results of fee arithmetic,
    /// whose parts are never negative).
    pub const fn at_least_zero(value: i64) -> Self {
        if value >= 0 { Self(value) } else { Self::ZERO }
    }

    /// The fee in minor units.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// Whether there is no fee.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// A fee percentage with four decimal places, held as ten-thousandths of a percent
/// (`1.25` % is 12_500), so fee arithmetic stays in integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Percentage(u32);

/// Why a text is not a percentage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("percentage must be a number from 0 to 100 with at most 4 decimals")]
pub struct PercentageError;

impl Percentage {
    /// Scale of the stored integer: ten-thousandths of a percent.
    pub const SCALE: u32 = 10_000;

    /// Parses `"1.25"`, `"0"`, `"100"`; at most four decimals, 0..=100.
    pub fn parse(raw: &str) -> Result<Self, PercentageError> {
        let raw = raw.trim();
        let (whole, fraction) = raw.split_once('.').unwrap_or((raw, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty()
            || whole.len() > 3
            || fraction.len() > 4
            || !digits(whole)
            || !digits(fraction)
        {
            return Err(PercentageError);
        }
        if raw.ends_with('.') {
            return Err(PercentageError);
        }
        let whole: u32 = whole.parse().map_err(|_| PercentageError)?;
        let padded = format!("{fraction:0<4}");
        let fraction: u32 = padded.parse().map_err(|_| PercentageError)?;
        let value = whole * Self::SCALE + fraction;
        if value > 100 * Self::SCALE {
            return Err(PercentageError);
        }
        Ok(Self(value))
    }

    /// Builds from the stored integer (ten-thousandths of a percent).
    pub fn from_ten_thousandths(value: u32) -> Result<Self, PercentageError> {
        if value > 100 * Self::SCALE {
            Err(PercentageError)
        } else {
            Ok(Self(value))
        }
    }

    /// The stored integer (ten-thousandths of a percent).
    pub const fn ten_thousandths(self) -> u32 {
        self.0
    }

    /// The percentage as the wire shows it (`fee_data.percentage` is a JSON number).
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / f64::from(Self::SCALE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_parse_case_insensitively() {
        assert_eq!(Asset::parse("aud"), Some(Asset::Aud));
        assert_eq!(Asset::parse(" NZD "), Some(Asset::Nzd));
        assert_eq!(Asset::parse("GBP"), None);
        assert_eq!(Asset::parse(""), None);
        assert_eq!(Asset::Eur.to_string(), "EUR");
    }

    #[test]
    fn amounts_are_whole_positive_and_bounded() {
        assert_eq!(MinorUnits::parse("1").map(MinorUnits::get), Ok(1));
        assert_eq!(
            MinorUnits::parse("1000000000000").map(MinorUnits::get),
            Ok(MAX_AMOUNT)
        );
        assert_eq!(MinorUnits::parse("0001").map(MinorUnits::get), Ok(1));
        assert_eq!(
            MinorUnits::parse("1000000000001"),
            Err(AmountError::OutOfRange)
        );
        assert_eq!(
            MinorUnits::parse("99999999999999999999999"),
            Err(AmountError::OutOfRange)
        );
        assert_eq!(MinorUnits::parse("0"), Err(AmountError::OutOfRange));
        for bad in ["", "-5", "+5", "1.5", "1e3", "١٢٣", "12a"] {
            assert_eq!(
                MinorUnits::parse(bad),
                Err(AmountError::NotAnInteger),
                "{bad}"
            );
        }
        assert_eq!(MinorUnits::new(-1), Err(AmountError::OutOfRange));
    }

    #[test]
    fn fees_are_zero_or_more_and_may_pass_the_largest_amount() {
        assert_eq!(Fee::new(0), Ok(Fee::ZERO));
        assert_eq!(Fee::new(2 * MAX_AMOUNT).map(Fee::get), Ok(2 * MAX_AMOUNT));
        assert_eq!(Fee::new(-1), Err(NegativeFee));
        assert_eq!(Fee::at_least_zero(-5), Fee::ZERO);
        assert!(Fee::ZERO.is_zero());
    }

    #[test]
    fn percentages_keep_four_decimals() {
        assert_eq!(
            Percentage::parse("1.25").map(Percentage::ten_thousandths),
            Ok(12_500)
        );
        assert_eq!(
            Percentage::parse("0").map(Percentage::ten_thousandths),
            Ok(0)
        );
        assert_eq!(
            Percentage::parse("100").map(Percentage::ten_thousandths),
            Ok(1_000_000)
        );
        assert_eq!(
            Percentage::parse("0.0001").map(Percentage::ten_thousandths),
            Ok(1)
        );
        for bad in [
            "", ".5", "1.", "1.00001", "100.01", "-1", "abc", "1,5", "1000",
        ] {
            assert_eq!(Percentage::parse(bad), Err(PercentageError), "{bad}");
        }
        assert_eq!(Percentage::parse("2.5").map(Percentage::as_f64), Ok(2.5));
    }
}
