//! `IdempotencyStore` on PostgreSQL, and the marking of a request's key inside the
//! transaction of the write it guards.
//!
//! A request's claim reaches its write explicitly: the HTTP layer hands the [`KeyClaim`] to
//! the use case in a `WriteKey`, the use case to the store port, and the store turns it into
//! a [`KeyCommit`] that `insert_events` (or [`mark_committed`], for a write without events)
//! applies on the write's own connection. So the key is marked committed if and only if the
//! write commits, the response is stored with it where it renders, and only while the claim
//! is still this request's (a request that outlived its lease rolls back rather than write
//! twice).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::auth::ports::CredentialStore;
use domain::auth::{NonceDurability, NonceOutcome, NonceUse};
use domain::idempotency::{
    ClaimOutcome, Decision, IdempotencyKey, IdempotencyStore, KeyClaim, KeyCommit, LEASE,
    RETENTION, StoredKey, StoredResponse, decide,
};
use domain::ids::SubaccountId;

use super::PgStore;
use crate::cached::{BoxedSql, CachedExt};
use crate::errors::{TxError, from_diesel};
use crate::schema::idempotency_keys;

/// Claims a new key without waiting for the flush of its commit: `set_config(…, true)` turns
/// `synchronous_commit` off for this statement's own transaction only. Safe because nothing is
/// answered on the strength of the claim alone: every way its request ends commits durably
/// after it (the write that marks the key committed, the stored response, the released key),
/// and the database's log is flushed in order, so that commit puts the claim on disk too. A
/// crash can lose the claim only together with all its request did; a retry then runs afresh.
/// (On Citus the setting would reach only the coordinator: the plain insert is used there.)
const CLAIM_NEW_KEY_WITHOUT_FLUSH_WAIT: &str = "\
    WITH no_flush_wait AS (SELECT set_config('synchronous_commit', 'off', true)) \
    INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, \
        response_status, response_body, created_at, expires_at, locked_until, committed) \
    SELECT $1, $2, $3, 'in_progress', NULL, NULL, $4, $5, $6, false FROM no_flush_wait \
    ON CONFLICT DO NOTHING";

/// A keyed POST's nonce and new claim in one statement and one commit
/// ([`IdempotencyStore::claim_with_nonce`]): the key is inserted only from the nonce's
/// `RETURNING`, so a replayed nonce leaves it untouched. The commit waits for its flush only
/// when the nonce must be on disk at once (`$5`); the claim alone never needs to (see
/// [`CLAIM_NEW_KEY_WITHOUT_FLUSH_WAIT`]). A key seen before is decided afterwards, as by
/// `claim`. (On Citus the two are recorded one after the other, as `record_nonce` and `claim`
/// do.)
const RECORD_NONCE_AND_CLAIM_NEW_KEY: &str = "\
    WITH flush AS (SELECT set_config('synchronous_commit', \
            CASE WHEN $5 THEN 'off' ELSE current_setting('synchronous_commit') END, true)), \
        nonce AS (INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at) \
            SELECT $1, $2, $3, $4 FROM flush ON CONFLICT DO NOTHING RETURNING 1), \
        claimed AS (INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, \
                state, response_status, response_body, created_at, expires_at, locked_until, \
                committed) \
            SELECT $3, $6, $7, 'in_progress', NULL, NULL, $8, $9, $10, false FROM nonce \
            ON CONFLICT DO NOTHING RETURNING 1) \
    SELECT EXISTS (SELECT 1 FROM nonce) AS fresh, EXISTS (SELECT 1 FROM claimed) AS claimed";

/// What [`RECORD_NONCE_AND_CLAIM_NEW_KEY`] did.
#[derive(QueryableByName)]
struct NonceAndClaim {
    /// The nonce was not used before (and is now recorded).
    #[diesel(sql_type = diesel::sql_types::Bool)]
    fresh: bool,
    /// The key was new and is now this request's.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    claimed: bool,
}

/// The columns of a key claimed afresh (new, or taken over) at `$now` by a request with
/// `$fingerprint`, leased until `$lease_until`.
macro_rules! fresh_claim {
    ($fingerprint:expr, $now:expr, $lease_until:expr) => {
        (
            idempotency_keys::request_hash.eq($fingerprint.to_vec()),
            idempotency_keys::state.eq("in_progress"),
            idempotency_keys::response_status.eq(None::<i16>),
            idempotency_keys::response_body.eq(None::<Vec<u8>>),
            idempotency_keys::created_at.eq($now),
            idempotency_keys::expires_at.eq($now + RETENTION),
            idempotency_keys::locked_until.eq(Some($lease_until)),
            idempotency_keys::committed.eq(false),
        )
    };
}

