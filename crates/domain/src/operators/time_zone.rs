//! The time zone an operator reads the console's times in: an IANA name (`Europe/Berlin`,
//! `America/Toronto`) from the tz database that `chrono-tz` compiles in, or `UTC`, the default.
//! Stored times stay UTC; only what a page shows changes.

use chrono::{DateTime, NaiveDateTime, TimeZone as _, Utc};
use chrono_tz::Tz;

/// An operator's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperatorTimeZone(Tz);

impl OperatorTimeZone {
    /// Coordinated Universal Time: every operator's zone until it chooses another.
    pub const UTC: Self = Self(Tz::UTC);

    /// The zone named `raw` (an IANA name, exactly as the tz database spells it), or `None`.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.trim().parse::<Tz>().ok().map(Self)
    }

    /// Its IANA name (`UTC` for UTC).
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The zones a person chooses from: `UTC`, then every `Area/Place` zone of the tz database
    /// in name order (the `Etc/` offsets and the legacy aliases without an area are left out;
    /// [`Self::parse`] still reads them).
    pub fn choices() -> impl Iterator<Item = Self> {
        std::iter::once(Self::UTC).chain(
            chrono_tz::TZ_VARIANTS
                .iter()
                .filter(|tz| tz.name().contains('/') && !tz.name().starts_with("Etc/"))
                .map(|tz| Self(*tz)),
        )
    }

    /// `at` as this zone's wall clock, to the minute, with the zone's abbreviation or offset:
    /// `2026-11-29 15:30 CET`, `2026-11-29 14:30 UTC`.
    pub fn wall_clock(self, at: DateTime<Utc>) -> String {
        at.with_timezone(&self.0)
            .format("%Y-%m-%d %H:%M %Z")
            .to_string()
    }

    /// The instant a wall-clock time of this zone names. In the hour a clock is put back it is
    /// the earlier of the two; a time that does not exist (the hour a clock is put forward) is
    /// `None`.
    pub fn instant(self, local: NaiveDateTime) -> Option<DateTime<Utc>> {
        self.0
            .from_local_datetime(&local)
            .earliest()
            .map(|t| t.with_timezone(&Utc))
    }
}

impl Default for OperatorTimeZone {
    fn default() -> Self {
        Self::UTC
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    fn utc(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        NaiveDate::from_ymd_opt(y, m, d)
            .and_then(|d| d.and_hms_opt(h, min, 0))
            .map(|t| t.and_utc())
            .unwrap_or_default()
    }

    fn local(y: i32, m: u32, d: u32, h: u32, min: u32) -> NaiveDateTime {
        utc(y, m, d, h, min).naive_utc()
    }

    #[test]
    fn names_parse_exactly_and_round_trip() {
        let berlin = OperatorTimeZone::parse(" Europe/Berlin ");
        assert_eq!(berlin.map(OperatorTimeZone::name), Some("Europe/Berlin"));
        assert_eq!(OperatorTimeZone::parse("UTC"), Some(OperatorTimeZone::UTC));
        assert_eq!(OperatorTimeZone::parse("Mars/Olympus_Mons"), None);
        assert_eq!(OperatorTimeZone::parse(""), None);
        assert_eq!(OperatorTimeZone::default(), OperatorTimeZone::UTC);
    }

    #[test]
    fn every_choice_parses_back_and_utc_comes_first() {
        let choices: Vec<_> = OperatorTimeZone::choices().collect();
        assert_eq!(choices[0], OperatorTimeZone::UTC);
        assert!(choices.len() > 300, "{}", choices.len());
        for zone in &choices {
            assert_eq!(OperatorTimeZone::parse(zone.name()), Some(*zone));
        }
        let names: Vec<_> = choices.iter().map(|z| z.name()).collect();
        assert!(names.contains(&"America/Toronto"));
        assert!(names.contains(&"Australia/Sydney"));
        assert!(!names.iter().any(|n| n.starts_with("Etc/")));
    }

    #[test]
    fn a_wall_clock_follows_the_zone_and_its_daylight_saving() {
        let at = utc(2026, 11, 29, 14, 30);
        assert_eq!(OperatorTimeZone::UTC.wall_clock(at), "2026-11-29 14:30 UTC");
        let berlin = OperatorTimeZone::parse("Europe/Berlin").unwrap_or_default();
        assert_eq!(berlin.wall_clock(at), "2026-11-29 15:30 CET");
        assert_eq!(
            berlin.wall_clock(utc(2026, 7, 1, 14, 30)),
            "2026-07-01 16:30 CEST"
        );
        let sydney = OperatorTimeZone::parse("Australia/Sydney").unwrap_or_default();
        assert_eq!(sydney.wall_clock(at), "2026-11-30 01:30 AEDT");
    }

    #[test]
    fn a_wall_clock_time_names_one_instant_or_none() {
        let toronto = OperatorTimeZone::parse("America/Toronto").unwrap_or_default();
        assert_eq!(
            toronto.instant(local(2026, 11, 29, 9, 30)),
            Some(utc(2026, 11, 29, 14, 30))
        );
        // 2026-03-08 02:30 does not exist in Toronto (clocks go from 02:00 to 03:00).
        assert_eq!(toronto.instant(local(2026, 3, 8, 2, 30)), None);
        // 2026-11-01 01:30 happens twice; the first is meant.
        assert_eq!(
            toronto.instant(local(2026, 11, 1, 1, 30)),
            Some(utc(2026, 11, 1, 5, 30))
        );
        assert_eq!(
            OperatorTimeZone::UTC.instant(local(2026, 11, 29, 14, 30)),
            Some(utc(2026, 11, 29, 14, 30))
        );
    }
}
