//! `PayoutService::create` driven through mocked ports.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::*;
use crate::account::ReceiverAccount;
use crate::account::ports::MockAccountStore;
use crate::builders::{PayoutBuilder, ReceiverAccountBuilder, ReceiverBuilder};
use crate::ids::{ApiKeyId, BatchId, PayoutId, SubaccountId};
use crate::money::Percentage;
use crate::paging::cursor::CursorKey;
use crate::payout::PayoutStatus;
use crate::payout::ports::MockPayoutStore;
use crate::ports::{MockClock, MockIdGenerator};
use crate::receiver::Receiver;
use crate::receiver::ports::MockReceiverStore;
use crate::subaccount::FeeTemplate;
use crate::subaccount::ports::MockSubaccountStore;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default()
}

fn caller() -> Caller {
    Caller {
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(0xA)),
        api_key_id: ApiKeyId::from_uuid(Uuid::from_u128(0xB)),
    }
}

const RECEIVER: u128 = 0xC;
const OTHER_RECEIVER: u128 = 0xD;
const ACCOUNT: u128 = 0xE;

fn receiver(status: ReceiverStatus, kyc: KycStatus) -> Receiver {
    ReceiverBuilder::new()
        .id(ReceiverId::from_uuid(Uuid::from_u128(RECEIVER)))
        .subaccount(caller().subaccount_id)
        .status(status)
        .kyc_status(kyc)
        .created_at(now())
        .build()
}

fn account(owner: u128, status: AccountStatus, confirm: ConfirmStatus) -> ReceiverAccount {
    ReceiverAccountBuilder::new()
        .id(ReceiverAccountId::from_uuid(Uuid::from_u128(ACCOUNT)))
        .receiver(ReceiverId::from_uuid(Uuid::from_u128(owner)))
        .subaccount(caller().subaccount_id)
        .status(status)
        .confirm_status(confirm)
        .created_at(now())
        .build()
}

fn raw(amount: &str, currency: &str) -> RawPayout {
    RawPayout {
        receiver_id: Some(Uuid::from_u128(RECEIVER).to_string()),
        account_id: Some(Uuid::from_u128(ACCOUNT).to_string()),
        amount: Some(amount.to_owned()),
        currency: Some(currency.to_owned()),
        reference: Some("inv-1".to_owned()),
        note: None,
    }
}

/// What the store's insert answers (the batch joined, or why not).
type InsertResult = fn() -> Result<Option<BatchId>, InsertPayoutError>;

struct World {
    receiver: Option<Receiver>,
    account: Option<ReceiverAccount>,
    insert: Option<InsertResult>,
    template: Option<FeeTemplate>,
    duplicate: bool,
}

fn active() -> World {
    World {
        receiver: Some(receiver(ReceiverStatus::Active, KycStatus::Completed)),
        account: Some(account(
            RECEIVER,
            AccountStatus::Completed,
            ConfirmStatus::Confirmed,
        )),
        insert: Some(|| Ok(None)),
        template: None,
        duplicate: false,
    }
}

/// What a store holding `receiver`, `account` and `template` answers to `query`: the receiver
/// and account under every id asked for, the template for every asset, and every payout asked
/// about as paid before when `duplicate`.
fn facts_of(
    query: &PlanningQuery,
    receiver: &Option<Receiver>,
    account: &Option<ReceiverAccount>,
    template: Option<&FeeTemplate>,
    duplicate: bool,
) -> PlanningFacts {
    let mut facts = PlanningFacts::default();
    if let Some(receiver) = receiver {
        for id in &query.receivers {
            facts.receivers.insert(*id, receiver.clone());
        }
    }
    if let Some(account) = account {
        for id in &query.accounts {
            facts.accounts.insert(*id, account.clone());
        }
    }
    if let Some(template) = template {
        for asset in &query.assets {
            facts.fee_templates.insert(*asset, *template);
        }
    }
    if duplicate {
        facts.paid_since.extend(query.similar.iter().copied());
    }
    facts
}

