//! The IBAN (ISO 13616): the country's length and BBAN format from SWIFT's IBAN registry (the
//! `iban_validate` crate, generated from it), and the ISO 7064 MOD 97-10 check digits.

use iban::{ParseBaseIbanError, ParseIbanError};

/// The longest IBAN any country issues.
pub const MAX_LENGTH: usize = 34;

/// Why a text is not an IBAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IbanError {
    /// Empty or only whitespace.
    Empty,
    /// Characters that are not letters or digits, an unknown country, or a length or BBAN
    /// format that is not the country's.
    Format,
    /// The format is the country's but the check digits are wrong.
    CheckDigits,
}

/// The electronic form (upper case, no spaces) of the IBAN `raw`, given in electronic or paper
/// form and any letter case (`DE89370400440532013000`, `de89 3704 0044 0532 0130 00`).
///
/// Whitespace anywhere is removed. Checks, in order: the country's length and BBAN format
/// ([`IbanError::Format`]), then the check digits ([`IbanError::CheckDigits`]), which run from
/// 02 to 98 (`99` passes MOD 97-10 exactly when `02` does, and is refused).
///
/// # Errors
/// What is wrong, as above; a wrong format is reported before wrong check digits.
pub fn parse(raw: &str) -> Result<String, IbanError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(IbanError::Empty);
    }
    let mut compact = String::with_capacity(MAX_LENGTH);
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        if !c.is_ascii_alphanumeric() || compact.len() == MAX_LENGTH {
            return Err(IbanError::Format);
        }
        compact.push(c.to_ascii_uppercase());
    }
    match compact.parse::<iban::Iban>() {
        Ok(_) => {}
        Err(ParseIbanError::InvalidBaseIban {
            source: ParseBaseIbanError::InvalidChecksum,
        }) => return Err(checksum_failure(&compact)),
        Err(_) => return Err(IbanError::Format),
    }
    // The crate only rules out `00` and `01`.
    if compact.get(2..4) == Some("99") {
        return Err(IbanError::CheckDigits);
    }
    Ok(compact)
}

/// Whether `value` is already an IBAN in electronic form: [`parse`] accepts it unchanged.
#[must_use]
pub fn is_electronic(value: &str) -> bool {
    parse(value).is_ok_and(|electronic| electronic == value)
}

/// Classifies an IBAN the crate refused for its check digits: the crate checks them before the
/// country format, so the IBAN is checked again with the check digits it should have had. If
/// that passes, only the check digits were wrong; otherwise the format is wrong too, which is
/// the more useful thing to report.
///
/// `compact` has passed the crate's shape check: two upper-case letters, two digits, then
/// upper-case ASCII letters and digits.
fn checksum_failure(compact: &str) -> IbanError {
    let (Some(country), Some(bban)) = (compact.get(0..2), compact.get(4..)) else {
        return IbanError::Format;
    };
    let corrected = format!("{country}{:02}{bban}", check_digits(country, bban));
    match corrected.parse::<iban::Iban>() {
        Ok(_) => IbanError::CheckDigits,
        Err(_) => IbanError::Format,
    }
}

/// The check digits (2 to 98) of an IBAN of `country` with `bban`.
#[must_use]
pub fn check_digits(country: &str, bban: &str) -> u32 {
    98 - mod97(bban.chars().chain(country.chars()).chain("00".chars()))
}

/// The ISO 7064 MOD 97-10 remainder of `chars`, letters counting as 10 (`A`) to 35 (`Z`).
fn mod97(chars: impl Iterator<Item = char>) -> u32 {
    chars.fold(0, |acc, c| match c.to_digit(36) {
        Some(value) if value >= 10 => (acc * 100 + value) % 97,
        Some(value) => (acc * 10 + value) % 97,
        None => acc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_digits_follow_the_iso_7064_example() {
        assert_eq!(check_digits("DE", "370400440532013000"), 89);
        assert_eq!(check_digits("GB", "WEST12345698765432"), 82);
    }

    #[test]
    fn either_form_gives_the_electronic_form() {
        for (raw, electronic) in [
            ("DE89370400440532013000", "DE89370400440532013000"),
            ("de89 3704 0044 0532 0130 00", "DE89370400440532013000"),
            ("  GB82 WEST 1234 5698 7654 32\n", "GB82WEST12345698765432"),
            ("FR1420041010050500013M02606", "FR1420041010050500013M02606"),
            ("TR330006100519786457841326", "TR330006100519786457841326"),
        ] {
            assert_eq!(parse(raw).as_deref(), Ok(electronic), "{raw}");
        }
        assert!(is_electronic("DE89370400440532013000"));
        assert!(!is_electronic("DE89 3704 0044 0532 0130 00"));
        assert!(!is_electronic("de89370400440532013000"));
    }

    #[test]
    fn wrong_check_digits_and_wrong_formats_are_told_apart() {
        assert_eq!(parse(" "), Err(IbanError::Empty));
        for raw in ["DE88370400440532013000", "DE00370400440532013000"] {
            assert_eq!(parse(raw), Err(IbanError::CheckDigits), "{raw}");
        }
        for raw in [
            "DE8937040044053201300",
            "US64SVBKUS6S3300958879",
            "DE89-3704-0044-0532-0130-00",
            "ＤＥ89370400440532013000",
            "DE8937040044053201300é",
            "DE",
        ] {
            assert_eq!(parse(raw), Err(IbanError::Format), "{raw}");
        }
        assert_eq!(parse(&"A".repeat(100_000)), Err(IbanError::Format));
    }

    #[test]
    fn check_digits_99_are_refused() {
        // A DE account whose check digits are 02, written with 99, which passes MOD 97-10 too.
        let with_02 = (0..100_000)
            .map(|n| format!("37040044{n:010}"))
            .map(|bban| format!("DE{:02}{bban}", check_digits("DE", &bban)))
            .find(|iban| &iban[2..4] == "02");
        let Some(with_02) = with_02 else {
            panic!("no DE IBAN with check digits 02")
        };
        assert!(parse(&with_02).is_ok());
        assert_eq!(
            parse(&format!("DE99{}", &with_02[4..])),
            Err(IbanError::CheckDigits)
        );
    }
}
