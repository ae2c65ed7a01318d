//! `InboundProcessor` over mocks that behave like the stores: payouts move only from the status
//! a change expects (so a second application finds nothing to do), files only forward.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use uuid::Uuid;

use super::*;
use crate::account::ports::MockAccountStore;
use crate::batch::ports::{MockBatchStore, MockPayoutRail};
use crate::builders::PayoutBuilder;
use crate::ids::BatchId;
use crate::ledger::LedgerEntryKind;
use crate::money::MinorUnits;
use crate::payout::change::PayoutChange;
use crate::payout::ports::MockPayoutStore;
use crate::ports::{MockClock, MockIdGenerator};
use crate::rail::file::{RailFile, RailFileItem};
use crate::rail::inbound_ports::{DecidingReport, MockInboundStore};
use crate::rail::ports::MockRailFileStore;
use crate::rail::report::{ItemOutcome, MockBankFileReader, ReturnReason};
use crate::rail::transport::MockFileTransport;

pub(super) fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
}

pub(super) fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

pub(super) fn payout(n: u128, status: PayoutStatus, amount: i64) -> Payout {
    PayoutBuilder::new()
        .id(PayoutId::from_uuid(id(n)))
        .amount(amount)
        .fee(25)
        .status(status)
        .batch(BatchId::from_uuid(id(500)))
        .build()
}

/// Payouts by id; applying a change works only from the status it expects, as the store's
/// conditional update does. Every applied change is kept.
#[derive(Default, Clone)]
pub(super) struct Ledger {
    pub(super) payouts: Arc<Mutex<BTreeMap<PayoutId, Payout>>>,
    pub(super) applied: Arc<Mutex<Vec<PayoutChange>>>,
    /// Outdated copies the next reads return first (a payout another job moved meanwhile).
    stale: Arc<Mutex<Vec<Payout>>>,
}

impl Ledger {
    pub(super) fn with(payouts: Vec<Payout>) -> Self {
        let ledger = Self::default();
        for p in payouts {
            ledger.payouts.lock().unwrap().insert(p.id, p);
        }
        ledger
    }

    pub(super) fn status(&self, n: u128) -> PayoutStatus {
        self.payouts.lock().unwrap()[&PayoutId::from_uuid(id(n))].status
    }

    pub(super) fn store(&self) -> Arc<MockPayoutStore> {
        let mut store = MockPayoutStore::new();
        let (payouts, stale) = (self.payouts.clone(), self.stale.clone());
        store.expect_find_payout().returning(move |_, id| {
            let mut stale = stale.lock().unwrap();
            if let Some(at) = stale.iter().position(|p| p.id == id) {
                return Ok(Some((stale.remove(at), Vec::new())));
            }
            Ok(payouts
                .lock()
                .unwrap()
                .get(&id)
                .cloned()
                .map(|p| (p, Vec::new())))
        });
        let (payouts, stale) = (self.payouts.clone(), self.stale.clone());
        store.expect_find_payouts().returning(move |keys| {
            let mut stale = stale.lock().unwrap();
            let payouts = payouts.lock().unwrap();
            Ok(keys
                .iter()
                .filter_map(|(subaccount, id)| {
                    let found = match stale.iter().position(|p| p.id == *id) {
                        Some(at) => Some(stale.remove(at)),
                        None => payouts.get(id).cloned(),
                    };
                    found.filter(|p| p.subaccount_id == *subaccount)
                })
                .collect())
        });
        let (payouts, applied) = (self.payouts.clone(), self.applied.clone());
        store
            .expect_apply_transition()
            .returning(move |change, _| Ok(apply(&payouts, &applied, change)));
        let (payouts, applied) = (self.payouts.clone(), self.applied.clone());
        store.expect_apply_transitions().returning(move |changes| {
            Ok(changes
                .iter()
                .map(|change| apply(&payouts, &applied, change))
                .collect())
        });
        Arc::new(store)
    }
}

/// Applies `change` where the payout is still in the status it expects, as the store does.
fn apply(
    payouts: &Mutex<BTreeMap<PayoutId, Payout>>,
    applied: &Mutex<Vec<PayoutChange>>,
    change: &PayoutChange,
) -> bool {
    let mut payouts = payouts.lock().unwrap();
    let Some(current) = payouts.get_mut(&change.payout.id) else {
        return false;
    };
    if current.status != change.expected {
        return false;
    }
    *current = change.payout.clone();
    applied.lock().unwrap().push(change.clone());
    true
}