/// Claims a key that exists already: reads it locked and applies [`decide`], taking it over
/// (as a claim leased until `lease_until`) where the rule allows.
async fn claim_existing(
    conn: &mut AsyncPgConnection,
    sub: uuid::Uuid,
    key: &IdempotencyKey,
    fingerprint: [u8; 32],
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<ClaimOutcome, PortError> {
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        let row: KeyRow = idempotency_keys::table
            .find((key.as_str(), sub))
            .select((
                idempotency_keys::request_hash,
                idempotency_keys::state,
                idempotency_keys::response_status,
                idempotency_keys::response_body,
                idempotency_keys::committed,
                idempotency_keys::locked_until,
                idempotency_keys::expires_at,
            ))
            .for_update()
            .first(conn)
            .await?;
        match decide(&stored(row), &fingerprint, now) {
            Decision::Answer(outcome) => Ok(outcome),
            Decision::TakeOver => {
                diesel::update(idempotency_keys::table.find((key.as_str(), sub)))
                    .set(fresh_claim!(fingerprint, now, lease_until))
                    .cached()
                    .execute(conn)
                    .await?;
                Ok(ClaimOutcome::Claimed { lease_until })
            }
        }
    })
    .await
    .map_err(from_diesel)
}

/// Binds a new claim of `key` (the key, the request's fingerprint, when it is claimed, until
/// when it is kept and its lease) as the next five parameters, in the order both claiming
/// statements take them.
fn bind_new_claim<'f>(
    query: BoxedSql<'f>,
    key: &IdempotencyKey,
    fingerprint: [u8; 32],
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> BoxedSql<'f> {
    query
        .bind::<diesel::sql_types::Text, _>(key.as_str().to_owned())
        .bind::<diesel::sql_types::Bytea, _>(fingerprint.to_vec())
        .bind::<diesel::sql_types::Timestamptz, _>(now)
        .bind::<diesel::sql_types::Timestamptz, _>(now + RETENTION)
        .bind::<diesel::sql_types::Timestamptz, _>(lease_until)
}

/// The error that rolls back a business transaction whose request no longer holds its key.
pub(crate) fn not_own() -> TxError {
    TxError::KeyNotOwn
}

/// A stored status: HTTP statuses fit in a `smallint`.
pub(crate) fn status_column(response: &StoredResponse) -> i16 {
    i16::try_from(response.status).unwrap_or(500)
}

/// Inside a business transaction that writes no event: applies `commit` (marks the claim
/// committed, and completes it with its response when there is one) where the claim is still
/// its own. When it is not (the request outlived its lease and a retry took the key over),
/// the transaction must not commit: the error rolls it back.
pub(crate) async fn mark_committed(
    conn: &mut AsyncPgConnection,
    commit: Option<&KeyCommit<'_>>,
) -> Result<(), TxError> {
    let Some(commit) = commit else {
        return Ok(());
    };
    let claim = commit.claim;
    let target = idempotency_keys::table
        .find((claim.key.as_str(), claim.subaccount.as_uuid()))
        .filter(idempotency_keys::locked_until.eq(claim.lease_until))
        .filter(idempotency_keys::state.eq("in_progress"));
    let marked = match &commit.response {
        None => {
            diesel::update(target)
                .set(idempotency_keys::committed.eq(true))
                .cached()
                .execute(conn)
                .await?
        }
        Some(response) => {
            diesel::update(target)
                .set((
                    idempotency_keys::committed.eq(true),
                    idempotency_keys::state.eq("completed"),
                    idempotency_keys::response_status.eq(status_column(response)),
                    idempotency_keys::response_body.eq(&response.body),
                    idempotency_keys::locked_until.eq(None::<DateTime<Utc>>),
                ))
                .cached()
                .execute(conn)
                .await?
        }
    };
    if marked == 1 { Ok(()) } else { Err(not_own()) }
}

type KeyRow = (
    Vec<u8>,
    String,
    Option<i16>,
    Option<Vec<u8>>,
    bool,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
);

fn stored(row: KeyRow) -> StoredKey {
    let (fingerprint, state, status, body, committed, locked_until, expires_at) = row;
    let response = match (state.as_str(), status, body) {
        ("completed", Some(status), Some(body)) => u16::try_from(status).ok().map(|s| (s, body)),
        _ => None,
    };
    StoredKey {
        fingerprint,
        response,
        committed,
        locked_until,
        expires_at,
    }
}

