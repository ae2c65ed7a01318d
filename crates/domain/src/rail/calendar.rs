//! A rail's cut-offs and business days (docs/RAILS.md, Cut-offs and business days).
//!
//! A [`RailCalendar`] holds the rail's cut-off times (UTC, one or more a day) and the days the
//! bank does not work: every Saturday and Sunday, plus a list of holidays. It answers three
//! questions:
//!
//! - [`next_cutoff`](RailCalendar::next_cutoff): when the next file goes to the bank. An instant
//!   **exactly at** a cut-off belongs to that cut-off (the file written at 15:00:00 carries what
//!   closed at 15:00:00); one nanosecond later belongs to the next one. Cut-offs on weekends and
//!   holidays do not exist.
//! - [`is_business_day`](RailCalendar::is_business_day) and
//!   [`next_business_day`](RailCalendar::next_business_day) (strictly after the given day).
//! - [`effective_date`](RailCalendar::effective_date): the day a file settles, the next business
//!   day after its cut-off's day. The cut-off of a file is the first cut-off at or after the
//!   instant it was written, so a file written at Friday's cut-off settles on Monday (Tuesday
//!   when Monday is a holiday), and one written on Saturday goes with Monday's cut-off and
//!   settles on Tuesday.
//!
//! Every search is bounded: a calendar is refused at construction when some holiday starts a
//! run of more than [`MAX_CLOSED_DAYS`] days without a business day, so on a calendar that
//! exists the searches always succeed (they return `None` only at the end of the date range
//! `chrono` can represent).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Utc, Weekday};

use super::file_rail::EffectiveDate;

/// The longest run of days without a business day a calendar may have. No bank closes for a
/// month; a list that says so is a mistake (a range pasted twice, a wrong year).
pub const MAX_CLOSED_DAYS: u32 = 31;

/// Why a calendar cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalendarError {
    /// There is no cut-off time.
    #[error("at least one cut-off time is needed")]
    NoCutoffs,
    /// The same cut-off time is listed twice.
    #[error("cut-off {0} is listed twice")]
    DuplicateCutoff(String),
    /// From this holiday on, no business day follows within [`MAX_CLOSED_DAYS`].
    #[error("from {0} on there is no business day within {MAX_CLOSED_DAYS} days")]
    ClosedTooLong(NaiveDate),
}

/// A text that is not a cut-off time (`HH:MM`) or a date (`YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CalendarParseError(String);

/// Parses a cut-off time, exactly `HH:MM` (24-hour, UTC, two digits each): `15:00`, `09:30`.
///
/// # Errors
/// Anything else, including `9:30`, `15:00:00` and `24:00`.
pub fn parse_cutoff(text: &str) -> Result<NaiveTime, CalendarParseError> {
    let bad = || {
        CalendarParseError(format!(
            "must be a UTC time written HH:MM (00:00 to 23:59), got {text:?}"
        ))
    };
    let bytes = text.as_bytes();
    if bytes.len() != 5
        || bytes.get(2) != Some(&b':')
        || !text
            .bytes()
            .enumerate()
            .all(|(i, b)| i == 2 || b.is_ascii_digit())
    {
        return Err(bad());
    }
    let hour: u32 = text.get(..2).and_then(|h| h.parse().ok()).ok_or_else(bad)?;
    let minute: u32 = text.get(3..).and_then(|m| m.parse().ok()).ok_or_else(bad)?;
    NaiveTime::from_hms_opt(hour, minute, 0).ok_or_else(bad)
}

/// Parses a date, exactly `YYYY-MM-DD`: `2026-12-25`.
///
/// # Errors
/// Anything else, including dates that do not exist (`2027-02-29`).
pub fn parse_date(text: &str) -> Result<NaiveDate, CalendarParseError> {
    let well_formed = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    well_formed
        .then(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
        .flatten()
        .ok_or_else(|| {
            CalendarParseError(format!(
                "must be a date written YYYY-MM-DD that exists, got {text:?}"
            ))
        })
}

/// A rail's cut-off times and business days. Build it with [`RailCalendar::new`].
#[derive(Clone, PartialEq, Eq)]
pub struct RailCalendar {
    /// Sorted, distinct, at least one.
    cutoffs: Vec<NaiveTime>,
    holidays: BTreeSet<NaiveDate>,
    /// Business days from a cut-off's day to its files' effective date (1 by default; 0 for
    /// same-day settlement).
    settlement_days: u32,
    /// Whether Saturdays and Sundays are business days (a rail that runs every day); closed by
    /// default.
    weekends_open: bool,
}

/// The most business days a rail may take to settle.
pub const MAX_SETTLEMENT_DAYS: u32 = 5;

impl fmt::Debug for RailCalendar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RailCalendar")
            .field("cutoffs", &self.cutoff_texts())
            .field("holidays", &self.holidays.len())
            .field("weekends_open", &self.weekends_open)
            .finish()
    }
}

