//! The receiver list query (`GET /api/receiver`): every seed filter, parsed strictly.

use chrono::NaiveDate;

use crate::codes::ErrorCode;
use crate::country::CountryCode;
use crate::paging::parse_limit;
use crate::receiver::status::{KycStatus, ReceiverStatus};
use crate::receiver::values::{Gender, normalize_email};
use crate::validation::ValidationErrors;

/// The filters of a receiver list. String filters match exactly; `email` by its comparison key
/// ([`normalize_email`]: width, case, quoting and IDNA spelling do not matter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiverFilter {
    /// `status` code 0..=4.
    pub status: Option<ReceiverStatus>,
    /// `kyc_status` code 0..=2.
    pub kyc_status: Option<KycStatus>,
    /// Exact first name.
    pub first_name: Option<String>,
    /// Exact last name.
    pub last_name: Option<String>,
    /// Exact middle name.
    pub middle_name: Option<String>,
    /// `M` or `F`.
    pub gender: Option<Gender>,
    /// Exact date of birth.
    pub dob: Option<NaiveDate>,
    /// E-mail in [`normalize_email`] form (matched by that key).
    pub email: Option<String>,
    /// Exact dial code.
    pub dialcode: Option<String>,
    /// Exact phone.
    pub phone: Option<String>,
    /// Exact first address line.
    pub address: Option<String>,
    /// Exact second address line.
    pub address2: Option<String>,
    /// Exact city.
    pub city: Option<String>,
    /// Exact state.
    pub state: Option<String>,
    /// Country alpha-3.
    pub country: Option<CountryCode>,
    /// Exact postcode.
    pub postcode: Option<String>,
    /// Exact caller reference.
    pub reference: Option<String>,
}

/// A parsed `GET /api/receiver` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListReceiversQuery {
    /// The `subaccount_id` parameter as sent (the service checks it is the caller's).
    pub subaccount_id: Option<String>,
    /// The filters.
    pub filter: ReceiverFilter,
    /// Page size.
    pub limit: u16,
    /// The opaque cursor of the previous page, still encoded.
    pub lastkey: Option<String>,
}

const MAX_FILTER_CHARS: usize = 255;

impl ListReceiversQuery {
    /// Parses decoded query pairs. Unknown parameters are `REQ005`, repeated or malformed ones
    /// `REQ002`; every problem is reported.
    pub fn parse(pairs: &[(String, String)]) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::default();
        let mut query = ListReceiversQuery {
            subaccount_id: None,
            filter: ReceiverFilter::default(),
            limit: crate::paging::DEFAULT_LIMIT,
            lastkey: None,
        };
        let mut seen: Vec<&str> = Vec::new();
        for (key, value) in pairs {
            if seen.contains(&key.as_str()) {
                errors.push(ErrorCode::Req002, key.clone());
                continue;
            }
            seen.push(key);
            if value.chars().count() > MAX_FILTER_CHARS {
                errors.push(ErrorCode::Req002, key.clone());
                continue;
            }
            // Stored values were trimmed on create, so filters are too.
            let text = || Some(value.trim().to_owned());
            let f = &mut query.filter;
            let ok = match key.as_str() {
                "subaccount_id" => {
                    query.subaccount_id = text();
                    true
                }
                "limit" => parse_limit(Some(value))
                    .map(|limit| query.limit = limit)
                    .is_some(),
                "lastkey" => {
                    query.lastkey = Some(value.clone()).filter(|v| !v.is_empty());
                    true
                }
                "status" => set(&mut f.status, ReceiverStatus::parse_code(value)),
                "kyc_status" => set(&mut f.kyc_status, KycStatus::parse_code(value)),
                "gender" => set(&mut f.gender, Gender::parse(value).ok()),
                "dob" => set(&mut f.dob, parse_date(value)),
                "country" => set(&mut f.country, CountryCode::parse(value).ok()),
                "email" => set(&mut f.email, Some(normalize_email(value))),
                "first_name" => set(&mut f.first_name, text()),
                "last_name" => set(&mut f.last_name, text()),
                "middle_name" => set(&mut f.middle_name, text()),
                "dialcode" => set(
                    &mut f.dialcode,
                    Some(value.trim().trim_start_matches('+').to_owned()),
                ),
                "phone" => set(&mut f.phone, text()),
                "address" => set(&mut f.address, text()),
                "address2" => set(&mut f.address2, text()),
                "city" => set(&mut f.city, text()),
                "state" => set(&mut f.state, text()),
                "postcode" => set(&mut f.postcode, text()),
                "reference" => set(&mut f.reference, text()),
                _ => {
                    errors.push(ErrorCode::Req005, key.clone());
                    continue;
                }
            };
            if !ok {
                errors.push(ErrorCode::Req002, key.clone());
            }
        }
        errors.into_result().map(|()| query)
    }
}

