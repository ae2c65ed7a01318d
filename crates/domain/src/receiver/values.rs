//! Value types of a receiver's personal details.
//!
//! Each type can only be built through its `parse`, so holding one means the text is valid.
//! Every `parse` trims surrounding whitespace first and measures lengths in characters, never
//! bytes. Free-text values refuse control, format and invisible characters
//! ([`crate::text::is_plain`]), and their rules are checked on the text as sent and on its NFKC
//! form (so `U+FF0E` is a dot and `Ｊａｎｅ` is letters); the value kept is the trimmed text as
//! sent. The errors say what is wrong with the value only; mapping them to API error codes is
//! the caller's business.

use std::fmt;

use bank_codes::digits::is_ascii_digits;
use chrono::{Datelike, NaiveDate};
use unicode_normalization::UnicodeNormalization;

use crate::text::{all_chars_in_both_forms, is_plain, nfkc};

/// The longest text, in characters, that any receiver field may hold.
pub const MAX_LENGTH: usize = crate::validation::FieldReader::MAX_CHARS;

/// True when `text` has more than [`MAX_LENGTH`] characters (stops counting just past the limit).
fn exceeds_max_length(text: &str) -> bool {
    text.chars().nth(MAX_LENGTH).is_some()
}

/// The checks every bounded text shares, before its own rules.
enum Bounds {
    Empty,
    TooLong,
}

/// Trims `raw` and checks it is neither empty nor longer than [`MAX_LENGTH`] characters.
fn trim_bounded(raw: &str) -> Result<&str, Bounds> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        Err(Bounds::Empty)
    } else if exceeds_max_length(trimmed) {
        Err(Bounds::TooLong)
    } else {
        Ok(trimmed)
    }
}

/// A letter of a name: any Unicode alphabetic character or a combining diacritical mark
/// (U+0300–U+036F), so decomposed accents such as `e` + U+0301 are accepted.
fn is_name_letter(c: char) -> bool {
    c.is_alphabetic() || ('\u{0300}'..='\u{036F}').contains(&c)
}

/// Punctuation that names may contain: space, apostrophes (`'` and `’`) and hyphen.
fn is_name_punctuation(c: char) -> bool {
    matches!(c, ' ' | '\'' | '\u{2019}' | '-')
}

// ---------------------------------------------------------------------------------------------

/// Why an email address was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EmailAddressError {
    /// The input was empty or only whitespace.
    #[error("email address is empty")]
    Empty,
    /// The input is longer than 255 characters.
    #[error("email address is longer than 255 characters")]
    TooLong,
    /// The input is not a valid address, its domain has no dot, or it holds a control, format
    /// or invisible character.
    #[error("email address is not valid")]
    Invalid,
}

/// A syntactically valid email address whose domain contains a dot, as given (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmailAddress(String);

impl EmailAddress {
    /// Parses an address such as `jane@example.com`.
    ///
    /// A bare address is required: display-name forms (`Jane <jane@example.com>`) and domain
    /// literals (`jane@[192.0.2.1]`) are rejected.
    pub fn parse(raw: &str) -> Result<Self, EmailAddressError> {
        let text = trim_bounded(raw).map_err(|bounds| match bounds {
            Bounds::Empty => EmailAddressError::Empty,
            Bounds::TooLong => EmailAddressError::TooLong,
        })?;
        if !is_plain(text) {
            return Err(EmailAddressError::Invalid);
        }
        let options = email_address::Options::default()
            .without_display_text()
            .without_domain_literal();
        email_address::EmailAddress::parse_with_options(text, options)
            .map_err(|_| EmailAddressError::Invalid)?;
        // The syntax allows dotless domains (`jane@localhost`); a payout receiver needs a
        // routable address.
        let has_dotted_domain = text
            .rsplit_once('@')
            .is_some_and(|(_, domain)| domain.contains('.'));
        if !has_dotted_domain {
            return Err(EmailAddressError::Invalid);
        }
        Ok(Self(text.to_owned()))
    }

    /// The address as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The comparison key of the address ([`normalize_email`]), used to decide whether two
    /// addresses are the same.
    pub fn normalized(&self) -> String {
        normalize_email(&self.0)
    }
}

