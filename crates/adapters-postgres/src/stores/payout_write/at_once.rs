//! A set written whole in one round trip, on plain PostgreSQL, once the open batch of each
//! currency its payouts join is known (`open_batches`): `BEGIN`, one statement that locks and
//! checks the parties and the batches as it writes and raises an error when a check fails
//! (`sql/write_set_at_once.sql`), and `COMMIT`, sent together.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::connection::TransactionDepthChange;
use diesel::result::DatabaseErrorKind;
use diesel::sql_types::BigInt;
use diesel_async::{
    AnsiTransactionManager, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection,
    TransactionManager,
};
use futures_util::future::join3;
use uuid::Uuid;

use super::open_batches::Expected;
use super::params;
use super::set_transaction::BEGIN_WITH_GENERIC_PLANS;
use super::set_write::{BuiltSet, currency_totals, joined_batches};
use super::transitions::PayoutAbort;
use super::{Joined, Planned};
use crate::cached::CachedExt;
use crate::errors::TxError;

/// Why `sql/write_set_at_once.sql` refuses a set whose open batch is not the one it expected
/// (the batch closed, or another replaced it): the batches remembered for the subaccount in the
/// set's currencies are then forgotten. The statement raises it in these words.
pub(crate) const OTHER_BATCH: &str = "the open batch is not the one expected";

/// How a set written at once ended.
pub(crate) enum AtOnce {
    /// Written and committed: the batch each payout joined.
    Written(Vec<Joined>),
    /// Rolled back as a whole (a check of `sql/write_set_at_once.sql` failed, or the statement did),
    /// or never sent: why, in words that carry no value of the set.
    NotWritten(String),
    /// Failed in a way that leaves the commit in doubt (a lost connection).
    InDoubt(PayoutAbort),
}

/// Writes `written` (payouts of `subaccount`, in the open batches `expected` says) whole, in
/// one round trip: `BEGIN` with its planning setting ([`BEGIN_WITH_GENERIC_PLANS`]),
/// `sql/write_set_at_once.sql` and `COMMIT`, sent together. The statement checks everything the
/// three round trips of [`write_whole_then`](super::whole::write_whole_then) check in between (parties, open batches, keys,
/// admissions, counts, balances) and raises an error when a check fails, which aborts the
/// transaction; the `COMMIT` then rolls it back. Should the statement be sent after the
/// `COMMIT` (it is prepared on its first use on a connection, and the `COMMIT` does not wait),
/// it runs as a transaction of its own, with the same checks.
pub(crate) async fn write_whole_at_once(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    expected: &Expected,
) -> AtOnce {
    let currencies = currency_totals(written);
    let batches: HashMap<&str, (Uuid, DateTime<Utc>)> = expected
        .batches
        .iter()
        .map(|&(asset, id, run_time)| (asset, (id, run_time)))
        .collect();
    let joined = joined_batches(written, &batches);
    let built = match BuiltSet::of(subaccount, written, &joined, &currencies, true) {
        Ok(built) => built,
        Err(abort) => return AtOnce::NotWritten(format!("{abort:?}")),
    };
    let query = params::write_set_at_once(subaccount, &built.rows(), &expected.batches).cached();
    // Counted as begun before `BEGIN` is sent, as in `write_whole_then`: a connection left
    // midway is one the pool discards.
    if let Err(e) = AnsiTransactionManager::transaction_manager_status_mut(conn)
        .transaction_state()
        .and_then(|state| state.change_transaction_depth(TransactionDepthChange::IncreaseDepth))
    {
        return AtOnce::NotWritten(format!("the connection cannot begin a transaction: {e}"));
    }
    let shared: &AsyncPgConnection = conn;
    let (_, wrote, ended) = join3(
        async {
            let mut shared = shared;
            shared.batch_execute(BEGIN_WITH_GENERIC_PLANS).await
        },
        async {
            let mut shared = shared;
            query.get_result::<Refused>(&mut shared).await
        },
        async {
            let mut shared = shared;
            shared.batch_execute("COMMIT").await
        },
    )
    .await;
    // `BEGIN`'s own outcome changes nothing: had it failed, the statement ran alone and the
    // `COMMIT` found no transaction (a warning), which the statement's outcome covers.
    if ended.is_ok() {
        // The transaction is over (committed, or rolled back after the statement's error).
        // A manager that cannot count it so is broken, and the pool discards its connection.
        if let Ok(state) =
            AnsiTransactionManager::transaction_manager_status_mut(conn).transaction_state()
        {
            drop(state.change_transaction_depth(TransactionDepthChange::DecreaseDepth));
        }
    }
    match (wrote, ended) {
        (Ok(row), Ok(())) if row.refused == 0 => AtOnce::Written(joined),
        (Ok(_), Ok(())) => AtOnce::InDoubt(PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
            "a set written at once answered a refusal without raising it"
        )))),
        (Ok(_), Err(e)) => AtOnce::InDoubt(PayoutAbort::Tx(e.into())),
        (Err(e), _) if reported_by_server(&e) => AtOnce::NotWritten(refusal(&e)),
        (Err(e), _) => AtOnce::InDoubt(PayoutAbort::Tx(e.into())),
    }
}

/// `sql/write_set_at_once.sql`'s answer: 0 (a refusal raises an error instead).
#[derive(QueryableByName)]
pub(crate) struct Refused {
    #[diesel(sql_type = BigInt)]
    refused: i64,
}

/// Whether `error` came from the server about the statement (which then wrote nothing, its
/// transaction aborted), rather than from a connection that failed.
pub(crate) fn reported_by_server(error: &diesel::result::Error) -> bool {
    matches!(
        error,
        diesel::result::Error::DatabaseError(kind, _)
            if !matches!(
                kind,
                DatabaseErrorKind::UnableToSendCommand | DatabaseErrorKind::ClosedConnection
            )
    )
}

/// Why a set written at once was refused, in words that carry no value of the set: the check
/// that failed, the constraint a unique violation hit, or the kind of error.
pub(crate) fn refusal(error: &diesel::result::Error) -> String {
    match error {
        diesel::result::Error::DatabaseError(kind, info) => {
            if let Some(why) = info.message().strip_prefix(REFUSED) {
                why.to_owned()
            } else if let Some(constraint) = crate::errors::unique_violation(error) {
                format!("unique violation of {constraint}")
            } else {
                format!("{kind:?}")
            }
        }
        other => format!("{other:?}"),
    }
}

/// How the message of `payout_set_refused`'s error begins.
const REFUSED: &str = "payout set refused: ";
