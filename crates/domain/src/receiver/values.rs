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
mod tests {
    use super::*;

    /// Strings that must never make a parser panic.
    fn odd_inputs() -> Vec<String> {
        vec![
            "🙂".to_owned(),
            "👩‍👩‍👧‍👦".to_owned(),
            "🇦🇺".repeat(200),
            "é".repeat(300),
            "\u{0301}".to_owned(),
            "\u{0000}\u{FFFF}\u{10FFFF}".to_owned(),
            "\u{202E}abc".to_owned(),
            "\u{200B}".to_owned(),
            "a@".repeat(5_000),
            "1".repeat(100_000),
            "𝔸𝕦𝕤𝕥𝕣𝕒𝕝𝕚𝕒".to_owned(),
            "٠١٢٣".to_owned(),
            "२०२०-०१-०१".to_owned(),
            "２０２０-０１-０１".to_owned(),
            "\"@\".com".to_owned(),
            " <@> ".to_owned(),
            "\u{3000}".to_owned(),
        ]
    }

    fn day(year: i32, month: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(year, month, day).unwrap()
    }

    #[test]
    fn no_parser_panics_on_odd_unicode() {
        let today = day(2025, 6, 15);
        for input in odd_inputs() {
            let _ = EmailAddress::parse(&input);
            let _ = PersonName::parse(&input);
            let _ = DialCode::parse(&input);
            let _ = PhoneNumber::parse(&input);
            let _ = StreetLine::parse(&input);
            let _ = CityName::parse(&input);
            let _ = BoundedText::parse(&input);
            let _ = Gender::parse(&input);
            let _ = DateOfBirth::parse(&input, today);
        }
    }

    // --- EmailAddress ---

    #[test]
    fn email_accepts_ordinary_addresses() {
        for text in [
            "jane@example.com",
            "Jane.Doe+payouts@Mail.Example.co.uk",
            "a@b.co",
            "o'brien@example.ie",
            "josé@exämple.com",
        ] {
            assert_eq!(EmailAddress::parse(text).unwrap().as_str(), text);
        }
    }

    #[test]
    fn email_trims_keeps_case_and_normalizes_to_lower_case() {
        let email = EmailAddress::parse("  Jane.Doe@Example.COM\n").unwrap();
        assert_eq!(email.as_str(), "Jane.Doe@Example.COM");
        assert_eq!(email.to_string(), "Jane.Doe@Example.COM");
        assert_eq!(email.normalized(), "jane.doe@example.com");
    }

    /// The security probe's duplicates: each pair must share one comparison key.
    #[test]
    fn email_key_unifies_full_width_quoting_case_folding_and_idna() {
        for (a, b) in [
            ("jose@example.com", "ｊｏｓｅ@example.com"),
            ("jose@example.com", "\"jose\"@example.com"),
            ("STRASSE@example.com", "straße@example.com"),
            ("jose@exämple.com", "jose@xn--exmple-cua.com"),
            ("jose@EXÄMPLE.com", "jose@exämple.com"),
            ("\"Jose.Doe\"@Example.com", "jose.doe@example.com"),
        ] {
            let key_a = EmailAddress::parse(a).unwrap().normalized();
            let key_b = EmailAddress::parse(b).unwrap().normalized();
            assert_eq!(key_a, key_b, "{a} / {b}");
        }
        assert_eq!(normalize_email("ｊｏｓｅ@example.com"), "jose@example.com");
        assert_eq!(normalize_email("straße@example.com"), "strasse@example.com");
        assert_eq!(
            normalize_email("jose@exämple.com"),
            "jose@xn--exmple-cua.com"
        );
        // Forms the validator refuses still meet in the key, which the list filter uses.
        assert_eq!(
            normalize_email("jose@ｅｘａｍｐｌｅ．ｃｏｍ"),
            "jose@example.com"
        );
        assert_eq!(
            normalize_email("JOSE\u{0301}@example.com"),
            "josé@example.com"
        );
        assert_eq!(
            EmailAddress::parse("jose@ｅｘａｍｐｌｅ．ｃｏｍ"),
            Err(EmailAddressError::Invalid)
        );
    }

    proptest::proptest! {
        /// The list filter is normalised when parsed and again by the store: a key must be its
        /// own key.
        #[test]
        fn email_key_is_its_own_key(
            text in "[a-zA-Z0-9\"@.ßẞｊＪ＠．\u{0301}ä\u{FB01} -]{0,24}",
        ) {
            let key = normalize_email(&text);
            proptest::prop_assert_eq!(normalize_email(&key), key);
        }
    }

