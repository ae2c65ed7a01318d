//! `DeliveryStore` on PostgreSQL: claims with `FOR UPDATE SKIP LOCKED` and a lease, attempts
//! recorded with conditional updates.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Integer, Jsonb, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::delivery::ports::{AttemptRecord, ClaimedEvent, DeliveryStore};
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::ids::{EventId, SubaccountId};
use domain::masking::Secret;
use uuid::Uuid;

use super::PgStore;
use crate::errors::from_diesel;
use crate::schema::{outbox_events, subaccounts, webhook_attempts, webhook_endpoints};

#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
    #[diesel(sql_type = Timestamptz)]
    claimed_until: DateTime<Utc>,
}

type EndpointRow = (
    Uuid,
    Option<String>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

/// A subaccount's webhook endpoint, secrets decrypted.
struct Endpoint {
    url: Option<String>,
    disabled: bool,
    secrets: Vec<Secret<String>>,
}

/// The associated data that binds a webhook secret to its subaccount (see `set_webhook`).
pub(crate) fn webhook_context(subaccount: Uuid) -> Vec<u8> {
    [b"webhook:".as_slice(), subaccount.as_bytes()].concat()
}

impl PgStore {
    async fn endpoints(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        ids: Vec<Uuid>,
        now: DateTime<Utc>,
    ) -> Result<HashMap<Uuid, Endpoint>, PortError> {
        let rows: Vec<EndpointRow> = subaccounts::table
            .left_join(webhook_endpoints::table)
            .filter(subaccounts::id.eq_any(ids))
            .select((
                subaccounts::id,
                subaccounts::postback_url,
                webhook_endpoints::secret.nullable(),
                webhook_endpoints::previous_secret.nullable(),
                webhook_endpoints::previous_until.nullable(),
                webhook_endpoints::disabled_at.nullable(),
            ))
            .load(conn)
            .await
            .map_err(from_diesel)?;
        let mut endpoints = HashMap::new();
        for (id, url, current, previous, previous_until, disabled_at) in rows {
            let context = webhook_context(id);
            let open = |sealed: &[u8]| {
                self.vault
                    .open_secret(sealed, &context)
                    .map_err(|e| PortError::Unknown(anyhow::anyhow!("webhook secret of {id}: {e}")))
            };
            let mut secrets = Vec::new();
            if let Some(sealed) = current {
                secrets.push(open(&sealed)?);
            }
            if let (Some(sealed), Some(until)) = (previous, previous_until)
                && until > now
            {
                secrets.push(open(&sealed)?);
            }
            endpoints.insert(
                id,
                Endpoint {
                    url,
                    disabled: disabled_at.is_some(),
                    secrets,
                },
            );
        }
        Ok(endpoints)
    }
}

fn outcome_columns(
    outcome: Option<&DeliveryOutcome>,
) -> (&'static str, Option<i16>, Option<String>) {
    match outcome {
        None => ("skipped", None, Some("no enabled postback URL".to_owned())),
        Some(DeliveryOutcome::Delivered { status }) => {
            ("delivered", i16::try_from(*status).ok(), None)
        }
        Some(DeliveryOutcome::Gone) => (
            "gone",
            Some(410),
            Some("endpoint answered 410 Gone".to_owned()),
        ),
        Some(DeliveryOutcome::Failed { status, error, .. }) => (
            "failed",
            status.and_then(|s| i16::try_from(s).ok()),
            Some(error.clone()),
        ),
        Some(DeliveryOutcome::Refused { reason }) => ("refused", None, Some(reason.clone())),
    }
}

/// Why a record transaction rolled back.
enum RecordAbort {
    Db(diesel::result::Error),
    Superseded,
}

impl From<diesel::result::Error> for RecordAbort {
    fn from(e: diesel::result::Error) -> Self {
        Self::Db(e)
    }
}

#[async_trait]
impl DeliveryStore for PgStore {
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Vec<ClaimedEvent>, PortError> {
        let lease = chrono::Duration::from_std(lease).map_err(|e| PortError::Unknown(e.into()))?;
        let mut conn = self.conn().await?;
        let rows: Vec<ClaimedRow> = diesel::sql_query(
            "WITH due AS ( \
               SELECT id FROM outbox_events \
               WHERE status = 'pending' AND next_attempt_at <= $1 \
                 AND (claimed_until IS NULL OR claimed_until < $1) \
               ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
             UPDATE outbox_events e SET attempts = e.attempts + 1, claimed_until = $3 \
             FROM due WHERE e.id = due.id \
             RETURNING e.id, e.subaccount_id, e.attempts, e.payload, e.claimed_until",
        )
        .bind::<Timestamptz, _>(now)
        .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
        .bind::<Timestamptz, _>(now + lease)
        .load(&mut conn)
        .await
        .map_err(from_diesel)?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let mut subaccount_ids: Vec<Uuid> = rows.iter().map(|r| r.subaccount_id).collect();
        subaccount_ids.sort_unstable();
        subaccount_ids.dedup();
        let endpoints = self.endpoints(&mut conn, subaccount_ids, now).await?;
        rows.into_iter()
            .map(|row| {
                let endpoint = endpoints.get(&row.subaccount_id);
                Ok(ClaimedEvent {
                    event_id: EventId::from_uuid(row.id),
                    subaccount_id: SubaccountId::from_uuid(row.subaccount_id),
                    attempt: u32::try_from(row.attempts).unwrap_or(0),
                    claimed_until: row.claimed_until,
                    body: serde_json::to_vec(&row.payload)
                        .map_err(|e| PortError::Unknown(e.into()))?,
                    url: endpoint.and_then(|e| e.url.clone()),
                    endpoint_disabled: endpoint.is_some_and(|e| e.disabled),
                    secrets: endpoint.map(|e| e.secrets.clone()).unwrap_or_default(),
                })
            })
            .collect()
    }

    async fn record_attempt(
        &self,
        event: &ClaimedEvent,
        record: &AttemptRecord,
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, RecordAbort, _>(async |conn| {
                if record_one(conn, event, record).await? {
                    Ok(())
                } else {
                    Err(RecordAbort::Superseded)
                }
            })
            .await;
        match result {
            Ok(()) => Ok(true),
            Err(RecordAbort::Superseded) => Ok(false),
            Err(RecordAbort::Db(e)) => Err(from_diesel(e)),
        }
    }

    async fn record_attempts(
        &self,
        done: &[(ClaimedEvent, AttemptRecord)],
    ) -> Result<Vec<bool>, PortError> {
        if done.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let mut applied = Vec::with_capacity(done.len());
            for (event, record) in done {
                // A superseded claim writes nothing (its UPDATE matched no row), so the
                // others can still commit with it in one transaction.
                applied.push(record_one(conn, event, record).await?);
            }
            Ok(applied)
        })
        .await
        .map_err(from_diesel)
    }
}

