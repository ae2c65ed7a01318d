//! The plans of the reads that choose the subaccounts to claim from on Citus
//! ([`super::claims::claim_by_subaccount`]), on a real PostgreSQL with a backlog: each must walk
//! its due index for the limit's oldest rows, never read every due row. (On Citus every shard
//! runs the same plan on its part of the table.)
#![allow(clippy::unwrap_used)]

use chrono::Utc;
use diesel::sql_types::{Integer, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

use super::delivery::SUBACCOUNTS_WITH_DUE_EVENTS;
use super::notifications::SUBACCOUNTS_WITH_DUE_ROWS;
use crate::test_db::TestDb;

#[derive(diesel::QueryableByName)]
struct PlanLine {
    #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
    line: String,
}

/// A database with 30 000 due events and 30 000 due notifications of three subaccounts, all
/// analysed. Foreign keys are not checked while it is filled (the rows' accounts and objects
/// do not matter to a plan).
async fn backlog() -> (TestDb, AsyncPgConnection) {
    let db = TestDb::postgres().await.unwrap();
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    conn.batch_execute(
        "SET session_replication_role = replica; \
         CREATE TEMP TABLE subs AS SELECT gen_random_uuid() AS id FROM generate_series(1, 3); \
         INSERT INTO subaccounts (id, merchant_id, name, created_at, updated_at) \
           SELECT id, id, 'backlog', now(), now() FROM subs; \
         INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, \
           created_at, next_attempt_at) \
         SELECT gen_random_uuid(), s.id, gen_random_uuid(), 1, 'payoutUpdated', '{}', now(), \
           now() - interval '1 hour' + g * interval '1 ms' \
         FROM subs s CROSS JOIN generate_series(1, 10000) g; \
         INSERT INTO notifications (id, subaccount_id, account_id, channel, \
           recipient_ciphertext, link_ciphertext, masked_details, status, attempts, \
           next_attempt_at, created_at, updated_at) \
         SELECT gen_random_uuid(), s.id, gen_random_uuid(), 'email', '\\x00', '\\x00', '{}', \
           'pending', 0, now() - interval '1 hour' + g * interval '1 ms', now(), now() \
         FROM subs s CROSS JOIN generate_series(1, 10000) g; \
         SET session_replication_role = DEFAULT; \
         ANALYZE outbox_events; ANALYZE notifications;",
    )
    .await
    .unwrap();
    (db, conn)
}

async fn plan(conn: &mut AsyncPgConnection, statement: &str) -> String {
    let lines: Vec<PlanLine> = diesel::sql_query(format!("EXPLAIN {statement}"))
        .bind::<Timestamptz, _>(Utc::now())
        .bind::<Integer, _>(100)
        .load(conn)
        .await
        .unwrap();
    lines
        .into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_walks(plan: &str, index: &str, table: &str) {
    assert!(
        plan.contains(&format!("Index Scan using {index}")),
        "walks {index}:\n{plan}"
    );
    for reads_every_due_row in [format!("Seq Scan on {table}"), "Bitmap".to_owned()] {
        assert!(
            !plan.contains(&reads_every_due_row),
            "reads every due row ({reads_every_due_row}):\n{plan}"
        );
    }
}

#[tokio::test]
async fn choosing_the_subaccounts_to_claim_from_walks_the_due_index() {
    let (_db, mut conn) = backlog().await;
    let events = plan(&mut conn, SUBACCOUNTS_WITH_DUE_EVENTS).await;
    assert_walks(&events, "outbox_events_due", "outbox_events");
    let notifications = plan(&mut conn, SUBACCOUNTS_WITH_DUE_ROWS).await;
    assert_walks(&notifications, "notifications_due", "notifications");
}