pub(super) fn clock() -> Arc<MockClock> {
    let mut clock = MockClock::new();
    clock.expect_now().returning(|| at(3_600));
    Arc::new(clock)
}

pub(super) fn ids() -> Arc<MockIdGenerator> {
    let mut ids = MockIdGenerator::new();
    ids.expect_new_id().returning(Uuid::new_v4);
    Arc::new(ids)
}

pub(super) fn runner(payouts: Arc<MockPayoutStore>) -> Arc<BatchRunner> {
    let mut batches = MockBatchStore::new();
    batches.expect_finish_batch().returning(|_, _, _| Ok(None));
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_account().returning(|_, _| Ok(None));
    accounts
        .expect_find_accounts()
        .returning(|_, _| Ok(Vec::new()));
    Arc::new(BatchRunner::new(
        Arc::new(batches),
        payouts,
        Arc::new(accounts),
        Arc::new(MockPayoutRail::new()),
        clock(),
        ids(),
        Duration::seconds(60),
    ))
}

/// The stored file of batch 500 with payouts 1 and 2, in `state`.
pub(super) fn sent_file(state: RailFileState) -> RailFile {
    RailFile {
        id: RailFileId::from_uuid(id(900)),
        batch_id: BatchId::from_uuid(id(500)),
        subaccount_id: SubaccountId::from_uuid(id(2)),
        method: PayoutMethod::Sepa,
        part: 1,
        name: "PAYOUTD-500-eur-sepa.xml".into(),
        sha256: [0; 32],
        bytes: Vec::new(),
        state,
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
        items: vec![
            RailFileItem {
                payout_id: PayoutId::from_uuid(id(1)),
                reference: "E2E-1".into(),
            },
            RailFileItem {
                payout_id: PayoutId::from_uuid(id(2)),
                reference: "E2E-2".into(),
            },
        ],
        reason: None,
        created_at: at(0),
        uploaded_at: Some(at(1)),
        answered_at: None,
    }
}

/// What the inbound store recorded: each file with its report lines.
pub(super) type Recorded = Arc<Mutex<Vec<(InboundFile, Vec<RecordedReport>)>>>;

