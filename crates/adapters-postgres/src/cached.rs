//! Statements of fixed text, prepared once per connection.
//!
//! diesel caches the prepared statement of most queries, but it refuses for some whose text
//! *could* vary from call to call: every `UPDATE`, raw `sql_query` text, `ON CONFLICT … DO
//! UPDATE` and `sql` fragments. diesel-async then prepares such a statement afresh on every
//! call: one extra round trip (Parse/Describe, then Bind/Execute), a full parse and plan in
//! PostgreSQL, and a Close afterwards. A payout ran four of them.
//!
//! [`Cached`] tells the connection's statement cache that a statement's text is fixed, so it is
//! prepared on first use and reused. The cache is keyed by the SQL text and the bind types, so
//! reuse is always correct; the one duty of the caller is to wrap only statements whose text
//! takes a small, fixed number of shapes, or the per-connection cache would keep growing.
//! Statements built from a list of variable length (a multi-row `VALUES`) must stay uncached.

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::QueryResult;

/// A statement whose text never varies, so its prepared statement can be cached and reused.
#[derive(Debug, Clone, Copy)]
#[must_use = "a statement does nothing until it is run"]
pub(crate) struct Cached<Q>(Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Cached<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// No static id: the cache is keyed by the generated SQL text and the bind types.
impl<Q> QueryId for Cached<Q> {
    type QueryId = ();

    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Cached<Q> {
    type SqlType = Q::SqlType;
}

/// A raw statement whose parameters are bound one call at a time (`sql_query(…).into_boxed()`),
/// so that the binding of one part can be shared by the statements that combine it with others.
pub(crate) type BoxedSql<'f> =
    diesel::query_builder::BoxedSqlQuery<'f, Pg, diesel::query_builder::SqlQuery>;

/// `.cached()` on any statement (see the module documentation for when it is right).
pub(crate) trait CachedExt: Sized {
    /// This statement, marked as having fixed text.
    fn cached(self) -> Cached<Self> {
        Cached(self)
    }
}

impl<Q: QueryFragment<Pg>> CachedExt for Q {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use diesel::prelude::*;
    use diesel::query_builder::{QueryFragment, QueryId};
    use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
    use uuid::Uuid;

    use super::CachedExt;
    use crate::schema::subaccounts;
    use crate::test_db::TestDb;

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    /// How many statements this session holds prepared whose text starts with `prefix`.
    async fn prepared(conn: &mut AsyncPgConnection, prefix: &str) -> i64 {
        diesel::sql_query(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE starts_with(statement, $1)",
        )
        .bind::<Text, _>(prefix)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
    }

    fn rename(id: Uuid, name: &str) -> impl QueryFragment<diesel::pg::Pg> + QueryId + Send + '_ {
        diesel::update(subaccounts::table.find(id)).set(subaccounts::name.eq(name))
    }

    #[tokio::test]
    async fn an_update_is_prepared_once_and_reused_only_when_cached() {
        let db = TestDb::new().await.unwrap();
        let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
        let id = Uuid::new_v4();

        // diesel's own choice: prepared, run and closed on every call.
        for _ in 0..3 {
            rename(id, "a").execute(&mut conn).await.unwrap();
        }
        assert_eq!(prepared(&mut conn, "UPDATE").await, 0);

        for name in ["a", "b", "c"] {
            rename(id, name).cached().execute(&mut conn).await.unwrap();
        }
        assert_eq!(prepared(&mut conn, "UPDATE").await, 1);
    }

    #[tokio::test]
    async fn a_cached_raw_statement_takes_new_parameters_on_every_call() {
        let db = TestDb::new().await.unwrap();
        let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
        #[derive(QueryableByName)]
        struct Echo {
            #[diesel(sql_type = SqlUuid)]
            id: Uuid,
            #[diesel(sql_type = Text)]
            text: String,
        }
        for n in 0..3 {
            let id = Uuid::new_v4();
            let echo: Echo = diesel::sql_query("SELECT $1::uuid AS id, $2::text || '!' AS text")
                .bind::<SqlUuid, _>(id)
                .bind::<Text, _>(n.to_string())
                .cached()
                .get_result(&mut conn)
                .await
                .unwrap();
            assert_eq!((echo.id, echo.text), (id, format!("{n}!")));
        }
        assert_eq!(prepared(&mut conn, "SELECT $1::uuid").await, 1);
    }
}
