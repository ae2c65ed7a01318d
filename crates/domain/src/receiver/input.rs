//! The create-receiver request: its raw fields and their parse into value types.
//!
//! Every field is checked and every failure is reported at once, in field order, each as a
//! catalogue code (`REVR2xx`) against the JSON field name.

use std::convert::Infallible;

use chrono::NaiveDate;

use crate::codes::ErrorCode;
use crate::country::{CountryCode, CountryCodeError};
use crate::receiver::values::{
    BoundedText, BoundedTextError, CityName, CityNameError, DateOfBirth, DateOfBirthError,
    DialCode, DialCodeError, EmailAddress, EmailAddressError, Gender, GenderError, PersonName,
    PersonNameError, PhoneNumber, PhoneNumberError, StreetLine, StreetLineError,
};
use crate::validation::{FieldReader, ValidationErrors};

/// How this request's text fields are read (over-long values are `REVR226`).
const READ: FieldReader = FieldReader::new(ErrorCode::Revr226);

/// Raw create-receiver fields as the client sent them (already known to be strings or absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawReceiver {
    /// `subaccount_id`: the subaccount the receiver belongs to.
    pub subaccount_id: Option<String>,
    /// `first_name`.
    pub first_name: Option<String>,
    /// `middle_name` (optional).
    pub middle_name: Option<String>,
    /// `last_name`.
    pub last_name: Option<String>,
    /// `email`.
    pub email: Option<String>,
    /// `dob`: date of birth, `YYYY-MM-DD`.
    pub dob: Option<String>,
    /// `dialcode`: international dial code, 1 to 4 digits.
    pub dialcode: Option<String>,
    /// `phone`: 4 to 15 digits.
    pub phone: Option<String>,
    /// `address`: first address line.
    pub address: Option<String>,
    /// `address2`: second address line (optional).
    pub address2: Option<String>,
    /// `gender`: `M` or `F` (optional).
    pub gender: Option<String>,
    /// `city`.
    pub city: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `postcode`.
    pub postcode: Option<String>,
    /// `country`: ISO 3166-1 alpha-3 code.
    pub country: Option<String>,
    /// `reference`: the client's own reference (optional).
    pub reference: Option<String>,
}

/// A create-receiver request whose every field parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverInput {
    /// Trimmed and non-empty; the service checks it is the caller's.
    pub subaccount_id: String,
    /// First name.
    pub first_name: PersonName,
    /// Middle name, if one was given.
    pub middle_name: Option<PersonName>,
    /// Last name.
    pub last_name: PersonName,
    /// Email address.
    pub email: EmailAddress,
    /// Date of birth.
    pub dob: DateOfBirth,
    /// Dial code.
    pub dialcode: DialCode,
    /// Phone number.
    pub phone: PhoneNumber,
    /// First address line.
    pub address: StreetLine,
    /// Second address line, if one was given.
    pub address2: Option<StreetLine>,
    /// Gender, if one was given.
    pub gender: Option<Gender>,
    /// City.
    pub city: CityName,
    /// State.
    pub state: BoundedText,
    /// Postcode.
    pub postcode: BoundedText,
    /// Country.
    pub country: CountryCode,
    /// The client's reference, if one was given.
    pub reference: Option<BoundedText>,
}

