//! `DeliveryStore` on PostgreSQL: claims with `FOR UPDATE SKIP LOCKED` and a lease; attempts
//! recorded with conditional updates, every attempt of a batch in one statement.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, Integer, Jsonb, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::delivery::ports::{AttemptRecord, ClaimedEvent, DeliveryStore};
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::ids::{EventId, SubaccountId};
use domain::masking::Secret;
use uuid::Uuid;

use super::PgStore;
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::schema::{subaccounts, webhook_endpoints};

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
        .cached()
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
        let applied = self
            .record(AttemptColumns::new(std::iter::once((event, record))))
            .await?;
        Ok(applied.into_iter().next().unwrap_or(false))
    }

    async fn record_attempts(
        &self,
        done: &[(ClaimedEvent, AttemptRecord)],
    ) -> Result<Vec<bool>, PortError> {
        if done.is_empty() {
            return Ok(Vec::new());
        }
        self.record(AttemptColumns::new(done.iter().map(|(e, r)| (e, r))))
            .await
    }
}

impl PgStore {
    /// Runs [`RECORD_ATTEMPTS`]; says, in order, which attempts applied.
    async fn record(&self, columns: AttemptColumns) -> Result<Vec<bool>, PortError> {
        let mut conn = self.conn().await?;
        let applied: Vec<AppliedRow> = diesel::sql_query(RECORD_ATTEMPTS)
            .bind::<Array<SqlUuid>, _>(&columns.event_id)
            .bind::<Array<Integer>, _>(&columns.attempt)
            .bind::<Array<Timestamptz>, _>(&columns.claimed_until)
            .bind::<Array<SqlUuid>, _>(&columns.subaccount_id)
            .bind::<Array<Text>, _>(&columns.next)
            .bind::<Array<Nullable<Timestamptz>>, _>(&columns.retry_at)
            .bind::<Array<Timestamptz>, _>(&columns.attempted_at)
            .bind::<Array<Text>, _>(&columns.outcome)
            .bind::<Array<Nullable<SmallInt>>, _>(&columns.status_code)
            .bind::<Array<Integer>, _>(&columns.latency_ms)
            .bind::<Array<Nullable<Text>>, _>(&columns.error)
            .cached()
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let applied: HashSet<Uuid> = applied.into_iter().map(|row| row.id).collect();
        Ok(columns
            .event_id
            .iter()
            .map(|id| applied.contains(id))
            .collect())
    }
}

/// Records a set of attempts in one statement (so atomically): for each, applies its next step
/// where its claim still holds (same attempt, same lease deadline, still pending), disables
/// the endpoint for a `disable` step, and appends the attempt; an attempt whose claim has
/// passed on writes nothing. Returns the ids of the events whose attempt applied.
///
/// Parameters, one array element per attempt: event id, attempt, claimed until, subaccount,
/// next step (`delivered`, `retry`, `exhausted` or `disable`), retry at, attempted at, outcome,
/// HTTP status, latency (ms), error.
const RECORD_ATTEMPTS: &str = "\
    WITH input AS ( \
      SELECT * FROM unnest($1::uuid[], $2::int4[], $3::timestamptz[], $4::uuid[], $5::text[], \
                           $6::timestamptz[], $7::timestamptz[], $8::text[], $9::int2[], \
                           $10::int4[], $11::text[]) \
        AS i(event_id, attempt, claimed_until, subaccount_id, next, retry_at, attempted_at, \
             outcome, status_code, latency_ms, error)), \
    applied AS ( \
      UPDATE outbox_events e SET \
        status = CASE i.next WHEN 'delivered' THEN 'delivered' \
                             WHEN 'retry' THEN 'pending' ELSE 'exhausted' END, \
        delivered_at = CASE WHEN i.next = 'delivered' THEN i.attempted_at ELSE e.delivered_at END, \
        next_attempt_at = CASE WHEN i.next = 'retry' THEN i.retry_at ELSE e.next_attempt_at END, \
        claimed_until = NULL, \
        last_error = CASE WHEN i.next = 'delivered' THEN NULL ELSE i.error END \
      FROM input i \
      WHERE e.id = i.event_id AND e.attempts = i.attempt AND e.claimed_until = i.claimed_until \
        AND e.status = 'pending' \
      RETURNING e.id), \
    disabled AS ( \
      UPDATE webhook_endpoints w SET disabled_at = d.attempted_at \
      FROM (SELECT i.subaccount_id, min(i.attempted_at) AS attempted_at \
            FROM input i JOIN applied a ON a.id = i.event_id \
            WHERE i.next = 'disable' GROUP BY i.subaccount_id) d \
      WHERE w.subaccount_id = d.subaccount_id AND w.disabled_at IS NULL), \
    attempts AS ( \
      INSERT INTO webhook_attempts \
        (event_id, attempt, subaccount_id, attempted_at, outcome, status_code, latency_ms, error) \
      SELECT i.event_id, i.attempt, i.subaccount_id, i.attempted_at, i.outcome, i.status_code, \
             i.latency_ms, i.error \
      FROM input i JOIN applied a ON a.id = i.event_id) \
    SELECT id FROM applied";

#[derive(QueryableByName)]
struct AppliedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// The attempts of [`RECORD_ATTEMPTS`] as one array per parameter.
struct AttemptColumns {
    event_id: Vec<Uuid>,
    attempt: Vec<i32>,
    claimed_until: Vec<DateTime<Utc>>,
    subaccount_id: Vec<Uuid>,
    next: Vec<&'static str>,
    retry_at: Vec<Option<DateTime<Utc>>>,
    attempted_at: Vec<DateTime<Utc>>,
    outcome: Vec<&'static str>,
    status_code: Vec<Option<i16>>,
    latency_ms: Vec<i32>,
    error: Vec<Option<String>>,
}

impl AttemptColumns {
    fn new<'a>(done: impl ExactSizeIterator<Item = (&'a ClaimedEvent, &'a AttemptRecord)>) -> Self {
        let mut columns = Self {
            event_id: Vec::with_capacity(done.len()),
            attempt: Vec::with_capacity(done.len()),
            claimed_until: Vec::with_capacity(done.len()),
            subaccount_id: Vec::with_capacity(done.len()),
            next: Vec::with_capacity(done.len()),
            retry_at: Vec::with_capacity(done.len()),
            attempted_at: Vec::with_capacity(done.len()),
            outcome: Vec::with_capacity(done.len()),
            status_code: Vec::with_capacity(done.len()),
            latency_ms: Vec::with_capacity(done.len()),
            error: Vec::with_capacity(done.len()),
        };
        for (event, record) in done {
            let (outcome, status_code, error) = outcome_columns(record.outcome.as_ref());
            let (next, retry_at) = match record.next {
                NextStep::Delivered => ("delivered", None),
                NextStep::RetryAt(when) => ("retry", Some(when)),
                NextStep::Exhausted => ("exhausted", None),
                NextStep::DisableEndpoint => ("disable", None),
            };
            columns.event_id.push(event.event_id.as_uuid());
            columns
                .attempt
                .push(i32::try_from(event.attempt).unwrap_or(i32::MAX));
            columns.claimed_until.push(event.claimed_until);
            columns.subaccount_id.push(event.subaccount_id.as_uuid());
            columns.next.push(next);
            columns.retry_at.push(retry_at);
            columns.attempted_at.push(record.attempted_at);
            columns.outcome.push(outcome);
            columns.status_code.push(status_code);
            columns
                .latency_ms
                .push(i32::try_from(record.latency.as_millis()).unwrap_or(i32::MAX));
            columns.error.push(error);
        }
        columns
    }
}
