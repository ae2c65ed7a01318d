//! Verify matching: the oldest match of the subaccount, and the indexes the lookups use.

use std::sync::Arc;

use diesel::sql_types::{Bytea, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::account::ports::AccountStore;
use domain::account::{AccountField, ReceiverAccount};
use domain::events::EventKind;
use domain::idempotency::WriteKey;
use domain::ids::SubaccountId;
use domain::masking::Secret;
use uuid::Uuid;

use super::{
    SECOND, T0, ach, assert_same, confirmation, direct_entry, event, insert, new_receiver, queued,
};
use crate::support::{Count, Fixture, PlanLine};

fn fields(pairs: &[(&str, &str)]) -> Vec<(AccountField, String)> {
    pairs
        .iter()
        .map(|&(k, v)| (AccountField::from_name(k).unwrap(), v.to_owned()))
        .collect()
}

#[tokio::test]
async fn find_first_match_returns_the_oldest_match_of_the_subaccount() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let ada = new_receiver(&fx, sub, "ada@example.com").await;
    let grace = new_receiver(&fx, sub, "grace@example.com").await;
    let foreign = new_receiver(&fx, other, "ada@example.com").await;

    const ROUTING: &str = "021000021";
    // The newer one is inserted first: age, not insertion order, decides.
    let newer = ach(&grace, ROUTING, "987654321", "savings", T0 + 2 * SECOND);
    let older = ach(&ada, ROUTING, "123456789", "checking", T0 + SECOND);
    // Another subaccount's account with the same values, older than both.
    let theirs = ach(&foreign, ROUTING, "987654321", "savings", T0);
    for a in [&newer, &older, &theirs] {
        insert(&fx, a).await.unwrap();
    }
    let find = async |subaccount: SubaccountId, pairs: &[(&str, &str)]| {
        fx.store
            .find_first_match(subaccount, &fields(pairs))
            .await
            .unwrap()
    };

    let found = find(sub, &[("routing_number", ROUTING)]).await.unwrap();
    assert_same(&found, &older);

    let exact = [
        ("routing_number", ROUTING),
        ("account_number", "987654321"),
        ("account_type", "savings"),
    ];
    let found = find(sub, &exact).await.unwrap();
    assert_same(&found, &newer);
    assert_eq!(
        find(sub, &[("account_number", "987654321")])
            .await
            .map(|a| a.id),
        Some(newer.id)
    );
    // Every field must match.
    assert!(
        find(
            sub,
            &[
                ("account_number", "987654321"),
                ("account_type", "checking")
            ]
        )
        .await
        .is_none()
    );
    // A value nobody has.
    assert!(find(sub, &[("account_number", "55555555")]).await.is_none());
    assert!(find(sub, &[("bsb", "012002")]).await.is_none());
    // The other subaccount finds only its own account, and never ours.
    assert_eq!(
        find(other, &[("routing_number", ROUTING)])
            .await
            .map(|a| a.id),
        Some(theirs.id)
    );
    assert!(
        find(other, &[("account_number", "123456789")])
            .await
            .is_none()
    );
    // An empty field list.
    assert!(find(sub, &[]).await.is_none());
    // A subaccount without accounts.
    let empty = fx.subaccount("Empty").await.id;
    assert!(find(empty, &[("routing_number", ROUTING)]).await.is_none());
}

/// The plan of `sql`, whose parameters are `ids` (uuids), then `fp` (bytea).
async fn explain(conn: &mut AsyncPgConnection, sql: &str, ids: &[Uuid], fp: Vec<u8>) -> String {
    let mut query = diesel::sql_query(format!("EXPLAIN {sql}")).into_boxed();
    for id in ids {
        query = query.bind::<SqlUuid, _>(*id);
    }
    let plan: Vec<PlanLine> = query.bind::<Bytea, _>(fp).load(conn).await.unwrap();
    plan.into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(diesel::QueryableByName)]
struct Fingerprints {
    #[diesel(sql_type = Bytea)]
    fp_account_number: Vec<u8>,
    #[diesel(sql_type = Bytea)]
    details_fingerprint: Vec<u8>,
}