/// An inbound store that knows no file yet, finds `sent` items by reference and keeps what is
/// recorded, answering from it as the store does from its tables.
pub(super) fn inbound(
    sent: Vec<(&'static str, SentItem)>,
    recorded: Recorded,
) -> Arc<MockInboundStore> {
    let mut store = MockInboundStore::new();
    let seen = recorded.clone();
    store.expect_inbound_known().returning(move |_, name, sha| {
        Ok(seen
            .lock()
            .unwrap()
            .iter()
            .any(|(f, _)| f.name == name && f.sha256 == sha))
    });
    let seen = recorded.clone();
    store.expect_read_under().returning(move |_, name| {
        Ok(seen
            .lock()
            .unwrap()
            .iter()
            .find(|(f, _)| f.name == name && f.outcome == InboundOutcome::Read)
            .map(|(f, _)| f.id))
    });
    let seen = recorded.clone();
    store
        .expect_deciding_report()
        .returning(move |payout, file| Ok(deciding(&seen, payout, file)));
    let seen = recorded.clone();
    store.expect_deciding_reports().returning(move |queries| {
        Ok(queries
            .iter()
            .map(|(payout, file)| deciding(&seen, *payout, *file))
            .collect())
    });
    store
        .expect_sent_items_of()
        .returning(move |_, references| {
            Ok(sent
                .iter()
                .filter(|(r, _)| references.iter().any(|wanted| wanted == r))
                .map(|(r, item)| ((*r).to_owned(), item.clone()))
                .collect())
        });
    store
        .expect_record_inbound()
        .returning(move |file, reports| {
            let mut recorded = recorded.lock().unwrap();
            if recorded
                .iter()
                .any(|(f, _)| f.name == file.name && f.sha256 == file.sha256)
            {
                return Ok(false);
            }
            recorded.push((file.clone(), reports.to_vec()));
            Ok(true)
        });
    Arc::new(store)
}

/// The newest applied line recorded that decided `payout` of `file` (or, without a payout,
/// the file), as the store finds it.
fn deciding(
    recorded: &Recorded,
    payout: Option<PayoutId>,
    file: RailFileId,
) -> Option<DecidingReport> {
    let file_line = |r: &RecordedReport| {
        r.payout_id.is_none()
            && r.rail_file_id == Some(file)
            && matches!(r.kind, ReportKind::FileSettled | ReportKind::FileRejected)
    };
    recorded
        .lock()
        .unwrap()
        .iter()
        .flat_map(|(_, reports)| reports.iter())
        .rfind(|r| {
            r.resolution == Resolution::Applied
                && match payout {
                    Some(p) => r.payout_id == Some(p) || file_line(r),
                    None => r.payout_id.is_none() && r.rail_file_id == Some(file),
                }
        })
        .map(|r| DecidingReport {
            id: r.id,
            kind: r.kind,
        })
}

pub(super) fn sent(n: u128, file: u128, created: i64) -> SentItem {
    SentItem {
        file_id: RailFileId::from_uuid(id(file)),
        file_created_at: at(created),
        file_state: RailFileState::Uploaded,
        subaccount_id: SubaccountId::from_uuid(id(2)),
        payout_id: PayoutId::from_uuid(id(n)),
    }
}

pub(super) fn reader(outcome: ReadOutcome) -> Arc<MockBankFileReader> {
    let mut reader = MockBankFileReader::new();
    reader
        .expect_read()
        .returning(move |_, _| Ok(outcome.clone()));
    Arc::new(reader)
}

pub(super) fn rail(reader: Arc<MockBankFileReader>) -> InboundRail {
    InboundRail {
        method: PayoutMethod::Sepa,
        transport: Arc::new(MockFileTransport::new()),
        reader,
        answers: AnswerRules::FILE_RAIL,
        poll_interval: std::time::Duration::ZERO,
    }
}

pub(super) struct Setup {
    pub(super) processor: InboundProcessor,
    pub(super) recorded: Recorded,
}

pub(super) fn setup(
    ledger: &Ledger,
    files: MockRailFileStore,
    sent_items: Vec<(&'static str, SentItem)>,
) -> Setup {
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let store = ledger.store();
    let processor = InboundProcessor::new(
        Vec::new(),
        Arc::new(files),
        inbound(sent_items, recorded.clone()),
        store.clone(),
        runner(store),
        clock(),
        ids(),
    );
    Setup {
        processor,
        recorded,
    }
}

pub(super) fn return_of(
    reference: &str,
    code: &str,
    invalid: bool,
    amount: Option<i64>,
) -> ItemReport {
    ItemReport {
        reference: reference.into(),
        outcome: ItemOutcome::Returned {
            reason: ReturnReason {
                code: code.into(),
                reason: format!("reason {code}"),
                account_is_invalid: invalid,
            },
            amount: amount.map(|a| MinorUnits::new(a).unwrap()),
        },
    }
}

pub(super) fn items(items: Vec<ItemReport>) -> ReadOutcome {
    ReadOutcome::Report(BankReport { file: None, items })
}

pub(super) fn resolutions(setup: &Setup) -> Vec<Resolution> {
    setup
        .recorded
        .lock()
        .unwrap()
        .iter()
        .flat_map(|(_, reports)| reports.iter().map(|r| r.resolution))
        .collect()
}

#[tokio::test]
async fn a_return_of_a_paid_payout_is_applied_once_even_when_the_bank_sends_it_again() {
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::Successful, 1_000)]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("T1", sent(1, 900, 0))],
    );
    let rail = rail(reader(items(vec![return_of(
        "T1",
        "R02",
        true,
        Some(1_000),
    )])));
    let mut pass = InboundPass::default();

    s.processor
        .process(&rail, "returns-1.ach", b"first", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Failed);
    let applied = ledger.applied.lock().unwrap().clone();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].entries[0].kind, LedgerEntryKind::PayoutReturn);
    assert_eq!(applied[0].payout.return_code.as_deref(), Some("R02"));
    assert!(applied[0].payout.receiver_is_invalid);

    // The same file again: not read again. The same return in another file: repeated.
    s.processor
        .process(&rail, "returns-1.ach", b"first", &mut pass)
        .await
        .unwrap();
    s.processor
        .process(&rail, "returns-2.ach", b"second", &mut pass)
        .await
        .unwrap();
    assert_eq!(
        ledger.applied.lock().unwrap().len(),
        1,
        "never applied twice"
    );
    assert_eq!(resolutions(&s), [Resolution::Applied, Resolution::Repeated]);
    assert_eq!((pass.files, pass.applied, pass.repeated), (2, 1, 1));
    let recorded = s.recorded.lock().unwrap();
    let line = &recorded[0].1[0];
    assert_eq!(line.kind, ReportKind::Returned);
    assert_eq!(line.payout_id, Some(PayoutId::from_uuid(id(1))));
    assert_eq!(line.rail_file_id, Some(RailFileId::from_uuid(id(900))));
    assert_eq!(line.code.as_deref(), Some("R02"));
    assert_eq!(line.amount, Some(1_000));
}

