//! A set expected to be accepted whole (a group of single requests, one alone, or a bulk
//! request), on plain PostgreSQL, in a transaction of its own: in one round trip when its open
//! batches are known (`at_once`), else in three: `BEGIN` with its planning setting sent together
//! with one statement that locks the parties and looks up the open batch
//! (`sql/parties_and_open_batch.sql`); the writes (`sql/write_set.sql`); `COMMIT`. Anything that
//! would refuse a payout fails it as a whole, and the caller then decides the set afresh.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::connection::TransactionDepthChange;
use diesel::prelude::*;
use diesel::sql_types::{Array, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{
    AnsiTransactionManager, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection,
    TransactionManager,
};
use domain::rail::schedule::BatchSchedule;
use futures_util::future::{join, join_all};
use uuid::Uuid;

use super::at_once::{AtOnce, OTHER_BATCH, write_whole_at_once};
use super::decide::{Parties, PartyRow, lock_parties};
use super::open_batches::{Expected, OpenBatches};
use super::set_transaction::{BEGIN_WITH_GENERIC_PLANS, SetPlans, end_transaction};
use super::set_write::{currency_totals, write_joined};
use super::statements;
use super::transitions::{PayoutAbort, join_open_batch, open_batch};
use super::{Joined, Planned};
use crate::cached::CachedExt;
use crate::errors::TxError;

/// Writes a set expected to be accepted whole (a group of single requests, or one alone), all
/// of `subaccount`, on plain PostgreSQL, in a transaction of its own, committed when it is
/// written and rolled back otherwise.
///
/// `at_once` is the open batches [`strategy`](super::strategy) expects when it chose
/// [`Strategy::AtOnce`](super::Strategy::AtOnce) (the batch the last set of the subaccount
/// joined in each currency, from `open_batches`): the set is then written in one round trip
/// ([`write_whole_at_once`]); if that is refused (anything below, or a batch no longer open),
/// it is written as follows. Either way the batches joined are remembered in `open_batches`
/// for the next set.
///
/// The transaction's `BEGIN` (with its generic plans) and the
/// lock and read of the payouts' parties with the lookup of the open batch of the currency the
/// payouts join (one statement, `sql/parties_and_open_batch.sql`, for a set of one currency) are
/// sent together and answered in one round trip; then come the writes, one statement
/// (`sql/write_set.sql`, which also admits the requests whose admission their keys carry),
/// and the commit: three round trips, where waiting for each statement took five when a payout
/// starts `pending`. Returns the batch each payout joined, in the order given.
///
/// Fails as a whole, for the caller to decide the set afresh, when a party is no longer as
/// planned ([`PayoutAbort::Stale`]), a key is no longer its request's ([`TxError::KeyNotOwn`]),
/// a request cannot be admitted ([`PayoutAbort::NotAdmitted`]), a balance does not cover its
/// currency's sum ([`PayoutAbort::InsufficientBalance`]) or a reference is taken (a unique
/// violation of `payouts_reference_unique`), in that order when more than one holds.
pub(crate) async fn write_whole(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
    open_batches: &OpenBatches,
    at_once: Option<Expected>,
) -> Result<Vec<Joined>, PayoutAbort> {
    if let Some(expected) = at_once {
        match write_whole_at_once(conn, subaccount, written, &expected).await {
            AtOnce::Written(joined) => return Ok(joined),
            AtOnce::InDoubt(abort) => return Err(abort),
            AtOnce::NotWritten(why) => {
                tracing::debug!(
                    payouts = written.len(),
                    reason = %why,
                    "a payout set was not written at once; writing it in three round trips"
                );
                if why == OTHER_BATCH {
                    open_batches.forget(subaccount, &expected.batches);
                }
            }
        }
    }
    let joined = write_whole_then(conn, subaccount, written, schedule, async |_| Ok(())).await?;
    open_batches.remember(subaccount, written, &joined);
    Ok(joined)
}

/// [`write_whole`], with `then` run in its transaction once the payouts are written, before
/// the commit (a bulk request's own key marked committed with its answer): when `then` fails,
/// nothing is written.
pub(crate) async fn write_whole_then<F>(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
    then: F,
) -> Result<Vec<Joined>, PayoutAbort>
where
    F: AsyncFnOnce(&mut AsyncPgConnection) -> Result<(), PayoutAbort>,
{
    // The transaction manager counts the transaction as begun before its `BEGIN` is sent, so
    // that a connection left midway (this future dropped while the statements are in flight)
    // is one the pool discards, never one it lends again with a transaction open.
    AnsiTransactionManager::transaction_manager_status_mut(conn)
        .transaction_state()?
        .change_transaction_depth(TransactionDepthChange::IncreaseDepth)?;
    let result = match write_whole_begun(conn, subaccount, written, schedule).await {
        Ok(joined) => then(&mut *conn).await.map(|()| joined),
        Err(e) => Err(e),
    };
    end_transaction(conn, result).await
}

/// [`write_whole`] once the transaction manager counts its transaction as begun: sends the
/// `BEGIN` with the reads that open the transaction, then writes.
async fn write_whole_begun(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
) -> Result<Vec<Joined>, PayoutAbort> {
    let currencies = currency_totals(written);
    let accounts: Vec<Uuid> = written
        .iter()
        .map(|p| p.payout.account_id.as_uuid())
        .collect();
    let joining: Vec<(&str, DateTime<Utc>)> = currencies
        .iter()
        .filter_map(|(asset, currency)| currency.opens_batch_at.map(|at| (*asset, at)))
        .collect();
    // Sent in this order on the first poll (each future sends its statement when first
    // polled, or after the statement it prepares, which the others wait for), so the reads run
    // after `BEGIN`, in its transaction. Should `BEGIN` fail, the reads may have run on their
    // own; nothing is written before it is known to have begun.
    let opening: &AsyncPgConnection = conn;
    let (begun, read) = join(
        async {
            let mut opening = opening;
            opening.batch_execute(BEGIN_WITH_GENERIC_PLANS).await
        },
        opening_reads(opening, subaccount, &accounts, &joining),
    )
    .await;
    begun?;
    let (parties, open) = read?;
    if !written.iter().all(|p| parties.as_planned(p.payout)) {
        return Err(PayoutAbort::Stale);
    }
    let mut batches: HashMap<&str, (Uuid, DateTime<Utc>)> = HashMap::new();
    for ((asset, at), open) in joining.iter().zip(open) {
        let batch = match open {
            Some(batch) => batch,
            // No batch is open: one is created (or joined, if another transaction created it
            // meanwhile), as a decided set's is.
            None => join_open_batch(conn, subaccount, asset, *at, schedule).await?,
        };
        batches.insert(asset, batch);
    }
    write_joined(
        conn,
        subaccount,
        written,
        &currencies,
        &batches,
        SetPlans::Generic,
        true,
    )
    .await
}

/// A row of `sql/parties_and_open_batch.sql`.
#[derive(QueryableByName)]
struct PartyAndBatchRow {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    account_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    receiver_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    receiver_status: Option<i16>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    kyc_status: Option<i16>,
    #[diesel(sql_type = Nullable<Text>)]
    account_status: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    confirm_status: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    batch_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    batch_run_time: Option<DateTime<Utc>>,
}

impl PartyAndBatchRow {
    /// The party of the row, unless it is the row of nulls that carries only the batch.
    fn party(self) -> Option<PartyRow> {
        Some(PartyRow {
            account_id: self.account_id?,
            receiver_id: self.receiver_id?,
            receiver_status: self.receiver_status?,
            kyc_status: self.kyc_status?,
            account_status: self.account_status?,
            confirm_status: self.confirm_status?,
        })
    }
}

/// The open batch of a set's only currency with its parties locked (the reads that open
/// [`write_whole`]), one statement in all (`sql/parties_and_open_batch.sql`).
async fn lock_parties_and_open_batch(
    mut conn: &AsyncPgConnection,
    subaccount: Uuid,
    accounts: &[Uuid],
    asset: &str,
) -> Result<(Parties, Option<(Uuid, DateTime<Utc>)>), TxError> {
    let rows: Vec<PartyAndBatchRow> = diesel::sql_query(statements::PARTIES_AND_OPEN_BATCH)
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<SqlUuid>, _>(accounts)
        .bind::<Text, _>(asset)
        .cached()
        .load(&mut conn)
        .await?;
    let batch = rows
        .iter()
        .find_map(|row| row.batch_id.zip(row.batch_run_time));
    Ok((
        Parties::of(rows.into_iter().filter_map(PartyAndBatchRow::party)),
        batch,
    ))
}

/// The reads that open [`write_whole`]: the set's parties locked, and the open batch of each
/// currency that joins one (in one statement when there is one such currency, as for every
/// group and lone payout).
async fn opening_reads(
    conn: &AsyncPgConnection,
    subaccount: Uuid,
    accounts: &[Uuid],
    joining: &[(&str, DateTime<Utc>)],
) -> Result<(Parties, Vec<Option<(Uuid, DateTime<Utc>)>>), TxError> {
    if let [(asset, _)] = joining {
        let (parties, batch) =
            lock_parties_and_open_batch(conn, subaccount, accounts, asset).await?;
        return Ok((parties, vec![batch]));
    }
    let (parties, open) = join(
        lock_parties(conn, subaccount, accounts, SetPlans::Generic),
        join_all(
            joining
                .iter()
                .map(|(asset, _)| open_batch(conn, subaccount, asset)),
        ),
    )
    .await;
    let open = open.into_iter().collect::<QueryResult<Vec<_>>>()?;
    Ok((parties?, open))
}