impl RailCalendar {
    /// A calendar with these cut-off times (in any order) and holidays (duplicates are
    /// harmless). Saturdays and Sundays are never business days.
    ///
    /// # Errors
    /// No cut-off, a cut-off listed twice, or a holiday from which no business day follows
    /// within [`MAX_CLOSED_DAYS`].
    pub fn new(
        cutoffs: impl IntoIterator<Item = NaiveTime>,
        holidays: impl IntoIterator<Item = NaiveDate>,
    ) -> Result<Self, CalendarError> {
        let mut sorted: Vec<NaiveTime> = cutoffs.into_iter().collect();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|w| w.first() == w.get(1))
            && let Some(twice) = pair.first()
        {
            return Err(CalendarError::DuplicateCutoff(
                twice.format("%H:%M").to_string(),
            ));
        }
        if sorted.is_empty() {
            return Err(CalendarError::NoCutoffs);
        }
        let calendar = Self {
            cutoffs: sorted,
            holidays: holidays.into_iter().collect(),
            settlement_days: 1,
            weekends_open: false,
        };
        for holiday in &calendar.holidays {
            // A run of closed days longer than the bound holds a holiday within its first three
            // days (weekends are two days), so checking from each holiday finds every such run.
            let open_soon = holiday
                .pred_opt()
                .and_then(|eve| calendar.next_business_day(eve))
                .is_some();
            if !open_soon {
                return Err(CalendarError::ClosedTooLong(*holiday));
            }
        }
        Ok(calendar)
    }

    /// The cut-off times, sorted.
    pub fn cutoffs(&self) -> &[NaiveTime] {
        &self.cutoffs
    }

    /// The cut-off times as `HH:MM`, sorted.
    pub fn cutoff_texts(&self) -> Vec<String> {
        self.cutoffs
            .iter()
            .map(|t| t.format("%H:%M").to_string())
            .collect()
    }

    /// The holidays, sorted.
    pub fn holidays(&self) -> impl Iterator<Item = NaiveDate> + '_ {
        self.holidays.iter().copied()
    }

    /// Whether the bank works on `date`: not a listed holiday, nor a Saturday or Sunday unless
    /// the weekends are open ([`with_weekends_open`](Self::with_weekends_open)).
    pub fn is_business_day(&self, date: NaiveDate) -> bool {
        (self.weekends_open || !matches!(date.weekday(), Weekday::Sat | Weekday::Sun))
            && !self.holidays.contains(&date)
    }

    /// This calendar with Saturdays and Sundays open when `open`: a rail whose bank works
    /// every day. The holidays stay closed.
    #[must_use]
    pub fn with_weekends_open(mut self, open: bool) -> Self {
        self.weekends_open = open;
        self
    }

    /// The first business day on or after `date`, looking at most [`MAX_CLOSED_DAYS`] days
    /// ahead.
    fn business_day_from(&self, date: NaiveDate) -> Option<NaiveDate> {
        let mut day = date;
        for _ in 0..=MAX_CLOSED_DAYS {
            if self.is_business_day(day) {
                return Some(day);
            }
            day = day.succ_opt()?;
        }
        None
    }

    /// The first business day strictly after `date`. `None` only when none comes within
    /// [`MAX_CLOSED_DAYS`] days, which [`RailCalendar::new`] rules out (or at the end of the
    /// representable dates).
    pub fn next_business_day(&self, date: NaiveDate) -> Option<NaiveDate> {
        self.business_day_from(date.succ_opt()?)
    }

    /// The first cut-off at or after `after` (an instant exactly at a cut-off is that
    /// cut-off), skipping weekends and holidays. `None` as for
    /// [`next_business_day`](Self::next_business_day).
    pub fn next_cutoff(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let today = after.date_naive();
        if self.is_business_day(today)
            && let Some(time) = self
                .cutoffs
                .iter()
                .find(|t| today.and_time(**t).and_utc() >= after)
        {
            return Some(today.and_time(*time).and_utc());
        }
        let day = self.next_business_day(today)?;
        let first = self.cutoffs.first()?;
        Some(day.and_time(*first).and_utc())
    }

    /// The same calendar settling `days` business days after a cut-off's day (0: the same day,
    /// as Same Day ACH; at most [`MAX_SETTLEMENT_DAYS`], which larger values become).
    pub fn with_settlement_days(self, days: u32) -> Self {
        Self {
            settlement_days: days.min(MAX_SETTLEMENT_DAYS),
            ..self
        }
    }

    /// Whether Saturdays and Sundays are business days ([`with_weekends_open`](Self::with_weekends_open)).
    pub fn weekends_open(&self) -> bool {
        self.weekends_open
    }

    /// Business days from a cut-off's day to its files' effective date.
    pub fn settlement_days(&self) -> u32 {
        self.settlement_days
    }

    /// The day a file written at `written_at` settles: [`settlement_days`](Self::settlement_days)
    /// business days after the day of its cut-off (the first cut-off at or after `written_at`);
    /// by default the next business day. `None` as for
    /// [`next_business_day`](Self::next_business_day).
    pub fn effective_date(&self, written_at: DateTime<Utc>) -> Option<NaiveDate> {
        let cutoff = self.next_cutoff(written_at)?;
        let mut day = cutoff.date_naive();
        for _ in 0..self.settlement_days {
            day = self.next_business_day(day)?;
        }
        Some(day)
    }

    /// [`effective_date`](Self::effective_date) as the file rail's
    /// [`FileRailSettings::effective_date`](super::file_rail::FileRailSettings::effective_date).
    ///
    /// The rail needs a date for every instant. A calendar from [`RailCalendar::new`] always has
    /// one, except past the end of the dates `chrono` represents (the year 262143), where the
    /// day after `written_at` is used instead.
    pub fn effective_date_fn(self: Arc<Self>) -> EffectiveDate {
        Arc::new(move |written_at: DateTime<Utc>| {
            self.effective_date(written_at).unwrap_or_else(|| {
                let day = written_at.date_naive();
                day.succ_opt().unwrap_or(day)
            })
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, min, s).unwrap()
    }

    fn times(texts: &[&str]) -> Vec<NaiveTime> {
        texts.iter().map(|t| parse_cutoff(t).unwrap()).collect()
    }

    fn calendar(cutoffs: &[&str], holidays: &[NaiveDate]) -> RailCalendar {
        RailCalendar::new(times(cutoffs), holidays.iter().copied()).unwrap()
    }

    // 2026-11-27 is a Friday; 2026-11-30 a Monday.

    #[test]
    fn with_the_weekends_open_saturday_has_cutoffs_and_settles_files_but_holidays_stay_closed() {
        let closed = calendar(&["15:00"], &[date(2026, 11, 29)]);
        let open = closed.clone().with_weekends_open(true);
        assert!(!closed.is_business_day(date(2026, 11, 28)));
        assert!(open.is_business_day(date(2026, 11, 28)));
        // A holiday that falls on a weekend stays closed.
        assert!(!open.is_business_day(date(2026, 11, 29)));
        // Saturday 10:00: Saturday's cut-off, where the closed weekend waits for Monday's.
        assert_eq!(
            open.next_cutoff(at(2026, 11, 28, 10, 0, 0)),
            Some(at(2026, 11, 28, 15, 0, 0))
        );
        assert_eq!(
            closed.next_cutoff(at(2026, 11, 28, 10, 0, 0)),
            Some(at(2026, 11, 30, 15, 0, 0))
        );
        // Friday's file settles on Saturday with the weekend open; Sunday is a holiday.
        assert_eq!(
            open.effective_date(at(2026, 11, 27, 15, 0, 0)),
            Some(date(2026, 11, 28))
        );
        assert_eq!(
            open.next_business_day(date(2026, 11, 28)),
            Some(date(2026, 11, 30))
        );
        assert_ne!(open, closed);
        assert!(format!("{open:?}").contains("weekends_open: true"));
    }

    #[test]
    fn cutoffs_parse_only_as_hh_mm() {
        assert_eq!(
            parse_cutoff("15:00").unwrap(),
            NaiveTime::from_hms_opt(15, 0, 0).unwrap()
        );
        assert_eq!(parse_cutoff("00:00").unwrap(), NaiveTime::MIN);
        assert_eq!(
            parse_cutoff("23:59").unwrap(),
            NaiveTime::from_hms_opt(23, 59, 0).unwrap()
        );
        for bad in [
            "",
            "9:30",
            "09:3",
            "24:00",
            "12:60",
            "15:00:00",
            "15-00",
            "1500",
            " 15:00",
            "+1:00",
            "ab:cd",
            "１５:00",
        ] {
            let err = parse_cutoff(bad).unwrap_err();
            assert!(err.to_string().contains("HH:MM"), "{bad}: {err}");
        }
    }

    #[test]
    fn dates_parse_only_as_existing_yyyy_mm_dd() {
        assert_eq!(parse_date("2026-12-25").unwrap(), date(2026, 12, 25));
        assert_eq!(parse_date("2028-02-29").unwrap(), date(2028, 2, 29));
        for bad in [
            "2027-02-29",
            "2026-13-01",
            "2026-12-32",
            "2026-1-01",
            "26-12-25",
            "2026/12/25",
            "2026-12-25T00:00",
            "",
            "+202-12-25",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_calendar_needs_distinct_cutoffs() {
        assert_eq!(
            RailCalendar::new(Vec::new(), Vec::new()),
            Err(CalendarError::NoCutoffs)
        );
        assert_eq!(
            RailCalendar::new(times(&["15:00", "09:00", "15:00"]), Vec::new()),
            Err(CalendarError::DuplicateCutoff("15:00".to_owned()))
        );
        let c = calendar(&["15:00", "09:00"], &[]);
        assert_eq!(c.cutoff_texts(), ["09:00", "15:00"]);
    }

    #[test]
    fn weekends_and_holidays_are_not_business_days() {
        let c = calendar(&["15:00"], &[date(2026, 12, 25)]);
        assert!(c.is_business_day(date(2026, 11, 27))); // Friday
        assert!(!c.is_business_day(date(2026, 11, 28))); // Saturday
        assert!(!c.is_business_day(date(2026, 11, 29))); // Sunday
        assert!(c.is_business_day(date(2026, 11, 30))); // Monday
        assert!(!c.is_business_day(date(2026, 12, 25))); // a Friday holiday
        assert!(c.is_business_day(date(2026, 12, 24)));
    }

    #[test]
    fn the_next_business_day_skips_weekends_and_holidays() {
        let c = calendar(&["15:00"], &[date(2026, 11, 30)]);
        assert_eq!(
            c.next_business_day(date(2026, 11, 26)),
            Some(date(2026, 11, 27))
        );
        // Friday → Monday is a holiday → Tuesday.
        assert_eq!(
            c.next_business_day(date(2026, 11, 27)),
            Some(date(2026, 12, 1))
        );
        assert_eq!(
            c.next_business_day(date(2026, 11, 28)),
            Some(date(2026, 12, 1))
        );
        // Strictly after: a business day is not its own next one.
        assert_eq!(
            c.next_business_day(date(2026, 12, 1)),
            Some(date(2026, 12, 2))
        );
    }

    #[test]
    fn the_next_business_day_crosses_the_year_end_and_leap_days() {
        let c = calendar(&["15:00"], &[date(2026, 12, 25), date(2027, 1, 1)]);
        // Thursday 2026-12-31 → Friday 1 January is a holiday → Monday 4 January.
        assert_eq!(
            c.next_business_day(date(2026, 12, 31)),
            Some(date(2027, 1, 4))
        );
        // 2028-02-28 is a Monday; the 29th exists in 2028.
        let plain = calendar(&["15:00"], &[]);
        assert_eq!(
            plain.next_business_day(date(2028, 2, 28)),
            Some(date(2028, 2, 29))
        );
        assert_eq!(
            plain.next_business_day(date(2028, 2, 29)),
            Some(date(2028, 3, 1))
        );
        // 2027 has none: Friday 2027-02-26 → Monday 2027-03-01.
        assert_eq!(
            plain.next_business_day(date(2027, 2, 26)),
            Some(date(2027, 3, 1))
        );
        let leap_holiday = calendar(&["15:00"], &[date(2028, 2, 29)]);
        assert_eq!(
            leap_holiday.next_business_day(date(2028, 2, 28)),
            Some(date(2028, 3, 1))
        );
    }

    #[test]
    fn the_next_cutoff_is_the_first_at_or_after_the_instant() {
        let c = calendar(&["15:00", "10:00"], &[]);
        // Before the first cut-off of a Thursday.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 26, 8, 0, 0)),
            Some(at(2026, 11, 26, 10, 0, 0))
        );
        // Exactly at a cut-off: that one.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 26, 10, 0, 0)),
            Some(at(2026, 11, 26, 10, 0, 0))
        );
        // One second (and one nanosecond) later: the next one the same day.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 26, 10, 0, 1)),
            Some(at(2026, 11, 26, 15, 0, 0))
        );
        let just_after = at(2026, 11, 26, 10, 0, 0) + chrono::Duration::nanoseconds(1);
        assert_eq!(c.next_cutoff(just_after), Some(at(2026, 11, 26, 15, 0, 0)));
        // After the last: the first of the next business day.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 26, 15, 0, 1)),
            Some(at(2026, 11, 27, 10, 0, 0))
        );
    }

    #[test]
    fn the_next_cutoff_skips_weekends_and_holidays() {
        let c = calendar(&["15:00"], &[date(2026, 11, 30)]);
        // Friday after the cut-off → Monday is a holiday → Tuesday.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 27, 16, 0, 0)),
            Some(at(2026, 12, 1, 15, 0, 0))
        );
        // Saturday morning, before the time of a cut-off that does not exist on Saturdays.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 28, 9, 0, 0)),
            Some(at(2026, 12, 1, 15, 0, 0))
        );
        // On the holiday itself.
        assert_eq!(
            c.next_cutoff(at(2026, 11, 30, 9, 0, 0)),
            Some(at(2026, 12, 1, 15, 0, 0))
        );
    }

    #[test]
    fn the_next_cutoff_crosses_the_year_end() {
        let c = calendar(&["15:00"], &[date(2027, 1, 1)]);
        assert_eq!(
            c.next_cutoff(at(2026, 12, 31, 15, 30, 0)),
            Some(at(2027, 1, 4, 15, 0, 0))
        );
        let midnight = calendar(&["00:00"], &[]);
        // Exactly at midnight of a business day is that day's cut-off.
        assert_eq!(
            midnight.next_cutoff(at(2026, 12, 31, 0, 0, 0)),
            Some(at(2026, 12, 31, 0, 0, 0))
        );
        assert_eq!(
            midnight.next_cutoff(at(2026, 12, 31, 0, 0, 1)),
            Some(at(2027, 1, 1, 0, 0, 0))
        );
    }

    #[test]
    fn a_file_at_the_friday_cutoff_settles_monday_or_tuesday_after_a_holiday() {
        let plain = calendar(&["15:00"], &[]);
        let friday_cutoff = at(2026, 11, 27, 15, 0, 0);
        assert_eq!(
            plain.effective_date(friday_cutoff),
            Some(date(2026, 11, 30))
        );
        let monday_off = calendar(&["15:00"], &[date(2026, 11, 30)]);
        assert_eq!(
            monday_off.effective_date(friday_cutoff),
            Some(date(2026, 12, 1))
        );
        // Written after Friday's cut-off: it goes with Monday's cut-off, settles Tuesday.
        assert_eq!(
            plain.effective_date(at(2026, 11, 27, 15, 0, 1)),
            Some(date(2026, 12, 1))
        );
        // Written on Saturday: likewise.
        assert_eq!(
            plain.effective_date(at(2026, 11, 28, 12, 0, 0)),
            Some(date(2026, 12, 1))
        );
        // A morning cut-off of a Thursday settles Friday.
        let two = calendar(&["09:00", "15:00"], &[]);
        assert_eq!(
            two.effective_date(at(2026, 11, 26, 9, 0, 0)),
            Some(date(2026, 11, 27))
        );
        assert_eq!(
            two.effective_date(at(2026, 11, 26, 14, 0, 0)),
            Some(date(2026, 11, 27))
        );
    }

    #[test]
    fn effective_dates_cross_the_year_end_and_leap_days() {
        let c = calendar(&["15:00"], &[date(2026, 12, 25), date(2027, 1, 1)]);
        // Thursday 24 December's cut-off: Friday is Christmas, then the weekend.
        assert_eq!(
            c.effective_date(at(2026, 12, 24, 15, 0, 0)),
            Some(date(2026, 12, 28))
        );
        assert_eq!(
            c.effective_date(at(2026, 12, 31, 14, 0, 0)),
            Some(date(2027, 1, 4))
        );
        let plain = calendar(&["15:00"], &[]);
        assert_eq!(
            plain.effective_date(at(2028, 2, 28, 15, 0, 0)),
            Some(date(2028, 2, 29))
        );
    }

    #[test]
    fn the_effective_date_fn_is_the_calendar_answer() {
        let c = Arc::new(calendar(&["15:00"], &[date(2026, 11, 30)]));
        let f = c.clone().effective_date_fn();
        for instant in [
            at(2026, 11, 27, 15, 0, 0),
            at(2026, 11, 28, 1, 0, 0),
            at(2026, 12, 31, 23, 59, 59),
        ] {
            assert_eq!(Some(f(instant)), c.effective_date(instant));
        }
        assert_eq!(f(at(2026, 11, 27, 15, 0, 0)), date(2026, 12, 1));
    }

    #[test]
    fn a_pathological_holiday_list_is_refused_and_searches_stay_bounded() {
        // Every day of 2027 is a holiday.
        let year: Vec<NaiveDate> = date(2027, 1, 1).iter_days().take(365).collect();
        assert_eq!(
            RailCalendar::new(times(&["15:00"]), year.clone()),
            Err(CalendarError::ClosedTooLong(date(2027, 1, 1)))
        );
        // A month and a bit of closure in the middle of a long list is found too.
        let mut long: Vec<NaiveDate> = date(2026, 8, 3).iter_days().take(33).collect();
        long.push(date(2026, 12, 25));
        assert!(matches!(
            RailCalendar::new(times(&["15:00"]), long),
            Err(CalendarError::ClosedTooLong(_))
        ));
        // Just within the bound is accepted: 29 holidays Monday to Tuesday, with the weekends
        // around them, leave at most 31 closed days in a row.
        let within: Vec<NaiveDate> = date(2026, 8, 3).iter_days().take(29).collect();
        let c = RailCalendar::new(times(&["15:00"]), within).unwrap();
        assert_eq!(
            c.next_business_day(date(2026, 7, 31)),
            Some(date(2026, 9, 1))
        );

        // Built around the check (as a bad refactoring could), the searches still end: no
        // business day within the bound gives `None`, never a loop.
        let unchecked = RailCalendar {
            cutoffs: times(&["15:00"]),
            holidays: year.into_iter().collect(),
            settlement_days: 1,
            weekends_open: false,
        };
        assert_eq!(unchecked.next_business_day(date(2026, 12, 31)), None);
        assert_eq!(unchecked.next_cutoff(at(2026, 12, 31, 16, 0, 0)), None);
        assert_eq!(unchecked.effective_date(at(2026, 12, 31, 16, 0, 0)), None);
        let f = Arc::new(unchecked).effective_date_fn();
        assert_eq!(f(at(2026, 12, 31, 16, 0, 0)), date(2027, 1, 1));
    }

    #[test]
    fn settlement_days_count_business_days_from_the_cutoffs_day() {
        // Friday 2026-11-27, the Monday after a holiday.
        let c = calendar(&["15:00"], &[date(2026, 11, 30)]);
        let friday_noon = at(2026, 11, 27, 12, 0, 0);
        let same_day = c.clone().with_settlement_days(0);
        assert_eq!(
            same_day.effective_date(friday_noon),
            Some(date(2026, 11, 27))
        );
        assert_eq!(c.effective_date(friday_noon), Some(date(2026, 12, 1)));
        let two = c.clone().with_settlement_days(2);
        assert_eq!(two.effective_date(friday_noon), Some(date(2026, 12, 2)));
        // After the cut-off, same-day settlement is the next cut-off's day.
        assert_eq!(
            same_day.effective_date(at(2026, 11, 27, 16, 0, 0)),
            Some(date(2026, 12, 1))
        );
        assert_eq!(
            c.with_settlement_days(99).settlement_days(),
            MAX_SETTLEMENT_DAYS
        );
    }

    #[test]
    fn the_end_of_the_date_range_gives_none_not_a_panic() {
        let c = calendar(&["15:00"], &[]);
        assert_eq!(c.next_business_day(NaiveDate::MAX), None);
        assert_eq!(
            c.next_cutoff(NaiveDate::MAX.and_hms_opt(16, 0, 0).unwrap().and_utc()),
            None
        );
    }
}
