//! A payout's whole story for operators (the console's payout page): the payout, every event
//! written for it with each delivery attempt, its ledger entries, its batch, the bank file that
//! carried it and every line the bank answered about it, merged into one timeline here so that
//! every driving adapter tells it in the same order. Also the search of payouts across
//! subaccounts.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

use crate::batch::Batch;
use crate::delivery::history::EventSummary;
use crate::error::PortError;
use crate::ids::{PayoutId, ReceiverId, SubaccountId};
use crate::ledger::LedgerEntry;
use crate::paging::Position;
use crate::payout::query::PayoutFilter;
use crate::payout::{Payout, PayoutStatus};
use crate::rail::inbound_ports::ReportListing;
use crate::rail::ports::RailFileSummary;

/// Everything payoutd knows about one payout.
#[derive(Debug, Clone, PartialEq)]
pub struct PayoutStory {
    /// The payout as it is now.
    pub payout: Payout,
    /// Its events (`payoutCreated`, `payoutUpdated`, …), oldest first, each with its delivery
    /// attempts.
    pub events: Vec<EventSummary>,
    /// Its ledger entries, oldest first.
    pub ledger: Vec<LedgerEntry>,
    /// The batch it joined.
    pub batch: Option<Batch>,
    /// The bank file that carried it, with its line in the file.
    pub file: Option<FiledPayment>,
    /// Every line of the bank's answers that named it or its file's fate, oldest first.
    pub answers: Vec<ReportListing>,
}

/// The file a payout went in, and its place there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiledPayment {
    /// The file, without its bytes.
    pub file: RailFileSummary,
    /// Its line in the file, from 0.
    pub position: u32,
    /// The reference the bank quotes back for it.
    pub reference: String,
    /// When the file reached the bank's drop.
    pub uploaded_at: Option<DateTime<Utc>>,
    /// When the bank acknowledged or rejected the file.
    pub answered_at: Option<DateTime<Utc>>,
}

