//! New payouts written at once: once the open batch of each currency a set's payouts join is known,
//! the set (a lone payout, or a group of several currencies) is sent with its transaction's `BEGIN`
//! and `COMMIT` in one round trip, and checks itself. Each refusal must still get the answer the
//! slower path gives, and nothing of a refused set may be written. On Citus sets are written
//! statement by statement, never at once; the same answers hold there.

use std::time::Duration;

use diesel::sql_types::{SmallInt, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::AccountStatus;
use domain::idempotency::WriteKey;
use domain::ids::{BatchId, SubaccountId};
use domain::money::Asset;
use domain::payout::PayoutStatus;
use domain::payout::ports::{InsertPayoutError, NewPayout, PayoutStore};
use domain::receiver::KycStatus;
use domain::subaccount::ports::SubaccountStore;

use crate::accounts::{direct_entry, insert};
use crate::payout_groups::{
    grouping, holding_the_balance_row, outcome, payable_at_once, planned, planned_in, submit_all,
    until_a_session_waits_for_a_lock, world,
};
use crate::support::{Fixture, PlanCounts, admin, one_connection_store, plans_of};

/// The statement that writes a set at once, and the one that opens the slower path.
const AT_ONCE: &str = "WITH parties AS MATERIALIZED (SELECT ra.id";
const OPENING: &str = "WITH parties AS (SELECT ra.id";

/// How many times the session of `store` (a pool of one connection) ran statements starting
/// with `prefix`.
async fn runs(store: &adapters_postgres::PgStore, prefix: &str) -> i64 {
    plans_of(store, prefix)
        .await
        .iter()
        .map(|p: &PlanCounts| p.generic_plans + p.custom_plans)
        .sum()
}

/// Checks that the session of `store` opened sets the slower way and wrote sets at once as
/// often as `expected` says; on Citus, where sets are written statement by statement, that it
/// never wrote one at once.
async fn ran(store: &adapters_postgres::PgStore, expected: (i64, i64)) {
    if adapters_postgres::test_db::citus_url().is_some() {
        assert_eq!(runs(store, AT_ONCE).await, 0);
    } else {
        assert_eq!(
            (runs(store, OPENING).await, runs(store, AT_ONCE).await),
            expected
        );
    }
}

/// [`ran`], for the sets written at once only.
async fn ran_at_once(store: &adapters_postgres::PgStore, expected: i64) {
    if adapters_postgres::test_db::citus_url().is_some() {
        assert_eq!(runs(store, AT_ONCE).await, 0);
    } else {
        assert_eq!(runs(store, AT_ONCE).await, expected);
    }
}

async fn count(fx: &Fixture, sql: &str, sub: SubaccountId) -> i64 {
    fx.count_where(sql, sub.as_uuid()).await
}

/// Writes `new` as a lone single payout without an idempotency key (a future of its own, so a
/// test can also spawn it).
fn alone(
    store: &adapters_postgres::PgStore,
    new: NewPayout,
) -> impl Future<Output = Result<Option<BatchId>, InsertPayoutError>> + use<> {
    let store = store.clone();
    async move {
        store
            .insert_payout(&new.payout, &new.entries, &new.events, &WriteKey::none())
            .await
    }
}

const PAYOUTS: &str = "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1";

#[tokio::test]
async fn payouts_after_the_first_are_written_at_once_and_refusals_answer_as_before() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    payable_at_once(&fx, &owner, &account).await;
    let store = one_connection_store(&fx);
    let insert = |amount: i64, reference: Option<&'static str>, status| {
        alone(
            &store,
            planned(sub, &owner, &account, (amount, 0), reference, status),
        )
    };

    // The first payout finds its batch the slower way; the second is written at once into it.
    let first = insert(100, None, PayoutStatus::Pending).await.unwrap();
    ran(&store, (1, 0)).await;
    let second = insert(100, None, PayoutStatus::Pending).await.unwrap();
    assert!(first.is_some() && second == first, "{first:?} {second:?}");
    ran(&store, (1, 1)).await;

    // A payout the balance no longer covers: refused at once, then answered as before (the
    // slower path runs for each refusal).
    let short = insert(900, None, PayoutStatus::Pending).await;
    assert_eq!(outcome(&short), "insufficient balance");
    // A reference already taken, likewise.
    insert(100, Some("inv-1"), PayoutStatus::Pending)
        .await
        .unwrap();
    let taken = insert(100, Some("inv-1"), PayoutStatus::Pending).await;
    assert_eq!(outcome(&taken), "duplicate reference");
    ran(&store, (3, 4)).await;
    assert_eq!(count(&fx, PAYOUTS, sub).await, 3);

    // The batch closes: the next payout is refused at once (its batch is not the open one)
    // and joins a new batch the slower way; the one after is written at once into that.
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE batches SET status = 'queue' WHERE subaccount_id = $1")
        .bind::<SqlUuid, _>(sub.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    let opened = insert(100, None, PayoutStatus::Pending).await.unwrap();
    assert!(opened.is_some() && opened != first, "{opened:?} {first:?}");
    ran(&store, (4, 5)).await;
    let joined = insert(100, None, PayoutStatus::Pending).await.unwrap();
    assert_eq!(joined, opened);
    ran_at_once(&store, 6).await;
    let batch_of = |batch: Option<BatchId>| {
        format!(
            "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1 AND batch_id = '{}'",
            batch.map(|b| b.to_string()).unwrap_or_default()
        )
    };
    assert_eq!(count(&fx, &batch_of(first), sub).await, 3);
    assert_eq!(count(&fx, &batch_of(opened), sub).await, 2);

    // The receiver's KYC is no longer completed: a payout planned `pending` is stale.
    diesel::sql_query("UPDATE receivers SET kyc_status = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(owner.id.as_uuid())
        .bind::<SmallInt, _>(i16::from(KycStatus::Pending.code()))
        .execute(&mut conn)
        .await
        .unwrap();
    let stale = insert(100, None, PayoutStatus::Pending).await;
    assert_eq!(outcome(&stale), "stale");
    // Planned as it now starts (`unassessed`, no batch), it is written at once.
    insert(100, None, PayoutStatus::Unassessed).await.unwrap();
    // The account fails: nothing may be paid to it, whatever the status planned.
    diesel::sql_query("UPDATE receiver_accounts SET status = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(account.id.as_uuid())
        .bind::<Text, _>(AccountStatus::Failed.as_str())
        .execute(&mut conn)
        .await
        .unwrap();
    let unpayable = insert(100, None, PayoutStatus::Unassessed).await;
    assert_eq!(outcome(&unpayable), "stale");
    // (The slower path of a payout that joins no batch locks its parties alone.)
    ran(&store, (5, 9)).await;

    // Nothing of a refused payout was written; the ledger agrees with the balance.
    assert_eq!(count(&fx, PAYOUTS, sub).await, 6);
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (400, 600));
    let report = admin(&fx.store).check_ledger().await.unwrap();
    assert!(report.discrepancies.is_empty(), "{report:?}");
}

/// A group of two currencies is one transaction, written the slower way while the open batch of
/// either is unknown. Once the open batch of each is known it is
/// written at once, each payout into its own currency's batch and each balance held by its
/// own currency's sum; a balance short in one currency refuses the request it no longer
/// covers, and only that one; a batch replaced in one currency is caught and the new one
/// joined.
#[tokio::test]
async fn a_group_of_two_currencies_is_written_at_once_once_both_batches_are_known() {
    let fx = Fixture::new().await;
    let (sub, owner, usd_account) = world(&fx, "1000").await;
    admin(&fx.store)
        .fund(sub, "AUD", "1000", "test funding")
        .await
        .expect("fund");
    let aud_account = direct_entry(&owner, "062000", "12345678", 1_700_000_000_123_456);
    insert(&fx, &aud_account).await.expect("account");
    payable_at_once(&fx, &owner, &usd_account).await;
    payable_at_once(&fx, &owner, &aud_account).await;
    let store = grouping(one_connection_store(&fx), Duration::from_millis(200));
    let pending = PayoutStatus::Pending;
    let group = |usd: i64, aud: i64, usd_again: i64| {
        [
            planned_in(
                Asset::Usd,
                sub,
                &owner,
                &usd_account,
                (usd, 0),
                None,
                pending,
            ),
            planned_in(
                Asset::Aud,
                sub,
                &owner,
                &aud_account,
                (aud, 0),
                None,
                pending,
            ),
            planned_in(
                Asset::Usd,
                sub,
                &owner,
                &usd_account,
                (usd_again, 0),
                None,
                pending,
            ),
        ]
        .map(|new| (new, WriteKey::none()))
    };
    let joined = |results: &[Result<Option<BatchId>, _>]| {
        results
            .iter()
            .map(|r| r.as_ref().ok().copied().flatten())
            .collect::<Vec<_>>()
    };

    // A lone USD payout opens the USD batch, which is then known; the AUD batch is not, so the
    // first group goes the slower way, in one transaction.
    let lone = alone(&store, group(100, 100, 100)[0].0.clone())
        .await
        .unwrap();
    let first = submit_all(&store, &group(100, 100, 100)).await;
    let batches = joined(&first);
    assert!(
        batches.iter().all(Option::is_some) && batches[0] == batches[2] && batches[0] != batches[1],
        "{first:?}"
    );
    assert_eq!(lone, batches[0]);
    ran_at_once(&store, 0).await;
    // Both are known now: the next group is written at once, into the same batches.
    let second = submit_all(&store, &group(100, 200, 100)).await;
    assert_eq!(joined(&second), batches, "{second:?}");
    ran_at_once(&store, 1).await;
    // 600 of the AUD balance's 700 left: refused at once, then decided request by request.
    let third = submit_all(&store, &group(100, 800, 100)).await;
    assert_eq!(
        third.iter().map(outcome).collect::<Vec<_>>(),
        ["written", "insufficient balance", "written"]
    );
    ran_at_once(&store, 2).await;

    // Another instance replaced the AUD batch: refused at once (the batch is not the one
    // expected), written the slower way into the new batch, which the group after joins at once.
    let replacement = uuid::Uuid::new_v4();
    diesel::sql_query(
        "UPDATE batches SET status = 'queue' WHERE subaccount_id = $1 AND asset = 'AUD'",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .execute(&mut fx.raw().await)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, created_at, \
           updated_at) \
         VALUES ($2, $1, 'AUD', 'open', now() + interval '1 day', now(), now())",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .bind::<SqlUuid, _>(replacement)
    .execute(&mut fx.raw().await)
    .await
    .unwrap();
    let replaced = [
        batches[0],
        Some(BatchId::from_uuid(replacement)),
        batches[2],
    ];
    let fourth = submit_all(&store, &group(50, 100, 50)).await;
    assert_eq!(joined(&fourth), replaced, "{fourth:?}");
    ran_at_once(&store, 3).await;
    let fifth = submit_all(&store, &group(50, 100, 50)).await;
    assert_eq!(joined(&fifth), replaced, "{fifth:?}");
    ran_at_once(&store, 4).await;

    assert_eq!(
        count(
            &fx,
            "SELECT count(DISTINCT xmin::text) AS n FROM payouts WHERE subaccount_id = $1",
            sub
        )
        .await,
        6,
        "a transaction per group, and one for the lone payout"
    );
    for (asset, held) in [(Asset::Usd, 900), (Asset::Aud, 500)] {
        let balance = fx.store.balance(sub, asset).await.unwrap();
        assert_eq!((balance.available, balance.pending), (1000 - held, held));
    }
    let report = admin(&fx.store).check_ledger().await.unwrap();
    assert!(report.discrepancies.is_empty(), "{report:?}");
}

/// A payout written at once whose connection is lost while its statement runs (its backend
/// terminated as it waits for the balance row) answers with a port error (503), writes
/// nothing, and leaves the pool able to serve the next payout, which is written at once on a
/// new connection into the batch still remembered.
#[tokio::test]
async fn a_payout_written_at_once_whose_connection_is_lost_answers_unavailable_and_writes_nothing()
{
    use diesel_async::SimpleAsyncConnection;
    if adapters_postgres::test_db::citus_url().is_some() {
        // Nothing is written at once on Citus.
        return;
    }
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    payable_at_once(&fx, &owner, &account).await;
    let store = one_connection_store(&fx);
    let pending = PayoutStatus::Pending;
    let insert = |amount: i64| {
        alone(
            &store,
            planned(sub, &owner, &account, (amount, 0), None, pending),
        )
    };
    let first = insert(100).await.unwrap();
    ran_at_once(&store, 0).await;

    let mut holder = holding_the_balance_row(&fx, sub).await;
    let waiting = tokio::spawn(insert(200));
    until_a_session_waits_for_a_lock(&fx).await;
    let terminated: Vec<Terminated> = diesel::sql_query(
        "SELECT query, pg_terminate_backend(pid) AS done FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .load(&mut fx.raw().await)
    .await
    .unwrap();
    assert!(
        matches!(&terminated[..], [t] if t.query.starts_with(AT_ONCE) && t.done),
        "the statement waiting for the balance row is the one written at once"
    );
    let lost = waiting.await.unwrap();
    assert_eq!(outcome(&lost), "port error", "{lost:?}");
    holder.batch_execute("COMMIT").await.unwrap();
    assert_eq!(count(&fx, PAYOUTS, sub).await, 1);

    let next = insert(300).await.unwrap();
    assert_eq!(next, first);
    ran_at_once(&store, 1).await;
    assert_eq!(count(&fx, PAYOUTS, sub).await, 2);
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (600, 400));
    let report = admin(&fx.store).check_ledger().await.unwrap();
    assert!(report.discrepancies.is_empty(), "{report:?}");
}

/// A session `pg_terminate_backend` was sent to, with the statement it was running.
#[derive(diesel::QueryableByName)]
struct Terminated {
    #[diesel(sql_type = Text)]
    query: String,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    done: bool,
}
