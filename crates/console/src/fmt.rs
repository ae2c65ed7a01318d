//! How values are shown: times, money, statuses.

use chrono::{DateTime, Utc};
use domain::money::Asset;
use domain::payout::PayoutStatus;
use maud::{Markup, html};

/// A moment as a `<time>` element: shown in UTC to the minute, the exact instant in
/// `datetime` and on hover.
pub fn when(at: DateTime<Utc>) -> Markup {
    html! {
        time datetime=(at.to_rfc3339()) title=(at.format("%Y-%m-%d %H:%M:%S%.3f UTC")) {
            (at.format("%Y-%m-%d %H:%M UTC"))
        }
    }
}

/// An amount in minor units as the currency writes it: `1234.56 AUD`, `-0.05 USD`. Every asset
/// payoutd pays in has two decimal places.
pub fn money(asset: Asset, minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let units = minor.unsigned_abs();
    format!("{sign}{}.{:02} {}", units / 100, units % 100, asset.code())
}

/// How long something has waited, to the minute, in its two largest units: `3 d 4 h`,
/// `5 h 0 min`, `12 min` (a negative span, from clocks apart, counts as none).
pub fn age(span: chrono::Duration) -> String {
    let minutes = span.num_minutes().max(0);
    let (days, hours, minutes) = (minutes / 1440, minutes / 60 % 24, minutes % 60);
    if days > 0 {
        format!("{days} d {hours} h")
    } else if hours > 0 {
        format!("{hours} h {minutes} min")
    } else {
        format!("{minutes} min")
    }
}

/// `value` percent-encoded for a link's query or path (`application/x-www-form-urlencoded`).
pub fn urlencode(value: &str) -> String {
    serde_urlencoded::to_string([("v", value)])
        .map(|s| s.trim_start_matches("v=").to_owned())
        .unwrap_or_default()
}

/// A payout's status as a badge whose colour says whether it is done, failed or waiting.
pub fn status_badge(status: PayoutStatus) -> Markup {
    let tone = match status {
        PayoutStatus::Successful | PayoutStatus::SuccessfulPendingKyc => "ok",
        PayoutStatus::Failed | PayoutStatus::Cancelled => "bad",
        PayoutStatus::Awaiting | PayoutStatus::Unassessed => "warn",
        PayoutStatus::Pending | PayoutStatus::InProgress => "info",
    };
    html! { span class=(format!("badge {tone}")) { (status.as_str()) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_has_two_decimals_and_its_sign() {
        assert_eq!(money(Asset::Aud, 123_456), "1234.56 AUD");
        assert_eq!(money(Asset::Usd, -5), "-0.05 USD");
        assert_eq!(money(Asset::Eur, 0), "0.00 EUR");
        assert_eq!(money(Asset::Cad, i64::MIN), "-92233720368547758.08 CAD");
    }

    #[test]
    fn an_age_shows_its_two_largest_units() {
        use chrono::Duration;
        assert_eq!(age(Duration::hours(60) + Duration::minutes(5)), "2 d 12 h");
        assert_eq!(age(Duration::hours(5)), "5 h 0 min");
        assert_eq!(age(Duration::seconds(59)), "0 min");
        assert_eq!(age(Duration::minutes(-3)), "0 min");
    }

    #[test]
    fn every_status_has_a_badge_naming_it() {
        for status in PayoutStatus::ALL {
            let badge = status_badge(*status).into_string();
            assert!(badge.contains(status.as_str()), "{badge}");
            assert!(badge.starts_with("<span class=\"badge "), "{badge}");
        }
    }
}
