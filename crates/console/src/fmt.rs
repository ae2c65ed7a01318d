//! How values are shown: times, money, statuses.

use std::cell::Cell;
use std::future::Future;

use chrono::{DateTime, Utc};
use domain::money::Asset;
use domain::operators::OperatorTimeZone;
use domain::payout::PayoutStatus;
use maud::{Markup, html};

tokio::task_local! {
    /// The time zone of the request being answered: UTC until the signed-in operator's is
    /// known ([`show_times_in`]). Every request runs in its own scope ([`in_request_scope`],
    /// from the request middleware), so one operator's zone never shows on another's page.
    static ZONE: Cell<OperatorTimeZone>;
}

/// Runs `request` (a request's handling) with times shown in UTC until [`show_times_in`] says
/// otherwise.
pub async fn in_request_scope<F: Future>(request: F) -> F::Output {
    ZONE.scope(Cell::new(OperatorTimeZone::UTC), request).await
}

/// Shows the rest of this request's times in `zone` (the signed-in operator's). Outside a
/// request's scope it does nothing.
pub fn show_times_in(zone: OperatorTimeZone) {
    // Outside a scope (a unit test rendering a page) there is nothing to set.
    let _outside = ZONE.try_with(|current| current.set(zone));
}

/// The zone this request shows times in.
pub fn zone() -> OperatorTimeZone {
    ZONE.try_with(Cell::get).unwrap_or(OperatorTimeZone::UTC)
}

/// A moment as a `<time>` element: the wall clock of the operator's time zone to the minute,
/// with the zone (`2026-11-29 15:30 CET`); the exact instant in UTC on hover (`title`) and in
/// `datetime`.
pub fn when(at: DateTime<Utc>) -> Markup {
    html! {
        time datetime=(at.to_rfc3339()) title=(at.format("%Y-%m-%d %H:%M:%S%.3f UTC")) {
            (zone().wall_clock(at))
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

    fn instant() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T14:30:05.250Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn a_moment_shows_in_utc_outside_a_request() {
        assert_eq!(
            when(instant()).into_string(),
            "<time datetime=\"2026-11-29T14:30:05.250+00:00\" title=\"2026-11-29 14:30:05.250 UTC\">2026-11-29 14:30 UTC</time>"
        );
    }

    #[tokio::test]
    async fn a_moment_shows_in_the_operators_zone_with_utc_on_hover_for_its_request_only() {
        let berlin = OperatorTimeZone::parse("Europe/Berlin").unwrap_or_default();
        let shown = in_request_scope(async {
            let before = when(instant()).into_string();
            show_times_in(berlin);
            (before, when(instant()).into_string())
        })
        .await;
        assert!(shown.0.contains(">2026-11-29 14:30 UTC<"), "{}", shown.0);
        assert!(shown.1.contains(">2026-11-29 15:30 CET<"), "{}", shown.1);
        assert!(
            shown.1.contains("title=\"2026-11-29 14:30:05.250 UTC\""),
            "{}",
            shown.1
        );
        // The next request starts in UTC again.
        let next = in_request_scope(async { when(instant()).into_string() }).await;
        assert!(next.contains(">2026-11-29 14:30 UTC<"), "{next}");
        show_times_in(berlin);
        assert_eq!(
            zone(),
            OperatorTimeZone::UTC,
            "outside a request nothing is set"
        );
    }

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