/// One moment of a payout's story.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StoryEntry<'a> {
    /// The payout was created.
    Created(&'a Payout),
    /// An event was written (its deliveries are listed with it).
    Event(&'a EventSummary),
    /// Money moved.
    Ledger(&'a LedgerEntry),
    /// The bank file was written.
    FileWritten(&'a FiledPayment),
    /// The bank file reached the bank's drop.
    FileUploaded(&'a FiledPayment),
    /// The bank acknowledged or rejected the whole file.
    FileAnswered(&'a FiledPayment),
    /// A line of the bank's answers about it.
    BankAnswer(&'a ReportListing),
}

impl StoryEntry<'_> {
    /// When it happened.
    pub fn at(&self) -> DateTime<Utc> {
        match self {
            StoryEntry::Created(payout) => payout.created_at,
            StoryEntry::Event(event) => event.created_at,
            StoryEntry::Ledger(entry) => entry.created_at,
            StoryEntry::FileWritten(filed) => filed.file.created_at,
            StoryEntry::FileUploaded(filed) => filed.uploaded_at.unwrap_or(filed.file.created_at),
            StoryEntry::FileAnswered(filed) => filed
                .answered_at
                .or(filed.uploaded_at)
                .unwrap_or(filed.file.created_at),
            StoryEntry::BankAnswer(listing) => listing.report.created_at,
        }
    }

    /// Its place among entries of the same instant: a change is told before the events and
    /// money it caused, a file before its answers.
    const fn rank(&self) -> u8 {
        match self {
            StoryEntry::Created(_) => 0,
            StoryEntry::FileWritten(_) => 1,
            StoryEntry::FileUploaded(_) => 2,
            StoryEntry::FileAnswered(_) => 3,
            StoryEntry::BankAnswer(_) => 4,
            StoryEntry::Ledger(_) => 5,
            StoryEntry::Event(_) => 6,
        }
    }
}

impl PayoutStory {
    /// The story in the order it happened (ties in [`StoryEntry`]'s causal order, then as
    /// stored).
    pub fn timeline(&self) -> Vec<StoryEntry<'_>> {
        let mut entries = vec![StoryEntry::Created(&self.payout)];
        if let Some(filed) = &self.file {
            entries.push(StoryEntry::FileWritten(filed));
            if filed.uploaded_at.is_some() {
                entries.push(StoryEntry::FileUploaded(filed));
            }
            if filed.answered_at.is_some() {
                entries.push(StoryEntry::FileAnswered(filed));
            }
        }
        entries.extend(self.answers.iter().map(StoryEntry::BankAnswer));
        entries.extend(self.ledger.iter().map(StoryEntry::Ledger));
        entries.extend(self.events.iter().map(StoryEntry::Event));
        // A stable sort keeps each source's own order within an instant.
        entries.sort_by_key(|entry| (entry.at(), entry.rank()));
        entries
    }
}

/// Where a page of a payout search starts: strictly after this payout (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayoutCursor {
    /// The last payout shown's creation time.
    pub created_at: DateTime<Utc>,
    /// The last payout shown.
    pub id: PayoutId,
}

impl PayoutCursor {
    /// The cursor of `payout`.
    pub fn of(payout: &Payout) -> Self {
        Self {
            created_at: payout.created_at,
            id: payout.id,
        }
    }

    /// As it travels in a link ([`Position::encode`]).
    pub fn encode(&self) -> String {
        Position {
            created_at: self.created_at,
            id: self.id.as_uuid(),
        }
        .encode()
    }

    /// The cursor [`PayoutCursor::encode`] wrote, or `None` for anything else.
    pub fn decode(raw: &str) -> Option<Self> {
        let position = Position::decode(raw)?;
        Some(Self {
            created_at: position.created_at,
            id: PayoutId::from_uuid(position.id),
        })
    }
}

/// What operators search payouts by (every field optional, all given ones must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayoutSearch {
    /// Only this subaccount's.
    pub subaccount: Option<SubaccountId>,
    /// Only payouts to this receiver.
    pub receiver: Option<ReceiverId>,
    /// Status, creation window and exact reference, as the API filters them.
    pub filter: PayoutFilter,
}

/// Payouts as operators read them, across subaccounts.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayoutStoryStore: Send + Sync {
    /// The story of payout `id`, of whichever subaccount, or `Ok(None)` when there is none.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn payout_story(&self, id: PayoutId) -> Result<Option<PayoutStory>, PortError>;

    /// Up to `limit` payouts matching `search`, newest first (`created_at` desc, `id` desc),
    /// strictly after `after`.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn search_payouts(
        &self,
        search: &PayoutSearch,
        after: Option<PayoutCursor>,
        limit: u32,
    ) -> Result<Vec<Payout>, PortError>;
}

/// Why a search or a payout page was refused before reading anything.
#[derive(Debug, thiserror::Error)]
pub enum StoryError {
    /// A search field does not parse; each problem in words.
    #[error("{}", .0.join(" "))]
    Invalid(Vec<String>),
    /// No payout has this id (or the text is not a payout id).
    #[error("No payout has this id.")]
    NotFound,
    /// The store could not be read.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A search as an operator's form sends it: each field as typed, blank for "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchForm<'a> {
    /// A subaccount id.
    pub subaccount: &'a str,
    /// A receiver id.
    pub receiver: &'a str,
    /// A status name (`pending`, `in_progress`, …).
    pub status: &'a str,
    /// The exact reference.
    pub reference: &'a str,
    /// Created on or after this day (`YYYY-MM-DD`, UTC).
    pub from: &'a str,
    /// Created on or before this day (`YYYY-MM-DD`, UTC).
    pub to: &'a str,
}