fn set<T>(slot: &mut Option<T>, parsed: Option<T>) -> bool {
    let ok = parsed.is_some();
    *slot = parsed;
    ok
}

fn parse_date(raw: &str) -> Option<NaiveDate> {
    if raw.len() != 10 {
        return None;
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn codes(result: Result<ListReceiversQuery, ValidationErrors>) -> Vec<(ErrorCode, String)> {
        match result {
            Ok(_) => Vec::new(),
            Err(errors) => errors
                .0
                .into_iter()
                .map(|e| (e.code, e.field.into_owned()))
                .collect(),
        }
    }

    #[test]
    fn parses_every_filter() {
        let query = ListReceiversQuery::parse(&pairs(&[
            ("subaccount_id", "s"),
            ("limit", "5"),
            ("status", "2"),
            ("kyc_status", "1"),
            ("gender", "f"),
            ("dob", "1990-01-31"),
            ("country", "aus"),
            ("email", "Ada@Example.COM"),
            ("dialcode", "+61"),
            ("first_name", "Ada"),
            ("lastkey", "abc"),
        ]));
        let Ok(query) = query else {
            panic!("{query:?}")
        };
        assert_eq!(query.limit, 5);
        assert_eq!(query.filter.status, Some(ReceiverStatus::Active));
        assert_eq!(query.filter.kyc_status, Some(KycStatus::Completed));
        assert_eq!(query.filter.gender, Some(Gender::Female));
        assert_eq!(query.filter.email.as_deref(), Some("ada@example.com"));
        assert_eq!(query.filter.dialcode.as_deref(), Some("61"));
        assert_eq!(
            query.filter.country.as_ref().map(|c| c.as_str()),
            Some("AUS")
        );
        assert_eq!(query.lastkey.as_deref(), Some("abc"));
    }

    #[test]
    fn reports_every_bad_parameter() {
        let got = codes(ListReceiversQuery::parse(&pairs(&[
            ("limit", "0"),
            ("status", "9"),
            ("kyc_status", "x"),
            ("gender", "X"),
            ("dob", "1990-02-30"),
            ("country", "ZZZ"),
            ("colour", "red"),
            ("status", "1"),
        ])));
        let expected: Vec<(ErrorCode, String)> = [
            (ErrorCode::Req002, "limit"),
            (ErrorCode::Req002, "status"),
            (ErrorCode::Req002, "kyc_status"),
            (ErrorCode::Req002, "gender"),
            (ErrorCode::Req002, "dob"),
            (ErrorCode::Req002, "country"),
            (ErrorCode::Req005, "colour"),
            (ErrorCode::Req002, "status"),
        ]
        .into_iter()
        .map(|(c, f)| (c, f.to_owned()))
        .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn overlong_values_are_rejected() {
        let long = "a".repeat(256);
        let got = codes(ListReceiversQuery::parse(&pairs(&[("first_name", &long)])));
        assert_eq!(got, vec![(ErrorCode::Req002, "first_name".to_owned())]);
    }
}