/// The key two e-mails are compared by (uniqueness per subaccount, the list filter); the
/// address itself is kept as sent.
///
/// The trimmed text is put in NFKC form (full-width `ｊｏｓｅ＠…` becomes `jose@…`) and split at
/// its last `@`. The local part is case-folded with full Unicode case folding (so `STRASSE` and
/// `straße` both become `strasse`), then put in NFKC form again; a quoted local part whose
/// content is a valid dot-atom (RFC 5321 §4.1.2: `"jose"` is the same mailbox as `jose`) loses
/// its quotes, any other keeps them. The domain becomes its ASCII form by UTS #46 IDNA
/// (`exämple.com` → `xn--exmple-cua.com`), or is case-folded when it is not a valid IDNA domain.
/// Text without `@` is case-folded whole, so the list filter still compares like with like.
pub fn normalize_email(email: &str) -> String {
    let compatible = nfkc(email.trim());
    let Some((local, domain)) = compatible.rsplit_once('@') else {
        return fold(&compatible);
    };
    let local = fold(local);
    let local = unquoted_local_part(&local).unwrap_or(&local);
    let domain = idna::domain_to_ascii(domain).unwrap_or_else(|_| fold(domain));
    format!("{local}@{domain}")
}

/// Full Unicode case folding followed by NFKC (folding can leave text out of normal form).
fn fold(text: &str) -> String {
    caseless::default_case_fold_str(text).nfkc().collect()
}

/// The content of a quoted local part (`"jose"`) when it is a dot-atom, so the quotes change
/// nothing: atoms of atom characters joined by single dots, no leading or trailing dot.
fn unquoted_local_part(local: &str) -> Option<&str> {
    let inner = local.strip_prefix('"')?.strip_suffix('"')?;
    let is_dot_atom = inner
        .split('.')
        .all(|atom| !atom.is_empty() && atom.chars().all(is_atom_char));
    is_dot_atom.then_some(inner)
}

/// A character allowed unquoted in a dot-atom: RFC 5321 `atext`, plus any non-ASCII
/// character that is not a control, format or invisible one (RFC 6531 `UTF8-non-ascii`).
fn is_atom_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || "!#$%&'*+-/=?^_`{|}~".contains(c)
        || (!c.is_ascii() && !crate::text::is_refused(c) && !c.is_whitespace())
}

impl fmt::Display for EmailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a person's name was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PersonNameError {
    /// The input was empty or only whitespace.
    #[error("name is empty")]
    Empty,
    /// The input is longer than 255 characters.
    #[error("name is longer than 255 characters")]
    TooLong,
    /// The input holds something other than letters, spaces, apostrophes and hyphens (as sent
    /// or in NFKC form), a control, format or invisible character, or no letter at all.
    #[error("name may contain only letters, spaces, apostrophes and hyphens")]
    InvalidCharacters,
}

/// A first, middle or last name: Unicode letters (with combining accents), spaces, apostrophes
/// and hyphens, with at least one letter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PersonName(String);

impl PersonName {
    /// Parses a name such as `Zoë`, `O'Brien` or `Jean-Luc`.
    pub fn parse(raw: &str) -> Result<Self, PersonNameError> {
        let text = trim_bounded(raw).map_err(|bounds| match bounds {
            Bounds::Empty => PersonNameError::Empty,
            Bounds::TooLong => PersonNameError::TooLong,
        })?;
        let allowed =
            all_chars_in_both_forms(text, |c| is_name_letter(c) || is_name_punctuation(c));
        if !is_plain(text) || !allowed || !text.nfkc().any(char::is_alphabetic) {
            return Err(PersonNameError::InvalidCharacters);
        }
        Ok(Self(text.to_owned()))
    }

    /// The name as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PersonName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a telephone dial code was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DialCodeError {
    /// The input was empty or only whitespace.
    #[error("dial code is empty")]
    Empty,
    /// The input is not 1 to 4 digits with an optional leading `+`.
    #[error("dial code must be 1 to 4 digits")]
    Invalid,
}

/// An international dial code of 1 to 4 ASCII digits, stored without a `+` (e.g. `61`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DialCode(String);

