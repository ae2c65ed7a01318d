//! A set transaction: how it begins (its plans) and ends, by hand where a write must send its
//! `BEGIN` together with other statements.

use diesel_async::{AnsiTransactionManager, AsyncPgConnection, TransactionManager};

/// How a set transaction's statements are planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetPlans {
    /// Every statement with its generic plan (the transaction begins with
    /// [`BEGIN_WITH_GENERIC_PLANS`]), the reads by the set's keys in their forms that only the
    /// keys' indexes can serve (`sql/parties_by_key.sql`, `sql/taken_references_by_key.sql`), the writes in
    /// one statement (`sql/write_set.sql`): on plain PostgreSQL.
    Generic,
    /// As PostgreSQL chooses, which for these statements is afresh on every call, with the
    /// reads comparing the subaccount with `=` (`sql/parties.sql`, `sql/taken_references.sql`) so that
    /// they are routed to its shard: on Citus, whose coordinator failed to run the set
    /// transaction with generic plans (every group fell back to writing its requests one by
    /// one).
    AsChosen,
}

impl SetPlans {
    /// The planning for a database that is (`true`) or is not a Citus cluster.
    pub(crate) fn on_citus(citus: bool) -> Self {
        if citus { Self::AsChosen } else { Self::Generic }
    }
}

/// How a set transaction begins on plain PostgreSQL: every statement after `BEGIN` runs its
/// generic plan, and both go in one round trip (one simple query). Each statement takes arrays
/// as long as the set, and PostgreSQL costs a generic plan for an array of unknown length above
/// one made for the array given, so it would plan them afresh for every group (about 0.35 ms a
/// group, 13 % of PostgreSQL's statement time under the payout benchmark). None of the plans
/// depends on the subaccount's size: the reads by the set's keys compare the subaccount in a
/// form no index serves (see `sql/parties_by_key.sql`), the balances are read and updated by their
/// primary key, `sql/mark_keys_committed.sql` finds the keys through the primary key of
/// `idempotency_keys`, which leads with the key, and the rest are inserts. The unit tests below
/// check these generic plans for a large subaccount among many small ones. The setting ends
/// with the transaction.
pub(crate) use super::statements::BEGIN_WITH_GENERIC_PLANS;

/// Runs `callback` in a transaction planned as `plans` says (see [`BEGIN_WITH_GENERIC_PLANS`]),
/// committed when it returns `Ok` and rolled back otherwise, as
/// [`AsyncConnection::transaction`](diesel_async::AsyncConnection::transaction) does.
pub(crate) async fn in_set_transaction<R, E, F>(
    conn: &mut AsyncPgConnection,
    plans: SetPlans,
    callback: F,
) -> Result<R, E>
where
    F: AsyncFnOnce(&mut AsyncPgConnection) -> Result<R, E>,
    E: From<diesel::result::Error>,
{
    match plans {
        // Setting a valid value of `plan_cache_mode` cannot fail, so the query either begins
        // the transaction with it or fails at `BEGIN`, leaving no transaction open that the
        // transaction manager does not know of.
        SetPlans::Generic => {
            AnsiTransactionManager::begin_transaction_sql(conn, BEGIN_WITH_GENERIC_PLANS).await?;
        }
        SetPlans::AsChosen => AnsiTransactionManager::begin_transaction(conn).await?,
    }
    let result = callback(&mut *conn).await;
    end_transaction(conn, result).await
}

/// Ends the open transaction: commits it when `result` is `Ok`, rolls it back otherwise.
pub(crate) async fn end_transaction<R, E>(
    conn: &mut AsyncPgConnection,
    result: Result<R, E>,
) -> Result<R, E>
where
    E: From<diesel::result::Error>,
{
    match result {
        Ok(value) => {
            AnsiTransactionManager::commit_transaction(conn).await?;
            Ok(value)
        }
        Err(e) => match AnsiTransactionManager::rollback_transaction(conn).await {
            // A broken transaction manager is most likely the failure's own doing.
            Ok(()) | Err(diesel::result::Error::BrokenTransactionManager) => Err(e),
            Err(rollback) => Err(rollback.into()),
        },
    }
}