    #[test]
    fn email_key_keeps_the_address_as_sent() {
        // Quoted local parts were accepted before the key changed, and still are.
        for text in [
            "ｊｏｓｅ@example.com",
            "\"jose\"@example.com",
            "\"jo se\"@example.com",
            "straße@exämple.com",
        ] {
            assert_eq!(EmailAddress::parse(text).unwrap().as_str(), text);
        }
    }

    #[test]
    fn email_key_keeps_quotes_that_change_the_mailbox() {
        // Quoted strings that are not dot-atoms name other mailboxes than their unquoted text.
        for (quoted, key) in [
            ("\"jo se\"@example.com", "\"jo se\"@example.com"),
            ("\"jo..se\"@example.com", "\"jo..se\"@example.com"),
            ("\".jose\"@example.com", "\".jose\"@example.com"),
            ("\"jose.\"@example.com", "\"jose.\"@example.com"),
            ("\"jo@se\"@example.com", "\"jo@se\"@example.com"),
            ("\"\"@example.com", "\"\"@example.com"),
        ] {
            assert_eq!(normalize_email(quoted), key, "{quoted}");
        }
        assert_ne!(
            normalize_email("\"jo se\"@example.com"),
            normalize_email("jose@example.com")
        );
    }

    #[test]
    fn email_key_of_text_that_is_no_address_is_folded() {
        assert_eq!(normalize_email("ＳＴＲＡＳＳＥ"), "strasse");
        assert_eq!(normalize_email("a@-bad-.com"), "a@-bad-.com");
        assert_eq!(normalize_email(" A@B.COM "), "a@b.com");
    }

    #[test]
    fn email_rejects_control_format_and_invisible_characters() {
        for text in [
            "jo\u{202E}se@example.com",
            "jo\u{200B}se@example.com",
            "\u{FEFF}jose@example.com",
            "jose\u{3164}@example.com",
            "\"jo\u{0007}se\"@example.com",
        ] {
            assert_eq!(
                EmailAddress::parse(text),
                Err(EmailAddressError::Invalid),
                "{text:?}"
            );
        }
    }

    #[test]
    fn email_rejects_empty() {
        assert_eq!(EmailAddress::parse(""), Err(EmailAddressError::Empty));
        assert_eq!(EmailAddress::parse("  \t"), Err(EmailAddressError::Empty));
    }

    #[test]
    fn email_length_limit_is_255_characters() {
        // Labels of at most 63 characters keep the address syntactically valid.
        let label = "d".repeat(60);
        let domain = format!("{label}.{label}.{label}.com"); // 60*3 + 2 + 4 = 186
        let local = "l".repeat(64);
        let at_limit = format!("{local}@{domain}{}", ".c".repeat(2)); // 64 + 1 + 186 + 4
        assert_eq!(at_limit.chars().count(), 255);
        assert!(EmailAddress::parse(&at_limit).is_ok());
        let over = format!("{at_limit}c");
        assert_eq!(EmailAddress::parse(&over), Err(EmailAddressError::TooLong));
        let huge = "x".repeat(10_000);
        assert_eq!(EmailAddress::parse(&huge), Err(EmailAddressError::TooLong));
    }

    #[test]
    fn email_rejects_invalid_syntax_and_dotless_domains() {
        for text in [
            "jane",
            "jane@",
            "@example.com",
            "jane@localhost",
            "jane@example.",
            "jane@.com",
            "jane@@example.com",
            "ja ne@example.com",
            "jane@exa mple.com",
            "Jane <jane@example.com>",
            "<jane@example.com>",
            "jane@[192.0.2.1]",
            "jane..doe@example.com",
            "jane@example..com",
            "🙂@🙂",
        ] {
            assert_eq!(
                EmailAddress::parse(text),
                Err(EmailAddressError::Invalid),
                "{text}"
            );
        }
    }

    // --- PersonName ---

    #[test]
    fn name_accepts_letters_of_any_script_and_name_punctuation() {
        for text in [
            "Jane",
            "O'Brien",
            "D’Angelo",
            "Jean-Luc",
            "Mary Ann",
            "Zoë",
            "Jose\u{0301}",
            "Łukasz",
            "Ørsted",
            "Nguyễn",
            "Алексей",
            "山田",
            "محمد",
            "X",
        ] {
            assert_eq!(PersonName::parse(text).unwrap().as_str(), text, "{text}");
        }
    }

