//! `PayoutStore::insert_payout_bulk`: items applied in order against one balance, each in its
//! own savepoint (a refused item writes nothing and fails no other), the idempotency key
//! applied with the payouts, and an atomic request with a failure leaving no trace.

use std::sync::Arc;

use chrono::Utc;
use domain::account::ReceiverAccount;
use domain::builders::PayoutBuilder;
use domain::codes::ErrorCode;
use domain::events::{EventKind, OutboxEvent};
use domain::idempotency::{
    ClaimOutcome, IdempotencyKey, IdempotencyStore, KeyClaim, KeyMode, StoredResponse, WriteKey,
    fingerprint,
};
use domain::ids::{EventId, LedgerEntryId, PayoutId, SubaccountId};
use domain::ledger::{LedgerEntry, LedgerEntryKind};
use domain::money::Asset;
use domain::payout::PayoutStatus;
use domain::payout::ports::{BulkItemOutcome, BulkPayoutResult, BulkSlot, NewPayout, PayoutStore};
use domain::receiver::Receiver;
use domain::subaccount::ports::SubaccountStore;
use domain::validation::ValidationErrors;
use uuid::Uuid;

use crate::accounts::{ach, direct_entry, insert, new_receiver};
use crate::payout_groups::{
    DEADLOCK_SCENARIO_ATTEMPTS, holding_the_balance_row, the_test_lost_the_deadlock,
    until_a_session_waits_for_a_lock,
};
use crate::support::{Fixture, admin, at};

const T0: i64 = 1_700_000_000_123_456;

/// A funded subaccount (`funding` USD) with one receiver (KYC pending) and its ACH account.
async fn world(fx: &Fixture, funding: &str) -> (SubaccountId, Receiver, ReceiverAccount) {
    let sub = fx.subaccount("bulk").await.id;
    admin(&fx.store)
        .fund(sub, "USD", funding, "test funding")
        .await
        .expect("fund");
    let owner = new_receiver(fx, sub, "payee@example.com").await;
    let account = ach(&owner, "011000015", "123456789", "checking", T0);
    insert(fx, &account).await.expect("account");
    (sub, owner, account)
}

/// A planned `unassessed` payout of `amount` + `fee` with its holds and `payoutCreated`.
fn planned(
    sub: SubaccountId,
    owner: &Receiver,
    account: &ReceiverAccount,
    amount: i64,
    fee: i64,
    reference: &str,
) -> BulkSlot {
    let payout = PayoutBuilder::new()
        .id(PayoutId::from_uuid(Uuid::new_v4()))
        .subaccount(sub)
        .receiver(owner.id)
        .account(account.id)
        .asset(Asset::Usd)
        .amount(amount)
        .fee(fee)
        .reference(reference)
        .status(PayoutStatus::Unassessed)
        .created_at(at(T0))
        .updated_at(at(T0))
        .build();
    let hold = |kind, delta: i64| LedgerEntry {
        id: LedgerEntryId::from_uuid(Uuid::new_v4()),
        subaccount_id: sub,
        asset: Asset::Usd,
        kind,
        available_delta: -delta,
        pending_delta: delta,
        payout_id: Some(payout.id),
        created_at: at(T0),
    };
    let entries = vec![
        hold(LedgerEntryKind::PayoutHold, amount),
        hold(LedgerEntryKind::FeeHold, fee),
    ];
    let events = vec![OutboxEvent::payout(
        EventKind::PayoutCreated,
        EventId::from_uuid(Uuid::new_v4()),
        &payout,
        at(T0),
    )];
    BulkSlot::Insert(Box::new(NewPayout {
        payout,
        entries,
        events,
    }))
}

/// `slot` planned as `pending`, which its receiver (KYC not completed) does not allow: its
/// parties are no longer as planned when the request is written (stale).
fn planned_pending(slot: BulkSlot) -> BulkSlot {
    match slot {
        BulkSlot::Insert(mut new) => {
            new.payout.status = PayoutStatus::Pending;
            BulkSlot::Insert(new)
        }
        rejected => rejected,
    }
}

