//! `PayoutStore::apply_transition` for a bank's return of a paid payout: the amount comes back
//! to `available` as a `payout_return` entry, the fee stays charged, the return code is stored
//! and announced, the ledger still adds up, and a second return writes nothing.
//! `PayoutStore::apply_transitions`: the rail's results of many payouts as sets, one per
//! subaccount, each payout changed meanwhile left alone without holding back the others.
//! The accounts a set fails are failed together, each announced once. `PayoutStore::find_payouts`:
//! a set of payouts in one read, each only in its subaccount.

use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::RunQueryDsl;
use domain::builders::PayoutBuilder;
use domain::events::{EventKind, OutboxEvent};
use domain::idempotency::WriteKey;
use domain::ids::{EventId, LedgerEntryId, SubaccountId};
use domain::ledger::{LedgerEntry, LedgerEntryKind};
use domain::money::Asset;
use domain::payout::change::plan_change;
use domain::payout::ports::PayoutStore;
use domain::payout::{Payout, PayoutStatus, PayoutTrigger};
use domain::subaccount::ports::SubaccountStore;
use uuid::Uuid;

use crate::accounts::{ach, insert, new_receiver};
use crate::support::{Fixture, RandomIds, admin, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;

/// A stored payout of 1 000 with a fee of 50, from a balance of 10 000 USD, `unassessed` (its
/// receiver's KYC is pending).
async fn new_payout(fx: &Fixture) -> Payout {
    let sub = fx.subaccount("returns").await.id;
    admin(&fx.store)
        .fund(sub, "USD", "10000", "test funding")
        .await
        .expect("fund");
    new_payout_of(fx, sub, "payee@example.com").await
}

/// As [`new_payout`], in the funded subaccount `sub`, to a new receiver `email`.
async fn new_payout_of(fx: &Fixture, sub: SubaccountId, email: &str) -> Payout {
    let owner = new_receiver(fx, sub, email).await;
    let account = ach(&owner, "011000015", "123456789", "checking", T0);
    insert(fx, &account).await.expect("account");
    let payout = PayoutBuilder::new()
        .id(domain::ids::PayoutId::from_uuid(Uuid::new_v4()))
        .subaccount(sub)
        .receiver(owner.id)
        .account(account.id)
        .asset(Asset::Usd)
        .amount(1_000)
        .fee(50)
        .status(PayoutStatus::Unassessed)
        .created_at(at(T0))
        .updated_at(at(T0))
        .build();
    let hold = |kind, amount: i64| LedgerEntry {
        id: LedgerEntryId::from_uuid(Uuid::new_v4()),
        subaccount_id: sub,
        asset: Asset::Usd,
        kind,
        available_delta: -amount,
        pending_delta: amount,
        payout_id: Some(payout.id),
        created_at: at(T0),
    };
    let created = OutboxEvent::payout(
        EventKind::PayoutCreated,
        EventId::from_uuid(Uuid::new_v4()),
        &payout,
        at(T0),
    );
    let batch = fx
        .store
        .insert_payout(
            &payout,
            &[
                hold(LedgerEntryKind::PayoutHold, 1_000),
                hold(LedgerEntryKind::FeeHold, 50),
            ],
            &[created],
            &WriteKey::none(),
        )
        .await
        .expect("insert payout");
    Payout {
        batch_id: batch,
        ..payout
    }
}

async fn step(
    fx: &Fixture,
    payout: &Payout,
    trigger: PayoutTrigger,
    micros: i64,
) -> (bool, Payout) {
    let ids = RandomIds;
    let change = plan_change(payout, trigger, at(micros), &ids, |p| {
        if trigger == PayoutTrigger::Returned {
            p.failure_reason = Some("Account closed".to_owned());
            p.return_code = Some("R02".to_owned());
            p.receiver_is_invalid = true;
        }
    })
    .expect("allowed");
    let applied = fx
        .store
        .apply_transition(&change, &WriteKey::none())
        .await
        .expect("apply");
    (applied, change.payout)
}

#[tokio::test]
async fn a_returned_payout_gets_its_amount_back_once_and_keeps_its_fee_charged() {
    let fx = Fixture::new().await;
    let payout = new_payout(&fx).await;
    let sub = payout.subaccount_id;
    let (_, pending) = step(
        &fx,
        &payout,
        PayoutTrigger::KycCompletedConfirmed,
        T0 + SECOND,
    )
    .await;
    let (_, submitted) = step(&fx, &pending, PayoutTrigger::Submitted, T0 + SECOND).await;
    let (_, paid) = step(
        &fx,
        &submitted,
        PayoutTrigger::RailSucceeded,
        T0 + 2 * SECOND,
    )
    .await;
    let before = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((before.available, before.pending), (10_000 - 1_050, 0));

    let (applied, returned) = step(&fx, &paid, PayoutTrigger::Returned, T0 + 3 * SECOND).await;
    assert!(applied);
    let after = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!(
        (after.available, after.pending),
        (10_000 - 50, 0),
        "the amount is back, the fee stays charged"
    );
    let (stored, entries) = fx.store.find_payout(sub, paid.id).await.unwrap().unwrap();
    assert_eq!(stored.status, PayoutStatus::Failed);
    assert_eq!(stored.return_code.as_deref(), Some("R02"));
    assert_eq!(stored.failure_reason.as_deref(), Some("Account closed"));
    let kinds: Vec<_> = entries
        .iter()
        .map(|e| (e.kind, e.available_delta))
        .collect();
    assert!(
        kinds.contains(&(LedgerEntryKind::PayoutReturn, 1_000)),
        "{kinds:?}"
    );
    assert!(
        admin(&fx.store)
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );

    // The events announce the return with its code.
    let mut conn = fx.raw().await;
    #[derive(diesel::QueryableByName)]
    struct Payload {
        #[diesel(sql_type = diesel::sql_types::Text)]
        kind: String,
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        payload: serde_json::Value,
    }
    let events: Vec<Payload> = diesel::sql_query(
        "SELECT event_type AS kind, payload FROM outbox_events WHERE object_id = $1 \
         AND payload ? 'return_code' \
         ORDER BY event_type",
    )
    .bind::<SqlUuid, _>(paid.id.as_uuid())
    .load(&mut conn)
    .await
    .unwrap();
    let kinds: Vec<_> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["payoutFailure", "payoutUpdated"]);
    assert!(events.iter().all(|e| e.payload["return_code"] == "R02"
        && e.payload["return_reason"] == "Account closed"
        && e.payload["status"] == "failed"));

    // The same return again (a repeated return file): planned from the stale paid payout, it
    // finds the payout failed already and writes nothing.
    let (again, _) = step(&fx, &paid, PayoutTrigger::Returned, T0 + 4 * SECOND).await;
    assert!(!again);
    assert_eq!(fx.store.balance(sub, Asset::Usd).await.unwrap(), after);
    let returns = fx
        .count_where(
            "SELECT count(*) AS n FROM ledger_entries WHERE payout_id = $1 AND kind = 'payout_return'",
            paid.id.as_uuid(),
        )
        .await;
    assert_eq!(returns, 1);
    assert_eq!(returned.status, PayoutStatus::Failed);
}

