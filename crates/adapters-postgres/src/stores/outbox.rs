//! Writing outbox events inside the caller's transaction.

use std::borrow::Borrow;

use chrono::{DateTime, Utc};
use diesel::sql_types::{
    Array, Bytea, Jsonb, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::cached::{BoxedSql, CachedExt};
use crate::errors::TxError;
use domain::events::OutboxEvent;
use domain::idempotency::KeyCommit;

/// Inserts `events` on `conn` (which must be inside the use case's transaction). Each gets the
/// next `sequence` of its object, also added to its payload.
///
/// Every business transaction writes its events here, so this is also where `key`, the
/// request's idempotency key as the use case handed it to the store, is applied in the same
/// transaction as the write: marked committed (and completed with its response when it has
/// one) in the first event's statement (a round trip fewer than a statement of its own), or
/// alone when there is no event. A key that is no longer the request's own rolls the
/// transaction back.
pub(crate) async fn insert_events<E: Borrow<OutboxEvent> + Sync>(
    conn: &mut AsyncPgConnection,
    events: &[E],
    key: Option<&KeyCommit<'_>>,
) -> Result<(), TxError> {
    let Some((first, rest)) = events.split_first() else {
        return super::idempotency::mark_committed(conn, key).await;
    };
    let first = first.borrow();
    match key {
        None => {
            event_statement!(INSERT_EVENT, first)
                .cached()
                .execute(conn)
                .await?;
        }
        Some(commit) => {
            let response = commit.response.as_ref();
            let inserted = event_statement!(INSERT_EVENT_MARKING_KEY, first)
                .bind::<SqlUuid, _>(commit.claim.subaccount.as_uuid())
                .bind::<Text, _>(commit.claim.key.as_str())
                .bind::<Timestamptz, _>(commit.claim.lease_until)
                .bind::<Nullable<SmallInt>, _>(response.map(super::idempotency::status_column))
                .bind::<Nullable<Bytea>, _>(response.map(|r| r.body.as_slice()))
                .cached()
                .execute(conn)
                .await?;
            if inserted != 1 {
                return Err(super::idempotency::not_own());
            }
        }
    }
    match rest {
        [] => {}
        [event] => {
            event_statement!(INSERT_EVENT, event.borrow())
                .cached()
                .execute(conn)
                .await?;
        }
        events => insert_many(conn, events).await?,
    }
    Ok(())
}

/// Several events in one statement ([`INSERT_EVENTS`]), so that a transaction writing many
/// (a batch closing) takes one round trip for them rather than one each; one statement per
/// [`SET_STATEMENT_ROWS`](super::SET_STATEMENT_ROWS) events when there are more.
pub(crate) async fn insert_many<E: Borrow<OutboxEvent> + Sync>(
    conn: &mut AsyncPgConnection,
    events: &[E],
) -> Result<(), TxError> {
    let mut inserted = 0;
    for events in events.chunks(super::SET_STATEMENT_ROWS) {
        inserted += bind_events(diesel::sql_query(INSERT_EVENTS).into_boxed(), events)
            .cached()
            .execute(conn)
            .await?;
    }
    if inserted == events.len() {
        Ok(())
    } else {
        Err(TxError::Invariant(anyhow::anyhow!(
            "{inserted} of {} events inserted",
            events.len()
        )))
    }
}

/// Binds `events` as the six arrays [`events_input!`] unnests (ids, subaccounts, objects,
/// types, payloads, times), as the next parameters of `query`.
pub(crate) fn bind_events<'f, E: Borrow<OutboxEvent>>(
    query: BoxedSql<'f>,
    events: &'f [E],
) -> BoxedSql<'f> {
    let events = || events.iter().map(Borrow::borrow);
    let ids: Vec<Uuid> = events().map(|e: &OutboxEvent| e.id.as_uuid()).collect();
    let subaccounts: Vec<Uuid> = events().map(|e| e.subaccount_id.as_uuid()).collect();
    let objects: Vec<Uuid> = events().map(|e| e.object_id).collect();
    let kinds: Vec<&str> = events().map(|e| e.kind.name()).collect();
    let payloads: Vec<&serde_json::Value> = events().map(|e| &e.payload).collect();
    let times: Vec<DateTime<Utc>> = events().map(|e| e.occurred_at).collect();
    query
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Array<SqlUuid>, _>(subaccounts)
        .bind::<Array<SqlUuid>, _>(objects)
        .bind::<Array<Text>, _>(kinds)
        .bind::<Array<Jsonb>, _>(payloads)
        .bind::<Array<Timestamptz>, _>(times)
}

/// `input AS (…)`: the events given as the six arrays of [`bind_events`], at the parameter
/// numbers given, with `n` their order. A macro so that `concat!` builds every statement using
/// it at compile time.
macro_rules! events_input {
    ($ids:literal, $subs:literal, $objects:literal, $types:literal, $payloads:literal, $times:literal) => {
        concat!(
            "input AS (SELECT * FROM unnest(",
            $ids,
            "::uuid[], ",
            $subs,
            "::uuid[], ",
            $objects,
            "::uuid[], ",
            $types,
            "::text[], ",
            $payloads,
            "::jsonb[], ",
            $times,
            "::timestamptz[]) WITH ORDINALITY \
             AS i(id, subaccount_id, object_id, event_type, payload, created_at, n))"
        )
    };
}

