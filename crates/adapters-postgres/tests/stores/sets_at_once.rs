//! New payouts written at once: once the open batch of a subaccount and currency is known, a
//! set of one currency (a lone payout here) is sent with its transaction's `BEGIN` and `COMMIT`
//! in one round trip, and checks itself. Each refusal must still get the answer the slower
//! path gives, and nothing of a refused set may be written. On Citus sets are written statement
//! by statement, never at once; the same answers hold there.

use diesel::sql_types::{SmallInt, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::AccountStatus;
use domain::idempotency::WriteKey;
use domain::ids::{BatchId, SubaccountId};
use domain::money::Asset;
use domain::payout::PayoutStatus;
use domain::payout::ports::PayoutStore;
use domain::receiver::KycStatus;
use domain::subaccount::ports::SubaccountStore;

use crate::payout_groups::{outcome, payable_at_once, planned, world};
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

const PAYOUTS: &str = "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1";

#[tokio::test]
async fn payouts_after_the_first_are_written_at_once_and_refusals_answer_as_before() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    payable_at_once(&fx, &owner, &account).await;
    let store = one_connection_store(&fx);
    let insert = |amount: i64, reference: Option<&'static str>, status| {
        let store = store.clone();
        let new = planned(sub, &owner, &account, (amount, 0), reference, status);
        async move {
            store
                .insert_payout(&new.payout, &new.entries, &new.events, &WriteKey::none())
                .await
        }
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
