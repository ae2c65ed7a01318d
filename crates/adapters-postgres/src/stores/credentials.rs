//! `CredentialStore` on PostgreSQL: API keys with encrypted secrets, and POST nonces.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::auth::ports::CredentialStore;
use domain::auth::{Credential, NonceDurability, NonceOutcome};
use domain::ids::{ApiKeyId, SubaccountId};
use uuid::Uuid;

use super::PgStore;
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::schema::{api_keys, request_nonces, subaccounts};

/// How long recorded nonces are kept. Longer than any sensible freshness window: a nonce older
/// than the window is refused as stale before it is ever looked up.
pub const NONCE_RETENTION: Duration = Duration::from_secs(3600);

/// Records a nonce without waiting for the flush of its commit
/// ([`NonceDurability::WithNextCommit`]): `set_config(…, true)` turns `synchronous_commit` off
/// for the statement's own transaction only, so the connection goes back to the pool as it
/// came. The commit is visible to every session at once; it reaches the disk with the next
/// flushed commit (or the WAL writer's next round, within `wal_writer_delay`).
const RECORD_NONCE_WITHOUT_FLUSH_WAIT: &str = "\
    WITH no_flush_wait AS (SELECT set_config('synchronous_commit', 'off', true)) \
    INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at) \
    SELECT $1, $2, $3, $4 FROM no_flush_wait \
    ON CONFLICT DO NOTHING";

#[async_trait]
impl CredentialStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn find_credential(&self, api_key: &str) -> Result<Option<Credential>, PortError> {
        let mut conn = self.conn().await?;
        let found: Option<(Uuid, Uuid, Vec<u8>, bool, String)> = api_keys::table
            .inner_join(subaccounts::table)
            .filter(api_keys::api_key.eq(api_key))
            .filter(api_keys::revoked_at.is_null())
            .select((
                api_keys::id,
                api_keys::subaccount_id,
                api_keys::secret_ciphertext,
                subaccounts::require_signature_v2,
                subaccounts::signature_policy,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some((id, subaccount_id, sealed, require_v2, policy)) = found else {
            return Ok(None);
        };
        let secret = self
            .vault
            .open_secret(&sealed, id.as_bytes())
            .map_err(|e| PortError::Unknown(anyhow::anyhow!("API key {id}: {e}")))?;
        Ok(Some(Credential {
            id: ApiKeyId::from_uuid(id),
            subaccount_id: SubaccountId::from_uuid(subaccount_id),
            secret,
            signature_policy: crate::rows::signature_policy(require_v2, &policy),
        }))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn record_nonce(
        &self,
        api_key: ApiKeyId,
        subaccount: SubaccountId,
        nonce: i64,
        seen_at: DateTime<Utc>,
        durability: NonceDurability,
    ) -> Result<NonceOutcome, PortError> {
        // On Citus the setting would reach only the coordinator, not the worker that commits
        // the row: the plain insert below (which waits) is used there.
        let skip_flush_wait =
            durability == NonceDurability::WithNextCommit && !self.detect_citus().await?;
        let mut conn = self.conn().await?;
        let inserted = if skip_flush_wait {
            diesel::sql_query(RECORD_NONCE_WITHOUT_FLUSH_WAIT)
                .bind::<diesel::sql_types::Uuid, _>(api_key.as_uuid())
                .bind::<diesel::sql_types::BigInt, _>(nonce)
                .bind::<diesel::sql_types::Uuid, _>(subaccount.as_uuid())
                .bind::<diesel::sql_types::Timestamptz, _>(seen_at)
                .cached()
                .execute(&mut conn)
                .await
        } else {
            diesel::insert_into(request_nonces::table)
                .values((
                    request_nonces::api_key_id.eq(api_key.as_uuid()),
                    request_nonces::nonce.eq(nonce),
                    request_nonces::subaccount_id.eq(subaccount.as_uuid()),
                    request_nonces::seen_at.eq(seen_at),
                ))
                .on_conflict_do_nothing()
                .execute(&mut conn)
                .await
        }
        .map_err(from_diesel)?;
        Ok(if inserted == 1 {
            NonceOutcome::Fresh
        } else {
            NonceOutcome::Replayed
        })
    }
}

impl PgStore {
    /// Deletes nonces recorded before `before`; returns how many. Run periodically.
    pub async fn purge_nonces(&self, before: DateTime<Utc>) -> Result<usize, PortError> {
        let mut conn = self.conn().await?;
        diesel::delete(request_nonces::table.filter(request_nonces::seen_at.lt(before)))
            .execute(&mut conn)
            .await
            .map_err(from_diesel)
    }
}