#[tokio::test]
async fn a_return_read_while_the_payout_is_being_settled_is_applied_to_the_settled_payout() {
    // The payout was in progress when the return's line was matched, and the batch runner
    // settled it (its effective date came) before the return was written.
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::Successful, 1_000)]);
    ledger
        .stale
        .lock()
        .unwrap()
        .push(payout(1, PayoutStatus::InProgress, 1_000));
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("T1", sent(1, 900, 0))],
    );
    let rail = rail(reader(items(vec![return_of(
        "T1",
        "R01",
        false,
        Some(1_000),
    )])));
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "returns-1.ach", b"first", &mut pass)
        .await
        .unwrap();
    assert_eq!(
        ledger.status(1),
        PayoutStatus::Failed,
        "the return is not lost"
    );
    let applied = ledger.applied.lock().unwrap().clone();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].entries[0].kind, LedgerEntryKind::PayoutReturn);
    assert_eq!(resolutions(&s), [Resolution::Applied]);
}

#[tokio::test]
async fn a_reused_trace_number_matches_the_newest_payout_of_the_returned_amount() {
    // Trace numbers repeat from one day to the next: two files sent the same reference.
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::Successful, 1_000),
        payout(2, PayoutStatus::Successful, 2_000),
        payout(3, PayoutStatus::Successful, 1_000),
    ]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![
            ("T1", sent(1, 901, 0)),
            ("T1", sent(3, 903, 172_800)),
            ("T1", sent(2, 902, 86_400)),
        ],
    );
    let rail = rail(reader(items(vec![return_of(
        "T1",
        "R01",
        false,
        Some(1_000),
    )])));
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "r.ach", b"r", &mut pass)
        .await
        .unwrap();
    assert_eq!(
        ledger.status(3),
        PayoutStatus::Failed,
        "newest of that amount"
    );
    assert_eq!(ledger.status(1), PayoutStatus::Successful);
    assert_eq!(ledger.status(2), PayoutStatus::Successful);
}

#[tokio::test]
async fn unmatched_notices_and_contradictions_are_recorded_not_applied() {
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::Failed, 1_000),
        payout(2, PayoutStatus::Successful, 1_000),
    ]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("E2E-1", sent(1, 900, 0)), ("E2E-2", sent(2, 900, 0))],
    );
    let rail = rail(reader(items(vec![
        return_of("NOBODY", "R03", true, None),
        ItemReport {
            reference: "E2E-2".into(),
            outcome: ItemOutcome::Notice {
                code: "C01".into(),
                reason: "Incorrect account number".into(),
            },
        },
        ItemReport {
            reference: "E2E-1".into(),
            outcome: ItemOutcome::Settled,
        },
    ])));
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "mixed", b"mixed", &mut pass)
        .await
        .unwrap();
    assert!(ledger.applied.lock().unwrap().is_empty());
    assert_eq!(
        resolutions(&s),
        [
            Resolution::Unmatched,
            Resolution::Noted,
            Resolution::Anomaly
        ]
    );
    assert_eq!((pass.unmatched, pass.noted, pass.anomalies), (1, 1, 1));
}

