//! The payout list query (`GET /api/payout/`): seed filters plus `reference`, parsed strictly.

use chrono::{DateTime, Duration, NaiveDateTime, Utc};

use super::status::PayoutStatus;
use crate::codes::ErrorCode;
use crate::paging::{DEFAULT_LIMIT, parse_limit};
use crate::validation::ValidationErrors;

/// The filters of a payout list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayoutFilter {
    /// `status` code 0..=7.
    pub status: Option<PayoutStatus>,
    /// Created at or after (`from`, UTC, to the minute).
    pub created_from: Option<DateTime<Utc>>,
    /// Created before (`to` plus one minute: `to` is inclusive to the minute).
    pub created_before: Option<DateTime<Utc>>,
    /// Exact caller reference.
    pub reference: Option<String>,
}

/// A parsed `GET /api/payout/` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPayoutsQuery {
    /// `subaccount_id` as sent (the service checks it is the caller's).
    pub subaccount_id: Option<String>,
    /// The filters.
    pub filter: PayoutFilter,
    /// Page size.
    pub limit: u16,
    /// The previous page's cursor, still sealed.
    pub lastkey: Option<String>,
}

/// Parses `YYYY-MM-DD hh:mm` as UTC.
fn minute(raw: &str) -> Option<DateTime<Utc>> {
    if raw.len() != 16 {
        return None;
    }
    NaiveDateTime::parse_from_str(raw, "%Y-%m-%d %H:%M")
        .ok()
        .map(|t| t.and_utc())
}

impl ListPayoutsQuery {
    /// Parses decoded query pairs: unknown parameters `REQ005`, repeated or malformed ones
    /// `REQ002`, a bad `from`/`to` `PAYO302`; every problem reported.
    pub fn parse(pairs: &[(String, String)]) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::default();
        let mut query = ListPayoutsQuery {
            subaccount_id: None,
            filter: PayoutFilter::default(),
            limit: DEFAULT_LIMIT,
            lastkey: None,
        };
        let mut seen: Vec<&str> = Vec::new();
        for (key, value) in pairs {
            if seen.contains(&key.as_str()) {
                errors.push(ErrorCode::Req002, key.clone());
                continue;
            }
            seen.push(key);
            let value = value.trim();
            match key.as_str() {
                "subaccount_id" => query.subaccount_id = Some(value.to_owned()),
                "limit" => match parse_limit(Some(value)) {
                    Some(limit) => query.limit = limit,
                    None => errors.push(ErrorCode::Req002, "limit"),
                },
                "lastkey" => query.lastkey = Some(value.to_owned()).filter(|v| !v.is_empty()),
                "status" => match PayoutStatus::parse_code(value) {
                    Some(status) => query.filter.status = Some(status),
                    None => errors.push(ErrorCode::Req002, "status"),
                },
                "from" => match minute(value) {
                    Some(at) => query.filter.created_from = Some(at),
                    None => errors.push(ErrorCode::Payo302, "from"),
                },
                "to" => match minute(value) {
                    Some(at) => query.filter.created_before = Some(at + Duration::minutes(1)),
                    None => errors.push(ErrorCode::Payo302, "to"),
                },
                "reference" if value.chars().count() <= 255 => {
                    query.filter.reference = Some(value.to_owned())
                }
                "reference" => errors.push(ErrorCode::Req002, "reference"),
                _ => errors.push(ErrorCode::Req005, key.clone()),
            }
        }
        errors.into_result().map(|()| query)
    }
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

    #[test]
    fn parses_every_filter_and_makes_to_inclusive_to_the_minute() {
        let parsed = ListPayoutsQuery::parse(&pairs(&[
            ("subaccount_id", "s"),
            ("limit", "20"),
            ("status", "1"),
            ("from", "2026-11-01 09:30"),
            ("to", "2026-11-02 17:45"),
            ("reference", "inv-1"),
        ]));
        let Ok(q) = parsed else { panic!("{parsed:?}") };
        assert_eq!(
            (q.limit, q.filter.status),
            (20, Some(PayoutStatus::Pending))
        );
        assert_eq!(
            q.filter.created_from.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-11-01T09:30:00+00:00")
        );
        assert_eq!(
            q.filter.created_before.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-11-02T17:46:00+00:00")
        );
    }

    #[test]
    fn bad_values_have_their_codes() {
        let Err(errors) = ListPayoutsQuery::parse(&pairs(&[
            ("from", "2026-11-01"),
            ("to", "2026-13-01 10:00"),
            ("status", "8"),
            ("limit", "0"),
            ("colour", "x"),
        ])) else {
            panic!("must fail")
        };
        let got: Vec<_> = errors
            .0
            .iter()
            .map(|e| (e.code, e.field.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                (ErrorCode::Payo302, "from".to_owned()),
                (ErrorCode::Payo302, "to".to_owned()),
                (ErrorCode::Req002, "status".to_owned()),
                (ErrorCode::Req002, "limit".to_owned()),
                (ErrorCode::Req005, "colour".to_owned()),
            ]
        );
    }
}
