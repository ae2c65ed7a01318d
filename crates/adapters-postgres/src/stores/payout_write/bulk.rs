//! A bulk request's payouts: as a set, written whole or decided (`strategy`), or, when the set
//! fails as a whole, item by item, each in its own savepoint.

use diesel_async::{AsyncConnection, AsyncPgConnection};
use domain::PortError;
use domain::idempotency::WriteKey;
use domain::payout::ports::{
    BulkItemOutcome, BulkPayoutResult, BulkSlot, InsertPayoutError, NewPayout, bulk_item_error,
};

use super::alone::{check_parties, hold, rolled_back_whole, runs_again, write_payout};
use super::decide::{Verdict, accepted, decide};
use super::set_transaction::SetPlans;
use super::set_transaction::in_set_transaction;
use super::set_write::write_set;
use super::transitions::PayoutAbort;
use super::whole::write_whole_then;
use super::{PgStore, Planned, Strategy, Write, idempotency, strategy};
use crate::errors::TxError;

impl PgStore {
    /// [`PayoutStore::insert_payout_bulk`](domain::payout::ports::PayoutStore::insert_payout_bulk).
    pub(super) async fn insert_bulk(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, PortError> {
        match self.insert_bulk_set(slots, atomic, key).await {
            Ok(result) | Err(BulkAbort::Refused(result)) => Ok(result),
            Err(BulkAbort::Payout(e)) if !may_write_again(&e, key.claim().is_some()) => {
                Err(e.into_port("inserting bulk payouts as a set"))
            }
            Err(BulkAbort::Payout(e)) => {
                // Rolled back as a whole (a reference written meanwhile by another request, a
                // lost deadlock), or keyed: item by item, each refusal is its item's alone.
                tracing::debug!(
                    error = %e.into_port("inserting bulk payouts as a set"),
                    "bulk payouts could not be written as a set; writing them item by item"
                );
                self.insert_bulk_by_item(slots, atomic, key).await
            }
        }
    }
}

impl PgStore {
    /// A bulk request in one transaction of set statements ([`super::set_write`]): on plain
    /// PostgreSQL first written whole with its key applied; when anything would refuse an
    /// item (and on Citus), every item decided in request order, then the accepted ones
    /// written together and the key applied. `Refused` for an atomic request with a refused
    /// item (nothing written).
    async fn insert_bulk_set(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, BulkAbort> {
        let schedule = &self.batch_schedule;
        let planned: Vec<Planned<'_>> = slots
            .iter()
            .filter_map(|slot| match slot {
                BulkSlot::Insert(new) => Some(Planned {
                    payout: &new.payout,
                    entries: &new.entries,
                    events: &new.events,
                    key: None,
                }),
                BulkSlot::Rejected(_) => None,
            })
            .collect();
        // Detected before the transaction's connection is taken (the first detection takes a
        // connection of its own).
        let citus = self
            .detect_citus()
            .await
            .map_err(|e| BulkAbort::Payout(PayoutAbort::Tx(TxError::invariant(e))))?;
        let mut conn = self
            .conn()
            .await
            .map_err(|e| BulkAbort::Payout(PayoutAbort::Tx(TxError::invariant(e))))?;
        let rejected = slots.iter().any(|s| matches!(s, BulkSlot::Rejected(_)));
        let chosen = planned.as_slice().first().map(|first| {
            let subaccount = first.payout.subaccount_id.as_uuid();
            let write = Write::Bulk {
                refuses_some: atomic && rejected,
            };
            (
                subaccount,
                strategy(write, citus, subaccount, &planned, &self.open_batches),
            )
        });
        // Decided with the plans chosen, or after a write whole that failed, with generic ones.
        let plans = match chosen {
            Some((_, Strategy::Decided(plans))) => plans,
            _ => SetPlans::on_citus(citus),
        };
        if let Some((subaccount, Strategy::ThreeRoundTrips)) = chosen {
            // Most bulk requests are accepted whole: written at once, as a group of single
            // requests is, the balance locked only by the write's last part (its guarded
            // update) until the commit, instead of from before the writes, so concurrent bulk
            // requests of a subaccount write their payouts side by side rather than one after
            // another. Anything that would refuse an item rolls the attempt back, and the
            // request is then decided item by item below.
            let result = BulkPayoutResult {
                atomic,
                items: slots
                    .iter()
                    .map(|slot| match slot {
                        BulkSlot::Rejected(errors) => BulkItemOutcome::Failed(errors.clone()),
                        BulkSlot::Insert(new) => BulkItemOutcome::Created(new.payout.id),
                    })
                    .collect(),
            };
            let written =
                write_whole_then(&mut conn, subaccount, &planned, schedule, async |conn| {
                    idempotency::mark_committed(conn, key.commit(&result).as_ref())
                        .await
                        .map_err(PayoutAbort::Tx)
                })
                .await;
            match written {
                Ok(_) => return self.after_commit(Ok(result)),
                // Nothing written: decided item by item.
                Err(e) if rolled_back_whole(&e) => tracing::debug!(
                    items = planned.len(),
                    reason = %e.into_port("writing a bulk request whole"),
                    "a bulk request was not accepted whole; deciding its items one by one"
                ),
                // Perhaps committed: the caller writes a keyed request again item by item
                // (its key marking then finds the key committed, if it was, and writes
                // nothing) and answers an unkeyed one with the failure.
                Err(e) => return Err(BulkAbort::Payout(e)),
            }
        }
        let result = in_set_transaction::<_, BulkAbort, _>(&mut conn, plans, async |conn| {
            let verdicts = match planned.as_slice().first() {
                Some(first) => {
                    decide(conn, first.payout.subaccount_id.as_uuid(), &planned, plans).await?
                }
                None => Vec::new(),
            };
            let mut verdict = verdicts.iter();
            let mut items = Vec::with_capacity(slots.len());
            for slot in slots {
                // Only the inserted items were decided: a rejected one takes no verdict.
                let decided = match slot {
                    BulkSlot::Rejected(_) => None,
                    BulkSlot::Insert(_) => verdict.next(),
                };
                items.push(match (slot, decided) {
                    (BulkSlot::Rejected(errors), _) => BulkItemOutcome::Failed(errors.clone()),
                    (BulkSlot::Insert(new), Some(Verdict::Write)) => {
                        BulkItemOutcome::Created(new.payout.id)
                    }
                    (BulkSlot::Insert(_), Some(Verdict::Refuse(refusal))) => {
                        BulkItemOutcome::Failed(bulk_item_error(&refusal.error()).ok_or_else(
                            || {
                                PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
                                    "a refusal without an item error"
                                )))
                            },
                        )?)
                    }
                    (BulkSlot::Insert(_), None) => {
                        return Err(BulkAbort::Payout(PayoutAbort::Tx(TxError::invariant(
                            anyhow::anyhow!("fewer decisions than bulk items"),
                        ))));
                    }
                });
            }
            let result = BulkPayoutResult { atomic, items };
            if atomic && result.failed() > 0 {
                return Err(BulkAbort::Refused(result));
            }
            let written = accepted(&planned, &verdicts);
            if let Some(first) = written.as_slice().first() {
                let subaccount = first.payout.subaccount_id.as_uuid();
                write_set(conn, subaccount, &written, schedule, plans).await?;
            }
            idempotency::mark_committed(conn, key.commit(&result).as_ref())
                .await
                .map_err(PayoutAbort::Tx)?;
            Ok(result)
        })
        .await;
        self.after_commit(result)
    }

    /// A bulk request item by item, each in its own savepoint, in one transaction; run again
    /// when PostgreSQL rolls that transaction back to break a deadlock, as a single payout is
    /// (the first attempt of a bulk request is often a deadlock's victim already, and its
    /// items lock the balance row one after another while others wait to take it whole).
    async fn insert_bulk_by_item(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, PortError> {
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        let mut attempt = 1;
        loop {
            let result = self
                .insert_bulk_by_item_once(&mut conn, citus, slots, atomic, key)
                .await;
            match self.after_commit(result) {
                Err(BulkAbort::Payout(PayoutAbort::Tx(ref e)))
                    if runs_again(e, &mut attempt, "a bulk request's items") => {}
                Ok(result) | Err(BulkAbort::Refused(result)) => return Ok(result),
                Err(BulkAbort::Payout(e)) => return Err(e.into_port("inserting bulk payouts")),
            }
        }
    }

    /// One attempt of [`Self::insert_bulk_by_item`].
    async fn insert_bulk_by_item_once(
        &self,
        conn: &mut AsyncPgConnection,
        citus: bool,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, BulkAbort> {
        let schedule = &self.batch_schedule;
        conn.transaction::<_, BulkAbort, _>(async |conn| {
            // Every receiver and account first (`FOR SHARE`, as a single payout locks
            // them), so no party lock is awaited while the balance row is held.
            let mut stale = Vec::with_capacity(slots.len());
            for slot in slots {
                stale.push(match slot {
                    BulkSlot::Insert(new) => match check_parties(conn, &new.payout, citus).await {
                        Ok(()) => false,
                        Err(PayoutAbort::Stale) => true,
                        Err(e) => return Err(BulkAbort::Payout(e)),
                    },
                    BulkSlot::Rejected(_) => false,
                });
            }
            let mut items = Vec::with_capacity(slots.len());
            for (slot, stale) in slots.iter().zip(stale) {
                let refused = match slot {
                    BulkSlot::Rejected(errors) => Some(errors.clone()),
                    BulkSlot::Insert(_) if stale => bulk_item_error(&InsertPayoutError::Stale),
                    BulkSlot::Insert(new) => {
                        // A savepoint per item: a refused item leaves no trace and the
                        // transaction goes on with the next.
                        let attempt = conn
                            .transaction::<_, PayoutAbort, _>(async |conn| {
                                insert_planned(conn, new, schedule).await
                            })
                            .await;
                        match attempt {
                            Ok(()) => None,
                            Err(PayoutAbort::InsufficientBalance) => {
                                bulk_item_error(&InsertPayoutError::InsufficientBalance)
                            }
                            Err(PayoutAbort::Tx(e))
                                if e.unique_violation() == Some("payouts_reference_unique") =>
                            {
                                bulk_item_error(&InsertPayoutError::DuplicateReference)
                            }
                            Err(e) => return Err(BulkAbort::Payout(e)),
                        }
                    }
                };
                items.push(match (refused, slot) {
                    (Some(errors), _) => BulkItemOutcome::Failed(errors),
                    (None, BulkSlot::Insert(new)) => BulkItemOutcome::Created(new.payout.id),
                    (None, BulkSlot::Rejected(errors)) => BulkItemOutcome::Failed(errors.clone()),
                });
            }
            let result = BulkPayoutResult { atomic, items };
            if atomic && result.failed() > 0 {
                return Err(BulkAbort::Refused(result));
            }
            idempotency::mark_committed(conn, key.commit(&result).as_ref())
                .await
                .map_err(PayoutAbort::Tx)
                .map_err(BulkAbort::Payout)?;
            Ok(result)
        })
        .await
    }
}

/// Whether a bulk request whose set transaction failed with `abort` may be written again item
/// by item: when the failure rolled it back before its commit, or when the request is keyed,
/// since the item-by-item transaction marks the same claim and so writes nothing if the first
/// one did commit. An unkeyed request whose failure may have come after its commit (a lost
/// connection) is answered with the failure instead: writing it again could pay twice.
fn may_write_again(abort: &PayoutAbort, keyed: bool) -> bool {
    keyed || rolled_back_whole(abort)
}

/// Why a bulk insert rolled back as a whole.
#[derive(Debug)]
enum BulkAbort {
    /// An atomic request had a refused item: its result, nothing written.
    Refused(BulkPayoutResult),
    /// A failure no item can absorb.
    Payout(PayoutAbort),
}

impl From<PayoutAbort> for BulkAbort {
    fn from(e: PayoutAbort) -> Self {
        Self::Payout(e)
    }
}

impl From<diesel::result::Error> for BulkAbort {
    fn from(e: diesel::result::Error) -> Self {
        Self::Payout(PayoutAbort::from(e))
    }
}

/// One planned payout of a bulk request, its parties already checked: the hold first (one
/// conditional update: the balance row stays locked by the request's transaction, so each
/// item sees what the items before it left), then the payout in its batch, its ledger entries
/// and its events.
async fn insert_planned(
    conn: &mut AsyncPgConnection,
    new: &NewPayout,
    schedule: &domain::rail::schedule::BatchSchedule,
) -> Result<(), PayoutAbort> {
    hold(conn, &new.payout).await?;
    write_payout(conn, &new.payout, &new.entries, &new.events, None, schedule).await?;
    Ok(())
}

#[cfg(test)]
mod bulk_retry_tests {
    use super::{PayoutAbort, may_write_again};
    use crate::errors::TxError;

    #[test]
    fn only_a_keyed_or_rolled_back_bulk_request_is_written_again() {
        let in_doubt = || PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!("connection lost")));
        assert!(!may_write_again(&in_doubt(), false));
        assert!(may_write_again(&in_doubt(), true));
        for rolled_back in [PayoutAbort::InsufficientBalance, PayoutAbort::Stale] {
            assert!(may_write_again(&rolled_back, false));
        }
    }
}
