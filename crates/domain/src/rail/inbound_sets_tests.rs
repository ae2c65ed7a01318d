//! The inbound path in sets: a report's sent items, payouts and deciding lines each read once,
//! its applied answers written as one set, and only what moved meanwhile decided again alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// A payout store over `ledger` that answers only set reads and set writes, each `reads` and
/// `writes` times: a single read or write would panic.
fn set_store(ledger: &Ledger, reads: usize, writes: usize) -> Arc<MockPayoutStore> {
    let mut store = MockPayoutStore::new();
    store.expect_find_payout().never();
    store.expect_apply_transition().never();
    let payouts = ledger.payouts.clone();
    store
        .expect_find_payouts()
        .times(reads)
        .returning(move |keys| {
            let payouts = payouts.lock().unwrap();
            Ok(keys
                .iter()
                .filter_map(|(_, id)| payouts.get(id).cloned())
                .collect())
        });
    let (payouts, applied) = (ledger.payouts.clone(), ledger.applied.clone());
    store
        .expect_apply_transitions()
        .times(writes)
        .returning(move |changes| {
            // A set is at most 2,500 changes, however long the report.
            assert!(changes.len() <= 2_500, "a set of {} changes", changes.len());
            Ok(changes
                .iter()
                .map(|change| apply(&payouts, &applied, change))
                .collect())
        });
    Arc::new(store)
}

/// An inbound store that finds `sent` items by reference in one read (`times` reads) and is
/// never asked for a deciding line.
fn set_inbound(
    sent: Vec<(String, SentItem)>,
    recorded: Recorded,
    times: usize,
) -> MockInboundStore {
    let mut store = MockInboundStore::new();
    store.expect_inbound_known().returning(|_, _, _| Ok(false));
    store.expect_read_under().never();
    store.expect_deciding_report().never();
    store.expect_deciding_reports().never();
    store
        .expect_sent_items_of()
        .times(times)
        .returning(move |_, references| {
            Ok(sent
                .iter()
                .filter(|(r, _)| references.contains(r))
                .cloned()
                .collect())
        });
    store
        .expect_record_inbound()
        .returning(move |file, reports| {
            recorded
                .lock()
                .unwrap()
                .push((file.clone(), reports.to_vec()));
            Ok(true)
        });
    store
}

/// A runner whose batches finish `finishes` times, whose accounts are never read.
fn set_runner(payouts: Arc<MockPayoutStore>, finishes: usize) -> Arc<BatchRunner> {
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_account().never();
    accounts.expect_find_accounts().never();
    set_runner_with(payouts, finishes, accounts)
}