    #[test]
    fn name_checks_full_width_letters_after_nfkc_and_keeps_them_as_sent() {
        for text in ["Ｊａｎｅ", "Ｏ’Ｂｒｉｅｎ", "𝔸𝕦𝕤𝕥𝕚𝕟"] {
            assert_eq!(PersonName::parse(text).unwrap().as_str(), text, "{text}");
        }
    }

    #[test]
    fn name_trims() {
        assert_eq!(PersonName::parse("  Jane \n").unwrap().to_string(), "Jane");
    }

    #[test]
    fn name_rejects_empty() {
        assert_eq!(PersonName::parse(""), Err(PersonNameError::Empty));
        assert_eq!(PersonName::parse("   "), Err(PersonNameError::Empty));
    }

    #[test]
    fn name_length_limit_is_255_characters() {
        // Two-byte letters prove the limit counts characters, not bytes.
        assert!(PersonName::parse(&"é".repeat(255)).is_ok());
        assert_eq!(
            PersonName::parse(&"é".repeat(256)),
            Err(PersonNameError::TooLong)
        );
        assert!(PersonName::parse(&format!("  {}  ", "a".repeat(255))).is_ok());
    }

    #[test]
    fn name_rejects_other_characters_or_no_letter() {
        for text in [
            "Jane2",
            "Jane.",
            "Jane_Doe",
            "Jane\tDoe",
            "Jane\u{00A0}Doe",
            "Jane🙂",
            "Ja\u{200B}ne",
            "-",
            "'",
            "- ' -",
            "\u{0301}",
            "Jane@Doe",
            "Robert); DROP TABLE",
            // The probe: a Hangul filler alone, or inside a name, is no letter.
            "\u{3164}",
            "Jane\u{3164}",
            "\u{115F}",
            "\u{1160}",
            "\u{FFA0}",
            "\u{2800}",
            "Ja\u{200D}ne",
            "Ja\u{202E}ne",
            "Ja\u{FEFF}ne",
            "Ja\u{00AD}ne",
            "Jane\rDoe",
            "Jane\nDoe",
            // Compatibility forms of forbidden characters are checked after NFKC.
            "Jane\u{FF0E}",
            "Ｊａｎｅ２",
            "Jane\u{2024}",
        ] {
            assert_eq!(
                PersonName::parse(text),
                Err(PersonNameError::InvalidCharacters),
                "{text}"
            );
        }
    }

    // --- DialCode ---

    #[test]
    fn dial_code_accepts_one_to_four_digits_with_optional_plus() {
        assert_eq!(DialCode::parse("1").unwrap().as_str(), "1");
        assert_eq!(DialCode::parse("61").unwrap().as_str(), "61");
        assert_eq!(DialCode::parse("+61").unwrap().as_str(), "61");
        assert_eq!(DialCode::parse(" +1868 ").unwrap().to_string(), "1868");
        assert_eq!(DialCode::parse("0000").unwrap().as_str(), "0000");
    }

    #[test]
    fn dial_code_rejects_empty() {
        assert_eq!(DialCode::parse(""), Err(DialCodeError::Empty));
        assert_eq!(DialCode::parse(" "), Err(DialCodeError::Empty));
    }

    #[test]
    fn dial_code_rejects_anything_else() {
        for text in [
            "+", "12345", "+12345", "++61", "6+1", "61+", "+ 61", "6 1", "-61", "a1", "６１", "٦١",
            "1.5",
        ] {
            assert_eq!(DialCode::parse(text), Err(DialCodeError::Invalid), "{text}");
        }
    }

    // --- PhoneNumber ---

    #[test]
    fn phone_accepts_four_to_fifteen_digits() {
        assert_eq!(PhoneNumber::parse("1234").unwrap().as_str(), "1234");
        assert_eq!(
            PhoneNumber::parse("0412345678").unwrap().as_str(),
            "0412345678"
        );
        assert_eq!(
            PhoneNumber::parse(" 123456789012345 ").unwrap().to_string(),
            "123456789012345"
        );
    }

    #[test]
    fn phone_rejects_empty() {
        assert_eq!(PhoneNumber::parse(""), Err(PhoneNumberError::Empty));
        assert_eq!(PhoneNumber::parse("\n"), Err(PhoneNumberError::Empty));
    }

    #[test]
    fn phone_rejects_anything_else() {
        for text in [
            "123",
            "1234567890123456",
            "+61412345678",
            "0412 345 678",
            "0412-345-678",
            "(04)12345678",
            "04123456x",
            "０４１２３４５",
        ] {
            assert_eq!(
                PhoneNumber::parse(text),
                Err(PhoneNumberError::Invalid),
                "{text}"
            );
        }
    }

