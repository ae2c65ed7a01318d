//! The operators' overview (the console's home): what needs attention across every subaccount,
//! read in a few aggregate queries. The rules live here: what "today" is (the UTC day of the
//! clock), the chart's window (the 30 UTC days ending today, every day present even when
//! nothing was created), how far back returns (7 days) and webhook failures (7 days) are
//! counted, what a failing webhook endpoint is ([`FailingEndpoint`]), and each rail's next
//! cut-off from the batch schedule (none in sandbox mode).
//!
//! Top-level because it reads payouts, balances, bank files, bank reports, receivers and the
//! outbox: a module beside one of them would import the others.

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use futures_util::future::try_join3;
use std::sync::Arc;

use crate::account::PayoutMethod;
use crate::error::PortError;
use crate::ids::{RailFileId, SubaccountId};
use crate::money::Asset;
use crate::payout::PayoutStatus;
use crate::ports::Clock;
use crate::rail::schedule::BatchSchedule;

/// How many UTC days the chart shows, today included.
pub const CHART_DAYS: u32 = 30;

/// How far back returns are counted.
pub const RETURNS_WINDOW: Duration = Duration::days(7);

/// How far back webhook events are looked at for failures.
pub const WEBHOOK_WINDOW: Duration = Duration::days(7);

/// The most balances, waiting files and failing endpoints listed (the counts stay exact).
pub const LIST_LIMIT: u32 = 100;

/// Payouts created on one UTC day with one status (as the store counts them; days and
/// statuses with none are absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayStatusCount {
    /// The UTC day of creation.
    pub day: NaiveDate,
    /// The payout's status now.
    pub status: PayoutStatus,
    /// How many.
    pub count: u64,
}

/// One subaccount's balance in one asset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubaccountBalance {
    /// The subaccount.
    pub subaccount_id: SubaccountId,
    /// Its name, as the merchant set it.
    pub name: String,
    /// The asset.
    pub asset: Asset,
    /// Minor units that may be paid out.
    pub available: i64,
    /// Minor units held by payouts not yet final.
    pub pending: i64,
}

/// A bank file sent to the bank's drop that the bank has not acknowledged or rejected yet
/// (state `uploaded`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwaitingFile {
    /// The file.
    pub id: RailFileId,
    /// Its name in the drop.
    pub name: String,
    /// Its method.
    pub method: PayoutMethod,
    /// When it was uploaded (its creation time if the upload time was not recorded).
    pub uploaded_at: DateTime<Utc>,
}

/// Files sent and not yet answered: how many, and the oldest of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwaitingFiles {
    /// How many files are `uploaded`.
    pub count: u64,
    /// The oldest, oldest first (at most [`LIST_LIMIT`]).
    pub oldest: Vec<AwaitingFile>,
}

/// Returns read from one rail's bank reports in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReturnCount {
    /// The rail.
    pub method: PayoutMethod,
    /// Report lines of kind `returned`.
    pub count: u64,
    /// Their amounts, in minor units of the method's asset (lines without an amount count 0).
    pub amount: i64,
}

/// Receivers waiting for a KYC decision, as the store counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KycBacklog {
    /// How many.
    pub count: u64,
    /// When the one waiting longest was registered.
    pub oldest: Option<DateTime<Utc>>,
}

/// A subaccount whose webhook endpoint is failing: it has a webhook URL and, among the events
/// written for it in the window ([`WEBHOOK_WINDOW`]), at least one is being retried after a
/// failed attempt (status `pending`, one attempt or more) or was given up (`exhausted`: attempts
/// used up, or the endpoint answered 410). A subaccount without a webhook URL is never failing:
/// its events are given up at once by design. A disabled endpoint gives up every new event, so it is
/// failing as soon as it has one; when it was disabled is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingEndpoint {
    /// The subaccount.
    pub subaccount_id: SubaccountId,
    /// Its name, as the merchant set it.
    pub name: String,
    /// Events being retried after a failure.
    pub retrying: u64,
    /// Events given up.
    pub exhausted: u64,
    /// The newest of those events' creation time.
    pub latest: DateTime<Utc>,
    /// The newest of those events' last error (short and secret-free, as recorded).
    pub last_error: Option<String>,
    /// When the endpoint was disabled, if it is.
    pub disabled_at: Option<DateTime<Utc>>,
}