fn codes(result: &BulkPayoutResult) -> Vec<Option<ErrorCode>> {
    result
        .items
        .iter()
        .map(|i| match i {
            BulkItemOutcome::Created(_) => None,
            BulkItemOutcome::Failed(e) => e.0.first().map(|e| e.code),
        })
        .collect()
}

async fn count(fx: &Fixture, sql: &str, sub: SubaccountId) -> i64 {
    fx.count_where(sql, sub.as_uuid()).await
}

const PAYOUTS: &str = "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1";
const HOLDS: &str = "SELECT count(*) AS n FROM ledger_entries WHERE subaccount_id = $1 \
     AND kind IN ('payout_hold', 'fee_hold')";
const EVENTS: &str = "SELECT count(*) AS n FROM outbox_events WHERE subaccount_id = $1 \
     AND event_type = 'payoutCreated'";
const KEYS_COMMITTED: &str =
    "SELECT count(*) AS n FROM idempotency_keys WHERE subaccount_id = $1 AND committed";

#[tokio::test]
async fn items_hold_in_order_until_the_balance_is_short_and_the_rest_still_go_through() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    let slots = [
        planned(sub, &owner, &account, 590, 10, "a"),
        planned(sub, &owner, &account, 490, 10, "b"),
        BulkSlot::Rejected(ValidationErrors(vec![domain::validation::FieldError::new(
            ErrorCode::Payo203,
            "amount",
        )])),
        planned(sub, &owner, &account, 390, 10, "c"),
        planned(sub, &owner, &account, 1, 0, "d"),
    ];
    let result = fx
        .store
        .insert_payout_bulk(&slots, false, &WriteKey::none())
        .await
        .unwrap();
    assert_eq!(
        codes(&result),
        [
            None,
            Some(ErrorCode::Payo207),
            Some(ErrorCode::Payo203),
            None,
            Some(ErrorCode::Payo207)
        ]
    );
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (0, 1000));
    assert_eq!(count(&fx, PAYOUTS, sub).await, 2);
    assert_eq!(count(&fx, HOLDS, sub).await, 4);
    assert_eq!(count(&fx, EVENTS, sub).await, 2);
    assert!(
        admin(&fx.store)
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );
}

#[tokio::test]
async fn a_reference_taken_by_an_existing_payout_fails_only_its_item() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let first = fx
        .store
        .insert_payout_bulk(
            &[planned(sub, &owner, &account, 100, 0, "inv-1")],
            false,
            &WriteKey::none(),
        )
        .await
        .unwrap();
    assert_eq!(codes(&first), [None]);
    let slots = [
        planned(sub, &owner, &account, 200, 0, "inv-0"),
        planned(sub, &owner, &account, 300, 0, "inv-1"),
        planned(sub, &owner, &account, 400, 0, "inv-2"),
    ];
    let result = fx
        .store
        .insert_payout_bulk(&slots, false, &WriteKey::none())
        .await
        .unwrap();
    assert_eq!(codes(&result), [None, Some(ErrorCode::Payo206), None]);
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!(
        (balance.available, balance.pending),
        (10_000 - 700, 700),
        "the refused item's hold was rolled back with its savepoint"
    );
    assert_eq!(count(&fx, PAYOUTS, sub).await, 3);
    assert_eq!(count(&fx, EVENTS, sub).await, 3);
}