    // --- StreetLine ---

    #[test]
    fn street_line_accepts_any_text_without_a_dot() {
        for text in [
            "12 Smith St",
            "Unit 4/27 O'Connell Rd",
            "Straße 5",
            "#3, 北京路",
        ] {
            assert_eq!(StreetLine::parse(text).unwrap().as_str(), text);
        }
        assert_eq!(
            StreetLine::parse(" 1 Main Rd ").unwrap().to_string(),
            "1 Main Rd"
        );
    }

    #[test]
    fn street_line_rejects_empty_too_long_and_dots() {
        assert_eq!(StreetLine::parse(""), Err(StreetLineError::Empty));
        assert_eq!(StreetLine::parse("  "), Err(StreetLineError::Empty));
        assert!(StreetLine::parse(&"ß".repeat(255)).is_ok());
        assert_eq!(
            StreetLine::parse(&"ß".repeat(256)),
            Err(StreetLineError::TooLong)
        );
        assert_eq!(
            StreetLine::parse("12 Smith St."),
            Err(StreetLineError::ContainsDot)
        );
        assert_eq!(StreetLine::parse("."), Err(StreetLineError::ContainsDot));
    }

    #[test]
    fn street_line_counts_compatibility_dots_after_nfkc() {
        // The probe: full-width full stop and one-dot leader.
        for text in [
            "12 Smith St\u{FF0E}",
            "P\u{2024}O Box 5",
            "Lvl\u{2025}3",
            "Unit\u{FE52}4",
        ] {
            assert_eq!(
                StreetLine::parse(text),
                Err(StreetLineError::ContainsDot),
                "{text:?}"
            );
        }
        assert_eq!(
            StreetLine::parse("１２ Ｓｍｉｔｈ Ｓｔ").unwrap().as_str(),
            "１２ Ｓｍｉｔｈ Ｓｔ"
        );
    }

    #[test]
    fn street_line_rejects_control_format_and_invisible_characters() {
        // The probe: a right-to-left override in an address.
        for text in [
            "12 \u{202E}tS htimS",
            "12 Smith\nSt",
            "12 Smith\rSt",
            "12\tSmith St",
            "12 Smith St\u{2066}",
            "\u{200B}12 Smith St",
            "12 Smith\u{2028}St",
            "\u{3164}",
        ] {
            assert_eq!(
                StreetLine::parse(text),
                Err(StreetLineError::Invalid),
                "{text:?}"
            );
        }
    }

    // --- CityName ---

    #[test]
    fn city_accepts_letters_and_city_punctuation() {
        for text in [
            "Melbourne",
            "St. Kilda",
            "Stratford-upon-Avon",
            "L'Aquila",
            "São Paulo",
            "Zürich",
            "東京",
        ] {
            assert_eq!(CityName::parse(text).unwrap().as_str(), text, "{text}");
        }
        assert_eq!(CityName::parse(" Perth ").unwrap().to_string(), "Perth");
    }

    #[test]
    fn city_rejects_empty_and_too_long() {
        assert_eq!(CityName::parse(""), Err(CityNameError::Empty));
        assert_eq!(CityName::parse(" "), Err(CityNameError::Empty));
        assert!(CityName::parse(&"a".repeat(255)).is_ok());
        assert_eq!(
            CityName::parse(&"a".repeat(256)),
            Err(CityNameError::TooLong)
        );
    }

    #[test]
    fn city_rejects_other_characters_or_no_letter() {
        for text in [
            "Melbourne 3000",
            "Sydney!",
            "Perth/WA",
            "...",
            "-",
            "🏙️",
            "A\tB",
            "Perth\u{202E}",
            "\u{3164}",
            "Perth\u{FF01}",
            "Ｐｅｒｔｈ３",
        ] {
            assert_eq!(CityName::parse(text), Err(CityNameError::Invalid), "{text}");
        }
    }

    // --- BoundedText ---

    #[test]
    fn bounded_text_accepts_any_text_up_to_255_characters() {
        assert_eq!(BoundedText::parse("VIC").unwrap().as_str(), "VIC");
        assert_eq!(BoundedText::parse(" 3000 ").unwrap().to_string(), "3000");
        assert_eq!(BoundedText::parse("a.b/c 🙂").unwrap().as_str(), "a.b/c 🙂");
        assert!(BoundedText::parse(&"🙂".repeat(255)).is_ok());
    }