#[tokio::test]
async fn a_status_report_pays_and_refuses_payouts_in_progress() {
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::InProgress, 1_000),
        payout(2, PayoutStatus::InProgress, 500),
    ]);
    let mut files = MockRailFileStore::new();
    files
        .expect_find_file()
        .returning(|_, _, _| Ok(Some(sent_file(RailFileState::Uploaded))));
    files
        .expect_move_file()
        .withf(|_, from, to, _, _| {
            *from == RailFileState::Uploaded && *to == RailFileState::Acknowledged
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let s = setup(
        &ledger,
        files,
        vec![("E2E-1", sent(1, 900, 0)), ("E2E-2", sent(2, 900, 0))],
    );
    let report = ReadOutcome::Report(BankReport {
        file: Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(id(500)),
                part: 1,
            },
            FileVerdict::Accepted,
        )),
        items: vec![
            ItemReport {
                reference: "E2E-1".into(),
                outcome: ItemOutcome::Settled,
            },
            ItemReport {
                reference: "E2E-2".into(),
                outcome: ItemOutcome::Rejected(ReturnReason {
                    code: "AC04".into(),
                    reason: "Closed account number".into(),
                    account_is_invalid: true,
                }),
            },
        ],
    });
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail(reader(report)), "pain002.xml", b"x", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Successful);
    assert_eq!(ledger.status(2), PayoutStatus::Failed);
    let applied = ledger.applied.lock().unwrap().clone();
    assert_eq!(applied[1].payout.return_code.as_deref(), Some("AC04"));
    assert_eq!(
        applied[1].balance_delta(),
        (525, -525),
        "hold voided, fee too"
    );
    assert_eq!(
        resolutions(&s),
        [
            Resolution::Applied,
            Resolution::Applied,
            Resolution::Applied
        ]
    );
    let kinds: Vec<_> = s.recorded.lock().unwrap()[0]
        .1
        .iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            ReportKind::FileAccepted,
            ReportKind::Settled,
            ReportKind::Rejected
        ]
    );
}

#[tokio::test]
async fn a_rejected_file_fails_its_payouts_and_one_paid_meanwhile_is_an_anomaly() {
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::InProgress, 1_000),
        payout(2, PayoutStatus::Successful, 500),
    ]);
    let mut files = MockRailFileStore::new();
    files
        .expect_find_file()
        .returning(|_, _, _| Ok(Some(sent_file(RailFileState::Uploaded))));
    files
        .expect_move_file()
        .withf(|_, from, to, _, reason| {
            *from == RailFileState::Uploaded
                && *to == RailFileState::Rejected
                && reason.as_deref() == Some("Invalid file format")
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let s = setup(&ledger, files, Vec::new());
    let report = ReadOutcome::Report(BankReport {
        file: Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(id(500)),
                part: 1,
            },
            FileVerdict::Rejected {
                code: Some("FF01".into()),
                reason: "Invalid file format".into(),
            },
        )),
        items: Vec::new(),
    });
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail(reader(report)), "rjct.xml", b"x", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Failed);
    assert_eq!(ledger.status(2), PayoutStatus::Successful);
    let applied = ledger.applied.lock().unwrap().clone();
    assert_eq!(applied.len(), 1);
    assert!(
        applied[0]
            .payout
            .failure_reason
            .as_deref()
            .unwrap()
            .contains("Invalid file format")
    );
    assert_eq!(applied[0].payout.return_code.as_deref(), Some("FF01"));
    // The settled payout is left as it is; the line says so for an operator. It was settled on
    // its file's effective date, so no earlier line is named.
    assert_eq!(resolutions(&s), [Resolution::Anomaly]);
    assert_eq!(pass.anomalies, 1);
    assert_eq!(s.recorded.lock().unwrap()[0].1[0].contradicts, None);
}

#[tokio::test]
async fn an_answer_to_a_file_whose_upload_was_not_recorded_records_it_first() {
    let ledger = Ledger::default();
    let mut files = MockRailFileStore::new();
    files
        .expect_find_file()
        .returning(|_, _, _| Ok(Some(sent_file(RailFileState::Generated))));
    let mut seq = mockall::Sequence::new();
    files
        .expect_move_file()
        .withf(|_, from, to, _, _| {
            *from == RailFileState::Generated && *to == RailFileState::Uploaded
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _, _| Ok(true));
    files
        .expect_move_file()
        .withf(|_, from, to, _, _| {
            *from == RailFileState::Uploaded && *to == RailFileState::Acknowledged
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _, _| Ok(true));
    let s = setup(&ledger, files, Vec::new());
    let report = ReadOutcome::Report(BankReport {
        file: Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(id(500)),
                part: 1,
            },
            FileVerdict::Accepted,
        )),
        items: Vec::new(),
    });
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail(reader(report)), "ack.xml", b"x", &mut pass)
        .await
        .unwrap();
    assert_eq!(resolutions(&s), [Resolution::Applied]);
}