fn service(
    world: World,
    check: impl Fn(&Payout, &[LedgerEntry], &[OutboxEvent]) + Send + Sync + 'static,
) -> PayoutService {
    let receivers = MockReceiverStore::new();
    let accounts = MockAccountStore::new();
    let mut payouts = MockPayoutStore::new();
    let (found_receiver, found_account) = (world.receiver.clone(), world.account.clone());
    let (template, duplicate) = (world.template, world.duplicate);
    // The store finds the world's receiver and account under whatever ids are asked for (the
    // checks then compare them), its fee template for every asset, and, for a duplicate
    // world, every payout asked about.
    payouts.expect_planning_facts().returning(move |_, query| {
        Ok(facts_of(
            query,
            &found_receiver,
            &found_account,
            template.as_ref(),
            duplicate,
        ))
    });
    match world.insert {
        Some(result) => {
            payouts
                .expect_insert_payout()
                .times(1)
                .returning(move |p, e, ev, _| {
                    check(p, e, ev);
                    result()
                });
        }
        None => {
            payouts.expect_insert_payout().never();
        }
    }
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    let mut ids = MockIdGenerator::new();
    let mut n = 100u128;
    ids.expect_new_id().returning(move || {
        n += 1;
        Uuid::from_u128(n)
    });
    PayoutService::new(
        Arc::new(payouts),
        Arc::new(receivers),
        Arc::new(accounts),
        Arc::new(MockSubaccountStore::new()),
        Arc::new(clock),
        Arc::new(ids),
        CursorKey::new([5; 32]),
    )
}

