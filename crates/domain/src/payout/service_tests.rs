//! `PayoutService::create` driven through mocked ports.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::*;
use crate::account::ports::MockAccountStore;
use crate::account::{AccountData, PayoutMethod, ReceiverAccount};
use crate::builders::PayoutBuilder;
use crate::country::CountryCode;
use crate::ids::{ApiKeyId, BatchId, PayoutId, SubaccountId};
use crate::money::Percentage;
use crate::paging::cursor::CursorKey;
use crate::payout::PayoutStatus;
use crate::payout::ports::MockPayoutStore;
use crate::ports::{MockClock, MockIdGenerator};
use crate::receiver::ports::MockReceiverStore;
use crate::receiver::{Address, Receiver};
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
    Receiver {
        id: ReceiverId::from_uuid(Uuid::from_u128(RECEIVER)),
        subaccount_id: caller().subaccount_id,
        first_name: "Ada".to_owned(),
        middle_name: String::new(),
        last_name: "Lovelace".to_owned(),
        email: "ada@example.com".to_owned(),
        gender: None,
        dob: now().date_naive(),
        dialcode: "61".to_owned(),
        phone: "412345678".to_owned(),
        address: Address {
            address: "1 Example Street".to_owned(),
            address2: String::new(),
            city: "Sydney".to_owned(),
            state: "NSW".to_owned(),
            country: CountryCode::parse("AUS").unwrap_or_else(|e| panic!("{e}")),
            postcode: "2000".to_owned(),
        },
        reference: None,
        applicant_id: "app".to_owned(),
        status,
        kyc_status: kyc,
        created_at: now(),
        updated_at: now(),
    }
}

fn account(owner: u128, status: AccountStatus, confirm: ConfirmStatus) -> ReceiverAccount {
    ReceiverAccount {
        id: ReceiverAccountId::from_uuid(Uuid::from_u128(ACCOUNT)),
        receiver_id: ReceiverId::from_uuid(Uuid::from_u128(owner)),
        subaccount_id: caller().subaccount_id,
        method: PayoutMethod::DirectEntry,
        data: AccountData::from_pairs(vec![(
            crate::account::AccountField::Bsb,
            "012002".to_owned(),
        )]),
        status,
        confirm_status: confirm,
        created_at: now(),
        updated_at: now(),
    }
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

fn service(
    world: World,
    check: impl Fn(&Payout, &[LedgerEntry], &[OutboxEvent]) + Send + Sync + 'static,
) -> PayoutService {
    let mut receivers = MockReceiverStore::new();
    let found = world.receiver.clone();
    receivers
        .expect_find_receiver()
        .returning(move |_, _| Ok(found.clone()));
    let mut accounts = MockAccountStore::new();
    let found = world.account.clone();
    accounts
        .expect_find_account()
        .returning(move |_, _| Ok(found.clone()));
    let mut payouts = MockPayoutStore::new();
    let template = world.template;
    payouts
        .expect_fee_template()
        .returning(move |_, _| Ok(template));
    let duplicate = world.duplicate;
    payouts
        .expect_similar_payout_since()
        .returning(move |_, _, _, _, _| Ok(duplicate));
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
