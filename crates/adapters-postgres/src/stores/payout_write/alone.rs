//! A new payout in a transaction of its own: on plain PostgreSQL a set of one written whole
//! (`whole`, `at_once`); on Citus statement by statement, its parties checked, the payout, its
//! ledger entries and its events written, and the hold taken last.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ids::BatchId;
use domain::ledger::LedgerEntry;
use domain::payout::ports::InsertPayoutError;
use domain::payout::{Payout, PayoutStatus};
use uuid::Uuid;

use super::decide::party_status;
use super::outbox::insert_events;
use super::set_transaction::{SetPlans, in_set_transaction};
use super::transitions::{PayoutAbort, insert_entries, join_open_batch, with_batch, written_key};
use super::whole::write_whole;
use super::{PgStore, Planned, Strategy, Write, strategy};
use crate::cached::CachedExt;
use crate::errors::{TxError, from_tx};
use crate::rows::PayoutRow;
use crate::schema::{balances, payouts, receiver_accounts, receivers};

impl PgStore {
    /// A new payout in a transaction of its own: its parties checked, the payout, its ledger
    /// entries and its events (with its key) written, and the hold taken last.
    pub(crate) async fn insert_payout_alone(
        &self,
        payout: &Payout,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
        key: &WriteKey<Payout>,
    ) -> Result<Option<BatchId>, InsertPayoutError> {
        let schedule = &self.batch_schedule;
        let citus = self.detect_citus().await?;
        let admitting = key.admission().is_some();
        let subaccount = payout.subaccount_id.as_uuid();
        // A set of one, as a group is.
        let alone = [Planned {
            payout,
            entries,
            events,
            key: Some(key),
        }];
        let chosen = || {
            strategy(
                Write::Alone { admitting },
                citus,
                subaccount,
                &alone,
                &self.open_batches,
            )
        };
        if let Strategy::NotAdmitted = chosen() {
            return Err(InsertPayoutError::NotAdmitted);
        }
        let mut conn = self.conn().await?;
        let mut attempt = 1;
        let result = loop {
            let result = match chosen() {
                Strategy::Citus => {
                    in_set_transaction::<_, PayoutAbort, _>(
                        &mut conn,
                        SetPlans::AsChosen,
                        async |conn| {
                            // The hold comes last: one conditional update, so concurrent payouts
                            // can never take the balance below zero (and a subaccount with no
                            // balance row has nothing to hold). The balance row is every
                            // payout's of the subaccount, so it is locked only for the commit:
                            // the statements before run concurrently.
                            check_parties(conn, payout, citus).await?;
                            let batch =
                                write_payout(conn, payout, entries, events, Some(key), schedule)
                                    .await?;
                            hold(conn, payout).await?;
                            Ok(batch.map(|(id, _)| BatchId::from_uuid(id)))
                        },
                    )
                    .await
                }
                // On plain PostgreSQL the payout is a set of one written whole, as a group is:
                // its party check, then its writes in one statement, hold last, with their
                // generic plans (in one round trip when its open batch is known).
                chosen @ (Strategy::AtOnce(_) | Strategy::ThreeRoundTrips) => {
                    let at_once = match chosen {
                        Strategy::AtOnce(expected) => Some(expected),
                        _ => None,
                    };
                    write_whole(
                        &mut conn,
                        subaccount,
                        &alone,
                        schedule,
                        &self.open_batches,
                        at_once,
                    )
                    .await
                    .map(|joined| {
                        joined
                            .into_iter()
                            .next()
                            .flatten()
                            .map(|(id, _)| BatchId::from_uuid(id))
                    })
                }
                other => Err(PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
                    "a single payout's write chose {other:?}"
                )))),
            };
            // A deadlock victim was rolled back whole; run it again rather than answer 503.
            // One arises when this payout creates its currency's open batch while a group or
            // bulk request of the subaccount, holding the balance row, waits to create it too.
            match result {
                Err(PayoutAbort::Tx(ref e)) if runs_again(e, &mut attempt, "a payout") => {}
                result => break result,
            }
        };
        let result = self.after_commit(result);
        match result {
            Ok(batch) => Ok(batch),
            // Whatever refused the payout, the request it was to admit is admitted on its own
            // and run again (see `InsertPayoutError::NotAdmitted`). An error that leaves the
            // commit in doubt stays a port error: the request's nonce may be recorded.
            Err(abort) if admitting && rolled_back_whole(&abort) => {
                Err(InsertPayoutError::NotAdmitted)
            }
            Err(PayoutAbort::InsufficientBalance) => Err(InsertPayoutError::InsufficientBalance),
            Err(PayoutAbort::Stale) => Err(InsertPayoutError::Stale),
            Err(PayoutAbort::Tx(e)) => Err(match e.unique_violation() {
                Some("payouts_reference_unique") => InsertPayoutError::DuplicateReference,
                _ => InsertPayoutError::Port(from_tx(e)),
            }),
            Err(e) => Err(InsertPayoutError::Port(e.into_port("inserting a payout"))),
        }
    }
}

/// Whether a payout transaction that failed with `abort` certainly wrote nothing: it refused
/// (a balance short, a party changed, a request it could not admit, a key no longer its
/// request's, a taken reference) or lost a deadlock, each of which rolls it back before its
/// commit. Any other failure (a lost connection, say) may have come after the commit.
pub(crate) fn rolled_back_whole(abort: &PayoutAbort) -> bool {
    match abort {
        PayoutAbort::InsufficientBalance
        | PayoutAbort::Stale
        | PayoutAbort::NotAdmitted
        | PayoutAbort::Tx(TxError::KeyNotOwn) => true,
        PayoutAbort::Tx(e) => e.unique_violation().is_some() || e.lost_a_conflict(),
        PayoutAbort::Superseded => false,
    }
}

