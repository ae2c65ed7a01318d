//! `BatchStore` on PostgreSQL. Each step of a batch is one transaction that locks what it
//! changes: closing locks the batch `FOR UPDATE` (waiting for payouts joining it, which hold it
//! `FOR SHARE`) and then its pending payouts; taking over and recording a submission are
//! conditional on the runner's lease. On Citus, where `FOR UPDATE` works only in a statement
//! that runs on one shard, the background passes first read which subaccounts have a batch to
//! handle and then lock within one subaccount at a time.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::audit::AuditEntry;
use domain::batch::cutoff::{CutoffBatches, CutoffStore};
use domain::batch::ports::{BatchStore, ClosePlanner, ClosedBatch, RailReceipt};
use domain::batch::{Batch, BatchStatus};
use domain::events::OutboxEvent;
use domain::ids::{BatchId, EventId, SubaccountId};
use domain::money::Asset;
use domain::payout::{Payout, PayoutStatus};
use uuid::Uuid;

use super::PgStore;
use super::console::insert_audit;
use super::outbox::insert_events;
use super::payout_write::transitions::{PayoutAbort, apply_changes};
use crate::cached::CachedExt;
use crate::errors::{TxError, from_diesel, from_tx};
use crate::rows::PayoutRow;
use crate::schema::{batches, payouts};

