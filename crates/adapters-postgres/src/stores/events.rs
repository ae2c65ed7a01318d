//! Operators' view of the outbox: events with their attempts, and resending.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::delivery::history::{AttemptSummary, EventStatus, EventSummary, ResendSelection};
use domain::error::OperatorError;
use domain::ids::{EventId, SubaccountId};
use domain::ledger::{LedgerCheck, LedgerDiscrepancy};
use uuid::Uuid;

use super::PgStore;
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::schema::{outbox_events, webhook_attempts};

type EventRow = (
    Uuid,
    String,
    Uuid,
    i32,
    String,
    DateTime<Utc>,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<String>,
);
type AttemptRow = (
    Uuid,
    DateTime<Utc>,
    i32,
    String,
    Option<i16>,
    i32,
    Option<String>,
);

#[derive(diesel::QueryableByName)]
struct LedgerRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Text)]
    asset: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    available: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pending: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    ledger_available: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    ledger_pending: i64,
}

impl PgStore {
    pub(crate) async fn ledger_check(&self) -> Result<LedgerCheck, OperatorError> {
        let mut conn = self.conn().await?;
        let rows: Vec<LedgerRow> = diesel::sql_query(
            "SELECT subaccount_id, asset, \
                    coalesce(b.available, 0) AS available, coalesce(b.pending, 0) AS pending, \
                    coalesce(l.available, 0)::bigint AS ledger_available, \
                    coalesce(l.pending, 0)::bigint AS ledger_pending \
             FROM balances b FULL OUTER JOIN ( \
               SELECT subaccount_id, asset, sum(available_delta) AS available, sum(pending_delta) AS pending \
               FROM ledger_entries GROUP BY subaccount_id, asset) l USING (subaccount_id, asset) \
             ORDER BY subaccount_id, asset",
        )
        .load(&mut conn)
        .await
        .map_err(from_diesel)?;
        let checked = u64::try_from(rows.len()).unwrap_or(u64::MAX);
        let discrepancies = rows
            .into_iter()
            .filter(|r| r.available != r.ledger_available || r.pending != r.ledger_pending)
            .map(|r| LedgerDiscrepancy {
                subaccount_id: SubaccountId::from_uuid(r.subaccount_id),
                asset: r.asset,
                available: r.available,
                pending: r.pending,
                ledger_available: r.ledger_available,
                ledger_pending: r.ledger_pending,
            })
            .collect();
        Ok(LedgerCheck {
            checked,
            discrepancies,
        })
    }

    pub(crate) async fn event_summaries(
        &self,
        subaccount: SubaccountId,
        object: Option<Uuid>,
        status: Option<EventStatus>,
        since: Option<DateTime<Utc>>,
        before: Option<EventId>,
        limit: u32,
    ) -> Result<Vec<EventSummary>, OperatorError> {
        let mut conn = self.conn().await?;
        let mut query = outbox_events::table
            .filter(outbox_events::subaccount_id.eq(subaccount.as_uuid()))
            .into_boxed();
        if let Some(id) = before {
            // The position first (the subaccount's own event, one shard on Citus), then one
            // range of the subaccount's events.
            let at: Option<DateTime<Utc>> = outbox_events::table
                .filter(outbox_events::subaccount_id.eq(subaccount.as_uuid()))
                .filter(outbox_events::id.eq(id.as_uuid()))
                .select(outbox_events::created_at)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            // An unknown position (or another subaccount's event) pages from nothing.
            let Some(at) = at else {
                return Ok(Vec::new());
            };
            query = query.filter(
                outbox_events::created_at
                    .lt(at)
                    .or(outbox_events::created_at
                        .eq(at)
                        .and(outbox_events::id.lt(id.as_uuid()))),
            );
        }
        if let Some(object) = object {
            query = query.filter(outbox_events::object_id.eq(object));
        }
        if let Some(status) = status {
            query = query.filter(outbox_events::status.eq(status.as_str()));
        }
        if let Some(since) = since {
            query = query.filter(outbox_events::created_at.ge(since));
        }
        let events: Vec<EventRow> = query
            .order((outbox_events::created_at.desc(), outbox_events::id.desc()))
            .limit(i64::from(limit))
            .select((
                outbox_events::id,
                outbox_events::event_type,
                outbox_events::object_id,
                outbox_events::sequence,
                outbox_events::status,
                outbox_events::created_at,
                outbox_events::next_attempt_at,
                outbox_events::delivered_at,
                outbox_events::last_error,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let ids: Vec<Uuid> = events.iter().map(|e| e.0).collect();
        let attempts: Vec<AttemptRow> = webhook_attempts::table
            .filter(webhook_attempts::event_id.eq_any(&ids))
            .order((
                webhook_attempts::attempted_at.asc(),
                webhook_attempts::id.asc(),
            ))
            .select((
                webhook_attempts::event_id,
                webhook_attempts::attempted_at,
                webhook_attempts::attempt,
                webhook_attempts::outcome,
                webhook_attempts::status_code,
                webhook_attempts::latency_ms,
                webhook_attempts::error,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(events
            .into_iter()
            .map(
                |(
                    id,
                    event_type,
                    object_id,
                    sequence,
                    status,
                    created_at,
                    next_attempt_at,
                    delivered_at,
                    last_error,
                )| {
                    EventSummary {
                        id: EventId::from_uuid(id),
                        event_type,
                        object_id,
                        sequence,
                        status,
                        created_at,
                        next_attempt_at,
                        delivered_at,
                        last_error,
                        attempts: attempts
                            .iter()
                            .filter(|a| a.0 == id)
                            .map(
                                |(
                                    _,
                                    attempted_at,
                                    attempt,
                                    outcome,
                                    status_code,
                                    latency_ms,
                                    error,
                                )| AttemptSummary {
                                    attempted_at: *attempted_at,
                                    attempt: *attempt,
                                    outcome: outcome.clone(),
                                    status_code: *status_code,
                                    latency_ms: *latency_ms,
                                    error: error.clone(),
                                },
                            )
                            .collect(),
                    }
                },
            )
            .collect())
    }

    pub(crate) async fn requeue(
        &self,
        selection: &ResendSelection,
        now: DateTime<Utc>,
        audit: &domain::audit::AuditEntry,
    ) -> Result<u64, OperatorError> {
        let reset = (
            outbox_events::status.eq("pending"),
            outbox_events::attempts.eq(0),
            outbox_events::next_attempt_at.eq(now),
            outbox_events::claimed_until.eq(None::<DateTime<Utc>>),
            outbox_events::delivered_at.eq(None::<DateTime<Utc>>),
        );
        let mut conn = self.conn().await?;
        let updated = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = match selection {
                    ResendSelection::One(id) => {
                        diesel::update(outbox_events::table.find(id.as_uuid()))
                            .set(reset)
                            .cached()
                            .execute(conn)
                            .await?
                    }
                    ResendSelection::Range {
                        subaccount,
                        since,
                        until,
                    } => {
                        diesel::update(outbox_events::table)
                            .filter(outbox_events::subaccount_id.eq(subaccount.as_uuid()))
                            .filter(outbox_events::created_at.ge(since))
                            .filter(outbox_events::created_at.lt(until))
                            .set(reset)
                            .cached()
                            .execute(conn)
                            .await?
                    }
                };
                if updated > 0 {
                    super::console::insert_audit(conn, audit).await?;
                }
                Ok(updated)
            })
            .await
            .map_err(from_diesel)?;
        Ok(u64::try_from(updated).unwrap_or(0))
    }
}
