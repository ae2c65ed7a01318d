//! `DeliveryStore` on PostgreSQL: claims with `FOR UPDATE SKIP LOCKED` and a lease (on Citus,
//! one subaccount at a time); attempts recorded with conditional updates, every attempt of a
//! batch in one statement.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, Bytea, Integer, Jsonb, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::delivery::ports::{AttemptRecord, Claim, ClaimedEvent, DeliveryStore};
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::ids::{EventId, SubaccountId};
use domain::masking::Secret;
use uuid::Uuid;

use super::PgStore;
use super::claims::claim_by_subaccount;
use crate::cached::CachedExt;
use crate::errors::from_diesel;

#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    /// `NULL` for an event given up as skipped; every other column below is then `NULL` too.
    #[diesel(sql_type = Nullable<Text>)]
    postback_url: Option<String>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    payload: Option<serde_json::Value>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    claimed_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Bytea>)]
    secret: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Bytea>)]
    previous_secret: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    previous_until: Option<DateTime<Utc>>,
}

/// Why an event given up by the claim, or as it was written, was not sent.
pub(crate) const NO_ENDPOINT: &str = "no enabled postback URL";

/// Whether a subaccount `s` with its endpoint `w` (left-joined: null when it has none) has an
/// enabled postback URL its events can be sent to. (A set of new payouts gives up its events as
/// it writes them by the same rule: `delivery` in `payout_write/sql/write_set.sql`.)
macro_rules! endpoint_enabled {
    () => {
        "s.postback_url IS NOT NULL AND w.disabled_at IS NULL"
    };
}

/// Takes due events in one statement (so atomically), oldest due first, skipping rows another
/// worker holds. Each one's attempt count goes up. An event whose subaccount has a postback URL
/// and no disabled endpoint is claimed until the lease deadline and returned with its URL and
/// sealed secrets. Any other is given up here: exhausted, with a `skipped` attempt appended,
/// and returned with only its id, subaccount and attempt.
///
/// Parameters: now, limit, lease deadline, the error of a skipped attempt; `$subaccount` is a
/// further condition on the events (empty, or one on `$5`).
macro_rules! claim_due {
    ($subaccount:literal) => {
        concat!(
            "WITH due AS ( \
               SELECT id, subaccount_id FROM outbox_events \
               WHERE status = 'pending' AND next_attempt_at <= $1 \
                 AND (claimed_until IS NULL OR claimed_until < $1)",
            $subaccount,
            " ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED), \
             target AS ( \
               SELECT due.id, s.postback_url, w.secret, w.previous_secret, w.previous_until, ",
            endpoint_enabled!(),
            " AS deliverable \
               FROM due JOIN subaccounts s ON s.id = due.subaccount_id \
               LEFT JOIN webhook_endpoints w ON w.subaccount_id = due.subaccount_id), \
             taken AS ( \
               UPDATE outbox_events e SET attempts = e.attempts + 1, \
                 claimed_until = CASE WHEN t.deliverable THEN $3 END, \
                 status = CASE WHEN t.deliverable THEN e.status ELSE 'exhausted' END, \
                 last_error = CASE WHEN t.deliverable THEN e.last_error ELSE $4 END \
               FROM target t WHERE e.id = t.id",
            $subaccount,
            " RETURNING e.id, e.subaccount_id, e.attempts, e.payload, e.claimed_until), \
             skipped AS ( \
               INSERT INTO webhook_attempts \
                 (event_id, attempt, subaccount_id, attempted_at, outcome, status_code, \
                  latency_ms, error) \
               SELECT k.id, k.attempts, k.subaccount_id, $1, 'skipped', NULL, 0, $4 \
               FROM taken k JOIN target t ON t.id = k.id WHERE NOT t.deliverable) \
             SELECT k.id, k.subaccount_id, k.attempts, \
                    CASE WHEN t.deliverable THEN t.postback_url END AS postback_url, \
                    CASE WHEN t.deliverable THEN k.payload END AS payload, \
                    k.claimed_until, \
                    CASE WHEN t.deliverable THEN t.secret END AS secret, \
                    CASE WHEN t.deliverable THEN t.previous_secret END AS previous_secret, \
                    CASE WHEN t.deliverable THEN t.previous_until END AS previous_until \
             FROM taken k JOIN target t ON t.id = k.id"
        )
    };
}