/// A runner whose batches finish `finishes` times, over `accounts`.
fn set_runner_with(
    payouts: Arc<MockPayoutStore>,
    finishes: usize,
    accounts: MockAccountStore,
) -> Arc<BatchRunner> {
    let mut batches = MockBatchStore::new();
    batches
        .expect_finish_batch()
        .times(finishes)
        .returning(|_, _, _| Ok(None));
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

/// A return file of `n` returns of paid payouts, read with `reads` reads of the sent items
/// and of the payouts and `writes` sets written: every payout failed with a `payout_return`,
/// every line applied to its own payout, in the report's order. A return after settlement
/// leaves its finished batch alone.
async fn a_return_file_of(n: u128, reads: usize, writes: usize) {
    let ledger = Ledger::with(
        (1..=n)
            .map(|n| payout(n, PayoutStatus::Successful, 1_000))
            .collect(),
    );
    let sent_items: Vec<(String, SentItem)> = (1..=n)
        .map(|n| (format!("T{n}"), sent(n, 900, 0)))
        .collect();
    let recorded: Recorded = Arc::new(Mutex::new(Vec::new()));
    let store = set_store(&ledger, reads, writes);
    let processor = InboundProcessor::new(
        Vec::new(),
        Arc::new(MockRailFileStore::new()),
        Arc::new(set_inbound(sent_items, recorded.clone(), reads)),
        store.clone(),
        set_runner(store, 0),
        clock(),
        ids(),
    );
    let returns = (1..=n)
        .map(|n| return_of(&format!("T{n}"), "R01", false, Some(1_000)))
        .collect();
    let mut pass = InboundPass::default();
    processor
        .process(
            &rail(reader(items(returns))),
            "returns.ach",
            b"r",
            &mut pass,
        )
        .await
        .unwrap();
    let count = usize::try_from(n).unwrap();
    assert_eq!((pass.files, pass.applied), (1, count));
    assert!((1..=n).all(|n| ledger.status(n) == PayoutStatus::Failed));
    let applied = ledger.applied.lock().unwrap();
    assert_eq!(applied.len(), count);
    assert!(
        applied
            .iter()
            .all(|c| c.entries[0].kind == LedgerEntryKind::PayoutReturn)
    );
    let recorded = recorded.lock().unwrap();
    let lines = &recorded[0].1;
    assert_eq!(lines.len(), count);
    assert!(lines.iter().enumerate().all(|(i, l)| {
        l.position == i as u32
            && l.payout_id == Some(PayoutId::from_uuid(id(i as u128 + 1)))
            && l.resolution == Resolution::Applied
    }));
}

#[tokio::test]
async fn a_report_of_a_thousand_returns_is_read_and_applied_as_sets() {
    // One read of the sent items, one of the payouts, one set written.
    a_return_file_of(1_000, 1, 1).await;
}

#[tokio::test]
async fn a_report_longer_than_a_part_is_read_a_part_at_a_time_in_its_order() {
    // 2,501 returns: a part of 2,500 lines (one read of the sent items, one of the payouts, one
    // set) and a part of one line (one read each, one set).
    a_return_file_of(2_501, 2, 2).await;
}

/// A pain.002 settling a whole file of `n` payouts in progress, applied with `reads` reads of
/// the payouts, `writes` sets written and `finishes` asks to finish the batch: every payout
/// successful, the line applied.
async fn a_settled_file_of(n: u128, reads: usize, writes: usize, finishes: usize) {
    let ledger = Ledger::with(
        (1..=n)
            .map(|n| payout(n, PayoutStatus::InProgress, 1_000))
            .collect(),
    );
    let mut files = MockRailFileStore::new();
    files.expect_find_file().times(1).returning(move |_, _, _| {
        Ok(Some(RailFile {
            items: (1..=n)
                .map(|n| RailFileItem {
                    payout_id: PayoutId::from_uuid(id(n)),
                    reference: format!("E2E-{n}"),
                })
                .collect(),
            ..sent_file(RailFileState::Uploaded)
        }))
    });
    files
        .expect_move_file()
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let recorded: Recorded = Arc::new(Mutex::new(Vec::new()));
    let store = set_store(&ledger, reads, writes);
    // A report naming no item: the item phase reads nothing.
    let processor = InboundProcessor::new(
        Vec::new(),
        Arc::new(files),
        Arc::new(set_inbound(Vec::new(), recorded.clone(), 0)),
        store.clone(),
        set_runner(store, finishes),
        clock(),
        ids(),
    );
    let report = ReadOutcome::Report(BankReport {
        file: Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(id(500)),
                part: 1,
            },
            FileVerdict::Settled,
        )),
        items: Vec::new(),
    });
    let mut pass = InboundPass::default();
    processor
        .process(&rail(reader(report)), "pain002.xml", b"x", &mut pass)
        .await
        .unwrap();
    assert!((1..=n).all(|n| ledger.status(n) == PayoutStatus::Successful));
    assert_eq!(
        ledger.applied.lock().unwrap().len(),
        usize::try_from(n).unwrap()
    );
    assert_eq!(pass.applied, 1);
}

#[tokio::test]
async fn a_settled_file_pays_its_payouts_as_one_set_and_finishes_the_batch_once() {
    a_settled_file_of(300, 1, 1, 1).await;
}