impl DialCode {
    /// Parses a dial code such as `61` or `+61`; the `+` is dropped.
    pub fn parse(raw: &str) -> Result<Self, DialCodeError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(DialCodeError::Empty);
        }
        let digits = text.strip_prefix('+').unwrap_or(text);
        if !is_ascii_digits(digits, 1..=4) {
            return Err(DialCodeError::Invalid);
        }
        Ok(Self(digits.to_owned()))
    }

    /// The digits, without a `+`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DialCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a phone number was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PhoneNumberError {
    /// The input was empty or only whitespace.
    #[error("phone number is empty")]
    Empty,
    /// The input is not 4 to 15 ASCII digits.
    #[error("phone number must be 4 to 15 digits")]
    Invalid,
}

/// A phone number (without dial code) of 4 to 15 ASCII digits; leading zeros are kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PhoneNumber(String);

impl PhoneNumber {
    /// Parses a phone number such as `0412345678`.
    pub fn parse(raw: &str) -> Result<Self, PhoneNumberError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(PhoneNumberError::Empty);
        }
        if !is_ascii_digits(text, 4..=15) {
            return Err(PhoneNumberError::Invalid);
        }
        Ok(Self(text.to_owned()))
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PhoneNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a street address line was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreetLineError {
    /// The input was empty or only whitespace.
    #[error("address line is empty")]
    Empty,
    /// The input is longer than 255 characters.
    #[error("address line is longer than 255 characters")]
    TooLong,
    /// The input contains a `.`, as sent or in NFKC form (`U+FF0E`, `U+2024`, …).
    #[error("address line must not contain a dot")]
    ContainsDot,
    /// The input holds a control, format or invisible character.
    #[error("address line holds a control, format or invisible character")]
    Invalid,
}

/// One line of a street address: any text up to 255 characters without a `.` (also after NFKC)
/// and without control, format or invisible characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreetLine(String);

impl StreetLine {
    /// Parses an address line such as `12 Smith St`.
    pub fn parse(raw: &str) -> Result<Self, StreetLineError> {
        let text = trim_bounded(raw).map_err(|bounds| match bounds {
            Bounds::Empty => StreetLineError::Empty,
            Bounds::TooLong => StreetLineError::TooLong,
        })?;
        if !is_plain(text) {
            return Err(StreetLineError::Invalid);
        }
        if !all_chars_in_both_forms(text, |c| c != '.') {
            return Err(StreetLineError::ContainsDot);
        }
        Ok(Self(text.to_owned()))
    }

    /// The line as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StreetLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a city name was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CityNameError {
    /// The input was empty or only whitespace.
    #[error("city is empty")]
    Empty,
    /// The input is longer than 255 characters.
    #[error("city is longer than 255 characters")]
    TooLong,
    /// The input holds something other than letters, spaces, apostrophes, hyphens and dots (as
    /// sent or in NFKC form), a control, format or invisible character, or no letter at all.
    #[error("city may contain only letters, spaces, apostrophes, hyphens and dots")]
    Invalid,
}

/// A city name: letters as for [`PersonName`], spaces, apostrophes, hyphens and dots (e.g.
/// `St. Kilda`), with at least one letter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CityName(String);

impl CityName {
    /// Parses a city name such as `Melbourne` or `St. Kilda`.
    pub fn parse(raw: &str) -> Result<Self, CityNameError> {
        let text = trim_bounded(raw).map_err(|bounds| match bounds {
            Bounds::Empty => CityNameError::Empty,
            Bounds::TooLong => CityNameError::TooLong,
        })?;
        let allowed = all_chars_in_both_forms(text, |c| {
            is_name_letter(c) || is_name_punctuation(c) || c == '.'
        });
        if !is_plain(text) || !allowed || !text.nfkc().any(char::is_alphabetic) {
            return Err(CityNameError::Invalid);
        }
        Ok(Self(text.to_owned()))
    }

    /// The city as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CityName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a bounded text was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BoundedTextError {
    /// The input was empty or only whitespace.
    #[error("text is empty")]
    Empty,
    /// The input is longer than 255 characters.
    #[error("text is longer than 255 characters")]
    TooLong,
    /// The input holds a control, format or invisible character.
    #[error("text holds a control, format or invisible character")]
    Invalid,
}