    #[test]
    fn bounded_text_rejects_control_format_and_invisible_characters() {
        // The probe: CR/LF in `state`.
        for text in [
            "VIC\r\nX-Injected: 1",
            "VIC\nNSW",
            "V\tIC",
            "VIC\u{202E}",
            "V\u{200B}IC",
            "\u{3164}",
            "\u{FFA0}",
            "VIC\u{2029}NSW",
            "ref\u{E0001}",
        ] {
            assert_eq!(
                BoundedText::parse(text),
                Err(BoundedTextError::Invalid),
                "{text:?}"
            );
        }
        assert_eq!(BoundedText::parse(" VIC\r\n").unwrap().as_str(), "VIC");
    }

    #[test]
    fn bounded_text_rejects_empty_and_too_long() {
        assert_eq!(BoundedText::parse(""), Err(BoundedTextError::Empty));
        assert_eq!(BoundedText::parse("\t \n"), Err(BoundedTextError::Empty));
        assert_eq!(
            BoundedText::parse(&"🙂".repeat(256)),
            Err(BoundedTextError::TooLong)
        );
    }

    // --- Gender ---

    #[test]
    fn gender_parses_m_and_f_in_either_case() {
        assert_eq!(Gender::parse("M"), Ok(Gender::Male));
        assert_eq!(Gender::parse("m"), Ok(Gender::Male));
        assert_eq!(Gender::parse("F"), Ok(Gender::Female));
        assert_eq!(Gender::parse(" f "), Ok(Gender::Female));
        assert_eq!(Gender::Male.as_str(), "M");
        assert_eq!(Gender::Female.to_string(), "F");
    }

    #[test]
    fn gender_rejects_anything_else() {
        for text in ["", " ", "X", "Male", "female", "MF", "Ｍ", "ｆ"] {
            assert_eq!(Gender::parse(text), Err(GenderError::Invalid), "{text}");
        }
    }

    // --- DateOfBirth ---

    #[test]
    fn dob_accepts_real_past_dates() {
        let today = day(2025, 6, 15);
        let dob = DateOfBirth::parse("1990-02-28", today).unwrap();
        assert_eq!(dob.date(), day(1990, 2, 28));
        assert_eq!(dob.to_string(), "1990-02-28");
        assert_eq!(
            DateOfBirth::parse(" 2000-02-29 ", today).unwrap().date(),
            day(2000, 2, 29)
        );
    }

    #[test]
    fn dob_boundaries() {
        let today = day(2025, 6, 15);
        assert_eq!(
            DateOfBirth::parse("1900-01-01", today).unwrap().to_string(),
            "1900-01-01"
        );
        assert_eq!(
            DateOfBirth::parse("1899-12-31", today),
            Err(DateOfBirthError::Invalid)
        );
        assert_eq!(
            DateOfBirth::parse("2025-06-14", today).unwrap().date(),
            day(2025, 6, 14)
        );
        assert_eq!(
            DateOfBirth::parse("2025-06-15", today),
            Err(DateOfBirthError::NotInPast)
        );
        assert_eq!(
            DateOfBirth::parse("2025-06-16", today),
            Err(DateOfBirthError::NotInPast)
        );
        assert_eq!(
            DateOfBirth::parse("9999-12-31", today),
            Err(DateOfBirthError::NotInPast)
        );
    }

    #[test]
    fn dob_rejects_empty() {
        let today = day(2025, 6, 15);
        assert_eq!(DateOfBirth::parse("", today), Err(DateOfBirthError::Empty));
        assert_eq!(
            DateOfBirth::parse("  ", today),
            Err(DateOfBirthError::Empty)
        );
    }

    #[test]
    fn dob_rejects_other_formats_and_unreal_dates() {
        let today = day(2025, 6, 15);
        for text in [
            "1990-2-28",
            "1990-02-8",
            "90-02-28",
            "1990/02/28",
            "28-02-1990",
            "19900228",
            "1990-02-28T00:00:00",
            "1990-02-2８",
            "+990-02-28",
            "-990-02-28",
            "1990-13-01",
            "1990-00-10",
            "1990-01-00",
            "1990-02-29",
            "1990-04-31",
            "0000-01-01",
            "1990-02-28x",
            "٠١٩٩-٠٢-٢٨",
            "abcd-ef-gh",
        ] {
            assert_eq!(
                DateOfBirth::parse(text, today),
                Err(DateOfBirthError::Invalid),
                "{text}"
            );
        }
    }
}