#[tokio::test]
async fn an_acknowledgement_read_twice_or_after_a_rejection_changes_nothing() {
    for (state, expected) in [
        (RailFileState::Acknowledged, Resolution::Repeated),
        (RailFileState::Rejected, Resolution::Anomaly),
    ] {
        let ledger = Ledger::default();
        let mut files = MockRailFileStore::new();
        files
            .expect_find_file()
            .returning(move |_, _, _| Ok(Some(sent_file(state))));
        // No move_file expectation: moving would panic.
        let s = setup(&ledger, files, Vec::new());
        let report = ReadOutcome::Report(BankReport {
            file: Some((
                FileMention::Batch {
                    batch: BatchId::from_uuid(id(500)),
                    part: 1,
                },
                FileVerdict::Accepted,
            )),
            items: Vec::new(),
        });
        let mut pass = InboundPass::default();
        s.processor
            .process(&rail(reader(report)), "ack.xml", b"x", &mut pass)
            .await
            .unwrap();
        assert_eq!(resolutions(&s), [expected], "{state:?}");
    }
}

#[tokio::test]
async fn foreign_and_unreadable_files_are_recorded_once_without_reports() {
    let ledger = Ledger::default();
    let s = setup(&ledger, MockRailFileStore::new(), Vec::new());
    let mut pass = InboundPass::default();
    s.processor
        .process(
            &rail(reader(ReadOutcome::NotMine)),
            "readme.txt",
            b"hello",
            &mut pass,
        )
        .await
        .unwrap();
    s.processor
        .process(
            &rail(reader(ReadOutcome::Unreadable("line 3: bad".into()))),
            "broken.ach",
            b"101",
            &mut pass,
        )
        .await
        .unwrap();
    // Known now: the reader is not asked again (a reader with no expectation would panic).
    s.processor
        .process(
            &rail(Arc::new(MockBankFileReader::new())),
            "broken.ach",
            b"101",
            &mut pass,
        )
        .await
        .unwrap();
    let recorded = s.recorded.lock().unwrap();
    let outcomes: Vec<_> = recorded
        .iter()
        .map(|(f, r)| (f.outcome, f.detail.clone(), r.len()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (InboundOutcome::Foreign, None, 0),
            (
                InboundOutcome::Unreadable,
                Some("line 3: bad".to_owned()),
                0
            )
        ]
    );
    assert_eq!((pass.files, pass.unreadable), (2, 1));
}

#[tokio::test]
async fn a_poll_reads_every_rail_and_skips_an_unreachable_one() {
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::Successful, 1_000)]);
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let store = ledger.store();
    let mut up = MockFileTransport::new();
    up.expect_list_inbound()
        .returning(|| Ok(vec!["returns.ach".to_owned()]));
    up.expect_fetch_inbound()
        .returning(|_| Ok(b"101...".to_vec()));
    let mut down = MockFileTransport::new();
    down.expect_list_inbound().returning(|| {
        Err(PortError::Unavailable(anyhow::anyhow!(
            "connection refused"
        )))
    });
    let processor = InboundProcessor::new(
        vec![
            InboundRail {
                method: PayoutMethod::DirectEntry,
                transport: Arc::new(down),
                reader: Arc::new(MockBankFileReader::new()),
                answers: AnswerRules::FILE_RAIL,
                poll_interval: std::time::Duration::ZERO,
            },
            InboundRail {
                method: PayoutMethod::Ach,
                transport: Arc::new(up),
                reader: reader(items(vec![return_of("T1", "R01", false, None)])),
                answers: AnswerRules::FILE_RAIL,
                poll_interval: std::time::Duration::ZERO,
            },
        ],
        Arc::new(MockRailFileStore::new()),
        inbound(vec![("T1", sent(1, 900, 0))], recorded.clone()),
        store.clone(),
        runner(store),
        clock(),
        ids(),
    );
    let pass = processor.poll().await.unwrap();
    assert_eq!((pass.files, pass.applied), (1, 1));
    assert_eq!(ledger.status(1), PayoutStatus::Failed);
    // The next poll finds the file known.
    let pass = processor.poll().await.unwrap();
    assert_eq!(pass, InboundPass::default());
}