#[async_trait]
impl IdempotencyStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn claim(
        &self,
        subaccount: SubaccountId,
        key: &IdempotencyKey,
        fingerprint: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, PortError> {
        let (sub, lease_until) = (subaccount.as_uuid(), now + LEASE);
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        // A new key (the usual case) is one statement; only a key seen before needs the locked
        // read and decision.
        let inserted = if citus {
            diesel::insert_into(idempotency_keys::table)
                .values((
                    idempotency_keys::subaccount_id.eq(sub),
                    idempotency_keys::idempotency_key.eq(key.as_str()),
                    fresh_claim!(fingerprint, now, lease_until),
                ))
                .on_conflict_do_nothing()
                .execute(&mut conn)
                .await
        } else {
            let query = diesel::sql_query(CLAIM_NEW_KEY_WITHOUT_FLUSH_WAIT)
                .into_boxed()
                .bind::<diesel::sql_types::Uuid, _>(sub);
            bind_new_claim(query, key, fingerprint, now, lease_until)
                .cached()
                .execute(&mut conn)
                .await
        }
        .map_err(from_diesel)?;
        if inserted == 1 {
            Ok(ClaimOutcome::Claimed { lease_until })
        } else {
            claim_existing(&mut conn, sub, key, fingerprint, now, lease_until).await
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %nonce.subaccount))]
    async fn claim_with_nonce(
        &self,
        nonce: &NonceUse,
        key: &IdempotencyKey,
        fingerprint: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<Option<ClaimOutcome>, PortError> {
        if self.detect_citus().await? {
            let recorded = self
                .record_nonce(
                    nonce.api_key,
                    nonce.subaccount,
                    nonce.nonce,
                    nonce.seen_at,
                    nonce.durability,
                )
                .await?;
            return match recorded {
                NonceOutcome::Replayed => Ok(None),
                NonceOutcome::Fresh => self
                    .claim(nonce.subaccount, key, fingerprint, now)
                    .await
                    .map(Some),
            };
        }
        let (sub, lease_until) = (nonce.subaccount.as_uuid(), now + LEASE);
        let mut conn = self.conn().await?;
        let query = diesel::sql_query(RECORD_NONCE_AND_CLAIM_NEW_KEY)
            .into_boxed()
            .bind::<diesel::sql_types::Uuid, _>(nonce.api_key.as_uuid())
            .bind::<diesel::sql_types::BigInt, _>(nonce.nonce)
            .bind::<diesel::sql_types::Uuid, _>(sub)
            .bind::<diesel::sql_types::Timestamptz, _>(nonce.seen_at)
            .bind::<diesel::sql_types::Bool, _>(
                nonce.durability == NonceDurability::WithNextCommit,
            );
        let done: NonceAndClaim = bind_new_claim(query, key, fingerprint, now, lease_until)
            .cached()
            .get_result(&mut conn)
            .await
            .map_err(from_diesel)?;
        match done {
            NonceAndClaim { fresh: false, .. } => Ok(None),
            NonceAndClaim { claimed: true, .. } => Ok(Some(ClaimOutcome::Claimed { lease_until })),
            NonceAndClaim { .. } => {
                claim_existing(&mut conn, sub, key, fingerprint, now, lease_until)
                    .await
                    .map(Some)
            }
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %claim.subaccount))]
    async fn complete(
        &self,
        claim: &KeyClaim,
        response: &StoredResponse,
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        let done = diesel::update(
            idempotency_keys::table.find((claim.key.as_str(), claim.subaccount.as_uuid())),
        )
        .filter(idempotency_keys::locked_until.eq(claim.lease_until))
        .filter(idempotency_keys::state.eq("in_progress"))
        .set((
            idempotency_keys::state.eq("completed"),
            idempotency_keys::response_status.eq(status_column(response)),
            idempotency_keys::response_body.eq(&response.body),
            idempotency_keys::locked_until.eq(None::<DateTime<Utc>>),
        ))
        .cached()
        .execute(&mut conn)
        .await
        .map_err(from_diesel)?;
        Ok(done == 1)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %claim.subaccount))]
    async fn release(&self, claim: &KeyClaim) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        diesel::delete(
            idempotency_keys::table.find((claim.key.as_str(), claim.subaccount.as_uuid())),
        )
        .filter(idempotency_keys::locked_until.eq(claim.lease_until))
        .filter(idempotency_keys::committed.eq(false))
        .execute(&mut conn)
        .await
        .map_err(from_diesel)?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, PortError> {
        let mut conn = self.conn().await?;
        let purged = diesel::delete(idempotency_keys::table)
            .filter(idempotency_keys::expires_at.lt(now))
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(u64::try_from(purged).unwrap_or(0))
    }
}