#[tokio::test]
async fn a_settled_file_larger_than_a_part_is_paid_a_part_at_a_time() {
    // 2,501 payouts: a part of 2,500 (one read, one set) and a part of one (one read, one
    // set); the batch is asked to finish after each part.
    a_settled_file_of(2_501, 2, 2, 2).await;
}

#[tokio::test]
async fn of_a_set_only_the_payout_moved_meanwhile_is_decided_again_on_its_own() {
    // Payout 2 was in progress when the report's payouts were read and settled on its
    // effective date before the set was written: its return is then applied alone, to the
    // settled payout; the other two in the set.
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::InProgress, 1_000),
        payout(2, PayoutStatus::Successful, 1_000),
        payout(3, PayoutStatus::InProgress, 1_000),
    ]);
    ledger
        .stale
        .lock()
        .unwrap()
        .push(payout(2, PayoutStatus::InProgress, 1_000));
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![
            ("T1", sent(1, 900, 0)),
            ("T2", sent(2, 900, 0)),
            ("T3", sent(3, 900, 0)),
        ],
    );
    let rail = rail(reader(items(
        (1..=3)
            .map(|n| return_of(&format!("T{n}"), "R01", false, Some(1_000)))
            .collect(),
    )));
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "returns.ach", b"r", &mut pass)
        .await
        .unwrap();
    assert!((1..=3).all(|n| ledger.status(n) == PayoutStatus::Failed));
    let applied = ledger.applied.lock().unwrap().clone();
    let kinds: Vec<_> = applied
        .iter()
        .map(|c| (c.payout.id, c.expected, c.entries[0].kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (
                PayoutId::from_uuid(id(1)),
                PayoutStatus::InProgress,
                LedgerEntryKind::PayoutVoid
            ),
            (
                PayoutId::from_uuid(id(3)),
                PayoutStatus::InProgress,
                LedgerEntryKind::PayoutVoid
            ),
            (
                PayoutId::from_uuid(id(2)),
                PayoutStatus::Successful,
                LedgerEntryKind::PayoutReturn
            ),
        ]
    );
    assert_eq!(resolutions(&s), [Resolution::Applied; 3]);
}

#[tokio::test]
async fn a_later_line_about_a_payout_an_earlier_line_applies_is_decided_after_it() {
    // Settled, then refused, in one report: the refusal is read against the paid payout (an
    // anomaly), as it would be line by line; a notice about it is only noted.
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::InProgress, 1_000)]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("E2E-1", sent(1, 900, 0))],
    );
    let refusal = ItemReport {
        reference: "E2E-1".into(),
        outcome: ItemOutcome::Rejected(ReturnReason {
            code: "AC04".into(),
            reason: "Closed account number".into(),
            account_is_invalid: true,
        }),
    };
    let rail = rail(reader(items(vec![
        ItemReport {
            reference: "E2E-1".into(),
            outcome: ItemOutcome::Settled,
        },
        refusal,
        ItemReport {
            reference: "E2E-1".into(),
            outcome: ItemOutcome::Notice {
                code: "C01".into(),
                reason: "Incorrect account number".into(),
            },
        },
    ])));
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "pain002.xml", b"x", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Successful);
    assert_eq!(ledger.applied.lock().unwrap().len(), 1);
    assert_eq!(
        resolutions(&s),
        [Resolution::Applied, Resolution::Anomaly, Resolution::Noted]
    );
}

