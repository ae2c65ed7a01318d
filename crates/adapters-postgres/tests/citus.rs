//! The Citus step of `payoutd migrate` (`adapters_postgres::citus`).
//!
//! On plain PostgreSQL (`DATABASE_URL`, as every database test) it must change nothing. On
//! Citus it runs when `PAYOUT_CITUS_URL` names a coordinator database that has the `citus`
//! extension and its workers registered (`cargo xtask citus` prints it as
//! `MAINTENANCE_DATABASE_URL`); without it that test says it was skipped and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adapters_postgres::citus::{
    self, COLOCATION_ANCHOR, DISTRIBUTION_COLUMN, Distribution, MIGRATIONS_TABLE, PLAN, Placement,
};
use adapters_postgres::migrate::run_migrations;
use adapters_postgres::test_db::{TestDb, with_host_port};
use diesel::sql_types::{Integer, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

#[derive(diesel::QueryableByName, Debug, PartialEq, Eq)]
struct Definition {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    definition: String,
}

/// Every primary key, unique constraint and foreign key of the schema, with its definition.
async fn constraints(conn: &mut AsyncPgConnection) -> Vec<Definition> {
    diesel::sql_query(
        "SELECT conrelid::regclass::text || '.' || conname AS name, \
                pg_get_constraintdef(oid) AS definition \
         FROM pg_constraint WHERE contype IN ('p', 'u', 'f') \
           AND connamespace = 'public'::regnamespace ORDER BY 1",
    )
    .load(conn)
    .await
    .unwrap()
}

#[tokio::test]
async fn the_citus_step_changes_nothing_on_plain_postgresql() {
    let db = TestDb::postgres().await.unwrap();
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    assert!(!citus::has_citus(&mut conn).await.unwrap());
    let before = constraints(&mut conn).await;
    assert!(before.contains(&Definition {
        name: "receivers.receivers_pkey".to_owned(),
        definition: "PRIMARY KEY (id)".to_owned(),
    }));

    assert_eq!(citus::distribute_tables(&mut conn).await.unwrap(), None);
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );

    assert_eq!(constraints(&mut conn).await, before);
}

#[derive(diesel::QueryableByName, Debug)]
struct Distributed {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    column: String,
    #[diesel(sql_type = Integer)]
    colocation: i32,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Migrates the database at `url` twice and checks where every table is.
async fn check_placement(url: &str) {
    assert!(!run_migrations(url).await.unwrap().is_empty());
    run_migrations(url).await.unwrap();
    let mut conn = AsyncPgConnection::establish(url).await.unwrap();
    // Both migrate runs are done: a third placement finds nothing to place.
    assert_eq!(
        citus::distribute_tables(&mut conn).await.unwrap(),
        Some(Distribution::default())
    );

    let placements = citus::current_placements(&mut conn).await.unwrap();
    for plan in PLAN {
        assert_eq!(
            placements.get(plan.table).copied().flatten(),
            Some(plan.placement),
            "{}",
            plan.table
        );
    }
    assert_eq!(placements.len(), PLAN.len(), "{placements:?}");
    assert!(!placements.contains_key(MIGRATIONS_TABLE));

    let distributed: Vec<Distributed> = diesel::sql_query(
        "SELECT logicalrelid::regclass::text AS name, \
                column_to_column_name(logicalrelid, partkey) AS column, \
                colocationid AS colocation \
         FROM pg_dist_partition WHERE partmethod = 'h' ORDER BY 1",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let planned = PLAN
        .iter()
        .filter(|p| p.placement == Placement::Distributed)
        .count();
    assert_eq!(distributed.len(), planned);
    let anchor = distributed
        .iter()
        .find(|d| d.name == COLOCATION_ANCHOR)
        .unwrap();
    for table in &distributed {
        assert_eq!(table.column, DISTRIBUTION_COLUMN, "{table:?}");
        assert_eq!(table.colocation, anchor.colocation, "{table:?}");
    }

    // The shards are on the workers, and the ledger's append-only trigger runs there.
    let on_workers: Count = diesel::sql_query(
        "SELECT count(DISTINCT nodeport) AS n FROM citus_shards \
         WHERE table_name = 'ledger_entries'::regclass",
    )
    .get_result(&mut conn)
    .await
    .unwrap();
    assert!(on_workers.n >= 1);
    diesel::sql_query(
        "INSERT INTO subaccounts (id, merchant_id, name, created_at, updated_at) \
         VALUES ('00000000-0000-0000-0000-000000000001', gen_random_uuid(), 's', now(), now())",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO ledger_entries \
           (id, subaccount_id, asset, kind, available_delta, pending_delta, created_at) \
         VALUES (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'AUD', \
                 'deposit', 1, 0, now())",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let refused = diesel::sql_query("UPDATE ledger_entries SET available_delta = 2")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("append-only"), "{refused}");
}

#[tokio::test]
async fn migrate_places_every_table_on_citus_once() {
    let Some(url) = std::env::var("PAYOUT_CITUS_URL")
        .ok()
        .filter(|url| !url.is_empty())
    else {
        eprintln!(
            "SKIPPED migrate_places_every_table_on_citus_once: PAYOUT_CITUS_URL is not set \
             (`cargo xtask citus` starts a cluster and prints the URL to give it)"
        );
        return;
    };
    let db = TestDb::citus_unmigrated(&url).await.unwrap();
    check_placement(db.url()).await;
}

#[test]
fn node_urls_keep_the_user_and_database() {
    assert_eq!(
        with_host_port(
            "postgres://u:p@127.0.0.1:25440/postgres?x=y",
            "worker-1",
            5432
        )
        .unwrap(),
        "postgres://u:p@worker-1:5432/postgres?x=y"
    );
    assert_eq!(
        with_host_port("postgres://127.0.0.1:25440/db", "h", 1).unwrap(),
        "postgres://h:1/db"
    );
}

#[derive(diesel::QueryableByName)]
struct Setting {
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    value: Option<String>,
}

/// `citus.node_connection_timeout` as a new pool connection (connect timeout 2.5 s) sees it.
async fn pooled_node_connection_timeout(url: &str) -> Option<String> {
    let mut config = adapters_postgres::DbConfig::new(url);
    config.connect_timeout = std::time::Duration::from_millis(2500);
    let pool = adapters_postgres::create_pool(&config).unwrap();
    let mut conn = pool.get().await.unwrap();
    let setting: Setting =
        diesel::sql_query("SELECT current_setting('citus.node_connection_timeout', true) AS value")
            .get_result(&mut *conn)
            .await
            .unwrap();
    setting.value
}

#[tokio::test]
async fn pool_connections_wait_for_a_worker_as_long_as_for_the_coordinator() {
    let plain = TestDb::postgres().await.unwrap();
    assert_eq!(pooled_node_connection_timeout(plain.url()).await, None);
    let Some(url) = std::env::var("PAYOUT_CITUS_URL")
        .ok()
        .filter(|url| !url.is_empty())
    else {
        eprintln!(
            "SKIPPED the Citus half of pool_connections_wait_for_a_worker_as_long_as_for_the_\
             coordinator: PAYOUT_CITUS_URL is not set"
        );
        return;
    };
    let db = TestDb::citus_unmigrated(&url).await.unwrap();
    assert_eq!(
        pooled_node_connection_timeout(db.url()).await.as_deref(),
        Some("2500ms")
    );
}