impl ReceiverInput {
    /// Parses every field of `raw`, with `today` as the date a date of birth must precede.
    ///
    /// On failure, returns one [`FieldError`] per failing field, in field order: a missing or
    /// blank required field gives its "required" code, a field over 255 characters gives
    /// `REVR226`, and any other failure gives that field's "not valid" code.
    pub fn parse(raw: &RawReceiver, today: NaiveDate) -> Result<ReceiverInput, ValidationErrors> {
        use ErrorCode as C;

        let mut errors = ValidationErrors::default();
        let subaccount_id = errors.check(READ.required(
            raw.subaccount_id.as_deref(),
            "subaccount_id",
            C::Revr202,
            |text| Ok::<_, Infallible>(text.to_owned()),
            |never| match never {},
        ));
        let first_name = errors.check(READ.required(
            raw.first_name.as_deref(),
            "first_name",
            C::Revr204,
            PersonName::parse,
            |error| name_code(error, C::Revr204, C::Revr215),
        ));
        let middle_name = errors.check(READ.optional(
            raw.middle_name.as_deref(),
            "middle_name",
            PersonName::parse,
            // A blank middle name is absent rather than failing, so `Empty` cannot reach here.
            |error| name_code(error, C::Revr227, C::Revr227),
        ));
        let last_name = errors.check(READ.required(
            raw.last_name.as_deref(),
            "last_name",
            C::Revr205,
            PersonName::parse,
            |error| name_code(error, C::Revr205, C::Revr216),
        ));
        let email = errors.check(READ.required(
            raw.email.as_deref(),
            "email",
            C::Revr203,
            EmailAddress::parse,
            |error| match error {
                EmailAddressError::Empty => C::Revr203,
                EmailAddressError::TooLong => C::Revr226,
                EmailAddressError::Invalid => C::Revr214,
            },
        ));
        let dob = errors.check(READ.required(
            raw.dob.as_deref(),
            "dob",
            C::Revr223,
            |text| DateOfBirth::parse(text, today),
            |error| match error {
                DateOfBirthError::Empty
                | DateOfBirthError::Invalid
                | DateOfBirthError::NotInPast => C::Revr223,
            },
        ));
        let dialcode = errors.check(READ.required(
            raw.dialcode.as_deref(),
            "dialcode",
            C::Revr206,
            DialCode::parse,
            |error| match error {
                DialCodeError::Empty => C::Revr206,
                DialCodeError::Invalid => C::Revr218,
            },
        ));
        let phone = errors.check(READ.required(
            raw.phone.as_deref(),
            "phone",
            C::Revr207,
            PhoneNumber::parse,
            |error| match error {
                PhoneNumberError::Empty => C::Revr207,
                PhoneNumberError::Invalid => C::Revr219,
            },
        ));
        let address = errors.check(READ.required(
            raw.address.as_deref(),
            "address",
            C::Revr208,
            StreetLine::parse,
            |error| street_code(error, C::Revr208, C::Revr220),
        ));
        let address2 = errors.check(READ.optional(
            raw.address2.as_deref(),
            "address2",
            StreetLine::parse,
            |error| street_code(error, C::Revr221, C::Revr221),
        ));
        let gender = errors.check(READ.optional(
            raw.gender.as_deref(),
            "gender",
            Gender::parse,
            |error| match error {
                GenderError::Invalid => C::Revr217,
            },
        ));
        let city = errors.check(READ.required(
            raw.city.as_deref(),
            "city",
            C::Revr210,
            CityName::parse,
            |error| match error {
                CityNameError::Empty => C::Revr210,
                CityNameError::TooLong => C::Revr226,
                CityNameError::Invalid => C::Revr222,
            },
        ));
        let state = errors.check(READ.required(
            raw.state.as_deref(),
            "state",
            C::Revr211,
            BoundedText::parse,
            |error| bounded_code(error, C::Revr211),
        ));
        let postcode = errors.check(READ.required(
            raw.postcode.as_deref(),
            "postcode",
            C::Revr212,
            BoundedText::parse,
            |error| bounded_code(error, C::Revr212),
        ));
        let country = errors.check(READ.required(
            raw.country.as_deref(),
            "country",
            C::Revr213,
            CountryCode::parse,
            |error| match error {
                CountryCodeError::Empty => C::Revr213,
                CountryCodeError::Unknown => C::Revr224,
            },
        ));
        let reference = errors.check(READ.optional(
            raw.reference.as_deref(),
            "reference",
            BoundedText::parse,
            // Only `TooLong` can happen: blank references are absent, and the length is
            // checked before parsing anyway.
            |error| bounded_code(error, C::Revr226),
        ));

        // `check` records an error whenever it yields `None`, so the fallback arm always
        // carries at least one failure.
        match (
            subaccount_id,
            first_name,
            middle_name,
            last_name,
            email,
            dob,
            dialcode,
            phone,
            address,
            address2,
            gender,
            city,
            state,
            postcode,
            country,
            reference,
        ) {
            (
                Some(subaccount_id),
                Some(first_name),
                Some(middle_name),
                Some(last_name),
                Some(email),
                Some(dob),
                Some(dialcode),
                Some(phone),
                Some(address),
                Some(address2),
                Some(gender),
                Some(city),
                Some(state),
                Some(postcode),
                Some(country),
                Some(reference),
            ) if errors.is_empty() => Ok(ReceiverInput {
                subaccount_id,
                first_name,
                middle_name,
                last_name,
                email,
                dob,
                dialcode,
                phone,
                address,
                address2,
                gender,
                city,
                state,
                postcode,
                country,
                reference,
            }),
            _ => Err(errors),
        }
    }
}