/// `payout` taken to `in_progress` (KYC and confirmation done, submitted).
async fn submitted(fx: &Fixture, payout: &Payout) -> Payout {
    let (_, pending) = step(
        fx,
        payout,
        PayoutTrigger::KycCompletedConfirmed,
        T0 + SECOND,
    )
    .await;
    step(fx, &pending, PayoutTrigger::Submitted, T0 + SECOND)
        .await
        .1
}

#[tokio::test]
async fn results_apply_as_sets_per_subaccount_and_a_payout_settled_meanwhile_is_left_alone() {
    let fx = Fixture::new().await;
    let first = new_payout(&fx).await;
    let sub = first.subaccount_id;
    let mut in_sub = vec![submitted(&fx, &first).await];
    for email in ["b@example.com", "c@example.com"] {
        let payout = new_payout_of(&fx, sub, email).await;
        in_sub.push(submitted(&fx, &payout).await);
    }
    let elsewhere = submitted(&fx, &new_payout(&fx).await).await;
    // The third is settled on its own first (another runner, a callback).
    let (settled, _) = step(
        &fx,
        &in_sub[2],
        PayoutTrigger::RailSucceeded,
        T0 + 2 * SECOND,
    )
    .await;
    assert!(settled);

    let ids = RandomIds;
    let plan = |payout: &Payout, trigger| {
        plan_change(payout, trigger, at(T0 + 3 * SECOND), &ids, |p| {
            if trigger == PayoutTrigger::RailFailed {
                p.failure_reason = Some("No account".to_owned());
                p.return_code = Some("R03".to_owned());
            }
        })
        .expect("allowed")
    };
    let changes = vec![
        plan(&in_sub[0], PayoutTrigger::RailSucceeded),
        plan(&elsewhere, PayoutTrigger::RailSucceeded),
        plan(&in_sub[1], PayoutTrigger::RailFailed),
        plan(&in_sub[2], PayoutTrigger::RailSucceeded),
    ];
    let applied = fx.store.apply_transitions(&changes).await.unwrap();
    assert_eq!(applied, [true, true, true, false]);

    let status = async |p: &Payout| {
        fx.store
            .find_payout(p.subaccount_id, p.id)
            .await
            .unwrap()
            .unwrap()
            .0
    };
    assert_eq!(status(&in_sub[0]).await.status, PayoutStatus::Successful);
    let refused = status(&in_sub[1]).await;
    assert_eq!(refused.status, PayoutStatus::Failed);
    assert_eq!(refused.return_code.as_deref(), Some("R03"));
    assert_eq!(status(&in_sub[2]).await.status, PayoutStatus::Successful);
    assert_eq!(status(&elsewhere).await.status, PayoutStatus::Successful);
    // Two paid (1 050 each, posted), one refused (its hold back): nothing pending.
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!(
        (balance.available, balance.pending),
        (10_000 - 2 * 1_050, 0)
    );
    assert!(
        admin(&fx.store)
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );
    // The one settled before is posted once, not again.
    let posted = fx
        .count_where(
            "SELECT count(*) AS n FROM ledger_entries WHERE payout_id = $1 AND kind = 'payout_post'",
            in_sub[2].id.as_uuid(),
        )
        .await;
    assert_eq!(posted, 1);
    assert!(fx.store.apply_transitions(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_set_of_payouts_is_read_at_once_each_only_in_its_own_subaccount() {
    let fx = Fixture::new().await;
    let first = new_payout(&fx).await;
    let sub = first.subaccount_id;
    let second = new_payout_of(&fx, sub, "b@example.com").await;
    let elsewhere = new_payout(&fx).await;
    let unknown = domain::ids::PayoutId::from_uuid(Uuid::new_v4());
    let mut found = fx
        .store
        .find_payouts(&[
            (sub, first.id),
            (elsewhere.subaccount_id, elsewhere.id),
            (sub, second.id),
            (sub, unknown),
            // Another subaccount's payout asked under this one: not found there.
            (sub, elsewhere.id),
            (elsewhere.subaccount_id, first.id),
        ])
        .await
        .unwrap();
    found.sort_by_key(|p| p.id);
    let mut expected = Vec::new();
    for p in [&first, &second, &elsewhere] {
        expected.push(
            fx.store
                .find_payout(p.subaccount_id, p.id)
                .await
                .unwrap()
                .unwrap()
                .0,
        );
    }
    expected.sort_by_key(|p| p.id);
    assert_eq!(found, expected, "each once, as find_payout reads it");
    assert!(fx.store.find_payouts(&[]).await.unwrap().is_empty());
    assert!(
        fx.store
            .find_payouts(&[(sub, unknown)])
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_set_fails_its_accounts_in_one_go_announcing_each_account_once() {
    use domain::payout::change::AccountFailure;
    let fx = Fixture::new().await;
    let first = new_payout(&fx).await;
    let sub = first.subaccount_id;
    let mut payouts = vec![submitted(&fx, &first).await];
    for email in ["b@example.com", "c@example.com", "d@example.com"] {
        let payout = new_payout_of(&fx, sub, email).await;
        payouts.push(submitted(&fx, &payout).await);
    }
    // The third payout's account failed already (an earlier return).
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE receiver_accounts SET status = 'failed' WHERE id = $1")
        .bind::<SqlUuid, _>(payouts[2].account_id.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    let ids = RandomIds;
    let now = at(T0 + 3 * SECOND);
    let failing = |payout: &Payout, account: &Payout| {
        let mut change = plan_change(payout, PayoutTrigger::RailFailed, now, &ids, |p| {
            p.receiver_is_invalid = true;
            p.failure_reason = Some("No account".to_owned());
            p.return_code = Some("R03".to_owned());
        })
        .expect("allowed");
        change.account_failure = Some(AccountFailure {
            account_id: account.account_id,
            updated_at: now,
            event: OutboxEvent {
                id: EventId::from_uuid(Uuid::new_v4()),
                subaccount_id: sub,
                object_id: account.account_id.as_uuid(),
                kind: EventKind::AccountUpdate,
                payload: serde_json::json!({"status": "failed"}),
                occurred_at: now,
            },
        });
        change
    };
    // The first two fail the first account (both its payouts' returns say so), the third the
    // account failed already; the fourth is paid.
    let paid =
        plan_change(&payouts[3], PayoutTrigger::RailSucceeded, now, &ids, |_| {}).expect("allowed");
    let changes = vec![
        failing(&payouts[0], &payouts[0]),
        failing(&payouts[1], &payouts[0]),
        failing(&payouts[2], &payouts[2]),
        paid,
    ];
    assert_eq!(
        fx.store.apply_transitions(&changes).await.unwrap(),
        [true; 4]
    );
    let announced = async |account: &Payout| {
        fx.count_where(
            "SELECT count(*) AS n FROM outbox_events WHERE object_id = $1 \
             AND event_type = 'accountUpdate'",
            account.account_id.as_uuid(),
        )
        .await
    };
    assert_eq!(announced(&payouts[0]).await, 1, "announced once");
    assert_eq!(announced(&payouts[2]).await, 0, "failed before: not again");
    let failed = async |account: &Payout| {
        fx.count_where(
            "SELECT count(*) AS n FROM receiver_accounts WHERE id = $1 AND status = 'failed'",
            account.account_id.as_uuid(),
        )
        .await
    };
    assert_eq!(failed(&payouts[0]).await, 1);
    assert_eq!(failed(&payouts[1]).await, 0, "its own account is not named");
    assert_eq!(failed(&payouts[2]).await, 1);
    assert_eq!(failed(&payouts[3]).await, 0);
    for p in &payouts[..3] {
        let (stored, _) = fx
            .store
            .find_payout(p.subaccount_id, p.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.status, PayoutStatus::Failed);
        assert!(stored.receiver_is_invalid);
    }
    assert!(
        admin(&fx.store)
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );
}