#[tokio::test]
async fn verify_and_duplicate_lookups_use_their_indexes() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let mut owners = Vec::new();
    for i in 0..6 {
        owners.push(new_receiver(&fx, sub, &format!("r{i}@example.com")).await);
    }
    owners.push(new_receiver(&fx, other, "r@example.com").await);

    // 3000 accounts of `sub` (500 per receiver) and 300 of `other`, through the store, on a few
    // connections at once.
    let mut batches: Vec<Vec<ReceiverAccount>> = vec![Vec::new(); 4];
    for i in 0..3300_i64 {
        let owner = if i < 3000 {
            &owners[usize::try_from(i % 6).unwrap()]
        } else {
            &owners[6]
        };
        let bsb = format!("{:03}-{:03}", i % 97, i % 13);
        let number = (10_000_000 + i).to_string();
        let a = direct_entry(owner, &bsb, &number, T0 + i * SECOND);
        batches[usize::try_from(i % 4).unwrap()].push(a);
    }
    let probe = batches[1][400].clone();
    let tasks: Vec<_> = batches
        .into_iter()
        .map(|batch| {
            let store = fx.store.clone();
            tokio::spawn(async move {
                for a in batch {
                    let events = [event(EventKind::AccountCreated, &a, a.created_at)];
                    store
                        .insert_account(
                            &a,
                            &confirmation(&a),
                            &events,
                            &queued(&a),
                            &WriteKey::none(),
                        )
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut conn = fx.raw().await;
    let n: Count = diesel::sql_query("SELECT count(*) AS n FROM receiver_accounts")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(n.n, 3300);
    diesel::sql_query("ANALYZE receiver_accounts")
        .execute(&mut conn)
        .await
        .unwrap();

    // Real fingerprints, as the store wrote them for one account.
    let fps: Fingerprints = diesel::sql_query(
        "SELECT fp_account_number, details_fingerprint FROM receiver_accounts WHERE id = $1",
    )
    .bind::<SqlUuid, _>(probe.id.as_uuid())
    .get_result(&mut conn)
    .await
    .unwrap();

    // A single-field verify. No planner settings are changed: the index must win on its own.
    let verify = "SELECT id FROM receiver_accounts \
                  WHERE subaccount_id = $1 AND fp_account_number = $2 \
                  ORDER BY created_at, id LIMIT 1";
    let plan = explain(
        &mut conn,
        verify,
        &[sub.as_uuid()],
        fps.fp_account_number.clone(),
    )
    .await;
    assert!(
        plan.contains("receiver_accounts_fp_account_number"),
        "plan:\n{plan}"
    );
    assert!(!plan.contains("Seq Scan"), "plan:\n{plan}");
    // The same lookup through the port finds that account.
    let found = fx
        .store
        .find_first_match(
            sub,
            &fields(&[(
                "account_number",
                probe.data.expose(AccountField::AccountNumber).unwrap(),
            )]),
        )
        .await
        .unwrap()
        .expect("the probe account");
    assert_eq!(found.id, probe.id);

    // The statements verify's lookup really runs (`explain_first_match`: the store's own text
    // and binds), for a value about 31 accounts share (a BSB) alone and with the account
    // number: each reads one fingerprint index in order, never sorting or scanning the
    // subaccount's accounts. With `= ANY(fingerprints)` the plan sorted every account sharing
    // the value before `LIMIT 1` (at 1,000,000 accounts, 4,327 of them: verify's p50 4.5 times
    // that at 10,000). CI's sizes cannot show the time; the plan's shape they can.
    let bsb = probe.data.expose(AccountField::Bsb).unwrap().to_owned();
    let number = probe
        .data
        .expose(AccountField::AccountNumber)
        .unwrap()
        .to_owned();
    let asked = [
        fields(&[("bsb", &bsb)]),
        fields(&[("bsb", &bsb), ("account_number", &number)]),
    ];
    let one_key = fx.store.clone();
    // During a rotation: the vault also holds a previous key, one lookup per key.
    let two_keys = {
        let pool =
            adapters_postgres::create_pool(&adapters_postgres::DbConfig::new(fx.db.url())).unwrap();
        let vault = adapters_postgres::Vault::with_previous(
            &Secret::new(crate::support::MASTER_KEY),
            Some(&Secret::new([9; 32])),
        )
        .unwrap();
        adapters_postgres::PgStore::new(pool, Arc::new(vault))
    };
    for (store, keys) in [(&one_key, 1), (&two_keys, 2)] {
        for fields in &asked {
            let plans = store
                .explain_first_match(sub, fields, adapters_postgres::Explain::Plan)
                .await
                .unwrap();
            assert_eq!(plans.len(), keys, "one statement per key: {plans:?}");
            for plan in plans {
                assert!(
                    plan.contains("Index Scan using receiver_accounts_fp_"),
                    "{keys} key(s), {fields:?}:\n{plan}"
                );
                assert!(!plan.contains("Sort"), "{keys} key(s), {fields:?}:\n{plan}");
                assert!(
                    !plan.contains("Seq Scan") && !plan.contains("Bitmap"),
                    "{keys} key(s), {fields:?}:\n{plan}"
                );
            }
        }
        // And the lookup finds the probe under either configuration.
        let found = store
            .find_first_match(sub, &asked[1])
            .await
            .unwrap()
            .expect("the probe account");
        assert_eq!(found.id, probe.id);
    }

    // The duplicate check on insert (with the subaccount: on Citus the unique index leads
    // with it).
    let duplicate = "SELECT id FROM receiver_accounts \
                     WHERE subaccount_id = $1 AND receiver_id = $2 AND details_fingerprint = $3";
    let plan = explain(
        &mut conn,
        duplicate,
        &[sub.as_uuid(), probe.receiver_id.as_uuid()],
        fps.details_fingerprint,
    )
    .await;
    assert!(
        plan.contains("receiver_accounts_details_unique"),
        "plan:\n{plan}"
    );
    assert!(!plan.contains("Seq Scan"), "plan:\n{plan}");
}