#[tokio::test]
async fn returns_of_reused_trace_numbers_find_their_amounts_in_a_further_read() {
    // T1 was sent twice: its newest payment is of another amount than the return states, so a
    // second read finds the older one; T2's newest is of its amount.
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::Successful, 1_000),
        payout(2, PayoutStatus::Successful, 2_000),
        payout(3, PayoutStatus::Successful, 3_000),
        payout(4, PayoutStatus::Successful, 3_000),
    ]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![
            ("T1", sent(1, 901, 0)),
            ("T1", sent(2, 902, 86_400)),
            ("T2", sent(3, 901, 0)),
            ("T2", sent(4, 902, 86_400)),
        ],
    );
    let rail = rail(reader(items(vec![
        return_of("T1", "R01", false, Some(1_000)),
        return_of("T2", "R01", false, Some(3_000)),
    ])));
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "returns.ach", b"r", &mut pass)
        .await
        .unwrap();
    assert_eq!(
        ledger.status(1),
        PayoutStatus::Failed,
        "older, of that amount"
    );
    assert_eq!(ledger.status(2), PayoutStatus::Successful);
    assert_eq!(ledger.status(3), PayoutStatus::Successful);
    assert_eq!(
        ledger.status(4),
        PayoutStatus::Failed,
        "newest of that amount"
    );
    let matched: Vec<_> = s.recorded.lock().unwrap()[0]
        .1
        .iter()
        .map(|l| (l.payout_id, l.rail_file_id))
        .collect();
    assert_eq!(
        matched,
        [
            (
                Some(PayoutId::from_uuid(id(1))),
                Some(RailFileId::from_uuid(id(901)))
            ),
            (
                Some(PayoutId::from_uuid(id(4))),
                Some(RailFileId::from_uuid(id(902)))
            ),
        ]
    );
}

#[tokio::test]
async fn returns_that_fail_their_accounts_read_the_accounts_in_one_set() {
    use crate::builders::ReceiverAccountBuilder;
    // Payouts 1 and 2 were paid into account 41, payout 3 into account 43; their returns say
    // the account is gone.
    let on = |n: u128, account: u128| Payout {
        account_id: crate::ids::ReceiverAccountId::from_uuid(id(account)),
        ..payout(n, PayoutStatus::Successful, 1_000)
    };
    let ledger = Ledger::with(vec![on(1, 41), on(2, 41), on(3, 43)]);
    let sent_items: Vec<(String, SentItem)> = (1..=3)
        .map(|n| (format!("T{n}"), sent(n, 900, 0)))
        .collect();
    let recorded: Recorded = Arc::new(Mutex::new(Vec::new()));
    let store = set_store(&ledger, 1, 1);
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_account().never();
    accounts
        .expect_find_accounts()
        .withf(|subaccount, ids| {
            *subaccount == SubaccountId::from_uuid(id(2))
                && ids
                    == [
                        crate::ids::ReceiverAccountId::from_uuid(id(41)),
                        crate::ids::ReceiverAccountId::from_uuid(id(43)),
                    ]
        })
        .times(1)
        .returning(|_, ids| {
            Ok(ids
                .iter()
                .map(|account| {
                    ReceiverAccountBuilder::new()
                        .id(*account)
                        .created_at(at(0))
                        .build()
                })
                .collect())
        });
    let processor = InboundProcessor::new(
        Vec::new(),
        Arc::new(MockRailFileStore::new()),
        Arc::new(set_inbound(sent_items, recorded.clone(), 1)),
        store.clone(),
        set_runner_with(store, 0, accounts),
        clock(),
        ids(),
    );
    let returns = (1..=3)
        .map(|n| return_of(&format!("T{n}"), "R02", true, Some(1_000)))
        .collect();
    let mut pass = InboundPass::default();
    processor
        .process(
            &rail(reader(items(returns))),
            "returns.ach",
            b"r",
            &mut pass,
        )
        .await
        .unwrap();
    assert_eq!(pass.applied, 3);
    let failed: Vec<_> = ledger
        .applied
        .lock()
        .unwrap()
        .iter()
        .map(|c| {
            c.account_failure
                .as_ref()
                .map(|f| (f.account_id, f.event.payload["status"] == "failed"))
        })
        .collect();
    let account = |n| Some((crate::ids::ReceiverAccountId::from_uuid(id(n)), true));
    // Each payout's change fails its account; the store announces each account once.
    assert_eq!(failed, [account(41), account(41), account(43)]);
}
