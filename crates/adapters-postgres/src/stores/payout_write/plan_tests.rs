//! Tests of the write path's statements against a real PostgreSQL: their generic plans for a
//! large subaccount among many small ones, the refusal `sql/write_set_at_once.sql` raises, and
//! its check of a payout's parties against the rule of `decide::party_status`.
#![allow(clippy::unwrap_used)]

use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

use super::at_once::OTHER_BATCH;
use super::statements;
use crate::test_db::TestDb;
const SUB: &str = "00000000-0000-0000-0000-000000000001";

#[derive(diesel::QueryableByName)]
struct PlanLine {
    #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
    line: String,
}

/// A database where one subaccount has 2 000 receivers, each with an account, 2 000
/// payouts with references and 5 000 idempotency keys, and 2 000 other subaccounts have one
/// of each; every subaccount has an open batch and two settled ones in each of two
/// currencies; all analysed. A generic plan estimates the rows of "this subaccount" as the
/// average subaccount's (about 2 here), so the crowded one looks small on paper: the shape
/// of a large merchant among many small ones, in which a plan that reads every row of the
/// subaccount looks cheap.
async fn crowded() -> (TestDb, AsyncPgConnection) {
    let db = TestDb::postgres().await.unwrap();
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    conn.batch_execute(&format!(
        "INSERT INTO subaccounts (id, merchant_id, name, created_at, updated_at) \
           VALUES ('{SUB}', '{SUB}', 'crowd', now(), now()); \
         INSERT INTO receivers (id, subaccount_id, first_name, last_name, email, \
           email_normalized, dob, dialcode, phone, address, city, state, country, postcode, \
           applicant_id, status, kyc_status, created_at, updated_at) \
         SELECT gen_random_uuid(), '{SUB}', 'A', 'B', 'r' || g || '@example.com', \
           'r' || g || '@example.com', '1990-01-01', '1', '5550100', 'x', 'x', 'x', 'US', \
           '1', '', 1, 0, now(), now() FROM generate_series(1, 2000) g; \
         INSERT INTO receiver_accounts (id, subaccount_id, receiver_id, method, asset, \
           status, confirm_status, data_ciphertext, details_fingerprint, created_at, \
           updated_at) \
         SELECT gen_random_uuid(), subaccount_id, id, 'ach', 'USD', 'pending', \
           'unconfirmed', '\\x00', decode(md5(id::text), 'hex'), now(), now() \
         FROM receivers; \
         INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
           reference, status, duplicate, created_at, updated_at) \
         SELECT gen_random_uuid(), subaccount_id, receiver_id, id, 'USD', 100, 0, \
           'ref-' || md5(id::text), 0, false, now(), now() FROM receiver_accounts; \
         INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, \
           created_at, expires_at, committed) \
         SELECT '{SUB}', 'key-' || g, '\\x00', 'completed', now(), \
           now() + interval '1 day', true FROM generate_series(1, 5000) g; \
         CREATE TEMP TABLE others AS SELECT gen_random_uuid() AS sub, gen_random_uuid() AS \
           receiver, gen_random_uuid() AS account, g FROM generate_series(1, 2000) g; \
         INSERT INTO subaccounts (id, merchant_id, name, created_at, updated_at) \
           SELECT sub, sub, 'small', now(), now() FROM others; \
         INSERT INTO receivers (id, subaccount_id, first_name, last_name, email, \
           email_normalized, dob, dialcode, phone, address, city, state, country, postcode, \
           applicant_id, status, kyc_status, created_at, updated_at) \
         SELECT receiver, sub, 'A', 'B', 'o' || g || '@example.com', \
           'o' || g || '@example.com', '1990-01-01', '1', '5550100', 'x', 'x', 'x', 'US', \
           '1', '', 1, 0, now(), now() FROM others; \
         INSERT INTO receiver_accounts (id, subaccount_id, receiver_id, method, asset, \
           status, confirm_status, data_ciphertext, details_fingerprint, created_at, \
           updated_at) \
         SELECT account, sub, receiver, 'ach', 'USD', 'pending', 'unconfirmed', '\\x00', \
           decode(md5(account::text), 'hex'), now(), now() FROM others; \
         INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
           reference, status, duplicate, created_at, updated_at) \
         SELECT gen_random_uuid(), sub, receiver, account, 'USD', 100, 0, 'ref-o' || g, 0, \
           false, now(), now() FROM others; \
         INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, \
           created_at, expires_at, committed) \
         SELECT sub, 'key-' || g, '\\x00', 'completed', now(), now() + interval '1 day', true \
         FROM others; \
         INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, created_at, \
           updated_at) \
         SELECT gen_random_uuid(), s.id, a.asset, b.status, now(), now(), now() \
         FROM subaccounts s, (VALUES ('USD'), ('EUR')) AS a(asset), \
           (VALUES ('open'), ('settled'), ('settled')) AS b(status); \
         ANALYZE;"
    ))
    .await
    .unwrap();
    (db, conn)
}