/// The events of `input` ([`events_input!`]), each with the next sequence number of its object
/// in their order: one upsert per object reserves as many numbers as it has events here, and
/// each event takes its place among them. Ends with `numbered`, which
/// [`insert_numbered_events!`] inserts.
///
/// The upserts of `outbox_sequences` name its primary key rather than its columns: the key is
/// `(object_id)` on plain PostgreSQL and `(subaccount_id, object_id)` on Citus, which needs the
/// distribution column in every unique key ([`crate::citus`]); the name is the same on both.
macro_rules! sequenced_events {
    () => {
        "wanted AS ( \
           SELECT object_id, (array_agg(subaccount_id))[1] AS subaccount_id, count(*)::int AS k \
           FROM input GROUP BY object_id), \
         seq AS ( \
           INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) \
           SELECT object_id, subaccount_id, k FROM wanted ORDER BY object_id \
           ON CONFLICT ON CONSTRAINT outbox_sequences_pkey DO UPDATE \
             SET last_sequence = outbox_sequences.last_sequence + EXCLUDED.last_sequence \
           RETURNING object_id, last_sequence), \
         numbered AS ( \
           SELECT i.*, s.last_sequence - w.k \
                    + row_number() OVER (PARTITION BY i.object_id ORDER BY i.n)::int AS sequence \
           FROM input i JOIN wanted w USING (object_id) JOIN seq s USING (object_id))"
    };
}

/// Inserts the events of [`sequenced_events!`]'s `numbered`, in their order.
macro_rules! insert_numbered_events {
    () => {
        "INSERT INTO outbox_events \
           (id, subaccount_id, object_id, sequence, event_type, payload, created_at, \
            next_attempt_at) \
         SELECT id, subaccount_id, object_id, sequence, event_type, \
                payload || jsonb_build_object('sequence', sequence), created_at, created_at \
         FROM numbered ORDER BY n"
    };
}

/// Events given as the arrays of [`bind_events`] (`$1`–`$6`), numbered and inserted.
const INSERT_EVENTS: &str = concat!(
    "WITH ",
    events_input!("$1", "$2", "$3", "$4", "$5", "$6"),
    ", ",
    sequenced_events!(),
    " ",
    insert_numbered_events!()
);

/// The part both event statements share: the object's next sequence number, then the event
/// (`$1`–`$6`: id, subaccount, object, type, payload, time). A macro so that `concat!` can
/// build both statements at compile time.
macro_rules! sequenced_event_insert {
    () => {
        "seq AS ( \
           INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) VALUES ($3, $2, 1) \
           ON CONFLICT ON CONSTRAINT outbox_sequences_pkey \
             DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1 \
           RETURNING last_sequence AS n) \
         INSERT INTO outbox_events \
           (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at) \
         SELECT $1, $2, $3, seq.n, $4, $5 || jsonb_build_object('sequence', seq.n), $6, $6 FROM seq"
    };
}

/// One event, with the next sequence number of its object.
const INSERT_EVENT: &str = concat!("WITH ", sequenced_event_insert!());

/// [`INSERT_EVENT`] that also marks the request's idempotency key committed where its claim
/// still holds (`$7`–`$9`: subaccount, key, lease deadline) and, when a response is given
/// (`$10`, `$11`: status and body, or nulls), completes the key with it. The event is inserted
/// only alongside a marked key (a join with `mark`), so it inserts one row when the key was
/// marked and none when it was not. (Reading `mark` in a subquery of `RETURNING` instead is
/// what Citus cannot plan: the statement runs on the subaccount's shard, where the subquery
/// loses the `WITH` it refers to.)
const INSERT_EVENT_MARKING_KEY: &str = concat!(
    "WITH mark AS ( \
       UPDATE idempotency_keys SET committed = true, \
         state = CASE WHEN $10::int2 IS NULL THEN state ELSE 'completed' END, \
         response_status = $10, response_body = $11, \
         locked_until = CASE WHEN $10::int2 IS NULL THEN locked_until END \
       WHERE subaccount_id = $7 AND idempotency_key = $8 AND locked_until = $9 \
         AND state = 'in_progress' \
       RETURNING 1), ",
    sequenced_event_insert!(),
    ", mark"
);

/// `sql` with `event`'s six parameters bound (a macro: the bound query's type is unnameable).
macro_rules! event_statement {
    ($sql:expr, $event:expr) => {
        diesel::sql_query($sql)
            .bind::<SqlUuid, _>($event.id.as_uuid())
            .bind::<SqlUuid, _>($event.subaccount_id.as_uuid())
            .bind::<SqlUuid, _>($event.object_id)
            .bind::<Text, _>($event.kind.name())
            .bind::<Jsonb, _>(&$event.payload)
            .bind::<Timestamptz, _>($event.occurred_at)
    };
}
use event_statement;