impl PayoutSearch {
    /// Parses `form`, reporting every field that does not parse.
    ///
    /// # Errors
    /// [`StoryError::Invalid`] naming each bad field.
    pub fn parse(form: &SearchForm<'_>) -> Result<Self, StoryError> {
        let mut problems = Vec::new();
        let mut search = PayoutSearch::default();
        let given = |raw: &str| Some(raw.trim().to_owned()).filter(|t| !t.is_empty());
        if let Some(raw) = given(form.subaccount) {
            match SubaccountId::parse(&raw) {
                Some(id) => search.subaccount = Some(id),
                None => problems.push("The subaccount is not a subaccount id.".to_owned()),
            }
        }
        if let Some(raw) = given(form.receiver) {
            match ReceiverId::parse(&raw) {
                Some(id) => search.receiver = Some(id),
                None => problems.push("The receiver is not a receiver id.".to_owned()),
            }
        }
        if let Some(raw) = given(form.status) {
            match PayoutStatus::parse_name(&raw) {
                Some(status) => search.filter.status = Some(status),
                None => problems.push(format!("No payout status is called {raw:?}.")),
            }
        }
        search.filter.reference = given(form.reference);
        let day = |raw: &str, name: &str, problems: &mut Vec<String>| {
            let parsed = NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok();
            if parsed.is_none() {
                problems.push(format!("{name} is not a day (YYYY-MM-DD)."));
            }
            parsed
        };
        if let Some(raw) = given(form.from)
            && let Some(from) = day(&raw, "From", &mut problems)
        {
            search.filter.created_from = Some(from.and_time(NaiveTime::MIN).and_utc());
        }
        if let Some(raw) = given(form.to)
            && let Some(to) = day(&raw, "To", &mut problems)
        {
            // `to` is inclusive: created before the next day.
            search.filter.created_before = to
                .succ_opt()
                .map(|next| next.and_time(NaiveTime::MIN).and_utc());
        }
        if problems.is_empty() {
            Ok(search)
        } else {
            Err(StoryError::Invalid(problems))
        }
    }
}

/// Payout pages for operators: the one place that reads payout stories and searches.
#[derive(Clone)]
pub struct PayoutStories {
    store: std::sync::Arc<dyn PayoutStoryStore>,
}

impl PayoutStories {
    /// Over `store`.
    pub fn new(store: std::sync::Arc<dyn PayoutStoryStore>) -> Self {
        Self { store }
    }

    /// The story of the payout whose id is `raw`.
    ///
    /// # Errors
    /// [`StoryError::NotFound`] when `raw` is not a payout id (nothing is read) or no payout
    /// has it; [`StoryError::Port`] when the store fails.
    pub async fn story(&self, raw: &str) -> Result<PayoutStory, StoryError> {
        let id = PayoutId::parse(raw.trim()).ok_or(StoryError::NotFound)?;
        self.store
            .payout_story(id)
            .await?
            .ok_or(StoryError::NotFound)
    }