/// The open batches of one asset: what waits for its rail's next cut-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenBatches {
    /// The asset.
    pub asset: Asset,
    /// Open batches (one per subaccount at most).
    pub batches: u64,
    /// The payouts in them.
    pub payouts: u64,
}

/// A rail's next cut-off and what waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RailCutoff {
    /// The asset the rail pays (its calendar is the asset's).
    pub asset: Asset,
    /// The next cut-off at or after now; `None` when the calendar finds none (a holiday list
    /// closing the bank for longer than the calendar searches).
    pub next: Option<DateTime<Utc>>,
    /// Open batches of the asset.
    pub batches: u64,
    /// The payouts in them, which the cut-off will file.
    pub payouts: u64,
}

/// The reads behind the overview, across every subaccount.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OverviewStore: Send + Sync {
    /// Payouts created in `[from, until)`, counted by UTC day of creation and current status.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn payouts_per_day(
        &self,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<DayStatusCount>, PortError>;

    /// Up to `limit` balances, by subaccount name, subaccount id and asset.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn balances(&self, limit: u32) -> Result<Vec<SubaccountBalance>, PortError>;

    /// The files in state `uploaded`: their number and the `limit` oldest.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn awaiting_files(&self, limit: u32) -> Result<AwaitingFiles, PortError>;

    /// Bank report lines of kind `returned` read at or after `since`, by method (methods with
    /// none are absent).
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn returns_since(&self, since: DateTime<Utc>) -> Result<Vec<ReturnCount>, PortError>;

    /// The receivers whose KYC is pending.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn kyc_backlog(&self) -> Result<KycBacklog, PortError>;

    /// Up to `limit` failing endpoints (see [`FailingEndpoint`]) over events created at or
    /// after `since`, newest failure first.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn failing_endpoints(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<FailingEndpoint>, PortError>;

    /// The open batches and their payouts, by asset (assets with none are absent).
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn open_batches(&self) -> Result<Vec<OpenBatches>, PortError>;
}

/// Payouts created on one UTC day, by status (every status, in [`PayoutStatus::ALL`] order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaySeries {
    /// The day.
    pub day: NaiveDate,
    /// How many of each status, one per [`PayoutStatus::ALL`], in that order.
    pub counts: Vec<(PayoutStatus, u64)>,
}

impl DaySeries {
    /// A day with nothing.
    pub fn empty(day: NaiveDate) -> Self {
        Self {
            day,
            counts: PayoutStatus::ALL.iter().map(|s| (*s, 0)).collect(),
        }
    }

    /// Every payout of the day.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }

    /// How many have `status`.
    pub fn of(&self, status: PayoutStatus) -> u64 {
        self.counts
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n)
    }
}

/// What the overview shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// When it was read.
    pub now: DateTime<Utc>,
    /// Payouts per day over the last [`CHART_DAYS`] UTC days, oldest first, today last; every
    /// day present.
    pub days: Vec<DaySeries>,
    /// Balances by subaccount and asset.
    pub balances: Vec<SubaccountBalance>,
    /// Files sent and not yet answered.
    pub awaiting_files: AwaitingFiles,
    /// Returns since [`Overview::returns_since`], by method.
    pub returns: Vec<ReturnCount>,
    /// Where the returns window starts.
    pub returns_since: DateTime<Utc>,
    /// The KYC queue.
    pub kyc: KycBacklog,
    /// Failing webhook endpoints.
    pub failing_endpoints: Vec<FailingEndpoint>,
    /// Where the webhook window starts.
    pub webhooks_since: DateTime<Utc>,
    /// Each rail's next cut-off and what waits for it, by asset; `None` when batches run a
    /// fixed time after they open (sandbox mode: no rail has cut-offs).
    pub cutoffs: Option<Vec<RailCutoff>>,
}

impl Overview {
    /// Today's payouts by status (the chart's last day).
    pub fn today(&self) -> Option<&DaySeries> {
        self.days.last()
    }

