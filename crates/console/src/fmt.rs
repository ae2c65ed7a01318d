//! How values are shown: times, money, statuses.

use chrono::{DateTime, Utc};
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