#[tokio::test]
async fn an_atomic_request_with_a_failure_writes_nothing_and_one_without_commits_its_key() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    let key = IdempotencyKey::parse("payroll-7").unwrap();
    let fp = fingerprint("POST", "/api/payout/bulk", b"{}");
    let ClaimOutcome::Claimed { lease_until } =
        fx.store.claim(sub, &key, fp, Utc::now()).await.unwrap()
    else {
        panic!("not claimed");
    };
    let claim = KeyClaim {
        subaccount: sub,
        key,
        lease_until,
    };
    let write_key = WriteKey::new(
        KeyMode::Claimed(claim.clone()),
        Arc::new(|r: &BulkPayoutResult| {
            Some(StoredResponse {
                status: 200,
                body: format!("created {}", r.created()).into_bytes(),
            })
        }),
    );
    let slots = [
        planned(sub, &owner, &account, 600, 0, "a"),
        planned(sub, &owner, &account, 600, 0, "b"),
    ];
    let refused = fx
        .store
        .insert_payout_bulk(&slots, true, &write_key)
        .await
        .unwrap();
    assert_eq!(codes(&refused), [None, Some(ErrorCode::Payo207)]);
    assert_eq!(refused.created(), 0);
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (1000, 0));
    assert_eq!(count(&fx, PAYOUTS, sub).await, 0);
    assert_eq!(count(&fx, HOLDS, sub).await, 0);
    assert_eq!(count(&fx, EVENTS, sub).await, 0);
    assert_eq!(count(&fx, KEYS_COMMITTED, sub).await, 0);

    // The same key, with items the balance covers: written with the key committed and its
    // response stored in the same transaction.
    let slots = [
        planned(sub, &owner, &account, 600, 0, "a"),
        planned(sub, &owner, &account, 400, 0, "b"),
    ];
    let written = fx
        .store
        .insert_payout_bulk(&slots, true, &write_key)
        .await
        .unwrap();
    assert_eq!(codes(&written), [None, None]);
    assert_eq!(count(&fx, PAYOUTS, sub).await, 2);
    assert_eq!(count(&fx, KEYS_COMMITTED, sub).await, 1);
    let replay = fx
        .store
        .claim(sub, &claim.key, fp, Utc::now())
        .await
        .unwrap();
    assert_eq!(
        replay,
        ClaimOutcome::Replay {
            status: 200,
            body: b"created 2".to_vec()
        }
    );
}

/// An item whose parties no longer allow the payout it was planned as fails alone with
/// `PAYO211`; in an atomic request it fails the request and nothing is written.
#[tokio::test]
async fn an_item_whose_parties_changed_since_planning_fails_alone_with_payo211() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let slots = || {
        [
            planned(sub, &owner, &account, 200, 0, "calm-1"),
            planned_pending(planned(sub, &owner, &account, 300, 0, "stale")),
            planned(sub, &owner, &account, 400, 0, "calm-2"),
        ]
    };
    let atomic = fx
        .store
        .insert_payout_bulk(&slots(), true, &WriteKey::none())
        .await
        .unwrap();
    assert_eq!(codes(&atomic), [None, Some(ErrorCode::Payo211), None]);
    assert_eq!(atomic.failed(), 1);
    assert_eq!(
        count(&fx, PAYOUTS, sub).await,
        0,
        "an atomic request writes nothing"
    );
    let partial = fx
        .store
        .insert_payout_bulk(&slots(), false, &WriteKey::none())
        .await
        .unwrap();
    assert_eq!(codes(&partial), [None, Some(ErrorCode::Payo211), None]);
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (10_000 - 600, 600));
    assert_eq!(count(&fx, PAYOUTS, sub).await, 2);
    assert_eq!(count(&fx, HOLDS, sub).await, 2 * 2);
    assert_eq!(count(&fx, EVENTS, sub).await, 2);
}

