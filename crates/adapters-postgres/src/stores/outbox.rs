//! Writing outbox events inside the caller's transaction.

use diesel::sql_types::{Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::events::OutboxEvent;

/// Inserts `events` on `conn` (which must be inside the use case's transaction). Each gets the
/// next `sequence` of its object, also added to its payload.
///
/// Every business transaction writes its events here, so this is also where the running
/// request's idempotency key is marked committed, in the same transaction as the write.
pub(crate) async fn insert_events(
    conn: &mut AsyncPgConnection,
    events: &[OutboxEvent],
) -> Result<(), diesel::result::Error> {
    super::idempotency::mark_committed(conn).await?;
    for event in events {
        diesel::sql_query(
            "WITH seq AS ( \
               INSERT INTO outbox_sequences (object_id, subaccount_id, last_sequence) VALUES ($3, $2, 1) \
               ON CONFLICT (object_id) DO UPDATE SET last_sequence = outbox_sequences.last_sequence + 1 \
               RETURNING last_sequence AS n) \
             INSERT INTO outbox_events \
               (id, subaccount_id, object_id, sequence, event_type, payload, created_at, next_attempt_at) \
             SELECT $1, $2, $3, seq.n, $4, $5 || jsonb_build_object('sequence', seq.n), $6, $6 FROM seq",
        )
        .bind::<SqlUuid, _>(event.id.as_uuid())
        .bind::<SqlUuid, _>(event.subaccount_id.as_uuid())
        .bind::<SqlUuid, _>(event.object_id)
        .bind::<Text, _>(event.kind.name())
        .bind::<Jsonb, _>(&event.payload)
        .bind::<Timestamptz, _>(event.occurred_at)
        .execute(conn)
        .await?;
    }
    Ok(())
}
