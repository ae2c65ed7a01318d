//! When an open batch runs (its `batch_run_time`): a fixed time after it opens (sandbox mode),
//! or at the next cut-off of its rail (production rails; docs/RAILS.md, Cut-offs and business
//! days), so everything that joins before a cut-off goes in that cut-off's file.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use super::calendar::RailCalendar;
use crate::money::Asset;

/// When open batches run.
#[derive(Debug, Clone)]
pub enum BatchSchedule {
    /// This long after the batch opens.
    Every(Duration),
    /// At the next cut-off of the asset's rail calendar; an asset without one (or a calendar
    /// that finds no cut-off) runs `otherwise` after opening.
    AtCutoffs {
        /// The calendar of each asset's rail.
        calendars: BTreeMap<Asset, Arc<RailCalendar>>,
        /// The wait of assets without a calendar.
        otherwise: Duration,
    },
}

impl BatchSchedule {
    /// The run time of a batch opened at `opened_at` whose asset has no rail calendar.
    pub fn without_calendar(&self, opened_at: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Self::Every(wait)
            | Self::AtCutoffs {
                otherwise: wait, ..
            } => opened_at + *wait,
        }
    }

    /// The run time of a batch of `asset` opened at `opened_at`.
    pub fn run_time(&self, asset: Asset, opened_at: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Self::Every(wait) => opened_at + *wait,
            Self::AtCutoffs {
                calendars,
                otherwise,
            } => calendars
                .get(&asset)
                .and_then(|calendar| calendar.next_cutoff(opened_at))
                .unwrap_or(opened_at + *otherwise),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rail::calendar::{parse_cutoff, parse_date};
    use chrono::TimeZone;

    fn utc(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, min, 0)
            .single()
            .unwrap_or_default()
    }

    #[test]
    fn sandbox_batches_run_a_fixed_time_after_opening() {
        let schedule = BatchSchedule::Every(Duration::seconds(60));
        let opened = utc(2026, 11, 25, 10, 0);
        assert_eq!(
            schedule.run_time(Asset::Usd, opened),
            opened + Duration::seconds(60)
        );
    }

    #[test]
    fn production_batches_run_at_their_rails_next_cutoff() {
        let cutoffs: Vec<_> = ["10:00", "15:00"]
            .iter()
            .filter_map(|c| parse_cutoff(c).ok())
            .collect();
        let holidays: Vec<_> = parse_date("2026-11-26").into_iter().collect();
        let Ok(calendar) = RailCalendar::new(cutoffs, holidays) else {
            panic!("calendar");
        };
        let schedule = BatchSchedule::AtCutoffs {
            calendars: BTreeMap::from([(Asset::Usd, Arc::new(calendar))]),
            otherwise: Duration::seconds(60),
        };
        // Wednesday 11:00: the 15:00 cut-off.
        assert_eq!(
            schedule.run_time(Asset::Usd, utc(2026, 11, 25, 11, 0)),
            utc(2026, 11, 25, 15, 0)
        );
        // Wednesday 16:00: Thursday is a holiday, so Friday 10:00.
        assert_eq!(
            schedule.run_time(Asset::Usd, utc(2026, 11, 25, 16, 0)),
            utc(2026, 11, 27, 10, 0)
        );
        // An asset without a rail calendar.
        assert_eq!(
            schedule.run_time(Asset::Eur, utc(2026, 11, 25, 16, 0)),
            utc(2026, 11, 25, 16, 1)
        );
    }
}
