//! Requests admitted by their payout's write (`domain::idempotency::Admission`): the nonce
//! recorded and the key inserted, completed with the answer, in the payout's own transaction;
//! or, when that cannot be done whole, nothing written and `NotAdmitted` answered.

use std::sync::Arc;
use std::time::Duration;

use adapters_postgres::PgStore;
use chrono::Utc;
use diesel::sql_types::{BigInt, Bytea, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::ReceiverAccount;
use domain::auth::{NonceDurability, NonceUse};
use domain::idempotency::{
    Admission, ClaimOutcome, IdempotencyKey, IdempotencyStore, KeyMode, RETENTION, StoredResponse,
    WriteKey, fingerprint,
};
use domain::ids::{ApiKeyId, SubaccountId};
use domain::money::Asset;
use domain::payout::ports::{InsertPayoutError, NewPayout, PayoutStore};
use domain::payout::{Payout, PayoutStatus};
use domain::receiver::Receiver;
use domain::subaccount::ports::SubaccountStore;
use uuid::Uuid;

use crate::payout_groups::{
    claimed, grouped, outcome, payable_at_once, planned, submit_all, world,
};
use crate::support::{Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const PATH: &str = "/api/payout/single";

/// A nonce of `sub` signed by `api_key`.
fn nonce(sub: SubaccountId, api_key: Uuid, nonce: i64) -> NonceUse {
    NonceUse {
        api_key: ApiKeyId::from_uuid(api_key),
        subaccount: sub,
        nonce,
        seen_at: at(T0),
        durability: NonceDurability::Immediate,
    }
}

/// The admission of a request of `sub` signed with `nonce`, carrying `key`, whose answer names
/// the payout.
fn admitting(nonce: NonceUse, key: &str) -> WriteKey<Payout> {
    let admission = Admission {
        nonce,
        key: IdempotencyKey::parse(key).unwrap(),
        fingerprint: fingerprint("POST", PATH, key.as_bytes()),
        at: at(Utc::now().timestamp_micros()),
    };
    WriteKey::new(
        KeyMode::AdmittedByWrite(admission),
        Arc::new(|p: &Payout| {
            Some(StoredResponse {
                status: 200,
                body: format!("payout {} batch {:?}", p.id, p.batch_id).into_bytes(),
            })
        }),
    )
}

/// A subaccount funded with 1 000 USD and a payee whose payouts start `pending`; `None` on a
/// store whose writes do not admit requests (Citus).
async fn payable_world(fx: &Fixture) -> Option<(SubaccountId, Receiver, ReceiverAccount)> {
    if !fx.store.admits_in_write().await.unwrap() {
        return None;
    }
    let (sub, owner, account) = world(fx, "1000").await;
    payable_at_once(fx, &owner, &account).await;
    Some((sub, owner, account))
}

/// What claiming `key` of `sub` (for a request named after the key) answers now.
async fn claim(fx: &Fixture, sub: SubaccountId, key: &str) -> ClaimOutcome {
    let fp = fingerprint("POST", PATH, key.as_bytes());
    let key = IdempotencyKey::parse(key).unwrap();
    fx.store.claim(sub, &key, fp, Utc::now()).await.unwrap()
}

async fn insert(
    store: &PgStore,
    new: &NewPayout,
    key: &WriteKey<Payout>,
) -> Result<Option<domain::ids::BatchId>, InsertPayoutError> {
    store
        .insert_payout(&new.payout, &new.entries, &new.events, key)
        .await
}

/// The transaction (`xmin`) that wrote each row, and what the key holds.
#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct Written {
    #[diesel(sql_type = Nullable<Text>)]
    payout_tx: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    nonce_tx: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    key_tx: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    state: Option<String>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    status: Option<i16>,
    #[diesel(sql_type = Nullable<Bytea>)]
    body: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<diesel::sql_types::Bool>)]
    committed: Option<bool>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    locked_until: Option<chrono::DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    expires_at: Option<chrono::DateTime<Utc>>,
}

async fn written(fx: &Fixture, payout: &Payout, nonce: &NonceUse, key: &str) -> Written {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT (SELECT xmin::text FROM payouts WHERE id = $1) AS payout_tx, \
           (SELECT xmin::text FROM request_nonces WHERE api_key_id = $2 AND nonce = $3) \
             AS nonce_tx, \
           k.xmin::text AS key_tx, k.state, k.response_status AS status, \
           k.response_body AS body, k.committed, k.locked_until, k.expires_at \
         FROM (SELECT 1) AS one \
         LEFT JOIN idempotency_keys k ON k.subaccount_id = $4 AND k.idempotency_key = $5",
    )
    .bind::<SqlUuid, _>(payout.id.as_uuid())
    .bind::<SqlUuid, _>(nonce.api_key.as_uuid())
    .bind::<BigInt, _>(nonce.nonce)
    .bind::<SqlUuid, _>(payout.subaccount_id.as_uuid())
    .bind::<Text, _>(key)
    .get_result(&mut conn)
    .await
    .unwrap()
}