    /// One page of `search`: up to `limit` payouts after `after` (a cursor a previous page
    /// gave), and the cursor of the next page when there may be one.
    ///
    /// # Errors
    /// [`StoryError::Invalid`] for a cursor no page gave (nothing is read);
    /// [`StoryError::Port`] when the store fails.
    pub async fn search(
        &self,
        search: &PayoutSearch,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Payout>, Option<String>), StoryError> {
        let after = match after.map(str::trim).filter(|a| !a.is_empty()) {
            Some(raw) => Some(PayoutCursor::decode(raw).ok_or_else(|| {
                StoryError::Invalid(vec!["This page link is not valid any more.".to_owned()])
            })?),
            None => None,
        };
        let limit = limit.max(1);
        let mut payouts = self
            .store
            .search_payouts(search, after, limit.saturating_add(1))
            .await?;
        let more = payouts.len() > limit as usize;
        payouts.truncate(limit as usize);
        let next = more
            .then(|| payouts.last().map(|p| PayoutCursor::of(p).encode()))
            .flatten();
        Ok((payouts, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::PayoutBuilder;
    use crate::delivery::history::AttemptSummary;
    use crate::ids::{EventId, LedgerEntryId};
    use crate::ledger::LedgerEntryKind;
    use chrono::TimeZone;
    use uuid::Uuid;

    fn at(second: u32) -> DateTime<Utc> {
        match Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, second) {
            chrono::LocalResult::Single(at) => at,
            _ => unreachable!("a valid time"),
        }
    }

    fn event(second: u32, name: &str) -> EventSummary {
        EventSummary {
            id: EventId::from_uuid(Uuid::from_u128(u128::from(second) + 100)),
            event_type: name.to_owned(),
            object_id: Uuid::nil(),
            sequence: 1,
            status: "delivered".to_owned(),
            created_at: at(second),
            next_attempt_at: at(second),
            delivered_at: Some(at(second)),
            last_error: None,
            attempts: vec![AttemptSummary {
                attempted_at: at(second),
                attempt: 1,
                outcome: "delivered".to_owned(),
                status_code: Some(200),
                latency_ms: 3,
                error: None,
            }],
        }
    }

    fn entry(second: u32, kind: LedgerEntryKind, payout: &Payout) -> LedgerEntry {
        LedgerEntry {
            id: LedgerEntryId::from_uuid(Uuid::from_u128(u128::from(second) + 200)),
            subaccount_id: payout.subaccount_id,
            asset: payout.asset,
            kind,
            available_delta: -1,
            pending_delta: 1,
            payout_id: Some(payout.id),
            created_at: at(second),
        }
    }

    #[test]
    fn the_timeline_tells_the_story_in_order_with_causes_before_their_effects() {
        let payout = PayoutBuilder::new().created_at(at(0)).build();
        let story = PayoutStory {
            events: vec![event(0, "payoutCreated"), event(5, "payoutUpdated")],
            ledger: vec![
                entry(0, LedgerEntryKind::PayoutHold, &payout),
                entry(5, LedgerEntryKind::PayoutPost, &payout),
            ],
            batch: None,
            file: None,
            answers: Vec::new(),
            payout,
        };
        let told: Vec<&str> = story
            .timeline()
            .iter()
            .map(|entry| match entry {
                StoryEntry::Created(_) => "created",
                StoryEntry::Event(e) => e.event_type.as_str(),
                StoryEntry::Ledger(l) => l.kind.as_str(),
                StoryEntry::FileWritten(_) => "file",
                StoryEntry::FileUploaded(_) => "uploaded",
                StoryEntry::FileAnswered(_) => "answered",
                StoryEntry::BankAnswer(_) => "answer",
            })
            .collect();
        assert_eq!(
            told,
            [
                "created",
                "payout_hold",
                "payoutCreated",
                "payout_post",
                "payoutUpdated"
            ]
        );
    }

    #[test]
    fn a_cursor_reads_back_what_it_wrote_and_nothing_else() {
        let payout = PayoutBuilder::new()
            .created_at(at(7) + chrono::Duration::microseconds(123_456))
            .build();
        let cursor = PayoutCursor::of(&payout);
        assert_eq!(PayoutCursor::decode(&cursor.encode()), Some(cursor));
        for bad in [
            "",
            ".",
            "12",
            "x.00000000-0000-4000-8000-000000000001",
            "1.not-an-id",
            "99999999999999999999.00000000-0000-4000-8000-000000000001",
        ] {
            assert_eq!(PayoutCursor::decode(bad), None, "{bad:?}");
        }
    }

    fn stories(store: MockPayoutStoryStore) -> PayoutStories {
        PayoutStories::new(std::sync::Arc::new(store))
    }

    #[tokio::test]
    async fn text_that_is_not_a_payout_id_is_not_found_without_reading() {
        let mut store = MockPayoutStoryStore::new();
        store.expect_payout_story().never();
        let pages = stories(store);
        for raw in ["", "x", "00000000-0000-4000-8000-00000000000", "<script>"] {
            assert!(
                matches!(pages.story(raw).await, Err(StoryError::NotFound)),
                "{raw:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_known_id_is_read_once_and_an_unknown_one_is_not_found() {
        let payout = PayoutBuilder::new().build();
        let id = payout.id;
        let mut store = MockPayoutStoryStore::new();
        store
            .expect_payout_story()
            .withf(move |asked| *asked == id)
            .times(1)
            .returning(move |_| {
                Ok(Some(PayoutStory {
                    payout: PayoutBuilder::new().id(id).build(),
                    events: Vec::new(),
                    ledger: Vec::new(),
                    batch: None,
                    file: None,
                    answers: Vec::new(),
                }))
            });
        store
            .expect_payout_story()
            .withf(move |asked| *asked != id)
            .times(1)
            .returning(|_| Ok(None));
        let pages = stories(store);
        let story = pages.story(&format!(" {id} ")).await;
        assert_eq!(story.ok().map(|s| s.payout.id), Some(id));
        let other = PayoutId::from_uuid(Uuid::from_u128(42));
        assert!(matches!(
            pages.story(&other.to_string()).await,
            Err(StoryError::NotFound)
        ));
    }

    #[tokio::test]
    async fn a_page_asks_for_one_more_to_know_whether_another_follows() {
        let mut store = MockPayoutStoryStore::new();
        store
            .expect_search_payouts()
            .withf(|_, after, limit| after.is_none() && *limit == 3)
            .times(1)
            .returning(|_, _, _| {
                Ok((1..=3u32)
                    .map(|s| PayoutBuilder::new().created_at(at(10 - s)).build())
                    .collect())
            });
        let pages = stories(store);
        let (payouts, next) = pages
            .search(&PayoutSearch::default(), None, 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(payouts.len(), 2);
        let next = next.and_then(|n| PayoutCursor::decode(&n));
        assert_eq!(next, Some(PayoutCursor::of(&payouts[1])));
    }

    #[tokio::test]
    async fn the_last_page_has_no_next_and_a_forged_cursor_reads_nothing() {
        let mut store = MockPayoutStoryStore::new();
        store
            .expect_search_payouts()
            .times(1)
            .returning(|_, _, _| Ok(vec![PayoutBuilder::new().build()]));
        let pages = stories(store);
        let (payouts, next) = pages
            .search(&PayoutSearch::default(), Some(""), 50)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((payouts.len(), next), (1, None));

        let mut store = MockPayoutStoryStore::new();
        store.expect_search_payouts().never();
        let refused = stories(store)
            .search(&PayoutSearch::default(), Some("forged"), 50)
            .await;
        assert!(matches!(refused, Err(StoryError::Invalid(_))));
    }

    #[test]
    fn a_search_form_parses_every_field_and_names_each_bad_one() {
        let subaccount = Uuid::from_u128(1).to_string();
        let parsed = PayoutSearch::parse(&SearchForm {
            subaccount: &subaccount,
            receiver: "",
            status: "in_progress",
            reference: " inv-1 ",
            from: "2026-11-01",
            to: "2026-11-29",
        });
        let Ok(search) = parsed else {
            panic!("{parsed:?}");
        };
        assert_eq!(
            search.subaccount,
            SubaccountId::parse(&subaccount),
            "subaccount"
        );
        assert_eq!(search.receiver, None);
        assert_eq!(search.filter.status, Some(PayoutStatus::InProgress));
        assert_eq!(search.filter.reference.as_deref(), Some("inv-1"));
        assert_eq!(
            search.filter.created_from.map(|t| t.to_rfc3339()),
            Some("2026-11-01T00:00:00+00:00".to_owned())
        );
        // `to` is the whole day.
        assert_eq!(
            search.filter.created_before.map(|t| t.to_rfc3339()),
            Some("2026-11-30T00:00:00+00:00".to_owned())
        );

        let bad = PayoutSearch::parse(&SearchForm {
            subaccount: "acct",
            receiver: "r",
            status: "paid",
            reference: "",
            from: "29/11/2026",
            to: "2026-02-30",
        });
        let Err(StoryError::Invalid(problems)) = bad else {
            panic!("{bad:?}");
        };
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("\"paid\"")),
            "{problems:?}"
        );
        assert_eq!(
            PayoutSearch::parse(&SearchForm::default()).ok(),
            Some(PayoutSearch::default())
        );
    }
}