    /// How long the receiver waiting longest for KYC has waited.
    pub fn kyc_oldest_age(&self) -> Option<Duration> {
        self.kyc.oldest.map(|oldest| self.now - oldest)
    }
}

/// The 30 days ending on `today`, each with its counts from `counts` (counts outside the window
/// are ignored; repeated day and status pairs add up).
pub fn fill_days(today: NaiveDate, counts: &[DayStatusCount]) -> Vec<DaySeries> {
    let first = today - Duration::days(i64::from(CHART_DAYS) - 1);
    let mut days: Vec<DaySeries> = first
        .iter_days()
        .take(CHART_DAYS as usize)
        .map(DaySeries::empty)
        .collect();
    for count in counts {
        let Ok(offset) = usize::try_from((count.day - first).num_days()) else {
            continue;
        };
        if let Some(series) = days.get_mut(offset)
            && let Some(slot) = series.counts.iter_mut().find(|(s, _)| *s == count.status)
        {
            slot.1 = slot.1.saturating_add(count.count);
        }
    }
    days
}

/// The overview: the one place that decides what the console's home reads.
#[derive(Clone)]
pub struct Overviews {
    store: Arc<dyn OverviewStore>,
    clock: Arc<dyn Clock>,
    schedule: BatchSchedule,
}

impl Overviews {
    /// Over `store`, with the time from `clock`, batches running on `schedule` (the same the
    /// store gives new batches: the rails' cut-offs in production mode).
    pub fn new(
        store: Arc<dyn OverviewStore>,
        clock: Arc<dyn Clock>,
        schedule: BatchSchedule,
    ) -> Self {
        Self {
            store,
            clock,
            schedule,
        }
    }

    /// Each calendar's next cut-off after `now` with the open batches of its asset.
    fn cutoffs(&self, now: DateTime<Utc>, open: &[OpenBatches]) -> Option<Vec<RailCutoff>> {
        match &self.schedule {
            BatchSchedule::Every(_) => None,
            BatchSchedule::AtCutoffs { calendars, .. } => Some(
                calendars
                    .iter()
                    .map(|(asset, calendar)| {
                        let waiting = open.iter().find(|o| o.asset == *asset);
                        RailCutoff {
                            asset: *asset,
                            next: calendar.next_cutoff(now),
                            batches: waiting.map_or(0, |o| o.batches),
                            payouts: waiting.map_or(0, |o| o.payouts),
                        }
                    })
                    .collect(),
            ),
        }
    }

