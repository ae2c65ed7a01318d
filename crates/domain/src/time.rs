//! Time as the wire shows it: Unix milliseconds.

use chrono::{DateTime, Utc};

/// Unix time in milliseconds, the form of `created_at`/`updated_at` (as a string of digits) and
/// of webhook `timestamp` (as an integer).
pub fn unix_millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn millis_of_a_known_instant() {
        let at = Utc.with_ymd_and_hms(2023, 11, 14, 22, 13, 20).single();
        assert_eq!(at.map(unix_millis), Some(1_700_000_000_000));
    }
}