fn codes(result: Result<Payout, CreatePayoutError>) -> Vec<ErrorCode> {
    match result {
        Err(CreatePayoutError::Invalid(e)) => e.0.into_iter().map(|e| e.code).collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn holds_amount_and_fee_with_ledger_entries_and_announces_it() {
    let template = FeeTemplate {
        id: crate::ids::FeeTemplateId::from_uuid(Uuid::from_u128(1)),
        group_id: crate::ids::FeeGroupId::from_uuid(Uuid::from_u128(2)),
        asset: Asset::Aud,
        fixed: 30,
        percentage: Percentage::parse("1.5").unwrap_or_default(),
        min_amount: 50,
    };
    let world = World {
        template: Some(template),
        duplicate: true,
        ..active()
    };
    let service = service(world, |payout, entries, events| {
        assert_eq!(
            (payout.amount.get(), payout.fee.get(), payout.total()),
            (10_000, 180, 10_180)
        );
        let moves: Vec<_> = entries
            .iter()
            .map(|e| (e.kind, e.available_delta, e.pending_delta))
            .collect();
        assert_eq!(
            moves,
            [
                (LedgerEntryKind::PayoutHold, -10_000, 10_000),
                (LedgerEntryKind::FeeHold, -180, 180)
            ]
        );
        assert!(entries.iter().all(|e| e.payout_id == Some(payout.id)));
        assert_eq!(events[0].kind, EventKind::PayoutCreated);
        assert_eq!(events[0].payload["amount"], 10_000);
        assert_eq!(events[0].payload["status"], "pending");
        assert_eq!(
            events[0].payload["subccount_id"],
            events[0].payload["subaccount_id"]
        );
    });
    let payout = service
        .create(&caller(), &raw("10000", "aud"), &WriteKey::none())
        .await;
    let Ok(payout) = payout else {
        panic!("{payout:?}")
    };
    assert_eq!(
        (payout.status, payout.asset, payout.duplicate),
        (PayoutStatus::Pending, Asset::Aud, true)
    );
    assert_eq!(payout.reference.as_deref(), Some("inv-1"));
}

#[tokio::test]
async fn the_initial_status_follows_kyc_and_confirmation() {
    for (kyc, confirm, expected) in [
        (
            KycStatus::Pending,
            ConfirmStatus::Confirmed,
            PayoutStatus::Unassessed,
        ),
        (
            KycStatus::Completed,
            ConfirmStatus::Unconfirmed,
            PayoutStatus::Awaiting,
        ),
        (
            KycStatus::Completed,
            ConfirmStatus::Confirmed,
            PayoutStatus::Pending,
        ),
    ] {
        let status = if kyc == KycStatus::Completed {
            ReceiverStatus::Active
        } else {
            ReceiverStatus::Pending
        };
        let world = World {
            receiver: Some(receiver(status, kyc)),
            account: Some(account(RECEIVER, AccountStatus::Pending, confirm)),
            ..active()
        };
        let created = service(world, |_, entries, _| {
            assert_eq!(entries.len(), 1, "no fee, no fee entry")
        })
        .create(&caller(), &raw("500", "AUD"), &WriteKey::none())
        .await;
        assert_eq!(created.map(|p| p.status).ok(), Some(expected));
    }
}

#[tokio::test]
async fn every_check_has_its_code_and_independent_ones_come_together() {
    let no_insert = || World {
        insert: None,
        ..active()
    };
    let ignore = |_: &Payout, _: &[LedgerEntry], _: &[OutboxEvent]| {};
    let missing_receiver = World {
        receiver: None,
        ..no_insert()
    };
    assert_eq!(
        codes(
            service(missing_receiver, ignore)
                .create(&caller(), &raw("0", "GBP"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo201, ErrorCode::Payo203, ErrorCode::Payo204]
    );
    let someone_elses = World {
        account: Some(account(
            OTHER_RECEIVER,
            AccountStatus::Completed,
            ConfirmStatus::Confirmed,
        )),
        ..no_insert()
    };
    assert_eq!(
        codes(
            service(someone_elses, ignore)
                .create(&caller(), &raw("100", "AUD"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo202]
    );
    assert_eq!(
        codes(
            service(no_insert(), ignore)
                .create(&caller(), &raw("100", "USD"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo204]
    );
    for bad in ["1.5", "-3", "1000000000001", "", "abc"] {
        assert_eq!(
            codes(
                service(no_insert(), ignore)
                    .create(&caller(), &raw(bad, "AUD"), &WriteKey::none())
                    .await
            ),
            [ErrorCode::Payo203],
            "{bad}"
        );
    }
    let failed = World {
        receiver: Some(receiver(ReceiverStatus::Failed, KycStatus::Failed)),
        ..no_insert()
    };
    assert_eq!(
        codes(
            service(failed, ignore)
                .create(&caller(), &raw("100", "AUD"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo205]
    );
    let failed_account = World {
        account: Some(account(
            RECEIVER,
            AccountStatus::Failed,
            ConfirmStatus::Confirmed,
        )),
        ..no_insert()
    };
    assert_eq!(
        codes(
            service(failed_account, ignore)
                .create(&caller(), &raw("100", "AUD"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo205]
    );
    let mut long = raw("100", "AUD");
    long.note = Some("n".repeat(256));
    assert_eq!(
        codes(
            service(no_insert(), ignore)
                .create(&caller(), &long, &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo208]
    );
    // The receiver's text rule (crate::text): no control, format or invisible character.
    for text in [
        "inv-1\u{202E}",
        "in\u{200B}v",
        "\u{FEFF}x",
        "a\tb",
        "a\u{3164}b",
    ] {
        for field in ["reference", "note"] {
            let mut odd = raw("100", "AUD");
            *(if field == "reference" {
                &mut odd.reference
            } else {
                &mut odd.note
            }) = Some(text.to_owned());
            assert_eq!(
                codes(
                    service(no_insert(), ignore)
                        .create(&caller(), &odd, &WriteKey::none())
                        .await
                ),
                [ErrorCode::Req009],
                "{field} {text:?}"
            );
        }
    }
}

#[tokio::test]
async fn the_stores_refusals_map_to_their_codes() {
    let ignore = |_: &Payout, _: &[LedgerEntry], _: &[OutboxEvent]| {};
    let poor = World {
        insert: Some(|| Err(InsertPayoutError::InsufficientBalance)),
        ..active()
    };
    assert_eq!(
        codes(
            service(poor, ignore)
                .create(&caller(), &raw("100", "AUD"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo207]
    );
    let taken = World {
        insert: Some(|| Err(InsertPayoutError::DuplicateReference)),
        ..active()
    };
    assert_eq!(
        codes(
            service(taken, ignore)
                .create(&caller(), &raw("100", "AUD"), &WriteKey::none())
                .await
        ),
        [ErrorCode::Payo206]
    );
    // A write that was to admit its request and could not is not a refusal of the payout:
    // it goes back to the caller to admit the request and create again, and is not planned
    // again here (the store's mock allows one insert).
    let unadmitted = World {
        insert: Some(|| Err(InsertPayoutError::NotAdmitted)),
        ..active()
    };
    let result = service(unadmitted, ignore)
        .create(&caller(), &raw("100", "AUD"), &WriteKey::none())
        .await;
    assert!(
        matches!(result, Err(CreatePayoutError::NotAdmitted)),
        "{result:?}"
    );
}

fn stored_payout(status: PayoutStatus, fee: i64) -> Payout {
    PayoutBuilder::new()
        .id(PayoutId::from_uuid(Uuid::from_u128(0xF)))
        .subaccount(caller().subaccount_id)
        .receiver(ReceiverId::from_uuid(Uuid::from_u128(RECEIVER)))
        .account(ReceiverAccountId::from_uuid(Uuid::from_u128(ACCOUNT)))
        .status(status)
        .fee(fee)
        .created_at(now())
        .build()
}

fn cancel_service(payouts: MockPayoutStore) -> PayoutService {
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    let mut ids = MockIdGenerator::new();
    ids.expect_new_id().returning(Uuid::new_v4);
    PayoutService::new(
        Arc::new(payouts),
        Arc::new(MockReceiverStore::new()),
        Arc::new(MockAccountStore::new()),
        Arc::new(MockSubaccountStore::new()),
        Arc::new(clock),
        Arc::new(ids),
        CursorKey::new([5; 32]),
    )
}

#[tokio::test]
async fn cancel_voids_the_hold_from_cancellable_statuses_only() {
    for &status in PayoutStatus::ALL {
        let mut payouts = MockPayoutStore::new();
        payouts
            .expect_find_payout()
            .returning(move |_, _| Ok(Some((stored_payout(status, 30), Vec::new()))));
        let cancellable = matches!(
            status,
            PayoutStatus::Awaiting | PayoutStatus::Unassessed | PayoutStatus::Pending
        );
        if cancellable {
            payouts
                .expect_apply_transition()
                .withf(move |change, _| {
                    let (payout, expected, entries, events) = (
                        &change.payout,
                        &change.expected,
                        &change.entries,
                        &change.events,
                    );
                    let moves: Vec<_> = entries
                        .iter()
                        .map(|e| (e.kind, e.available_delta, e.pending_delta))
                        .collect();
                    payout.status == PayoutStatus::Cancelled
                        && *expected == status
                        && moves
                            == [
                                (LedgerEntryKind::PayoutVoid, 1000, -1000),
                                (LedgerEntryKind::FeeVoid, 30, -30),
                            ]
                        && events[0].kind == EventKind::PayoutUpdated
                        && events[0].payload["status"] == "cancelled"
                })
                .times(1)
                .returning(|_, _| Ok(true));
        } else {
            payouts.expect_apply_transition().never();
        }
        let result = cancel_service(payouts)
            .cancel(
                &caller(),
                &Uuid::from_u128(0xF).to_string(),
                &WriteKey::none(),
            )
            .await;
        match (cancellable, result) {
            (true, Ok(p)) => assert_eq!(p.status, PayoutStatus::Cancelled),
            (false, Err(CancelPayoutError::NotCancellable(s))) => assert_eq!(s, status),
            (_, other) => panic!("{status:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_cancel_that_loses_a_race_reports_the_new_status() {
    let mut payouts = MockPayoutStore::new();
    let mut reads = 0;
    payouts
        .expect_find_payout()
        .times(2)
        .returning(move |_, _| {
            reads += 1;
            let status = if reads == 1 {
                PayoutStatus::Pending
            } else {
                PayoutStatus::InProgress
            };
            Ok(Some((stored_payout(status, 0), Vec::new())))
        });
    payouts
        .expect_apply_transition()
        .times(1)
        .returning(|change, _| {
            assert_eq!(change.entries.len(), 1, "no fee, no fee void");
            Ok(false)
        });
    let result = cancel_service(payouts)
        .cancel(
            &caller(),
            &Uuid::from_u128(0xF).to_string(),
            &WriteKey::none(),
        )
        .await;
    assert!(matches!(
        result,
        Err(CancelPayoutError::NotCancellable(PayoutStatus::InProgress))
    ));
}

mod bulk {
    //! `PayoutService::create_bulk` driven through mocked ports; the store mock applies the
    //! items in order against a balance, as the port promises.

    use super::*;
    use crate::payout::bulk::{BulkPayoutError, MAX_BULK_ITEMS};
    use crate::payout::ports::{BulkItemOutcome, BulkPayoutResult, BulkSlot, bulk_item_error};
    use std::sync::Mutex;

    /// What the store mock saw: the slots and the atomic flag of each call.
    type Seen = Arc<Mutex<Vec<(Vec<BulkSlot>, bool)>>>;

    /// A service whose receivers exist only for `RECEIVER`, whose store holds `balance` and
    /// refuses the references in `taken`.
    fn bulk_service(balance: i64, taken: &'static [&'static str], seen: Seen) -> PayoutService {
        let receivers = MockReceiverStore::new();
        let accounts = MockAccountStore::new();
        let mut payouts = MockPayoutStore::new();
        // Only `RECEIVER` exists; every account asked for is its.
        payouts.expect_planning_facts().returning(|_, query| {
            let mut facts = facts_of(
                query,
                &Some(receiver(ReceiverStatus::Active, KycStatus::Completed)),
                &Some(account(
                    RECEIVER,
                    AccountStatus::Completed,
                    ConfirmStatus::Confirmed,
                )),
                None,
                false,
            );
            facts
                .receivers
                .retain(|id, _| *id == ReceiverId::from_uuid(Uuid::from_u128(RECEIVER)));
            Ok(facts)
        });
        payouts.expect_insert_payout().never();
        payouts
            .expect_insert_payout_bulk()
            .returning(move |slots, atomic, _| {
                seen.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((slots.to_vec(), atomic));
                let mut left = balance;
                let items = slots
                    .iter()
                    .map(|slot| match slot {
                        BulkSlot::Rejected(errors) => BulkItemOutcome::Failed(errors.clone()),
                        BulkSlot::Insert(new) => {
                            let refused = if new.payout.total() > left {
                                Some(InsertPayoutError::InsufficientBalance)
                            } else if new
                                .payout
                                .reference
                                .as_deref()
                                .is_some_and(|r| taken.contains(&r))
                            {
                                Some(InsertPayoutError::DuplicateReference)
                            } else {
                                None
                            };
                            match refused.as_ref().and_then(bulk_item_error) {
                                Some(errors) => BulkItemOutcome::Failed(errors),
                                None => {
                                    left -= new.payout.total();
                                    BulkItemOutcome::Created(new.payout.id)
                                }
                            }
                        }
                    })
                    .collect();
                Ok(BulkPayoutResult { atomic, items })
            });
        let mut clock = MockClock::new();
        clock.expect_now().returning(now);
        let mut ids = MockIdGenerator::new();
        let mut n = 100u128;
        ids.expect_new_id().returning(move || {
            n += 1;
            Uuid::from_u128(n)
        });
        PayoutService::new(
            Arc::new(payouts),
            Arc::new(receivers),
            Arc::new(accounts),
            Arc::new(MockSubaccountStore::new()),
            Arc::new(clock),
            Arc::new(ids),
            CursorKey::new([5; 32]),
        )
    }

    fn item(amount: &str, reference: Option<&str>) -> Result<RawPayout, ValidationErrors> {
        Ok(RawPayout {
            reference: reference.map(str::to_owned),
            ..raw(amount, "aud")
        })
    }

    /// Per item: `Ok(())` when created, else its codes.
    fn outcomes(result: &BulkPayoutResult) -> Vec<Result<(), Vec<ErrorCode>>> {
        result
            .items
            .iter()
            .map(|i| match i {
                BulkItemOutcome::Created(_) => Ok(()),
                BulkItemOutcome::Failed(e) => Err(e.0.iter().map(|e| e.code).collect()),
            })
            .collect()
    }

    #[tokio::test]
    async fn items_are_applied_in_order_and_the_balance_runs_out_at_the_first_it_cannot_cover() {
        let seen = Seen::default();
        let service = bulk_service(1_000, &[], seen.clone());
        let raws = [
            item("600", Some("a")),
            item("500", Some("b")),
            item("400", Some("c")),
            item("1", Some("d")),
        ];
        let result = service
            .create_bulk(&caller(), &raws, false, &WriteKey::none())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            outcomes(&result),
            [
                Ok(()),
                Err(vec![ErrorCode::Payo207]),
                Ok(()),
                Err(vec![ErrorCode::Payo207])
            ]
        );
        assert_eq!((result.created(), result.failed()), (2, 2));
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let references: Vec<_> = seen[0]
            .0
            .iter()
            .map(|s| match s {
                BulkSlot::Insert(new) => new.payout.reference.clone(),
                BulkSlot::Rejected(_) => None,
            })
            .collect();
        assert_eq!(
            references,
            ["a", "b", "c", "d"].map(|r| Some(r.to_owned())),
            "the store gets the items in request order"
        );
        assert!(!seen[0].1);
    }

    #[tokio::test]
    async fn a_reference_repeated_within_the_request_or_missing_fails_only_that_item() {
        let seen = Seen::default();
        let service = bulk_service(1_000_000, &["taken"], seen.clone());
        let raws = [
            item("100", Some("x")),
            item("100", Some(" x ")),
            item("100", None),
            item("100", Some("   ")),
            item("100", Some("taken")),
            item("100", Some("y")),
        ];
        let result = service
            .create_bulk(&caller(), &raws, false, &WriteKey::none())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            outcomes(&result),
            [
                Ok(()),
                Err(vec![ErrorCode::Payo206]),
                Err(vec![ErrorCode::Payo210]),
                Err(vec![ErrorCode::Payo210]),
                Err(vec![ErrorCode::Payo206]),
                Ok(()),
            ]
        );
        // The refused ones never reach the store as payouts.
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let inserts = seen[0]
            .0
            .iter()
            .filter_map(|s| match s {
                BulkSlot::Insert(new) => Some(new.payout.duplicate),
                BulkSlot::Rejected(_) => None,
            })
            .collect::<Vec<_>>();
        assert_eq!(
            inserts,
            [false, true, true],
            "the later payouts of 100 to the same account are flagged as duplicates"
        );
    }

    #[tokio::test]
    async fn each_item_gets_the_checks_of_a_single_payout() {
        let service = bulk_service(1_000_000, &[], Seen::default());
        let foreign = RawPayout {
            receiver_id: Some(Uuid::from_u128(OTHER_RECEIVER).to_string()),
            ..raw("100", "aud")
        };
        let mut malformed = ValidationErrors::default();
        malformed.push(ErrorCode::Req004, "note");
        let raws = [
            item("0", Some("z")),
            Ok(foreign),
            item("100", Some("ok")),
            Err(malformed),
        ];
        let result = service
            .create_bulk(&caller(), &raws, false, &WriteKey::none())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            outcomes(&result),
            [
                Err(vec![ErrorCode::Payo203]),
                Err(vec![ErrorCode::Payo201]),
                Ok(()),
                Err(vec![ErrorCode::Req004]),
            ]
        );
    }

    #[tokio::test]
    async fn an_atomic_request_with_a_failure_creates_nothing() {
        let seen = Seen::default();
        let service = bulk_service(150, &[], seen.clone());
        let raws = [item("100", Some("a")), item("100", Some("b"))];
        let result = service
            .create_bulk(&caller(), &raws, true, &WriteKey::none())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(seen.lock().unwrap_or_else(|e| e.into_inner())[0].1);
        assert_eq!((result.created(), result.failed()), (0, 1));
        assert!(!result.written());
        // The same request in partial mode creates the first.
        let partial = service
            .create_bulk(&caller(), &raws, false, &WriteKey::none())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!((partial.created(), partial.failed()), (1, 1));
        assert!(partial.written());
    }

    #[tokio::test]
    async fn no_items_or_too_many_is_refused_before_anything_is_read() {
        let seen = Seen::default();
        let service = bulk_service(1_000_000, &[], seen.clone());
        let too_many: Vec<_> = (0..=MAX_BULK_ITEMS)
            .map(|i| item("1", Some(&i.to_string())))
            .collect();
        for raws in [&[][..], &too_many[..]] {
            let result = service
                .create_bulk(&caller(), raws, false, &WriteKey::none())
                .await;
            assert!(
                matches!(result, Err(BulkPayoutError::ItemCount)),
                "{result:?}"
            );
        }
        assert!(seen.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
    }
}