    /// Reads the overview as of now.
    ///
    /// # Errors
    /// `PortError` when any part cannot be read (the page needs them all).
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn read(&self) -> Result<Overview, PortError> {
        let now = self.clock.now();
        let today = now.date_naive();
        let first = today - Duration::days(i64::from(CHART_DAYS) - 1);
        let from = first.and_time(NaiveTime::MIN).and_utc();
        let until = today
            .succ_opt()
            .map_or(now, |next| next.and_time(NaiveTime::MIN).and_utc());
        let returns_since = now - RETURNS_WINDOW;
        let webhooks_since = now - WEBHOOK_WINDOW;
        // The six reads are independent: asked together, each on its own connection.
        let open = async {
            match self.schedule {
                BatchSchedule::Every(_) => Ok(Vec::new()),
                BatchSchedule::AtCutoffs { .. } => self.store.open_batches().await,
            }
        };
        let ((counts, balances, awaiting_files), (returns, kyc, failing_endpoints), open) =
            try_join3(
                try_join3(
                    self.store.payouts_per_day(from, until),
                    self.store.balances(LIST_LIMIT),
                    self.store.awaiting_files(LIST_LIMIT),
                ),
                try_join3(
                    self.store.returns_since(returns_since),
                    self.store.kyc_backlog(),
                    self.store.failing_endpoints(webhooks_since, LIST_LIMIT),
                ),
                open,
            )
            .await?;
        Ok(Overview {
            now,
            days: fill_days(today, &counts),
            balances,
            awaiting_files,
            returns,
            returns_since,
            kyc,
            failing_endpoints,
            webhooks_since,
            cutoffs: self.cutoffs(now, &open),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::MockClock;
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        match Utc.with_ymd_and_hms(y, m, d, h, min, 0) {
            chrono::LocalResult::Single(at) => at,
            _ => unreachable!("a valid time"),
        }
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap_or(NaiveDate::MIN)
    }

    fn clock(now: DateTime<Utc>) -> Arc<dyn Clock> {
        let mut clock = MockClock::new();
        clock.expect_now().return_const(now);
        Arc::new(clock)
    }

    fn sandbox() -> BatchSchedule {
        BatchSchedule::Every(Duration::seconds(60))
    }

    fn quiet_store() -> MockOverviewStore {
        let mut store = MockOverviewStore::new();
        store.expect_balances().returning(|_| Ok(Vec::new()));
        store
            .expect_awaiting_files()
            .returning(|_| Ok(AwaitingFiles::default()));
        store.expect_returns_since().returning(|_| Ok(Vec::new()));
        store
            .expect_kyc_backlog()
            .returning(|| Ok(KycBacklog::default()));
        store
            .expect_failing_endpoints()
            .returning(|_, _| Ok(Vec::new()));
        store
    }

    #[test]
    fn thirty_days_end_today_with_every_day_present() {
        let today = day(2026, 3, 1);
        let days = fill_days(today, &[]);
        assert_eq!(days.len(), 30);
        assert_eq!(days[0].day, day(2026, 1, 31), "across a short February");
        assert_eq!(days[29].day, today);
        assert!(days.iter().all(|d| d.total() == 0));
        assert!(
            days.windows(2)
                .all(|w| w[0].day.succ_opt() == Some(w[1].day))
        );
        assert!(
            days.iter()
                .all(|d| d.counts.len() == PayoutStatus::ALL.len())
        );
    }

    #[test]
    fn counts_land_on_their_day_and_status_and_outside_ones_are_dropped() {
        let today = day(2026, 11, 29);
        let count = |d, status, count| DayStatusCount {
            day: d,
            status,
            count,
        };
        let days = fill_days(
            today,
            &[
                count(today, PayoutStatus::Pending, 3),
                count(today, PayoutStatus::Pending, 2),
                count(today, PayoutStatus::Failed, 1),
                count(day(2026, 10, 31), PayoutStatus::Successful, 7),
                count(day(2026, 10, 30), PayoutStatus::Successful, 100),
                count(day(2026, 11, 30), PayoutStatus::Successful, 100),
            ],
        );
        assert_eq!(days[29].of(PayoutStatus::Pending), 5);
        assert_eq!(days[29].of(PayoutStatus::Failed), 1);
        assert_eq!(days[29].total(), 6);
        assert_eq!(days[0].day, day(2026, 10, 31));
        assert_eq!(days[0].of(PayoutStatus::Successful), 7);
        assert_eq!(days.iter().map(DaySeries::total).sum::<u64>(), 13);
    }

    #[tokio::test]
    async fn the_windows_are_the_utc_days_and_weeks_before_now() {
        let now = at(2026, 11, 29, 23, 59);
        let week_ago = at(2026, 11, 22, 23, 59);
        let mut store = MockOverviewStore::new();
        store
            .expect_payouts_per_day()
            .withf(|from, until| {
                *from == at(2026, 10, 31, 0, 0) && *until == at(2026, 11, 30, 0, 0)
            })
            .times(1)
            .returning(|_, _| {
                Ok(vec![DayStatusCount {
                    day: day(2026, 11, 29),
                    status: PayoutStatus::InProgress,
                    count: 4,
                }])
            });
        store
            .expect_returns_since()
            .withf(move |since| *since == week_ago)
            .times(1)
            .returning(|_| Ok(Vec::new()));
        store
            .expect_failing_endpoints()
            .withf(move |since, limit| *since == week_ago && *limit == LIST_LIMIT)
            .times(1)
            .returning(|_, _| Ok(Vec::new()));
        store.expect_kyc_backlog().times(1).returning(|| {
            Ok(KycBacklog {
                count: 2,
                oldest: Some(at(2026, 11, 27, 11, 59)),
            })
        });
        store
            .expect_balances()
            .withf(|limit| *limit == LIST_LIMIT)
            .times(1)
            .returning(|_| Ok(Vec::new()));
        store
            .expect_awaiting_files()
            .withf(|limit| *limit == LIST_LIMIT)
            .times(1)
            .returning(|_| Ok(AwaitingFiles::default()));
        // Sandbox mode: no rail has cut-offs, so open batches are not read.
        store.expect_open_batches().never();
        let overview = Overviews::new(Arc::new(store), clock(now), sandbox())
            .read()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let today = overview
            .today()
            .map(|d| (d.day, d.of(PayoutStatus::InProgress)));
        assert_eq!(today, Some((day(2026, 11, 29), 4)));
        assert_eq!(overview.kyc_oldest_age(), Some(Duration::hours(60)));
        assert_eq!(overview.returns_since, week_ago);
        assert_eq!(overview.webhooks_since, week_ago);
        assert_eq!(overview.cutoffs, None);
    }

    #[tokio::test]
    async fn in_production_each_rail_shows_its_next_cutoff_and_what_waits_for_it() {
        use crate::rail::calendar::{RailCalendar, parse_cutoff, parse_date};
        use std::collections::BTreeMap;
        let cutoffs: Vec<_> = ["10:00", "15:00"]
            .iter()
            .filter_map(|c| parse_cutoff(c).ok())
            .collect();
        let holidays: Vec<_> = parse_date("2026-11-26").into_iter().collect();
        let Ok(calendar) = RailCalendar::new(cutoffs, holidays) else {
            panic!("calendar");
        };
        let calendar = Arc::new(calendar);
        let schedule = BatchSchedule::AtCutoffs {
            calendars: BTreeMap::from([(Asset::Usd, calendar.clone()), (Asset::Aud, calendar)]),
            otherwise: Duration::seconds(60),
        };
        let mut store = quiet_store();
        store
            .expect_payouts_per_day()
            .returning(|_, _| Ok(Vec::new()));
        store.expect_open_batches().times(1).returning(|| {
            Ok(vec![OpenBatches {
                asset: Asset::Usd,
                batches: 2,
                payouts: 7,
            }])
        });
        // Wednesday 16:00: Thursday is a holiday, so Friday 10:00.
        let overview = Overviews::new(Arc::new(store), clock(at(2026, 11, 25, 16, 0)), schedule)
            .read()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let friday = Some(at(2026, 11, 27, 10, 0));
        assert_eq!(
            overview.cutoffs,
            Some(vec![
                RailCutoff {
                    asset: Asset::Aud,
                    next: friday,
                    batches: 0,
                    payouts: 0
                },
                RailCutoff {
                    asset: Asset::Usd,
                    next: friday,
                    batches: 2,
                    payouts: 7
                },
            ])
        );
    }

    #[tokio::test]
    async fn just_after_midnight_today_is_the_new_day() {
        let now = at(2026, 12, 1, 0, 1);
        let mut store = quiet_store();
        store
            .expect_payouts_per_day()
            .withf(move |from, until| {
                *from == at(2026, 11, 2, 0, 0) && *until == at(2026, 12, 2, 0, 0)
            })
            .times(1)
            .returning(|_, _| Ok(Vec::new()));
        let overview = Overviews::new(Arc::new(store), clock(now), sandbox())
            .read()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(overview.today().map(|d| d.day), Some(day(2026, 12, 1)));
        assert_eq!(overview.kyc_oldest_age(), None);
    }

    #[tokio::test]
    async fn a_part_that_cannot_be_read_fails_the_overview() {
        let mut store = MockOverviewStore::new();
        store
            .expect_payouts_per_day()
            .returning(|_, _| Ok(Vec::new()));
        store
            .expect_kyc_backlog()
            .returning(|| Err(PortError::unknown("down")));
        store.expect_balances().returning(|_| Ok(Vec::new()));
        store
            .expect_awaiting_files()
            .returning(|_| Ok(AwaitingFiles::default()));
        store.expect_returns_since().returning(|_| Ok(Vec::new()));
        store
            .expect_failing_endpoints()
            .returning(|_, _| Ok(Vec::new()));
        let read = Overviews::new(Arc::new(store), clock(at(2026, 11, 29, 9, 0)), sandbox())
            .read()
            .await;
        assert!(read.is_err());
    }
}