/// Begins a transaction on `conn` that inserts a copy of payout `model` with `reference`, and
/// leaves it open: a concurrent insert of the same reference waits for it, then fails.
pub(crate) async fn hold_reference(
    conn: &mut diesel_async::AsyncPgConnection,
    model: PayoutId,
    reference: &str,
) {
    use diesel_async::SimpleAsyncConnection;
    conn.batch_execute(&format!(
        "BEGIN; \
         CREATE TEMP TABLE copied ON COMMIT DROP AS SELECT * FROM payouts WHERE id = '{model}'; \
         UPDATE copied SET id = gen_random_uuid(), reference = '{reference}'; \
         INSERT INTO payouts SELECT * FROM copied;"
    ))
    .await
    .unwrap();
}

/// A bulk request of "calm-1", "race" and "calm-2" (200, 300 and 400 of 10 000 USD, "calm-1"
/// as `calm` makes it), started once another transaction (returned, still open) has inserted
/// "race" without committing: the set attempt does not see it and waits for it at the insert.
/// The parties are returned too.
async fn a_bulk_racing_another_transaction(
    fx: &Fixture,
    calm: fn(BulkSlot) -> BulkSlot,
) -> (
    SubaccountId,
    Receiver,
    diesel_async::AsyncPgConnection,
    tokio::task::JoinHandle<Result<BulkPayoutResult, domain::PortError>>,
) {
    let (sub, owner, account) = world(fx, "10000").await;
    let first = fx
        .store
        .insert_payout_bulk(
            &[planned(sub, &owner, &account, 100, 0, "model")],
            false,
            &WriteKey::none(),
        )
        .await
        .unwrap();
    let BulkItemOutcome::Created(model) = first.items[0] else {
        panic!("{first:?}");
    };
    let mut other = fx.raw().await;
    hold_reference(&mut other, model, "race").await;
    let slots = [
        calm(planned(sub, &owner, &account, 200, 0, "calm-1")),
        planned(sub, &owner, &account, 300, 0, "race"),
        planned(sub, &owner, &account, 400, 0, "calm-2"),
    ];
    let bulk = spawn_bulk(fx, slots, false);
    (sub, owner, other, bulk)
}

/// The unkeyed bulk request of `slots`, sent by the fixture's store on a task of its own (for a
/// test that holds a lock it waits for).
fn spawn_bulk<const N: usize>(
    fx: &Fixture,
    slots: [BulkSlot; N],
    atomic: bool,
) -> tokio::task::JoinHandle<Result<BulkPayoutResult, domain::PortError>> {
    let store = fx.store.clone();
    tokio::spawn(async move {
        store
            .insert_payout_bulk(&slots, atomic, &WriteKey::none())
            .await
    })
}

#[tokio::test]
async fn a_reference_written_meanwhile_by_another_transaction_fails_only_its_item() {
    use diesel_async::SimpleAsyncConnection;
    let fx = Fixture::new().await;
    // The set statements wait for "race" at the insert and fail when it commits.
    let (sub, _, mut other, bulk) =
        a_bulk_racing_another_transaction(&fx, std::convert::identity).await;
    until_a_session_waits_for_a_lock(&fx).await;
    other.batch_execute("COMMIT").await.unwrap();
    let result = bulk.await.unwrap().unwrap();
    assert_eq!(codes(&result), [None, Some(ErrorCode::Payo206), None]);
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (10_000 - 700, 700));
}

/// When the set attempt fails and the items go one by one, a stale item still fails alone with
/// `PAYO211`, beside the reference written meanwhile (`PAYO206`).
#[tokio::test]
async fn item_by_item_a_stale_item_fails_alone_with_payo211() {
    use diesel_async::SimpleAsyncConnection;
    let fx = Fixture::new().await;
    let (sub, _, mut other, bulk) = a_bulk_racing_another_transaction(&fx, planned_pending).await;
    until_a_session_waits_for_a_lock(&fx).await;
    other.batch_execute("COMMIT").await.unwrap();
    let result = bulk.await.unwrap().unwrap();
    assert_eq!(
        codes(&result),
        [Some(ErrorCode::Payo211), Some(ErrorCode::Payo206), None]
    );
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    // The model payout's 100 and "calm-2"'s 400.
    assert_eq!((balance.available, balance.pending), (10_000 - 500, 500));
    assert_eq!(count(&fx, HOLDS, sub).await, 2 * 2);
}