/// The claim of due events of every subaccount (plain PostgreSQL).
const CLAIM_DUE: &str = claim_due!("");

/// Set in the claim's transaction, before [`CLAIM_DUE`] is planned: its plans walk the due
/// index (`outbox_events_due`) in order rather than gather the due rows in a bitmap and sort
/// them. Every event that leaves `pending` leaves a dead entry in that index until VACUUM. A
/// walk marks the entries of dead rows as dead in the index itself, so the next claim skips them
/// without visiting the table; a bitmap scan cannot, so each claim read every event given up or
/// delivered since the last VACUUM again, and claims grew dearer until the next one. Under the
/// payout benchmark a claim of about 11 events read 1 100–1 200 buffers and took 3–4 ms of
/// PostgreSQL's time when it settled on the bitmap plan; walking the index, 360–450 buffers and
/// 0.7–0.9 ms.
const WALK_THE_DUE_INDEX: &str = "SET LOCAL enable_bitmapscan = off";

/// The claim of one subaccount's due events (`$5`), on Citus: there `FOR UPDATE` works only in
/// a statement that runs on one shard, which the subaccount picks (the events are distributed
/// by it, and `webhook_endpoints` is colocated with them).
const CLAIM_DUE_OF_SUBACCOUNT: &str = claim_due!(" AND subaccount_id = $5");

/// The subaccounts of the `$2` (limit) oldest due events (the conditions of [`claim_due!`];
/// `$1` now), the one with the oldest due event first: a plain read, which Citus runs on every
/// shard, to choose the subaccounts to claim from with [`CLAIM_DUE_OF_SUBACCOUNT`] (see
/// [`claim_by_subaccount`]). They are the subaccounts of the events the claim of every
/// subaccount takes on plain PostgreSQL. Each shard walks its due index (`outbox_events_due`)
/// for its `$2` oldest; grouping every due event by subaccount instead read the whole backlog on
/// every claim (at 190 000 events waiting on a Citus cluster, 108–385 ms a claim, against
/// 10 ms, and delivery fell to 90 events a second).
pub(super) const SUBACCOUNTS_WITH_DUE_EVENTS: &str = "\
    SELECT subaccount_id FROM ( \
      SELECT subaccount_id, next_attempt_at FROM outbox_events \
      WHERE status = 'pending' AND next_attempt_at <= $1 \
        AND (claimed_until IS NULL OR claimed_until < $1) \
      ORDER BY next_attempt_at LIMIT $2) oldest \
    GROUP BY subaccount_id ORDER BY min(next_attempt_at)";

/// The associated data that binds a webhook secret to its subaccount (see `set_webhook`).
pub(crate) fn webhook_context(subaccount: Uuid) -> Vec<u8> {
    [b"webhook:".as_slice(), subaccount.as_bytes()].concat()
}

impl PgStore {
    /// The signing secrets of a claimed row: the current one, then the previous one while its
    /// overlap lasts.
    fn signing_secrets(
        &self,
        row: &ClaimedRow,
        now: DateTime<Utc>,
    ) -> Result<Vec<Secret<String>>, PortError> {
        let context = webhook_context(row.subaccount_id);
        let open = |sealed: &[u8]| {
            self.vault.open_secret(sealed, &context).map_err(|e| {
                PortError::Unknown(anyhow::anyhow!(
                    "webhook secret of {}: {e}",
                    row.subaccount_id
                ))
            })
        };
        let mut secrets = Vec::new();
        if let Some(sealed) = &row.secret {
            secrets.push(open(sealed)?);
        }
        if let (Some(sealed), Some(until)) = (&row.previous_secret, row.previous_until)
            && until > now
        {
            secrets.push(open(sealed)?);
        }
        Ok(secrets)
    }
}