/// A `batches` row.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = batches, check_for_backend(diesel::pg::Pg))]
struct BatchRow {
    id: Uuid,
    subaccount_id: Uuid,
    asset: String,
    status: String,
    batch_run_time: DateTime<Utc>,
    total_tx: i32,
    amount: i64,
    process_amount: i64,
    total_failed: i32,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<BatchRow> for Batch {
    type Error = PortError;

    fn try_from(r: BatchRow) -> Result<Self, PortError> {
        Ok(Batch {
            id: BatchId::from_uuid(r.id),
            subaccount_id: SubaccountId::from_uuid(r.subaccount_id),
            asset: Asset::parse(&r.asset).ok_or_else(|| {
                PortError::unknown(format!("batch {} has asset {}", r.id, r.asset))
            })?,
            status: BatchStatus::parse(&r.status).ok_or_else(|| {
                PortError::unknown(format!("batch {} has status {}", r.id, r.status))
            })?,
            batch_run_time: r.batch_run_time,
            total_tx: r.total_tx,
            amount: r.amount,
            process_amount: r.process_amount,
            total_failed: r.total_failed,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// A stored value the domain refuses, as the error that rolls the transaction back.
fn corrupt(e: PortError) -> TxError {
    TxError::invariant(e)
}

/// How many payouts a batch's close moves in one part ([`ClosePlanner::submissions`] and
/// [`apply_changes`]): each part's changes and events (a payout event's payload is a JSON tree
/// of about 2 KiB) are let go before the next part is planned, so closing a batch holds a
/// part's worth of them however many payouts the batch has. Every statement a part sends is
/// one set statement; a batch of 25,000 sends ten parts' worth.
const CLOSE_PART_PAYOUTS: usize = 2_500;

fn to_payouts(rows: Vec<PayoutRow>) -> Result<Vec<Payout>, PortError> {
    rows.into_iter().map(Payout::try_from).collect()
}

/// The batch's payouts in `status`, locked `FOR UPDATE`. (`subaccount`, the batch's, is
/// redundant with the batch but lets Citus run the lock on the one shard that holds them.)
async fn locked_payouts(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    batch: Uuid,
    status: PayoutStatus,
) -> Result<Vec<PayoutRow>, diesel::result::Error> {
    payouts::table
        .filter(payouts::subaccount_id.eq(subaccount))
        .filter(payouts::batch_id.eq(batch))
        .filter(payouts::status.eq(i16::from(status.code())))
        .order(payouts::created_at.asc())
        .select(PayoutRow::as_select())
        .for_update()
        .load(conn)
        .await
}

/// The open batch due first (`batch_run_time` up to `now`), locked `FOR UPDATE`: of
/// `subaccount` when given (on Citus, where `FOR UPDATE` must stay on one shard), else of any
/// subaccount.
async fn lock_due_open_batch(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
    subaccount: Option<Uuid>,
) -> Result<Option<BatchRow>, diesel::result::Error> {
    let due = batches::table
        .filter(batches::status.eq(BatchStatus::Open.as_str()))
        .filter(batches::batch_run_time.le(now))
        .order(batches::batch_run_time.asc())
        .select(BatchRow::as_select());
    match subaccount {
        None => due.for_update().first(conn).await.optional(),
        Some(subaccount) => due
            .filter(batches::subaccount_id.eq(subaccount))
            .for_update()
            .first(conn)
            .await
            .optional(),
    }
}

/// The queued batch whose runner's lease ended first (before `now`), locked `FOR UPDATE SKIP
/// LOCKED`: of `subaccount` when given (on Citus), else of any subaccount.
async fn lock_stale_queued_batch(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
    subaccount: Option<Uuid>,
) -> Result<Option<BatchRow>, diesel::result::Error> {
    let stale = batches::table
        .filter(batches::status.eq(BatchStatus::Queue.as_str()))
        .filter(batches::claimed_until.lt(now))
        .order(batches::claimed_until.asc())
        .select(BatchRow::as_select());
    match subaccount {
        None => stale
            .for_update()
            .skip_locked()
            .first(conn)
            .await
            .optional(),
        Some(subaccount) => stale
            .filter(batches::subaccount_id.eq(subaccount))
            .for_update()
            .skip_locked()
            .first(conn)
            .await
            .optional(),
    }
}

/// How many subaccounts one pass on Citus looks at for a batch to close or take over: the
/// others wait for the next pass (each pass handles one batch anyway).
const CITUS_CANDIDATES: i64 = 16;

/// Where a pass on Citus looks for a batch to lock: the subaccounts that have one in `status`
/// whose `column` (`batch_run_time` or `claimed_until`) is before `now` (up to `now` for
/// `batch_run_time`), the one that waits longest first. A plain read, which Citus runs on every
/// shard; the lock is then taken in one subaccount's shard.
async fn subaccounts_with_batches(
    conn: &mut AsyncPgConnection,
    status: BatchStatus,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, diesel::result::Error> {
    let candidates = batches::table
        .filter(batches::status.eq(status.as_str()))
        .group_by(batches::subaccount_id)
        .select(batches::subaccount_id)
        .limit(CITUS_CANDIDATES);
    if status == BatchStatus::Open {
        candidates
            .filter(batches::batch_run_time.le(now))
            .order(diesel::dsl::min(batches::batch_run_time).asc())
            .load(conn)
            .await
    } else {
        candidates
            .filter(batches::claimed_until.lt(now))
            .order(diesel::dsl::min(batches::claimed_until).asc())
            .load(conn)
            .await
    }
}

/// What a close transaction found.
enum Closing {
    Nothing,
    Closed(ClosedBatch),
}

impl PgStore {
    /// Closes the open batch due first, of `subaccount` when given (see
    /// [`lock_due_open_batch`]), in one transaction.
    async fn close_batch_of(
        &self,
        planner: &ClosePlanner,
        lease_until: DateTime<Utc>,
        subaccount: Option<Uuid>,
    ) -> Result<Option<ClosedBatch>, PortError> {
        let schedule = &self.batch_schedule;
        let now = planner.now();
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, PayoutAbort, _>(async |conn| {
                // Waits for payouts still joining it; a concurrent closer then finds the row no
                // longer open and gets nothing this round.
                let Some(row) = lock_due_open_batch(conn, now, subaccount).await? else {
                    return Ok(Closing::Nothing);
                };
                let batch = Batch::try_from(row).map_err(corrupt)?;
                let (batch_id, batch_subaccount) =
                    (batch.id.as_uuid(), batch.subaccount_id.as_uuid());
                let pending = to_payouts(
                    locked_payouts(conn, batch_subaccount, batch_id, PayoutStatus::Pending).await?,
                )
                .map_err(corrupt)?;
                let plan = planner.plan(&batch, &pending);
                // The payouts move a part at a time, so only one part's changes and events are
                // in memory at once; each part is let go as soon as it is applied.
                let mut submitted = Vec::with_capacity(pending.len());
                let mut pending = pending.into_iter();
                loop {
                    let part: Vec<Payout> = pending.by_ref().take(CLOSE_PART_PAYOUTS).collect();
                    if part.is_empty() {
                        break;
                    }
                    let changes = planner.submissions(&part).map_err(TxError::invariant)?;
                    drop(part);
                    apply_changes(conn, &changes, schedule).await?;
                    submitted.extend(changes.into_iter().map(|c| c.payout));
                }
                let leased = plan.batch.status == BatchStatus::Queue;
                diesel::update(batches::table.find(batch_id))
                    .filter(batches::subaccount_id.eq(batch_subaccount))
                    .set((
                        batches::status.eq(plan.batch.status.as_str()),
                        batches::total_tx.eq(plan.batch.total_tx),
                        batches::amount.eq(plan.batch.amount),
                        batches::claimed_until.eq(leased.then_some(lease_until)),
                        batches::updated_at.eq(plan.batch.updated_at),
                    ))
                    .cached()
                    .execute(conn)
                    .await?;
                insert_events(conn, &plan.events, None).await?;
                Ok(Closing::Closed(ClosedBatch {
                    batch: plan.batch,
                    payouts: submitted,
                    claimed_until: lease_until,
                }))
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(Closing::Nothing) => Ok(None),
            Ok(Closing::Closed(closed)) => Ok(Some(closed)),
            Err(e) => Err(e.into_port("closing a batch")),
        }
    }

    /// Takes over the queued batch whose lease ended first, of `subaccount` when given (see
    /// [`lock_stale_queued_batch`]), in one transaction.
    async fn reclaim_batch_of(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        subaccount: Option<Uuid>,
    ) -> Result<Option<ClosedBatch>, PortError> {
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let Some(row) = lock_stale_queued_batch(conn, now, subaccount).await? else {
                    return Ok(None);
                };
                diesel::update(batches::table.find(row.id))
                    .filter(batches::subaccount_id.eq(row.subaccount_id))
                    .set(batches::claimed_until.eq(lease_until))
                    .cached()
                    .execute(conn)
                    .await?;
                let payouts =
                    locked_payouts(conn, row.subaccount_id, row.id, PayoutStatus::InProgress)
                        .await?;
                Ok(Some((row, payouts)))
            })
            .await
            .map_err(from_diesel)?;
        let Some((row, payouts)) = result else {
            return Ok(None);
        };
        Ok(Some(ClosedBatch {
            batch: Batch::try_from(row)?,
            payouts: to_payouts(payouts)?,
            claimed_until: lease_until,
        }))
    }
}

#[async_trait]
impl BatchStore for PgStore {
    #[tracing::instrument(level = "trace", skip_all)]
    async fn close_due_batch(
        &self,
        planner: &ClosePlanner,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClosedBatch>, PortError> {
        if !self.detect_citus().await? {
            return self.close_batch_of(planner, lease_until, None).await;
        }
        let candidates = {
            let mut conn = self.conn().await?;
            subaccounts_with_batches(&mut conn, BatchStatus::Open, planner.now())
                .await
                .map_err(from_diesel)?
        };
        for subaccount in candidates {
            if let Some(closed) = self
                .close_batch_of(planner, lease_until, Some(subaccount))
                .await?
            {
                return Ok(Some(closed));
            }
        }
        Ok(None)
    }

    #[tracing::instrument(level = "trace", skip_all)]
    async fn reclaim_stale_batch(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClosedBatch>, PortError> {
        if !self.detect_citus().await? {
            return self.reclaim_batch_of(now, lease_until, None).await;
        }
        let candidates = {
            let mut conn = self.conn().await?;
            subaccounts_with_batches(&mut conn, BatchStatus::Queue, now)
                .await
                .map_err(from_diesel)?
        };
        for subaccount in candidates {
            if let Some(reclaimed) = self
                .reclaim_batch_of(now, lease_until, Some(subaccount))
                .await?
            {
                return Ok(Some(reclaimed));
            }
        }
        Ok(None)
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(batch = %closed.batch.id, receipts = receipts.len())
    )]
    async fn record_submission(
        &self,
        closed: &ClosedBatch,
        receipts: &[RailReceipt],
        submitted: &Batch,
        events: &[OutboxEvent],
    ) -> Result<bool, PortError> {
        let id = closed.batch.id.as_uuid();
        // The batch's subaccount, redundant with its id but what routes every statement to one
        // shard on Citus.
        let subaccount = closed.batch.subaccount_id.as_uuid();
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                let moved = diesel::update(batches::table.find(id))
                    .filter(batches::subaccount_id.eq(subaccount))
                    .filter(batches::status.eq(BatchStatus::Queue.as_str()))
                    .filter(batches::claimed_until.eq(closed.claimed_until))
                    .set((
                        batches::status.eq(submitted.status.as_str()),
                        batches::claimed_until.eq(None::<DateTime<Utc>>),
                        batches::updated_at.eq(submitted.updated_at),
                    ))
                    .cached()
                    .execute(conn)
                    .await?;
                if moved != 1 {
                    return Err(TxError::Db(diesel::result::Error::RollbackTransaction));
                }
                // The receipts' references in set statements (a batch may hold 100,000), of at
                // most SET_STATEMENT_ROWS each.
                for receipts in receipts.chunks(super::SET_STATEMENT_ROWS) {
                    let ids: Vec<Uuid> = receipts.iter().map(|r| r.payout_id.as_uuid()).collect();
                    let references: Vec<&str> = receipts
                        .iter()
                        .map(|r| r.provider_reference.as_str())
                        .collect();
                    diesel::sql_query(
                        "UPDATE payouts p SET provider_reference = r.reference \
                         FROM unnest($1::uuid[], $2::text[]) AS r(id, reference) \
                         WHERE p.id = r.id AND p.batch_id = $3 AND p.subaccount_id = $4",
                    )
                    .bind::<Array<SqlUuid>, _>(ids)
                    .bind::<Array<Text>, _>(references)
                    .bind::<SqlUuid, _>(id)
                    .bind::<SqlUuid, _>(subaccount)
                    .cached()
                    .execute(conn)
                    .await?;
                }
                insert_events(conn, events, None).await
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(()) => Ok(true),
            Err(TxError::Db(diesel::result::Error::RollbackTransaction)) => Ok(false),
            Err(e) => Err(from_tx(e)),
        }
    }

    #[tracing::instrument(level = "trace", skip_all, fields(limit = limit))]
    async fn submitted_payouts(&self, limit: u32) -> Result<Vec<Payout>, PortError> {
        let mut conn = self.conn().await?;
        let submitted = batches::table
            .filter(batches::status.eq(BatchStatus::InProgress.as_str()))
            .select(batches::id);
        let rows: Vec<PayoutRow> = payouts::table
            .filter(payouts::batch_id.eq_any(submitted.nullable()))
            .filter(payouts::status.eq(i16::from(PayoutStatus::InProgress.code())))
            .order(payouts::submitted_at.asc())
            .limit(i64::from(limit))
            .select(PayoutRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        to_payouts(rows)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(batch = %batch))]
    async fn finish_batch(
        &self,
        batch: BatchId,
        now: DateTime<Utc>,
        event_id: EventId,
    ) -> Result<Option<Batch>, PortError> {
        let batch = batch.as_uuid();
        // Detected before the connection is taken (the first detection takes one of its own).
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        // On Citus the lock must name the batch's shard: its subaccount is looked up first.
        let subaccount = if citus {
            let found: Option<Uuid> = batches::table
                .find(batch)
                .select(batches::subaccount_id)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            let Some(found) = found else {
                return Ok(None);
            };
            Some(found)
        } else {
            None
        };
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                let in_progress = batches::table
                    .find(batch)
                    .filter(batches::status.eq(BatchStatus::InProgress.as_str()))
                    .select(BatchRow::as_select());
                let row: Option<BatchRow> = match subaccount {
                    None => in_progress.for_update().first(conn).await.optional()?,
                    Some(subaccount) => in_progress
                        .filter(batches::subaccount_id.eq(subaccount))
                        .for_update()
                        .first(conn)
                        .await
                        .optional()?,
                };
                let Some(row) = row else {
                    return Ok(None);
                };
                // A payout still in progress, found through `payouts_batch` without reading the
                // batch's other payouts: the common answer while results come in (each pass
                // of the runner asks for every batch it touched, and a cut-off's batch holds
                // tens of thousands of payouts, which the counts below read whole).
                let waiting: bool = diesel::select(diesel::dsl::exists(
                    payouts::table
                        .filter(payouts::subaccount_id.eq(row.subaccount_id))
                        .filter(payouts::batch_id.eq(batch))
                        .filter(payouts::status.eq(i16::from(PayoutStatus::InProgress.code()))),
                ))
                .get_result(conn)
                .await?;
                if waiting {
                    return Ok(None);
                }
                let counts: Vec<(i16, i64, i64)> = payouts::table
                    .filter(payouts::subaccount_id.eq(row.subaccount_id))
                    .filter(payouts::batch_id.eq(batch))
                    .group_by(payouts::status)
                    .select((
                        payouts::status,
                        diesel::dsl::count_star(),
                        diesel::dsl::sql::<diesel::sql_types::BigInt>(
                            "COALESCE(SUM(payouts.amount), 0)::bigint",
                        ),
                    ))
                    .load(conn)
                    .await?;
                let of = |status: PayoutStatus| {
                    counts
                        .iter()
                        .find(|(s, _, _)| *s == i16::from(status.code()))
                        .map_or((0, 0), |(_, n, sum)| (*n, *sum))
                };
                if of(PayoutStatus::InProgress).0 > 0 {
                    return Ok(None);
                }
                let (failed, _) = of(PayoutStatus::Failed);
                let (_, paid) = of(PayoutStatus::Successful);
                let total_failed = i32::try_from(failed).unwrap_or(i32::MAX);
                let status = BatchStatus::finished(row.total_tx, total_failed);
                diesel::update(batches::table.find(batch))
                    .filter(batches::subaccount_id.eq(row.subaccount_id))
                    .set((
                        batches::status.eq(status.as_str()),
                        batches::process_amount.eq(paid),
                        batches::total_failed.eq(total_failed),
                        batches::updated_at.eq(now),
                    ))
                    .cached()
                    .execute(conn)
                    .await?;
                let finished = Batch {
                    status,
                    process_amount: paid,
                    total_failed,
                    updated_at: now,
                    ..Batch::try_from(row).map_err(corrupt)?
                };
                insert_events(conn, &[OutboxEvent::batch(event_id, &finished, now)], None).await?;
                Ok(Some(finished))
            })
            .await;
        let result = self.after_commit(result);
        result.map_err(from_tx)
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, asset = %asset)
    )]
    async fn bring_forward_open_batch(
        &self,
        subaccount: SubaccountId,
        asset: Asset,
        now: DateTime<Utc>,
    ) -> Result<Option<Batch>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<BatchRow> = diesel::update(batches::table)
            .filter(batches::subaccount_id.eq(subaccount.as_uuid()))
            .filter(batches::asset.eq(asset.code()))
            .filter(batches::status.eq(BatchStatus::Open.as_str()))
            .set(batches::batch_run_time.eq(now))
            .returning(BatchRow::as_returning())
            .cached()
            .get_result(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        row.map(Batch::try_from).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount, batch = %id))]
    async fn find_batch(
        &self,
        subaccount: SubaccountId,
        id: BatchId,
    ) -> Result<Option<Batch>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<BatchRow> = batches::table
            .find(id.as_uuid())
            .filter(batches::subaccount_id.eq(subaccount.as_uuid()))
            .select(BatchRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        row.map(Batch::try_from).transpose()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, batch = %batch)
    )]
    async fn in_progress_payouts(
        &self,
        subaccount: SubaccountId,
        batch: BatchId,
    ) -> Result<Vec<Payout>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<PayoutRow> = payouts::table
            .filter(payouts::subaccount_id.eq(subaccount.as_uuid()))
            .filter(payouts::batch_id.eq(batch.as_uuid()))
            .filter(payouts::status.eq(i16::from(PayoutStatus::InProgress.code())))
            .order(payouts::created_at.asc())
            .select(PayoutRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        to_payouts(rows)
    }
}