/// Any non-empty text up to 255 characters without control, format or invisible characters (a
/// state, postcode or client reference).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoundedText(String);

impl BoundedText {
    /// Parses any non-blank text of at most 255 characters that [`is_plain`].
    pub fn parse(raw: &str) -> Result<Self, BoundedTextError> {
        let text = trim_bounded(raw).map_err(|bounds| match bounds {
            Bounds::Empty => BoundedTextError::Empty,
            Bounds::TooLong => BoundedTextError::TooLong,
        })?;
        if !is_plain(text) {
            return Err(BoundedTextError::Invalid);
        }
        Ok(Self(text.to_owned()))
    }

    /// The text as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BoundedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a gender was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GenderError {
    /// The input is not `M` or `F` (in either case).
    #[error("gender must be F or M")]
    Invalid,
}

/// A receiver's gender as the API records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
#[strum(const_into_str, ascii_case_insensitive)]
pub enum Gender {
    /// `M`.
    #[strum(serialize = "M")]
    Male,
    /// `F`.
    #[strum(serialize = "F")]
    Female,
}

impl Gender {
    /// Parses `M` or `F`, case-insensitively, ignoring surrounding whitespace.
    pub fn parse(raw: &str) -> Result<Self, GenderError> {
        raw.trim().parse().map_err(|_| GenderError::Invalid)
    }

    /// `M` or `F`.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }
}

impl fmt::Display for Gender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a date of birth was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DateOfBirthError {
    /// The input was empty or only whitespace.
    #[error("date of birth is empty")]
    Empty,
    /// The input is not a real `YYYY-MM-DD` date on or after 1900-01-01.
    #[error("date of birth must be a valid date YYYY-MM-DD")]
    Invalid,
    /// The date is today or later.
    #[error("date of birth must be in the past")]
    NotInPast,
}

/// A date of birth: a real calendar date from 1900-01-01 up to (not including) the day it was
/// parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DateOfBirth(NaiveDate);

impl DateOfBirth {
    /// Parses exactly `YYYY-MM-DD` (zero-padded), which must fall strictly before `today`.
    pub fn parse(raw: &str, today: NaiveDate) -> Result<Self, DateOfBirthError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(DateOfBirthError::Empty);
        }
        // Eleven is enough to tell "too long" without walking a huge input.
        let chars: Vec<char> = text.chars().take(11).collect();
        let [y1, y2, y3, y4, '-', m1, m2, '-', d1, d2] = chars[..] else {
            return Err(DateOfBirthError::Invalid);
        };
        let (Some(year), Some(month), Some(day)) = (
            decimal(&[y1, y2, y3, y4]),
            decimal(&[m1, m2]),
            decimal(&[d1, d2]),
        ) else {
            return Err(DateOfBirthError::Invalid);
        };
        let year = i32::try_from(year).map_err(|_| DateOfBirthError::Invalid)?;
        let date = NaiveDate::from_ymd_opt(year, month, day).ok_or(DateOfBirthError::Invalid)?;
        if date < Self::earliest() {
            return Err(DateOfBirthError::Invalid);
        }
        if date >= today {
            return Err(DateOfBirthError::NotInPast);
        }
        Ok(Self(date))
    }

    /// The date.
    pub fn date(&self) -> NaiveDate {
        self.0
    }

    /// 1900-01-01, the earliest date of birth accepted.
    fn earliest() -> NaiveDate {
        NaiveDate::from_ymd_opt(1900, 1, 1).unwrap_or(NaiveDate::MIN)
    }
}

/// The value of a run of ASCII digits, or `None` if any character is not one.
fn decimal(digits: &[char]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, c| {
        // `to_digit` accepts only ASCII digits, so other scripts' digits are refused here.
        c.to_digit(10).map(|digit| value * 10 + digit)
    })
}

impl fmt::Display for DateOfBirth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Parsing guarantees a four-digit year, so this is always `YYYY-MM-DD`.
        write!(
            f,
            "{:04}-{:02}-{:02}",
            self.0.year(),
            self.0.month(),
            self.0.day()
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "values_tests.rs"]
mod tests;
