//! The event and delivery statements are prepared once per connection.

use std::sync::Arc;

use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use domain::delivery::ports::DeliveryStore;
use domain::ids::SubaccountId;
use domain::masking::Secret;

use super::{claim_one, delivered, event_at, hooked, t};
use crate::support::{Fixture, MASTER_KEY};

#[derive(diesel::QueryableByName)]
struct PreparedRow {
    #[diesel(sql_type = Text)]
    statement: String,
}

/// The statements prepared on the connection of `fx`'s one-connection pool.
async fn prepared_statements(fx: &Fixture) -> Vec<String> {
    let mut conn = fx.store.pool().get().await.unwrap();
    let rows: Vec<PreparedRow> =
        diesel::sql_query("SELECT statement FROM pg_prepared_statements ORDER BY statement")
            .load(&mut *conn)
            .await
            .unwrap();
    rows.into_iter().map(|r| r.statement).collect()
}

/// One event written, claimed and recorded as delivered.
async fn deliver_one(fx: &Fixture, sub: SubaccountId, secs: i64) {
    let id = event_at(fx, sub, t(secs)).await;
    let claimed = claim_one(fx, t(secs)).await;
    assert_eq!(claimed.event_id, id);
    let applied = fx
        .store
        .record_attempts(&[(claimed, delivered(t(secs)))])
        .await
        .unwrap();
    assert_eq!(applied, [true]);
}

#[tokio::test]
async fn the_event_and_delivery_statements_are_prepared_once_per_connection() {
    let db = adapters_postgres::test_db::TestDb::new().await.unwrap();
    let mut config = adapters_postgres::DbConfig::new(db.url());
    config.max_size = 1;
    let pool = adapters_postgres::create_pool(&config).unwrap();
    let vault = adapters_postgres::Vault::new(&Secret::new(MASTER_KEY)).unwrap();
    let store = adapters_postgres::PgStore::new(pool, Arc::new(vault));
    let fx = Fixture { db, store };
    let sub = hooked(&fx, "prepared").await;

    deliver_one(&fx, sub, 0).await;
    let after_one = prepared_statements(&fx).await;
    // diesel would prepare these three afresh on every call (and close them after it): raw SQL
    // is never cached unless marked fixed.
    for start in ["WITH seq AS", "WITH due AS", "WITH input AS"] {
        assert!(
            after_one.iter().any(|s| s.starts_with(start)),
            "no prepared statement starting {start:?} in {after_one:#?}"
        );
    }
    for secs in 1..4 {
        deliver_one(&fx, sub, secs).await;
    }
    assert_eq!(prepared_statements(&fx).await, after_one);
    // The claim turns bitmap scans off for its own transaction only: the pooled session, which
    // every other statement shares, keeps the default.
    assert_eq!(
        crate::support::session_setting(&fx.store, "enable_bitmapscan").await,
        "on"
    );
}