/// A batch id an `UPDATE ... RETURNING id` gave back.
#[derive(QueryableByName)]
struct ReturnedId {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

#[async_trait]
impl CutoffStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(asset = %asset))]
    async fn bring_forward_for_cutoff(
        &self,
        asset: Asset,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<CutoffBatches, PortError> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            // A batch closed and leased is being submitted: its file is on its way.
            let sending: i64 = batches::table
                .filter(batches::asset.eq(asset.code()))
                .filter(batches::status.eq(BatchStatus::Queue.as_str()))
                .filter(batches::claimed_until.gt(now))
                .count()
                .get_result(conn)
                .await?;
            if sending > 0 {
                return Ok(CutoffBatches::BeingSent {
                    batches: usize::try_from(sending).unwrap_or(usize::MAX),
                });
            }
            let brought: Vec<ReturnedId> = diesel::sql_query(include_str!("run_cutoff.sql"))
                .bind::<Text, _>(asset.code())
                .bind::<diesel::sql_types::Timestamptz, _>(now)
                .bind::<diesel::sql_types::SmallInt, _>(i16::from(PayoutStatus::Pending.code()))
                .load(conn)
                .await?;
            if brought.is_empty() {
                return Ok(CutoffBatches::BroughtForward(Vec::new()));
            }
            let ids: Vec<Uuid> = brought.into_iter().map(|r| r.id).collect();
            let rows: Vec<BatchRow> = batches::table
                .filter(batches::id.eq_any(&ids))
                .select(BatchRow::as_select())
                .order((batches::subaccount_id.asc(), batches::id.asc()))
                .load(conn)
                .await?;
            insert_audit(conn, audit).await?;
            Ok(CutoffBatches::BroughtForward(
                rows.into_iter()
                    .map(Batch::try_from)
                    .collect::<Result<_, _>>()
                    .map_err(|e: PortError| {
                        diesel::result::Error::DeserializationError(e.to_string().into())
                    })?,
            ))
        })
        .await
        .map_err(from_diesel)
    }
}