/// A bulk request whose item-by-item attempt PostgreSQL rolls back to break a deadlock is
/// written again rather than answered 503. Another transaction has inserted the reference
/// "race" and not committed. The first item is planned `pending`, which its receiver no longer
/// allows, so the attempt to write the request whole fails at once and the request is decided
/// item by item in a set transaction: that set attempt holds the balance row and waits for the
/// insert;
/// the other transaction then asks for the balance row, and the set attempt, having waited
/// first, is the deadlock's victim. The items then go one by one: the first waits for the
/// balance row, which the other transaction now holds, while that transaction asks for the
/// receiver the items have locked `FOR SHARE`: a second deadlock, again lost by the items.
/// Once the other transaction commits, the items are written again, and only "race" fails.
/// When the machine was too slow for the store's session to be the victim (see
/// `the_test_lost_the_deadlock`), the scenario is set up again in a new subaccount.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_request_that_loses_a_deadlock_item_by_item_is_written_again() {
    use diesel_async::SimpleAsyncConnection;
    let fx = Fixture::new().await;
    for _ in 0..DEADLOCK_SCENARIO_ATTEMPTS {
        let (sub, owner, mut other, bulk) =
            a_bulk_racing_another_transaction(&fx, planned_pending).await;
        // The set attempt holds the balance row and waits for "race".
        until_a_session_waits_for_a_lock(&fx).await;
        let first = other
            .batch_execute(&format!(
                "SELECT 1 FROM balances WHERE subaccount_id = '{}' FOR UPDATE",
                sub.as_uuid()
            ))
            .await;
        if the_test_lost_the_deadlock(first) {
            drop(other);
            bulk.await.unwrap().expect("written once the test gave way");
            continue;
        }
        // The items have locked their receiver and wait for the balance row.
        until_a_session_waits_for_a_lock(&fx).await;
        let second = other
            .batch_execute(&format!(
                "SELECT 1 FROM receivers WHERE subaccount_id = '{}' AND id = '{}' FOR UPDATE; \
                 COMMIT",
                sub.as_uuid(),
                owner.id.as_uuid()
            ))
            .await;
        if the_test_lost_the_deadlock(second) {
            drop(other);
            bulk.await.unwrap().expect("written once the test gave way");
            continue;
        }
        let result = bulk
            .await
            .unwrap()
            .expect("written again after losing the deadlock");
        assert_eq!(
            codes(&result),
            [Some(ErrorCode::Payo211), Some(ErrorCode::Payo206), None]
        );
        let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
        // The model payout's 100 and "calm-2"'s 400.
        assert_eq!((balance.available, balance.pending), (10_000 - 500, 500));
        // The model's holds and those of the one item written.
        assert_eq!(count(&fx, HOLDS, sub).await, 2 * 2);
        return;
    }
    panic!("the bulk request never lost the deadlock in {DEADLOCK_SCENARIO_ATTEMPTS} attempts");
}

#[derive(diesel::QueryableByName)]
struct Query {
    #[diesel(sql_type = diesel::sql_types::Text)]
    query: String,
}