/// Records one attempt on `conn` (inside the caller's transaction): applies `record.next` where
/// the claim still holds, then appends the attempt. `Ok(false)` when the claim had passed on;
/// then nothing was written.
async fn record_one(
    conn: &mut diesel_async::AsyncPgConnection,
    event: &ClaimedEvent,
    record: &AttemptRecord,
) -> Result<bool, diesel::result::Error> {
    let id = event.event_id.as_uuid();
    let subaccount = event.subaccount_id.as_uuid();
    let attempt = i32::try_from(event.attempt).unwrap_or(i32::MAX);
    let at = record.attempted_at;
    let (outcome, status_code, error) = outcome_columns(record.outcome.as_ref());
    let latency_ms = i32::try_from(record.latency.as_millis()).unwrap_or(i32::MAX);
    let next = record.next;
    let claimed = outbox_events::table
        .filter(outbox_events::id.eq(id))
        .filter(outbox_events::attempts.eq(attempt))
        .filter(outbox_events::claimed_until.eq(event.claimed_until))
        .filter(outbox_events::status.eq("pending"));
    let updated = match next {
        NextStep::Delivered => {
            diesel::update(claimed)
                .set((
                    outbox_events::status.eq("delivered"),
                    outbox_events::delivered_at.eq(Some(at)),
                    outbox_events::claimed_until.eq(None::<DateTime<Utc>>),
                    outbox_events::last_error.eq(None::<String>),
                ))
                .execute(conn)
                .await?
        }
        NextStep::RetryAt(when) => {
            diesel::update(claimed)
                .set((
                    outbox_events::next_attempt_at.eq(when),
                    outbox_events::claimed_until.eq(None::<DateTime<Utc>>),
                    outbox_events::last_error.eq(error.clone()),
                ))
                .execute(conn)
                .await?
        }
        NextStep::Exhausted | NextStep::DisableEndpoint => {
            diesel::update(claimed)
                .set((
                    outbox_events::status.eq("exhausted"),
                    outbox_events::claimed_until.eq(None::<DateTime<Utc>>),
                    outbox_events::last_error.eq(error.clone()),
                ))
                .execute(conn)
                .await?
        }
    };
    if updated != 1 {
        return Ok(false);
    }
    if next == NextStep::DisableEndpoint {
        diesel::update(webhook_endpoints::table.find(subaccount))
            .filter(webhook_endpoints::disabled_at.is_null())
            .set(webhook_endpoints::disabled_at.eq(Some(at)))
            .execute(conn)
            .await?;
    }
    diesel::insert_into(webhook_attempts::table)
        .values((
            webhook_attempts::event_id.eq(id),
            webhook_attempts::attempt.eq(attempt),
            webhook_attempts::subaccount_id.eq(subaccount),
            webhook_attempts::attempted_at.eq(at),
            webhook_attempts::outcome.eq(outcome),
            webhook_attempts::status_code.eq(status_code),
            webhook_attempts::latency_ms.eq(latency_ms),
            webhook_attempts::error.eq(error),
        ))
        .execute(conn)
        .await?;
    Ok(true)
}
