//! The background claims' path on Citus: choose the subaccounts with due rows, then claim each
//! one's rows in a statement of its own.
//!
//! A claim takes its rows `FOR UPDATE SKIP LOCKED`, which Citus runs only in a statement that
//! stays on one shard. The claimed tables are distributed by subaccount, so a claim naming one
//! subaccount stays on that subaccount's shard; the read choosing the subaccounts locks nothing,
//! so Citus runs it on every shard.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Integer, Timestamptz, Uuid as SqlUuid};
use diesel_async::methods::LoadQuery;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use futures_util::future::BoxFuture;
use uuid::Uuid;

use crate::cached::CachedExt;
use crate::errors::from_diesel;

#[derive(diesel::QueryableByName)]
struct SubaccountRow {
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
}

/// Claims up to `limit` rows one subaccount at a time: `subaccounts` (a read taking `$1` now
/// and `$2` limit, returning `subaccount_id`s, the subaccount to serve first first) chooses the
/// subaccounts, then `claim(subaccount, remaining)` builds the statement that claims at most
/// `remaining` of that subaccount's rows, until `limit` rows are taken or the subaccounts run
/// out.
///
/// Every claim is atomic and skips the rows other workers hold, as the single claim on plain
/// PostgreSQL does, so a row is still claimed by one worker at a time; only the order across
/// subaccounts is by subaccount (as `subaccounts` orders them) rather than row by row.
///
/// The future is boxed: a caller's `async_trait` future must be `Send`, which rustc cannot
/// prove of this generic one when it is inlined there ("`Send` is not general enough").
pub(super) fn claim_by_subaccount<'a, Row, Claim>(
    conn: &'a mut AsyncPgConnection,
    subaccounts: &'static str,
    now: DateTime<Utc>,
    limit: i32,
    claim: impl Fn(Uuid, i32) -> Claim + Send + 'a,
) -> BoxFuture<'a, Result<Vec<Row>, PortError>>
where
    Row: Send + 'a,
    Claim: LoadQuery<'static, AsyncPgConnection, Row> + Send + 'static,
{
    Box::pin(async move {
        let subaccounts: Vec<SubaccountRow> = diesel::sql_query(subaccounts)
            .bind::<Timestamptz, _>(now)
            .bind::<Integer, _>(limit)
            .cached()
            .load(conn)
            .await
            .map_err(from_diesel)?;
        let mut rows: Vec<Row> = Vec::new();
        for subaccount in subaccounts {
            let taken = i32::try_from(rows.len()).unwrap_or(i32::MAX);
            let remaining = limit.saturating_sub(taken);
            if remaining <= 0 {
                break;
            }
            let claimed: Vec<Row> = claim(subaccount.subaccount_id, remaining)
                .load(conn)
                .await
                .map_err(from_diesel)?;
            rows.extend(claimed);
        }
        Ok(rows)
    })
}