/// A bulk request that nothing refuses is written whole: its payouts, entries and events are
/// written before it asks for its balance row, which it holds only from its write statement's
/// last part (the guarded update) to its commit. While another transaction holds that row, the
/// request waits in its write statement, not in a lock of the balance taken before writing.
#[tokio::test]
async fn a_bulk_request_written_whole_asks_for_its_balance_only_in_its_write_statement() {
    use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
    let fx = Fixture::new().await;
    if adapters_postgres::test_db::citus_url().is_some() {
        // On Citus every set is decided first (see `payout_write::strategy`).
        return;
    }
    let (sub, owner, account) = world(&fx, "10000").await;
    let mut other = holding_the_balance_row(&fx, sub).await;
    let slots = [
        planned(sub, &owner, &account, 200, 5, "whole-1"),
        planned(sub, &owner, &account, 300, 5, "whole-2"),
    ];
    let bulk = spawn_bulk(&fx, slots, true);
    until_a_session_waits_for_a_lock(&fx).await;
    let waiting: Vec<Query> = diesel::sql_query(
        "SELECT query FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .load(&mut fx.raw().await)
    .await
    .unwrap();
    other.batch_execute("COMMIT").await.unwrap();
    let result = bulk.await.unwrap().unwrap();
    assert_eq!(codes(&result), [None, None]);
    assert_eq!(
        waiting.len(),
        1,
        "{:?}",
        waiting.iter().map(|w| &w.query).collect::<Vec<_>>()
    );
    assert!(
        waiting[0]
            .query
            .starts_with("WITH written_payouts AS (INSERT INTO payouts"),
        "the request waited for its balance in {:?}",
        waiting[0].query
    );
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (10_000 - 510, 510));
    assert_eq!(count(&fx, HOLDS, sub).await, 2 * 2);
    assert_eq!(count(&fx, EVENTS, sub).await, 2);
}

/// `slot` in another currency (its payout and its holds).
fn in_currency(slot: BulkSlot, asset: Asset) -> BulkSlot {
    match slot {
        BulkSlot::Insert(mut new) => {
            new.payout.asset = asset;
            for entry in &mut new.entries {
                entry.asset = asset;
            }
            BulkSlot::Insert(new)
        }
        rejected => rejected,
    }
}

/// A request of two currencies locks their balance rows in currency order, as a decided set
/// does, whatever order its update meets them in; so two such requests never each hold the
/// row the other waits for. The USD row is written first, so it lies first in the table; the
/// AUD row comes first in currency order and another transaction holds it: the request waits
/// for it without holding USD.
#[tokio::test]
async fn a_bulk_request_of_two_currencies_locks_their_balances_in_currency_order() {
    use diesel_async::SimpleAsyncConnection;
    if adapters_postgres::test_db::citus_url().is_some() {
        return;
    }
    let fx = Fixture::new().await;
    let (sub, owner, usd_account) = world(&fx, "10000").await;
    admin(&fx.store)
        .fund(sub, "AUD", "10000", "test funding")
        .await
        .expect("fund");
    let aud_account = direct_entry(&owner, "062000", "12345678", T0);
    insert(&fx, &aud_account).await.expect("account");
    let lock = |asset: &str, wait: &str| {
        format!(
            "BEGIN; SELECT 1 FROM balances WHERE subaccount_id = '{}' AND asset = '{asset}' \
             FOR UPDATE{wait}",
            sub.as_uuid()
        )
    };
    let mut other = fx.raw().await;
    other.batch_execute(&lock("AUD", "")).await.unwrap();
    let slots = [
        planned(sub, &owner, &usd_account, 200, 5, "usd"),
        in_currency(
            planned(sub, &owner, &aud_account, 300, 5, "aud"),
            Asset::Aud,
        ),
    ];
    let bulk = spawn_bulk(&fx, slots, false);
    until_a_session_waits_for_a_lock(&fx).await;
    let usd = fx.raw().await.batch_execute(&lock("USD", " NOWAIT")).await;
    other.batch_execute("COMMIT").await.unwrap();
    let result = bulk.await.unwrap().unwrap();
    assert!(
        usd.is_ok(),
        "the request held USD while it waited for AUD: {usd:?}"
    );
    assert_eq!(codes(&result), [None, None]);
    for (asset, held) in [(Asset::Usd, 205), (Asset::Aud, 305)] {
        let balance = fx.store.balance(sub, asset).await.unwrap();
        assert_eq!((balance.available, balance.pending), (10_000 - held, held));
    }
}