/// The USD balance: available, pending.
async fn balance(fx: &Fixture, sub: SubaccountId) -> (i64, i64) {
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    (balance.available, balance.pending)
}

async fn payouts_of(fx: &Fixture, sub: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1",
        sub.as_uuid(),
    )
    .await
}

async fn nonces_of(fx: &Fixture, sub: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM request_nonces WHERE subaccount_id = $1",
        sub.as_uuid(),
    )
    .await
}

#[tokio::test]
async fn a_payout_admits_its_request_in_its_own_transaction() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    payable_at_once(&fx, &owner, &account).await;
    let new = planned(sub, &owner, &account, (300, 0), None, PayoutStatus::Pending);
    let used = nonce(sub, Uuid::new_v4(), 41);
    let key = admitting(used, "adm-1");
    if !fx.store.admits_in_write().await.unwrap() {
        // Citus: requests are admitted before they run, and a write asked to admit one
        // writes nothing.
        assert!(matches!(
            insert(&fx.store, &new, &key).await,
            Err(InsertPayoutError::NotAdmitted)
        ));
        assert_eq!(payouts_of(&fx, sub).await, 0);
        assert_eq!(nonces_of(&fx, sub).await, 0);
        return;
    }
    let batch = insert(&fx.store, &new, &key).await.unwrap();
    assert!(batch.is_some(), "a pending payout joins the open batch");
    let row = written(&fx, &new.payout, &used, "adm-1").await;
    assert!(row.payout_tx.is_some());
    assert_eq!(
        row.nonce_tx, row.payout_tx,
        "the nonce is the payout's transaction's"
    );
    assert_eq!(
        row.key_tx, row.payout_tx,
        "the key is the payout's transaction's"
    );
    assert_eq!(row.state.as_deref(), Some("completed"));
    assert_eq!(row.committed, Some(true));
    assert_eq!(row.locked_until, None);
    let recorded = key.admission().unwrap().at;
    assert_eq!(row.expires_at, Some(recorded + RETENTION));
    let answer = format!("payout {} batch {batch:?}", new.payout.id).into_bytes();
    assert_eq!(
        (row.status, row.body.as_deref()),
        (Some(200), Some(&answer[..]))
    );

    // The nonce is spent, and the key answers a retry with the payout's answer.
    let fp = fingerprint("POST", PATH, b"adm-1");
    let adm = IdempotencyKey::parse("adm-1").unwrap();
    let replayed = fx.store.claim_with_nonce(&used, &adm, fp, Utc::now()).await;
    assert_eq!(replayed.unwrap(), None, "the nonce was recorded");
    let retry = nonce(sub, used.api_key.as_uuid(), 42);
    let again = fx
        .store
        .claim_with_nonce(&retry, &adm, fp, Utc::now())
        .await;
    assert_eq!(
        again.unwrap(),
        Some(ClaimOutcome::Replay {
            status: 200,
            body: answer
        })
    );
    assert_eq!(balance(&fx, sub).await, (700, 300));
}

#[tokio::test]
async fn a_write_that_cannot_admit_its_request_writes_nothing() {
    let fx = Fixture::new().await;
    // On Citus no write admits: covered by the test above.
    let Some((sub, owner, account)) = payable_world(&fx).await else {
        return;
    };
    let api_key = Uuid::new_v4();
    // A nonce recorded before (with another key), and a key claimed before.
    let spent = nonce(sub, api_key, 1);
    let other = IdempotencyKey::parse("other").unwrap();
    let fp = fingerprint("POST", PATH, b"other");
    let first = fx.store.claim_with_nonce(&spent, &other, fp, Utc::now());
    assert!(matches!(
        first.await.unwrap(),
        Some(ClaimOutcome::Claimed { .. })
    ));
    let taken = claim(&fx, sub, "taken").await;
    assert!(matches!(taken, ClaimOutcome::Claimed { .. }));
    let nonces_before = nonces_of(&fx, sub).await;

    let small = planned(sub, &owner, &account, (300, 0), None, PayoutStatus::Pending);
    let large = planned(
        sub,
        &owner,
        &account,
        (5_000, 0),
        None,
        PayoutStatus::Pending,
    );
    let cases = [
        ("a nonce used before", &small, admitting(spent, "fresh-1")),
        (
            "a key there already",
            &small,
            admitting(nonce(sub, api_key, 2), "taken"),
        ),
        (
            "a balance short",
            &large,
            admitting(nonce(sub, api_key, 3), "fresh-3"),
        ),
    ];
    for (case, new, key) in &cases {
        let result = insert(&fx.store, new, key).await;
        assert_eq!(outcome(&result), "not admitted", "{case}");
    }
    assert_eq!(payouts_of(&fx, sub).await, 0);
    assert_eq!(nonces_of(&fx, sub).await, nonces_before);
    assert_eq!(balance(&fx, sub).await, (1_000, 0));
    for fresh in ["fresh-1", "fresh-3"] {
        let claim = claim(&fx, sub, fresh).await;
        assert!(
            matches!(claim, ClaimOutcome::Claimed { .. }),
            "{fresh} was never written: {claim:?}"
        );
    }
}