#[tokio::test]
async fn a_pushed_report_is_applied_once_and_only_for_a_method_with_a_rail() {
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::Successful, 1_000)]);
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let store = ledger.store();
    let processor = InboundProcessor::new(
        vec![rail(reader(items(vec![return_of(
            "T1",
            "R02",
            true,
            Some(1_000),
        )])))],
        Arc::new(MockRailFileStore::new()),
        inbound(vec![("T1", sent(1, 900, 0))], recorded.clone()),
        store.clone(),
        runner(store),
        clock(),
        ids(),
    );
    assert!(processor.has_rail(PayoutMethod::Sepa));
    assert!(!processor.has_rail(PayoutMethod::Digital));
    assert_eq!(
        processor
            .receive(PayoutMethod::Digital, "report-1", b"pushed")
            .await
            .unwrap(),
        None,
        "no rail, nothing read"
    );
    let first = processor
        .receive(PayoutMethod::Sepa, "report-1", b"pushed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((first.files, first.applied), (1, 1));
    // Pushed again (a retried callback, or the same report polled): known, no effect.
    let again = processor
        .receive(PayoutMethod::Sepa, "report-1", b"pushed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again, InboundPass::default());
    assert_eq!(ledger.applied.lock().unwrap().len(), 1);
    assert_eq!(ledger.status(1), PayoutStatus::Failed);
    assert_eq!(recorded.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_verdict_on_a_batchs_second_file_moves_that_part() {
    let ledger = Ledger::default();
    let mut files = MockRailFileStore::new();
    files
        .expect_find_file()
        .withf(|batch, method, part| {
            *batch == BatchId::from_uuid(id(500)) && *method == PayoutMethod::Sepa && *part == 2
        })
        .times(1)
        .returning(|_, _, part| {
            Ok(Some(RailFile {
                part,
                name: "PAYOUTD-500-eur-sepa-2.xml".into(),
                ..sent_file(RailFileState::Uploaded)
            }))
        });
    files
        .expect_move_file()
        .withf(|_, from, to, _, _| {
            *from == RailFileState::Uploaded && *to == RailFileState::Acknowledged
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let s = setup(&ledger, files, Vec::new());
    let report = ReadOutcome::Report(BankReport {
        file: Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(id(500)),
                part: 2,
            },
            FileVerdict::Accepted,
        )),
        items: Vec::new(),
    });
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail(reader(report)), "ack-2.xml", b"x", &mut pass)
        .await
        .unwrap();
    assert_eq!(resolutions(&s), [Resolution::Applied]);
}

#[path = "inbound_sets_tests.rs"]
mod sets;

#[tokio::test]
async fn each_rail_is_read_only_once_its_own_interval_has_passed() {
    // A local directory every second beside a bank's SFTP server every ten: polls at 0, 1 and
    // 10 s list the directory three times and the server twice.
    let listed = |times: usize| {
        let mut transport = MockFileTransport::new();
        transport
            .expect_list_inbound()
            .times(times)
            .returning(|| Ok(Vec::new()));
        Arc::new(transport)
    };
    let rail_every = |seconds: u64, transport: Arc<MockFileTransport>| InboundRail {
        transport,
        poll_interval: std::time::Duration::from_secs(seconds),
        ..rail(Arc::new(MockBankFileReader::new()))
    };
    let now = Arc::new(Mutex::new(at(0)));
    let mut clock = MockClock::new();
    let read = now.clone();
    clock.expect_now().returning(move || *read.lock().unwrap());
    let store = Ledger::with(Vec::new()).store();
    let processor = InboundProcessor::new(
        vec![rail_every(1, listed(3)), rail_every(10, listed(2))],
        Arc::new(MockRailFileStore::new()),
        Arc::new(MockInboundStore::new()),
        store.clone(),
        runner(store),
        Arc::new(clock),
        ids(),
    );
    for second in [0, 1, 10] {
        *now.lock().unwrap() = at(second);
        processor.poll().await.unwrap();
    }
    // Half a second after the last poll neither is due.
    *now.lock().unwrap() = at(10) + Duration::milliseconds(500);
    processor.poll().await.unwrap();
}