/// How many times a single payout's or a bulk request's item-by-item transaction runs when
/// PostgreSQL keeps rolling it back to break deadlocks ([`TxError::lost_a_conflict`]).
const CONFLICT_ATTEMPTS: u32 = 3;

/// Whether a transaction that failed with `error` on its `attempt`-th run is run again: when it
/// was rolled back to break a deadlock and has runs left. Counts the new run in `attempt`.
pub(super) fn runs_again(error: &TxError, attempt: &mut u32, what: &'static str) -> bool {
    if !error.lost_a_conflict() || *attempt >= CONFLICT_ATTEMPTS {
        return false;
    }
    *attempt += 1;
    tracing::debug!(
        attempt = *attempt,
        "{what} lost a lock conflict; writing again"
    );
    true
}

/// Locks the payout's receiver and account against changes until the transaction ends
/// (`FOR SHARE`: concurrent payouts do not wait for each other) and checks that they still give
/// the status the payout was planned with and may still be paid. A KYC decision or a
/// confirmation updates these rows, so it either committed before (and the check sees it) or
/// waits for this transaction (and then sees the new payout among those waiting for it).
///
/// The parties' subaccount is compared with `=` on Citus (`citus`), which routes the lock to one
/// shard, and with `IS NOT DISTINCT FROM` on plain PostgreSQL, so that the generic plan locks
/// both rows through their primary keys (as in [`super::planning_reads`]).
pub(super) async fn check_parties(
    conn: &mut AsyncPgConnection,
    payout: &Payout,
    citus: bool,
) -> Result<(), PayoutAbort> {
    /// The locking read, with `$same` comparing a party's subaccount with the payout's.
    macro_rules! lock_parties {
        ($same:ident) => {
            receivers::table
                .inner_join(receiver_accounts::table)
                .filter(receivers::id.eq(payout.receiver_id.as_uuid()))
                .filter(receivers::subaccount_id.$same(payout.subaccount_id.as_uuid()))
                .filter(receiver_accounts::id.eq(payout.account_id.as_uuid()))
                // Implied by the receiver's subaccount; said so that Citus routes the lock to
                // one shard.
                .filter(receiver_accounts::subaccount_id.$same(payout.subaccount_id.as_uuid()))
                .select((
                    receivers::status,
                    receivers::kyc_status,
                    receiver_accounts::status,
                    receiver_accounts::confirm_status,
                ))
                .for_share()
        };
    }
    let parties: Option<(i16, i16, String, String)> = if citus {
        lock_parties!(eq).first(conn).await.optional()?
    } else {
        lock_parties!(is_not_distinct_from)
            .first(conn)
            .await
            .optional()?
    };
    let Some((receiver_status, kyc, account_status, confirm)) = parties else {
        return Err(PayoutAbort::Stale);
    };
    let (status, payable) = party_status(receiver_status, kyc, &account_status, &confirm);
    if payable && status == payout.status {
        Ok(())
    } else {
        Err(PayoutAbort::Stale)
    }
}

/// Moves the payout's total from `available` to `pending` with one conditional update, so no
/// concurrency can take the balance below zero; `InsufficientBalance` when it does not cover
/// the total (or the subaccount has no balance in the asset).
pub(super) async fn hold(conn: &mut AsyncPgConnection, payout: &Payout) -> Result<(), PayoutAbort> {
    let total = payout.total();
    let held =
        diesel::update(balances::table.find((payout.subaccount_id.as_uuid(), payout.asset.code())))
            .filter(balances::available.ge(total))
            .set((
                balances::available.eq(balances::available - total),
                balances::pending.eq(balances::pending + total),
                balances::updated_at.eq(payout.created_at),
            ))
            .cached()
            .execute(conn)
            .await?;
    if held != 1 {
        return Err(PayoutAbort::InsufficientBalance);
    }
    Ok(())
}

/// Writes a new payout: joins the open batch of its subaccount and asset when it starts
/// `pending`, inserts the row, appends its ledger entries and writes its events (with the
/// batch), committing `key` in the events' statement when given. Returns the batch joined.
pub(super) async fn write_payout(
    conn: &mut AsyncPgConnection,
    payout: &Payout,
    entries: &[LedgerEntry],
    events: &[OutboxEvent],
    key: Option<&WriteKey<Payout>>,
    schedule: &domain::rail::schedule::BatchSchedule,
) -> Result<Option<(Uuid, DateTime<Utc>)>, PayoutAbort> {
    let row = PayoutRow::from(payout);
    let batch = if payout.status == PayoutStatus::Pending {
        Some(
            join_open_batch(
                conn,
                row.subaccount_id,
                &row.asset,
                row.created_at,
                schedule,
            )
            .await?,
        )
    } else {
        None
    };
    let row = PayoutRow {
        batch_id: batch.map(|(id, _)| id),
        ..row
    };
    diesel::insert_into(payouts::table)
        .values(&row)
        .execute(conn)
        .await?;
    insert_entries(conn, entries).await?;
    let commit = key.and_then(|key| written_key(key, payout, batch));
    insert_events(conn, &with_batch(events, payout.id, batch), commit.as_ref()).await?;
    Ok(batch)
}