fn outcome_columns(outcome: &DeliveryOutcome) -> (&'static str, Option<i16>, Option<String>) {
    match outcome {
        DeliveryOutcome::Delivered { status } => ("delivered", i16::try_from(*status).ok(), None),
        DeliveryOutcome::Gone => (
            "gone",
            Some(410),
            Some("endpoint answered 410 Gone".to_owned()),
        ),
        DeliveryOutcome::Failed { status, error, .. } => (
            "failed",
            status.and_then(|s| i16::try_from(s).ok()),
            Some(error.clone()),
        ),
        DeliveryOutcome::Refused { reason } => ("refused", None, Some(reason.clone())),
    }
}

#[async_trait]
impl DeliveryStore for PgStore {
    #[tracing::instrument(level = "trace", skip_all, fields(limit = limit))]
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Claim, PortError> {
        let lease = chrono::Duration::from_std(lease).map_err(|e| PortError::Unknown(e.into()))?;
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let lease_until = now + lease;
        let rows: Vec<ClaimedRow> = if self.detect_citus().await? {
            let mut conn = self.conn().await?;
            claim_by_subaccount(
                &mut conn,
                SUBACCOUNTS_WITH_DUE_EVENTS,
                now,
                limit,
                |subaccount, remaining| {
                    diesel::sql_query(CLAIM_DUE_OF_SUBACCOUNT)
                        .bind::<Timestamptz, _>(now)
                        .bind::<Integer, _>(remaining)
                        .bind::<Timestamptz, _>(lease_until)
                        .bind::<Text, _>(NO_ENDPOINT)
                        .bind::<SqlUuid, _>(subaccount)
                        .cached()
                },
            )
            .await?
        } else {
            let mut conn = self.conn().await?;
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                // See `WALK_THE_DUE_INDEX`.
                diesel::sql_query(WALK_THE_DUE_INDEX)
                    .cached()
                    .execute(conn)
                    .await?;
                diesel::sql_query(CLAIM_DUE)
                    .bind::<Timestamptz, _>(now)
                    .bind::<Integer, _>(limit)
                    .bind::<Timestamptz, _>(lease_until)
                    .bind::<Text, _>(NO_ENDPOINT)
                    .cached()
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel)?
        };
        let mut claim = Claim::default();
        // Secrets are opened once per subaccount in the batch.
        let mut secrets: HashMap<Uuid, Vec<Secret<String>>> = HashMap::new();
        for row in rows {
            let (Some(url), Some(payload), Some(claimed_until)) =
                (row.postback_url.clone(), &row.payload, row.claimed_until)
            else {
                claim.skipped += 1;
                continue;
            };
            let body = serde_json::to_vec(payload).map_err(|e| PortError::Unknown(e.into()))?;
            let signing = match secrets.get(&row.subaccount_id) {
                Some(known) => known.clone(),
                None => {
                    let opened = self.signing_secrets(&row, now)?;
                    secrets.insert(row.subaccount_id, opened.clone());
                    opened
                }
            };
            claim.events.push(ClaimedEvent {
                event_id: EventId::from_uuid(row.id),
                subaccount_id: SubaccountId::from_uuid(row.subaccount_id),
                attempt: u32::try_from(row.attempts).unwrap_or(0),
                claimed_until,
                body,
                url,
                secrets: signing,
            });
        }
        Ok(claim)
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(event = %event.event_id, attempt = event.attempt)
    )]
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

    #[tracing::instrument(level = "debug", skip_all, fields(attempts = done.len()))]
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
///
/// An event is found by its subaccount and id: on Citus the events' key is `(subaccount_id,
/// id)` (the distribution column first), and by id alone every shard read all its events for a
/// set (about 270 ms for 100 attempts at 225 000 events, against 12 ms by the key: delivery ran
/// at 150 events a second).
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
      WHERE e.subaccount_id = i.subaccount_id AND e.id = i.event_id \
        AND e.attempts = i.attempt AND e.claimed_until = i.claimed_until \
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
            let (outcome, status_code, error) = outcome_columns(&record.outcome);
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
