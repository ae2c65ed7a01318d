//! The time the rails demo's side goes by: the system clock, moved back by whole days when
//! `cargo xtask rails-demo` runs payoutd on a weekday's date.
//!
//! Bank file rails settle on business days only (`check-config` refuses `open_on_weekends` on
//! them), so on a Saturday or Sunday a batch would wait for Monday's first cut-off. The demo
//! then runs payoutd under libfaketime (`LD_PRELOAD`, `FAKETIME=-<n>d`; the monotonic clock its
//! timers use is left alone) on the last weekday's date, and everything here that talks to it
//! (request signatures, the Interac partner's signatures and reports, the bank's answer files)
//! goes by the same clock, so signatures stay fresh and the bank's dates follow payoutd's.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Datelike, TimeDelta, Utc, Weekday};

/// Seconds the demo's clock is behind the system clock.
static BEHIND_SECS: AtomicI64 = AtomicI64::new(0);

/// Moves the clock back by `days` whole days.
pub fn set_days_back(days: u32) {
    BEHIND_SECS.store(i64::from(days) * 86_400, Ordering::Relaxed);
}

/// Now, by the demo's clock.
pub fn now() -> DateTime<Utc> {
    Utc::now() - TimeDelta::seconds(BEHIND_SECS.load(Ordering::Relaxed))
}

/// Now, by the demo's clock, in milliseconds since the Unix epoch.
pub fn unix_millis() -> Result<u64, String> {
    let behind = u64::try_from(BEHIND_SECS.load(Ordering::Relaxed)).unwrap_or(0);
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| "the system clock is before 1970".to_owned())?
        .saturating_sub(Duration::from_secs(behind));
    u64::try_from(since_epoch.as_millis())
        .map_err(|_| "the system clock is out of range".to_owned())
}

/// The fewest whole days (0 to 3) to move `start` back so that a run from it lasting `run`
/// starts and ends on a Monday-to-Friday date.
pub fn days_back_to_weekdays(start: DateTime<Utc>, run: Duration) -> u32 {
    let run = TimeDelta::from_std(run).unwrap_or(TimeDelta::MAX);
    let weekday = |t: DateTime<Utc>| !matches!(t.weekday(), Weekday::Sat | Weekday::Sun);
    (0..=3)
        .find(|days| {
            let moved = start - TimeDelta::days(i64::from(*days));
            weekday(moved) && moved.checked_add_signed(run).is_some_and(weekday)
        })
        .unwrap_or(3)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn a_weekend_run_goes_back_to_the_friday() {
        let at = |d, h, m| Utc.with_ymd_and_hms(2026, 11, d, h, m, 0).unwrap();
        let five = Duration::from_secs(300);
        // Wednesday 25 November 2026: no move.
        assert_eq!(days_back_to_weekdays(at(25, 12, 0), five), 0);
        // Saturday 28th and Sunday 29th: back to Friday the 27th.
        assert_eq!(days_back_to_weekdays(at(28, 12, 0), five), 1);
        assert_eq!(days_back_to_weekdays(at(29, 0, 6), five), 2);
        // Friday 23:58 would end on Saturday: Thursday 23:58 to Friday 00:03.
        assert_eq!(days_back_to_weekdays(at(27, 23, 58), five), 1);
        // Monday 30th: no move.
        assert_eq!(days_back_to_weekdays(at(30, 0, 0), five), 0);
    }
}
