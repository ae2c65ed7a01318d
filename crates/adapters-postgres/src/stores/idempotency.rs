//! `IdempotencyStore` on PostgreSQL, and the request-scoped claim that lets a request's write
//! mark its key committed in the write's own transaction.
//!
//! The HTTP layer runs each request that carries a key inside [`within`] with an empty
//! [`ClaimSlot`]; [`PgStore::claim`] fills the slot when the request claims its key; every
//! business transaction writes its outbox events through `insert_events`, which calls
//! [`mark_committed`] on the same connection. So the key is marked committed if and only if the
//! write commits, and only while the claim is still this request's (a request that outlived
//! its lease rolls back rather than write twice).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::idempotency::{
    ClaimOutcome, Decision, IdempotencyKey, IdempotencyStore, LEASE, RETENTION, StoredKey, decide,
};
use domain::ids::SubaccountId;
use uuid::Uuid;

use super::PgStore;
use crate::cached::CachedExt;
use crate::errors::{TxError, from_diesel};
use crate::schema::idempotency_keys;

/// A key this request holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActiveClaim {
    pub(crate) subaccount: Uuid,
    pub(crate) key: String,
    pub(crate) lease_until: DateTime<Utc>,
}

/// Where a request's claim is kept while the request runs.
#[derive(Debug, Clone, Default)]
pub struct ClaimSlot(Arc<Mutex<Option<ActiveClaim>>>);

impl ClaimSlot {
    fn set(&self, claim: ActiveClaim) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(claim);
    }

    fn get(&self) -> Option<ActiveClaim> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

tokio::task_local! {
    static SLOT: ClaimSlot;
}

/// Runs `request` with `slot` as its claim slot.
pub async fn within<F: Future>(slot: ClaimSlot, request: F) -> F::Output {
    SLOT.scope(slot, request).await
}

/// The running request's claim, if it holds one.
pub(crate) fn current() -> Option<ActiveClaim> {
    SLOT.try_with(ClaimSlot::get).ok().flatten()
}

/// The error that rolls back a business transaction whose request no longer holds its key.
pub(crate) fn not_own() -> TxError {
    TxError::KeyNotOwn
}

/// Inside a business transaction: marks the running request's claim committed, where the claim
/// is still its own. When it is not (the request outlived its lease and a retry took the key
/// over), the transaction must not commit: the error rolls it back.
pub(crate) async fn mark_committed(conn: &mut AsyncPgConnection) -> Result<(), TxError> {
    let Some(claim) = current() else {
        return Ok(());
    };
    let marked = diesel::update(idempotency_keys::table.find((claim.subaccount, &claim.key)))
        .filter(idempotency_keys::locked_until.eq(claim.lease_until))
        .filter(idempotency_keys::state.eq("in_progress"))
        .set(idempotency_keys::committed.eq(true))
        .cached()
        .execute(conn)
        .await?;
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
    async fn claim(
        &self,
        subaccount: SubaccountId,
        key: &IdempotencyKey,
        fingerprint: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, PortError> {
        let (sub, lease_until) = (subaccount.as_uuid(), now + LEASE);
        let fresh = (
            idempotency_keys::request_hash.eq(fingerprint.to_vec()),
            idempotency_keys::state.eq("in_progress"),
            idempotency_keys::response_status.eq(None::<i16>),
            idempotency_keys::response_body.eq(None::<Vec<u8>>),
            idempotency_keys::created_at.eq(now),
            idempotency_keys::expires_at.eq(now + RETENTION),
            idempotency_keys::locked_until.eq(Some(lease_until)),
            idempotency_keys::committed.eq(false),
        );
        let mut conn = self.conn().await?;
        // A new key (the usual case) is one statement; only a key seen before needs the locked
        // read and decision below.
        let inserted = diesel::insert_into(idempotency_keys::table)
            .values((
                idempotency_keys::subaccount_id.eq(sub),
                idempotency_keys::idempotency_key.eq(key.as_str()),
                fresh.clone(),
            ))
            .on_conflict_do_nothing()
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        let outcome = if inserted == 1 {
            ClaimOutcome::Claimed { lease_until }
        } else {
            conn.transaction::<_, diesel::result::Error, _>(async |conn| {
                let row: KeyRow = idempotency_keys::table
                    .find((sub, key.as_str()))
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
                        diesel::update(idempotency_keys::table.find((sub, key.as_str())))
                            .set(fresh.clone())
                            .cached()
                            .execute(conn)
                            .await?;
                        Ok(ClaimOutcome::Claimed { lease_until })
                    }
                }
            })
            .await
            .map_err(from_diesel)?
        };
        if let ClaimOutcome::Claimed { lease_until } = &outcome {
            // Outside a request scope (a direct store call) there is no slot to fill.
            let _ = SLOT.try_with(|slot| {
                slot.set(ActiveClaim {
                    subaccount: sub,
                    key: key.as_str().to_owned(),
                    lease_until: *lease_until,
                });
            });
        }
        Ok(outcome)
    }

    async fn complete(
        &self,
        subaccount: SubaccountId,
        key: &IdempotencyKey,
        lease_until: DateTime<Utc>,
        status: u16,
        body: &[u8],
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        let done =
            diesel::update(idempotency_keys::table.find((subaccount.as_uuid(), key.as_str())))
                .filter(idempotency_keys::locked_until.eq(lease_until))
                .filter(idempotency_keys::state.eq("in_progress"))
                .set((
                    idempotency_keys::state.eq("completed"),
                    idempotency_keys::response_status.eq(i16::try_from(status).unwrap_or(500)),
                    idempotency_keys::response_body.eq(body),
                    idempotency_keys::locked_until.eq(None::<DateTime<Utc>>),
                ))
                .cached()
                .execute(&mut conn)
                .await
                .map_err(from_diesel)?;
        Ok(done == 1)
    }

    async fn release(
        &self,
        subaccount: SubaccountId,
        key: &IdempotencyKey,
        lease_until: DateTime<Utc>,
    ) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        diesel::delete(idempotency_keys::table.find((subaccount.as_uuid(), key.as_str())))
            .filter(idempotency_keys::locked_until.eq(lease_until))
            .filter(idempotency_keys::committed.eq(false))
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(())
    }

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