#[tokio::test]
async fn a_group_admits_its_requests_in_its_one_transaction() {
    let fx = Fixture::new().await;
    let Some((sub, owner, account)) = payable_world(&fx).await else {
        return;
    };
    let store = grouped(&fx, Duration::from_millis(200));
    let api_key = Uuid::new_v4();
    let items: Vec<(NewPayout, WriteKey<Payout>)> = (0..3)
        .map(|i| {
            let new = planned(sub, &owner, &account, (100, 0), None, PayoutStatus::Pending);
            (
                new,
                admitting(nonce(sub, api_key, i), &format!("group-{i}")),
            )
        })
        .collect();
    let results = submit_all(&store, &items).await;
    let outcomes: Vec<&str> = results.iter().map(outcome).collect();
    assert_eq!(outcomes, ["written"; 3]);
    let mut transactions = Vec::new();
    for (i, (new, _)) in items.iter().enumerate() {
        let row = written(
            &fx,
            &new.payout,
            &nonce(sub, api_key, i as i64),
            &format!("group-{i}"),
        )
        .await;
        assert_eq!(row.nonce_tx, row.payout_tx);
        assert_eq!(row.key_tx, row.payout_tx);
        assert_eq!(row.state.as_deref(), Some("completed"));
        transactions.push(row.payout_tx);
    }
    transactions.dedup();
    assert_eq!(transactions.len(), 1, "one transaction for the group");
    assert_eq!(balance(&fx, sub).await, (700, 300));
}

#[tokio::test]
async fn a_group_sends_back_the_requests_it_cannot_admit_and_writes_the_others() {
    let fx = Fixture::new().await;
    let Some((sub, owner, account)) = payable_world(&fx).await else {
        return;
    };
    let store = grouped(&fx, Duration::from_millis(200));
    let api_key = Uuid::new_v4();
    // "taken" is claimed before, so the group cannot be written whole: it is decided request
    // by request, and the requests it was to admit go back to be admitted on their own.
    let taken = claim(&fx, sub, "taken").await;
    assert!(matches!(taken, ClaimOutcome::Claimed { .. }));
    let new = || planned(sub, &owner, &account, (100, 0), None, PayoutStatus::Pending);
    let items = vec![
        (new(), admitting(nonce(sub, api_key, 1), "fresh")),
        (new(), admitting(nonce(sub, api_key, 2), "taken")),
        (new(), claimed(&store, sub, "claimed-before").await),
    ];
    let results = submit_all(&store, &items).await;
    let outcomes: Vec<&str> = results.iter().map(outcome).collect();
    assert_eq!(outcomes, ["not admitted", "not admitted", "written"]);
    assert_eq!(payouts_of(&fx, sub).await, 1);
    assert_eq!(nonces_of(&fx, sub).await, 0);
    assert_eq!(balance(&fx, sub).await, (900, 100));
    let row = written(&fx, &items[0].0.payout, &nonce(sub, api_key, 1), "fresh").await;
    assert_eq!(
        row.key_tx, None,
        "the key of a request sent back is not written"
    );
}

#[tokio::test]
async fn a_write_that_fails_otherwise_answers_the_port_error_without_admitting() {
    let fx = Fixture::new().await;
    let Some((sub, owner, account)) = payable_world(&fx).await else {
        return;
    };
    // A failure that is neither a refusal nor a lost deadlock (a statement error): the commit
    // counts as in doubt, so a request the write was to admit is not sent back to be admitted
    // (its nonce might be recorded), but answered with the port's error.
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "CREATE FUNCTION refuse_777() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.amount = 777 THEN RAISE EXCEPTION 'refused by the test'; END IF; \
         RETURN NEW; END $$",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    diesel::sql_query(
        "CREATE TRIGGER refuse_777 BEFORE INSERT ON payouts \
         FOR EACH ROW EXECUTE FUNCTION refuse_777()",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let api_key = Uuid::new_v4();
    let new = |amount| {
        planned(
            sub,
            &owner,
            &account,
            (amount, 0),
            None,
            PayoutStatus::Pending,
        )
    };
    let alone = insert(
        &fx.store,
        &new(777),
        &admitting(nonce(sub, api_key, 1), "a-1"),
    )
    .await;
    assert_eq!(outcome(&alone), "port error");

    let store = grouped(&fx, Duration::from_millis(200));
    let items = vec![
        (new(100), admitting(nonce(sub, api_key, 2), "g-1")),
        (new(777), admitting(nonce(sub, api_key, 3), "g-2")),
        (new(100), claimed(&store, sub, "g-claimed").await),
    ];
    let results = submit_all(&store, &items).await;
    let outcomes: Vec<&str> = results.iter().map(outcome).collect();
    assert_eq!(outcomes, ["port error", "port error", "written"]);
    assert_eq!(payouts_of(&fx, sub).await, 1);
    assert_eq!(nonces_of(&fx, sub).await, 0);
    assert_eq!(balance(&fx, sub).await, (900, 100));
}