/// The plan of `statement` (prepared as `name` with `types`) for `arguments`, as a set
/// transaction plans it: `mode` is its setting of `plan_cache_mode`.
async fn plan_in_mode(
    conn: &mut AsyncPgConnection,
    mode: &str,
    (name, types, statement): (&str, &str, &str),
    arguments: &str,
) -> String {
    conn.batch_execute(&format!(
        "SET plan_cache_mode = {mode}; PREPARE {name}({types}) AS {statement}"
    ))
    .await
    .unwrap();
    let plan: Vec<PlanLine> = diesel::sql_query(format!("EXPLAIN EXECUTE {name}({arguments})"))
        .load(conn)
        .await
        .unwrap();
    plan.into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether some index condition of `plan` has every one of `conditions`.
fn index_condition_with(plan: &str, conditions: &[&str]) -> bool {
    plan.lines()
        .any(|line| line.contains("Index Cond") && conditions.iter().all(|c| line.contains(c)))
}

/// The plans a set transaction runs on plain PostgreSQL, all generic, read the large
/// subaccount's rows of the set's own keys through an index, never every row of the
/// subaccount.
#[tokio::test]
async fn a_set_transactions_reads_use_the_sets_keys_for_a_large_subaccount() {
    let (_db, mut conn) = crowded().await;
    let generic = super::set_transaction::BEGIN_WITH_GENERIC_PLANS
        .rsplit("plan_cache_mode = ")
        .next()
        .unwrap();

    let parties = plan_in_mode(
        &mut conn,
        generic,
        ("parties", "uuid, uuid[]", statements::PARTIES_BY_KEY),
        &format!("'{SUB}', ARRAY['{SUB}', '{SUB}']::uuid[]"),
    )
    .await;
    assert!(
        index_condition_with(&parties, &["id = ANY"])
            && !index_condition_with(&parties, &["subaccount_id"]),
        "{parties}"
    );

    // The same parties read with the open batch, as a set written whole reads them: the
    // parties by their keys, the batch through the partial index of open batches.
    let opening = plan_in_mode(
        &mut conn,
        generic,
        (
            "opening",
            "uuid, uuid[], text",
            statements::PARTIES_AND_OPEN_BATCH,
        ),
        &format!("'{SUB}', ARRAY['{SUB}', '{SUB}']::uuid[], 'USD'"),
    )
    .await;
    assert!(
        index_condition_with(&opening, &["id = ANY"]) && opening.contains("batches_open"),
        "{opening}"
    );

    let references = plan_in_mode(
        &mut conn,
        generic,
        ("taken", "uuid, text[]", statements::TAKEN_REFERENCES_BY_KEY),
        &format!("'{SUB}', ARRAY['ref-a', 'ref-b']"),
    )
    .await;
    assert!(
        references.contains("payouts_reference_unique")
            && index_condition_with(&references, &["reference = ANY"])
            && !index_condition_with(&references, &["subaccount_id"]),
        "{references}"
    );

    // Both columns of the primary key bound the scan, not the subaccount alone (the plan
    // PostgreSQL settled on when the key was the primary key's second column).
    let marking = plan_in_mode(
        &mut conn,
        generic,
        (
            "mark",
            "uuid, text[], timestamptz[], int2[], bytea[]",
            statements::MARK_KEYS_COMMITTED,
        ),
        &format!(
            "'{SUB}', ARRAY['key-1', 'key-2'], ARRAY[now(), now()], \
             ARRAY[NULL, NULL]::int2[], ARRAY[NULL, NULL]::bytea[]"
        ),
    )
    .await;
    assert!(
        index_condition_with(
            &marking,
            &["idempotency_key = ANY ($2)", "subaccount_id = $1"]
        ),
        "{marking}"
    );

    // The same marking inside the set's one write statement.
    let types = "uuid[], uuid[], uuid[], uuid[], text[], int8[], int8[], uuid[], uuid[], \
        int8[], int4[], int8[], text[], text[], int2[], uuid[], text[], bool[], \
        timestamptz[], timestamptz[], timestamptz[], bool[], text[], text[], \
        uuid[], uuid[], text[], text[], int8[], int8[], uuid[], timestamptz[], \
        text[], timestamptz[], int2[], bytea[], \
        uuid[], uuid[], uuid[], text[], jsonb[], timestamptz[], \
        text[], int8[], timestamptz[], uuid, \
        uuid[], int8[], timestamptz[], text[], bytea[], timestamptz[], timestamptz[], \
        int2[], bytea[], text";
    let arrays = vec!["'{}'"; 45].join(", ");
    let admissions = ["'{}'"; 9].join(", ");
    let writing = plan_in_mode(
        &mut conn,
        generic,
        ("write_set", types, statements::WRITE_SET),
        &format!("{arrays}, '{SUB}', {admissions}, 'no endpoint'"),
    )
    .await;
    assert!(
        index_condition_with(
            &writing,
            &["idempotency_key = ANY ($33)", "subaccount_id = $46"]
        ),
        "{writing}"
    );

    // The same writes at once: the parties by their keys, the batches through the partial
    // index of open batches, the keys by the primary key.
    let at_once = plan_in_mode(
        &mut conn,
        generic,
        (
            "write_set_at_once",
            &format!("{types}, int2[], text, int2[], int2, text, text[], uuid[], timestamptz[]"),
            statements::WRITE_SET_AT_ONCE,
        ),
        &format!(
            "{arrays}, '{SUB}', {admissions}, 'no endpoint', '{{3,4}}', 'failed', \
             '{{1,1,0,2}}', 1, 'confirmed', '{{AUD,USD}}', '{{{SUB},{SUB}}}', \
             ARRAY[now(), now()]"
        ),
    )
    .await;
    assert!(
        index_condition_with(&at_once, &["id = ANY ($4)"])
            && at_once.contains("Index Scan using receivers_pkey")
            && at_once.contains("batches_open")
            && index_condition_with(
                &at_once,
                &["idempotency_key = ANY ($33)", "subaccount_id = $46"]
            ),
        "{at_once}"
    );
}

/// What the migration's `payout_set_refused` raises is what a set written at once reads
/// back: an error the server reported (so the set is known not to be written) whose words
/// after `at_once::REFUSED` are the check's, the same text the forgetting of a batch
/// compares with. A connection that failed is not such an error.
#[tokio::test]
async fn the_refusal_raised_in_the_database_is_the_one_the_writer_reads() {
    use diesel::result::{DatabaseErrorKind, Error as DieselError};

    let db = TestDb::postgres().await.unwrap();
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    let raised = diesel::sql_query(format!(
        "SELECT payout_set_refused('{OTHER_BATCH}') AS refused"
    ))
    .get_result::<super::at_once::Refused>(&mut conn)
    .await
    .err()
    .unwrap();
    assert!(super::at_once::reported_by_server(&raised));
    assert_eq!(super::at_once::refusal(&raised), OTHER_BATCH);
    let lost = DieselError::DatabaseError(
        DatabaseErrorKind::UnableToSendCommand,
        Box::new("connection closed".to_owned()),
    );
    assert!(!super::at_once::reported_by_server(&lost));
}

/// The check a set written at once makes of each payout against its parties
/// (`as_planned` in `sql/write_set_at_once.sql`, run alone as `sql/as_planned_check.sql`) accepts exactly what [`party_status`](super::decide::party_status) accepts, for
/// every combination of the statuses of a receiver, its KYC, an account and its
/// confirmation, and every status a payout could have been planned with.
#[tokio::test]
async fn the_at_once_party_check_agrees_with_party_status() {
    use diesel::sql_types::{Array, BigInt, SmallInt};
    use domain::account::{AccountStatus, ConfirmStatus};
    use domain::payout::PayoutStatus;
    use domain::receiver::{KycStatus, ReceiverStatus};

    #[derive(diesel::QueryableByName)]
    struct Accepted {
        #[diesel(sql_type = BigInt)]
        n: i64,
        #[diesel(sql_type = SmallInt)]
        status: i16,
    }

    let db = TestDb::postgres().await.unwrap();
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    let mut parties: Vec<(i16, i16, &str, &str)> = Vec::new();
    for receiver in ReceiverStatus::ALL {
        for kyc in KycStatus::ALL {
            for account in AccountStatus::ALL {
                for confirm in ConfirmStatus::ALL {
                    parties.push((
                        i16::from(receiver.code()),
                        i16::from(kyc.code()),
                        account.as_str(),
                        confirm.as_str(),
                    ));
                }
            }
        }
    }
    let statuses: Vec<i16> = PayoutStatus::ALL
        .iter()
        .map(|s| i16::from(s.code()))
        .collect();
    let query = super::params::bind_party_rule(
        diesel::sql_query(statements::AS_PLANNED_CHECK).into_boxed(),
    )
    .bind::<Array<SmallInt>, _>(parties.iter().map(|p| p.0).collect::<Vec<_>>())
    .bind::<Array<SmallInt>, _>(parties.iter().map(|p| p.1).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(parties.iter().map(|p| p.2).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(parties.iter().map(|p| p.3).collect::<Vec<_>>())
    .bind::<Array<SmallInt>, _>(statuses.clone());
    let accepted: Vec<(i64, i16)> = query
        .load::<Accepted>(&mut conn)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.n, a.status))
        .collect();
    let mut expected = Vec::new();
    for (n, (receiver, kyc, account, confirm)) in (1_i64..).zip(&parties) {
        let (status, payable) = super::decide::party_status(*receiver, *kyc, account, confirm);
        for planned in &statuses {
            if payable && i16::from(status.code()) == *planned {
                expected.push((n, *planned));
            }
        }
    }
    assert!(!expected.is_empty());
    assert_eq!(accepted, expected);
}

/// The writes of `sql/write_set.sql` and `sql/write_set_at_once.sql` are one text, kept twice
/// (a statement is one file): this keeps the copies equal.
#[test]
fn both_set_statements_write_the_same_way() {
    fn writes(sql: &str) -> &str {
        let start = sql.find("written_payouts AS (INSERT").unwrap();
        let end = sql.find("-- end of writes").unwrap();
        &sql[start..end]
    }
    let set = statements::WRITE_SET;
    let at_once = statements::WRITE_SET_AT_ONCE;
    assert!(writes(set).contains("held AS ("));
    assert_eq!(writes(set), writes(at_once));
}