/// The code for a failed name: `empty` when blank, `invalid` for bad characters.
fn name_code(error: PersonNameError, empty: ErrorCode, invalid: ErrorCode) -> ErrorCode {
    match error {
        PersonNameError::Empty => empty,
        PersonNameError::TooLong => ErrorCode::Revr226,
        PersonNameError::InvalidCharacters => invalid,
    }
}

/// The code for a failed address line: `empty` when blank, `dot` when it contains a dot or a
/// control, format or invisible character.
fn street_code(error: StreetLineError, empty: ErrorCode, dot: ErrorCode) -> ErrorCode {
    match error {
        StreetLineError::Empty => empty,
        StreetLineError::TooLong => ErrorCode::Revr226,
        // An address line's only "not valid" code is its dot code.
        StreetLineError::ContainsDot | StreetLineError::Invalid => dot,
    }
}

/// The code for a failed bounded text: `empty` when blank, `REQ009` (the code every body field
/// holding a refused character gets when the field has no "not valid" code of its own) for a
/// control, format or invisible character.
fn bounded_code(error: BoundedTextError, empty: ErrorCode) -> ErrorCode {
    match error {
        BoundedTextError::Empty => empty,
        BoundedTextError::TooLong => ErrorCode::Revr226,
        BoundedTextError::Invalid => ErrorCode::Req009,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 6, 15).unwrap()
    }

    fn some(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    /// A request with every field, optional ones included, valid.
    fn valid() -> RawReceiver {
        RawReceiver {
            subaccount_id: some(" sub_123 "),
            first_name: some("Zoë"),
            middle_name: some("Mary-Ann"),
            last_name: some("O'Brien"),
            email: some("Zoe.OBrien@Example.com"),
            dob: some("1990-02-28"),
            dialcode: some("+61"),
            phone: some("0412345678"),
            address: some("12 Smith St"),
            address2: some("Unit 4"),
            gender: some("f"),
            city: some("St. Kilda"),
            state: some("VIC"),
            postcode: some("3182"),
            country: some("aus"),
            reference: some("ref-001"),
        }
    }

    /// The codes of a failed parse, with their fields.
    fn failures(raw: &RawReceiver) -> Vec<(ErrorCode, String)> {
        ReceiverInput::parse(raw, today())
            .unwrap_err()
            .0
            .into_iter()
            .map(|error| (error.code, error.field.to_string()))
            .collect()
    }

    /// `expected` in the shape [`failures`] returns.
    fn owned(expected: &[(ErrorCode, &str)]) -> Vec<(ErrorCode, String)> {
        expected
            .iter()
            .map(|(code, field)| (*code, (*field).to_owned()))
            .collect()
    }

    /// Asserts that `raw` fails on exactly one field, with `code`.
    fn assert_only_failure(raw: &RawReceiver, code: ErrorCode, field: &str) {
        assert_eq!(failures(raw), owned(&[(code, field)]), "{raw:?}");
    }

    #[test]
    fn a_fully_valid_request_parses() {
        let input = ReceiverInput::parse(&valid(), today()).unwrap();
        assert_eq!(input.subaccount_id, "sub_123");
        assert_eq!(input.first_name.as_str(), "Zoë");
        assert_eq!(input.middle_name.unwrap().as_str(), "Mary-Ann");
        assert_eq!(input.last_name.as_str(), "O'Brien");
        assert_eq!(input.email.as_str(), "Zoe.OBrien@Example.com");
        assert_eq!(input.email.normalized(), "zoe.obrien@example.com");
        assert_eq!(input.dob.to_string(), "1990-02-28");
        assert_eq!(input.dialcode.as_str(), "61");
        assert_eq!(input.phone.as_str(), "0412345678");
        assert_eq!(input.address.as_str(), "12 Smith St");
        assert_eq!(input.address2.unwrap().as_str(), "Unit 4");
        assert_eq!(input.gender, Some(Gender::Female));
        assert_eq!(input.city.as_str(), "St. Kilda");
        assert_eq!(input.state.as_str(), "VIC");
        assert_eq!(input.postcode.as_str(), "3182");
        assert_eq!(input.country.as_str(), "AUS");
        assert_eq!(input.reference.unwrap().as_str(), "ref-001");
    }

    #[test]
    fn absent_or_blank_optional_fields_are_none() {
        let absent = RawReceiver {
            middle_name: None,
            address2: None,
            gender: None,
            reference: None,
            ..valid()
        };
        let blank = RawReceiver {
            middle_name: some(""),
            address2: some("   "),
            gender: some("\t"),
            reference: some(" \n "),
            ..valid()
        };
        for raw in [absent, blank] {
            let input = ReceiverInput::parse(&raw, today()).unwrap();
            assert_eq!(input.middle_name, None);
            assert_eq!(input.address2, None);
            assert_eq!(input.gender, None);
            assert_eq!(input.reference, None);
        }
    }

    #[test]
    fn an_empty_request_gives_the_twelve_required_codes_in_field_order() {
        use ErrorCode as C;
        assert_eq!(
            failures(&RawReceiver::default()),
            owned(&[
                (C::Revr202, "subaccount_id"),
                (C::Revr204, "first_name"),
                (C::Revr205, "last_name"),
                (C::Revr203, "email"),
                (C::Revr223, "dob"),
                (C::Revr206, "dialcode"),
                (C::Revr207, "phone"),
                (C::Revr208, "address"),
                (C::Revr210, "city"),
                (C::Revr211, "state"),
                (C::Revr212, "postcode"),
                (C::Revr213, "country"),
            ])
        );
    }

    #[test]
    fn blank_required_fields_count_as_missing() {
        let blank = RawReceiver {
            subaccount_id: some(""),
            first_name: some(" "),
            middle_name: some(" "),
            last_name: some("\t"),
            email: some("\n"),
            dob: some("  "),
            dialcode: some(""),
            phone: some(" "),
            address: some(" "),
            address2: some(""),
            gender: some(" "),
            city: some(" "),
            state: some(" "),
            postcode: some(" "),
            country: some(" "),
            reference: some(""),
        };
        assert_eq!(failures(&blank), failures(&RawReceiver::default()));
    }

    /// A valid request with one field replaced.
    fn with(field: &str, value: Option<&str>) -> RawReceiver {
        let mut raw = valid();
        let slot = match field {
            "subaccount_id" => &mut raw.subaccount_id,
            "first_name" => &mut raw.first_name,
            "middle_name" => &mut raw.middle_name,
            "last_name" => &mut raw.last_name,
            "email" => &mut raw.email,
            "dob" => &mut raw.dob,
            "dialcode" => &mut raw.dialcode,
            "phone" => &mut raw.phone,
            "address" => &mut raw.address,
            "address2" => &mut raw.address2,
            "gender" => &mut raw.gender,
            "city" => &mut raw.city,
            "state" => &mut raw.state,
            "postcode" => &mut raw.postcode,
            "country" => &mut raw.country,
            "reference" => &mut raw.reference,
            other => panic!("no field {other}"),
        };
        *slot = value.map(str::to_owned);
        raw
    }

    #[test]
    fn each_code_for_its_field() {
        use ErrorCode::*;
        let cases: &[(&str, Option<&str>, ErrorCode)] = &[
            ("subaccount_id", None, Revr202),
            ("email", None, Revr203),
            ("first_name", None, Revr204),
            ("last_name", None, Revr205),
            ("dialcode", None, Revr206),
            ("phone", None, Revr207),
            ("address", None, Revr208),
            ("city", None, Revr210),
            ("state", None, Revr211),
            ("postcode", None, Revr212),
            ("country", None, Revr213),
            ("dob", None, Revr223),
            ("email", Some("jane"), Revr214),
            ("email", Some("jane@localhost"), Revr214),
            ("email", Some("Jane <jane@example.com>"), Revr214),
            ("first_name", Some("Zoe2"), Revr215),
            ("last_name", Some("O.Brien"), Revr216),
            ("gender", Some("X"), Revr217),
            ("gender", Some("male"), Revr217),
            ("gender", Some("🙂"), Revr217),
            ("dialcode", Some("12345"), Revr218),
            ("dialcode", Some("+"), Revr218),
            ("dialcode", Some("6a"), Revr218),
            ("phone", Some("123"), Revr219),
            ("phone", Some("1234567890123456"), Revr219),
            ("phone", Some("0412 345 678"), Revr219),
            ("address", Some("12 Smith St."), Revr220),
            ("address2", Some("P.O. Box 5"), Revr221),
            ("city", Some("Melbourne 3000"), Revr222),
            ("dob", Some("1990-02-30"), Revr223),
            ("dob", Some("28/02/1990"), Revr223),
            ("dob", Some("1899-12-31"), Revr223),
            ("dob", Some("2025-06-15"), Revr223),
            ("dob", Some("2030-01-01"), Revr223),
            ("country", Some("XXX"), Revr224),
            ("country", Some("AU"), Revr224),
            ("country", Some("AUSS"), Revr224),
            ("country", Some("Australia"), Revr224),
            ("middle_name", Some("J."), Revr227),
            // The security probe, and its neighbours: invisible fillers, compatibility dots,
            // bidi overrides and line breaks get each field's "not valid" code (`REQ009` where
            // the field has none).
            ("first_name", Some("\u{3164}"), Revr215),
            ("first_name", Some("Jane\u{200B}"), Revr215),
            ("middle_name", Some("\u{FFA0}"), Revr227),
            ("last_name", Some("O\u{FF0E}Brien"), Revr216),
            ("address", Some("12 Smith St\u{FF0E}"), Revr220),
            ("address", Some("P\u{2024}O Box 5"), Revr220),
            ("address", Some("12 \u{202E}tS htimS"), Revr220),
            ("address2", Some("Unit\u{200B}4"), Revr221),
            ("email", Some("jo\u{202E}se@example.com"), Revr214),
            ("city", Some("Perth\u{2028}WA"), Revr222),
            ("state", Some("VIC\r\nNSW"), Req009),
            ("state", Some("VIC\u{202E}"), Req009),
            ("postcode", Some("30\u{0000}00"), Req009),
            ("reference", Some("ref\u{2066}1"), Req009),
        ];
        for (field, value, code) in cases {
            assert_only_failure(&with(field, *value), *code, field);
        }
    }

    #[test]
    fn compatibility_forms_are_accepted_and_kept_as_sent() {
        let raw = RawReceiver {
            first_name: some("Ｊａｎｅ"),
            address: some("１２ Ｓｍｉｔｈ Ｓｔ"),
            email: some("ｊｏｓｅ@example.com"),
            ..valid()
        };
        let input = ReceiverInput::parse(&raw, today()).unwrap();
        assert_eq!(input.first_name.as_str(), "Ｊａｎｅ");
        assert_eq!(input.address.as_str(), "１２ Ｓｍｉｔｈ Ｓｔ");
        assert_eq!(input.email.as_str(), "ｊｏｓｅ@example.com");
        assert_eq!(input.email.normalized(), "jose@example.com");
    }

    #[test]
    fn a_255_character_name_passes_and_256_gives_revr226() {
        let raw = RawReceiver {
            first_name: some(&"é".repeat(255)),
            ..valid()
        };
        assert!(ReceiverInput::parse(&raw, today()).is_ok());
        let raw = RawReceiver {
            first_name: some(&"é".repeat(256)),
            ..valid()
        };
        assert_only_failure(&raw, ErrorCode::Revr226, "first_name");
        // Surrounding whitespace does not count towards the limit.
        let raw = RawReceiver {
            last_name: some(&format!("  {}  ", "a".repeat(255))),
            ..valid()
        };
        assert!(ReceiverInput::parse(&raw, today()).is_ok());
    }

    #[test]
    fn revr226_replaces_every_fields_other_code() {
        // Each value would also break the field's own rules; the length code wins.
        let long = |unit: &str| some(&unit.repeat(256));
        let raw = RawReceiver {
            subaccount_id: long("s"),
            first_name: long("1"),
            middle_name: long("1"),
            last_name: long("1"),
            email: long("@"),
            dob: long("1"),
            dialcode: long("1"),
            phone: long("1"),
            address: long("."),
            address2: long("."),
            gender: long("M"),
            city: long("1"),
            state: long("🙂"),
            postcode: long("1"),
            country: long("A"),
            reference: long("r"),
        };
        let all = failures(&raw);
        assert_eq!(all.len(), 16, "{all:?}");
        assert!(
            all.iter().all(|(code, _)| *code == ErrorCode::Revr226),
            "{all:?}"
        );
        let fields: Vec<_> = all.iter().map(|(_, field)| field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "subaccount_id",
                "first_name",
                "middle_name",
                "last_name",
                "email",
                "dob",
                "dialcode",
                "phone",
                "address",
                "address2",
                "gender",
                "city",
                "state",
                "postcode",
                "country",
                "reference",
            ]
        );
    }

    #[test]
    fn subaccount_id_and_reference_accept_255_characters() {
        let raw = RawReceiver {
            subaccount_id: some(&"s".repeat(255)),
            reference: some(&"🙂".repeat(255)),
            ..valid()
        };
        let input = ReceiverInput::parse(&raw, today()).unwrap();
        assert_eq!(input.subaccount_id.chars().count(), 255);
        assert_eq!(input.reference.unwrap().as_str().chars().count(), 255);
    }

    #[test]
    fn several_failures_are_reported_together_in_field_order() {
        use ErrorCode as C;
        let raw = RawReceiver {
            subaccount_id: None,
            first_name: some("J0hn"),
            middle_name: some("M."),
            email: some("not-an-email"),
            dob: some("2099-01-01"),
            phone: some("12"),
            address2: some("Lvl. 3"),
            gender: some("Q"),
            country: some("ZZZ"),
            reference: some(&"x".repeat(300)),
            ..valid()
        };
        assert_eq!(
            failures(&raw),
            owned(&[
                (C::Revr202, "subaccount_id"),
                (C::Revr215, "first_name"),
                (C::Revr227, "middle_name"),
                (C::Revr214, "email"),
                (C::Revr223, "dob"),
                (C::Revr219, "phone"),
                (C::Revr221, "address2"),
                (C::Revr217, "gender"),
                (C::Revr224, "country"),
                (C::Revr226, "reference"),
            ])
        );
    }

    #[test]
    fn odd_unicode_in_every_field_never_panics() {
        for text in [
            "🙂",
            "👩‍👩‍👧‍👦",
            "\u{0000}",
            "\u{10FFFF}",
            "\u{0301}",
            "\u{202E}",
            "ｆ",
        ] {
            let odd = some(text);
            let raw = RawReceiver {
                subaccount_id: odd.clone(),
                first_name: odd.clone(),
                middle_name: odd.clone(),
                last_name: odd.clone(),
                email: odd.clone(),
                dob: odd.clone(),
                dialcode: odd.clone(),
                phone: odd.clone(),
                address: odd.clone(),
                address2: odd.clone(),
                gender: odd.clone(),
                city: odd.clone(),
                state: odd.clone(),
                postcode: odd.clone(),
                country: odd.clone(),
                reference: odd,
            };
            let _ = ReceiverInput::parse(&raw, today());
        }
        let huge = RawReceiver {
            email: some(&"🙂".repeat(100_000)),
            ..valid()
        };
        assert_only_failure(&huge, ErrorCode::Revr226, "email");
    }
}
