//! The operator ports on PostgreSQL (the admin CLI's jobs): subaccount set-up, API keys,
//! webhook endpoints, the ledger, and the outbox's history.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::audit::AuditEntry;
use domain::ids::{ApiKeyId, EventId, SubaccountId};
use domain::masking::Secret;

use domain::auth::SignaturePolicy;
use domain::auth::ports::ApiKeyStore;
use domain::delivery::history::{EventHistoryStore, EventStatus, EventSummary, ResendSelection};
use domain::delivery::ports::WebhookEndpointStore;
use domain::error::OperatorError;
use domain::ledger::{LedgerCheck, LedgerEntry, LedgerStore};
use domain::subaccount::ports::{NewSubaccount, SubaccountSetupStore};
use domain::subaccount::{Balance, FeeTemplate};

use super::PgStore;
use super::console::insert_audit;
use super::delivery::webhook_context;
use crate::errors::{from_diesel, is_foreign_key_violation};
use crate::rows::SubaccountRow;
use crate::schema::{
    api_keys, balances, fee_templates, ledger_entries, subaccounts, webhook_endpoints,
};

fn vault_error(e: crate::vault::VaultError) -> OperatorError {
    OperatorError::Port(PortError::Unknown(anyhow::anyhow!("sealing a secret: {e}")))
}

fn fk_or_port(e: diesel::result::Error) -> OperatorError {
    if is_foreign_key_violation(&e) {
        OperatorError::SubaccountNotFound
    } else {
        OperatorError::Port(from_diesel(e))
    }
}

fn exactly_one(updated: usize) -> Result<(), OperatorError> {
    if updated == 1 {
        Ok(())
    } else {
        Err(OperatorError::SubaccountNotFound)
    }
}

#[async_trait]
impl SubaccountSetupStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_subaccount(
        &self,
        new: &NewSubaccount,
        audit: &AuditEntry,
    ) -> Result<(), PortError> {
        let row = SubaccountRow::from(&new.subaccount);
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::insert_into(subaccounts::table)
                .values(&row)
                .execute(conn)
                .await?;
            insert_audit(conn, audit).await?;
            Ok(())
        })
        .await
        .map_err(from_diesel)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn upsert_fee_template(
        &self,
        subaccount: SubaccountId,
        template: &FeeTemplate,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError> {
        let mut conn = self.conn().await?;
        let percentage = i32::try_from(template.percentage.ten_thousandths())
            .map_err(|e| OperatorError::Port(PortError::Unknown(e.into())))?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            // The template this one replaces, locked until the change commits: the audit
            // entry's `before` (none for the first template of the asset).
            let replaced: Option<(i64, i32, i64)> = fee_templates::table
                .find((subaccount.as_uuid(), template.asset.code()))
                .select((
                    fee_templates::fixed,
                    fee_templates::percentage,
                    fee_templates::min_amount,
                ))
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let audit = with_before(
                audit,
                replaced.map(|(fixed, percentage, min_amount)| {
                    serde_json::json!({
                        "asset": template.asset.code(),
                        "fixed": fixed,
                        "percentage": f64::from(percentage) / 10_000.0,
                        "min_amount": min_amount,
                    })
                }),
            );
            let audit = &audit;
            diesel::insert_into(fee_templates::table)
                .values((
                    fee_templates::subaccount_id.eq(subaccount.as_uuid()),
                    fee_templates::asset.eq(template.asset.code()),
                    fee_templates::id.eq(template.id.as_uuid()),
                    fee_templates::group_id.eq(template.group_id.as_uuid()),
                    fee_templates::fixed.eq(template.fixed),
                    fee_templates::percentage.eq(percentage),
                    fee_templates::min_amount.eq(template.min_amount),
                    fee_templates::updated_at.eq(Utc::now()),
                ))
                .on_conflict((fee_templates::subaccount_id, fee_templates::asset))
                .do_update()
                .set((
                    fee_templates::id.eq(excluded(fee_templates::id)),
                    fee_templates::group_id.eq(excluded(fee_templates::group_id)),
                    fee_templates::fixed.eq(excluded(fee_templates::fixed)),
                    fee_templates::percentage.eq(excluded(fee_templates::percentage)),
                    fee_templates::min_amount.eq(excluded(fee_templates::min_amount)),
                    fee_templates::updated_at.eq(excluded(fee_templates::updated_at)),
                ))
                .execute(conn)
                .await?;
            insert_audit(conn, audit).await?;
            Ok(())
        })
        .await
        .map_err(fk_or_port)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn set_signature_policy(
        &self,
        subaccount: SubaccountId,
        policy: SignaturePolicy,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError> {
        let mut conn = self.conn().await?;
        let updated = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let replaced: Option<String> = subaccounts::table
                    .find(subaccount.as_uuid())
                    .select(subaccounts::signature_policy)
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let audit = with_before(
                    audit,
                    replaced.map(|old| serde_json::json!({"signature_policy": old})),
                );
                let audit = &audit;
                let changed = diesel::update(subaccounts::table.find(subaccount.as_uuid()))
                    .filter(subaccounts::signature_policy.ne(policy.as_str()))
                    .set((
                        subaccounts::signature_policy.eq(policy.as_str()),
                        subaccounts::require_signature_v2.eq(policy == SignaturePolicy::V2Only),
                    ))
                    .execute(conn)
                    .await?;
                if changed == 0 {
                    // The same policy again changes nothing (and writes no entry), or there is
                    // no such subaccount.
                    return subaccounts::table
                        .filter(subaccounts::id.eq(subaccount.as_uuid()))
                        .count()
                        .get_result::<i64>(conn)
                        .await
                        .map(|n| usize::try_from(n).unwrap_or(0));
                }
                insert_audit(conn, audit).await?;
                // Every instance's credential cache looks its keys up again.
                crate::credential_changes::announce(conn, crate::credential_changes::EVERY_KEY)
                    .await?;
                Ok(changed)
            })
            .await
            .map_err(from_diesel)?;
        exactly_one(updated)
    }
}

/// `audit` with `before`: what the change replaces, read by the change's own transaction (so
/// two operators changing the same thing at once each record what they replaced).
fn with_before(audit: &AuditEntry, before: Option<serde_json::Value>) -> AuditEntry {
    AuditEntry {
        before,
        ..audit.clone()
    }
}

#[async_trait]
impl ApiKeyStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn insert_credential(
        &self,
        id: ApiKeyId,
        subaccount: SubaccountId,
        api_key: &str,
        secret: &Secret<String>,
        created_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError> {
        let sealed = self
            .vault
            .seal(secret.expose().as_bytes(), id.as_uuid().as_bytes())
            .map_err(vault_error)?;
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::insert_into(api_keys::table)
                .values((
                    api_keys::id.eq(id.as_uuid()),
                    api_keys::subaccount_id.eq(subaccount.as_uuid()),
                    api_keys::api_key.eq(api_key),
                    api_keys::secret_ciphertext.eq(&sealed),
                    api_keys::created_at.eq(created_at),
                ))
                .execute(conn)
                .await?;
            insert_audit(conn, audit).await?;
            Ok(())
        })
        .await
        .map_err(fk_or_port)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn revoke_credential(
        &self,
        api_key: &str,
        at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError> {
        let mut conn = self.conn().await?;
        let updated = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = diesel::update(api_keys::table)
                    .filter(api_keys::api_key.eq(api_key))
                    .filter(api_keys::revoked_at.is_null())
                    .set(api_keys::revoked_at.eq(at))
                    .execute(conn)
                    .await?;
                // Delivered when the revocation commits: every instance drops the key at once.
                if updated == 1 {
                    insert_audit(conn, audit).await?;
                    crate::credential_changes::announce(conn, api_key).await?;
                }
                Ok(updated)
            })
            .await
            .map_err(from_diesel)?;
        if updated == 1 {
            Ok(())
        } else {
            Err(OperatorError::KeyNotFound)
        }
    }
}

#[async_trait]
impl WebhookEndpointStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn set_webhook(
        &self,
        subaccount: SubaccountId,
        url: &str,
        secret: &Secret<String>,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError> {
        let id = subaccount.as_uuid();
        let sealed = self
            .vault
            .seal(secret.expose().as_bytes(), &webhook_context(id))
            .map_err(vault_error)?;
        let now = Utc::now();
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let replaced: Option<Option<String>> = subaccounts::table
                    .find(id)
                    .select(subaccounts::postback_url)
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let audit = with_before(
                    audit,
                    replaced.map(|old| serde_json::json!({"postback_url": old})),
                );
                let audit = &audit;
                let updated = diesel::update(subaccounts::table.find(id))
                    .set((
                        subaccounts::postback_url.eq(url),
                        subaccounts::updated_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                if updated != 1 {
                    return Ok(false);
                }
                // A new endpoint and secret: forget any rotation and re-enable after a 410.
                diesel::insert_into(webhook_endpoints::table)
                    .values((
                        webhook_endpoints::subaccount_id.eq(id),
                        webhook_endpoints::secret.eq(&sealed),
                        webhook_endpoints::updated_at.eq(now),
                    ))
                    .on_conflict(webhook_endpoints::subaccount_id)
                    .do_update()
                    .set((
                        webhook_endpoints::secret.eq(&sealed),
                        webhook_endpoints::previous_secret.eq(None::<Vec<u8>>),
                        webhook_endpoints::previous_until.eq(None::<DateTime<Utc>>),
                        webhook_endpoints::disabled_at.eq(None::<DateTime<Utc>>),
                        webhook_endpoints::updated_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                insert_audit(conn, audit).await?;
                Ok(true)
            })
            .await
            .map_err(from_diesel)?;
        if result {
            Ok(())
        } else {
            Err(OperatorError::SubaccountNotFound)
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount))]
    async fn rotate_webhook_secret(
        &self,
        subaccount: SubaccountId,
        secret: &Secret<String>,
        previous_until: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<(), OperatorError> {
        let id = subaccount.as_uuid();
        let sealed = self
            .vault
            .seal(secret.expose().as_bytes(), &webhook_context(id))
            .map_err(vault_error)?;
        let mut conn = self.conn().await?;
        // The current secret becomes the previous one in the same statement, so a delivery
        // signs with either the old pair or the new pair, never with a secret already gone.
        let updated = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let updated = diesel::update(webhook_endpoints::table.find(id))
                    .set((
                        webhook_endpoints::previous_secret.eq(webhook_endpoints::secret.nullable()),
                        webhook_endpoints::previous_until.eq(Some(previous_until)),
                        webhook_endpoints::secret.eq(&sealed),
                        webhook_endpoints::updated_at.eq(Utc::now()),
                    ))
                    .execute(conn)
                    .await?;
                if updated == 1 {
                    insert_audit(conn, audit).await?;
                }
                Ok(updated)
            })
            .await
            .map_err(from_diesel)?;
        if updated == 1 {
            return Ok(());
        }
        let exists: i64 = subaccounts::table
            .filter(subaccounts::id.eq(id))
            .count()
            .get_result(&mut conn)
            .await
            .map_err(from_diesel)?;
        Err(if exists == 0 {
            OperatorError::SubaccountNotFound
        } else {
            OperatorError::NoWebhook
        })
    }
}

#[async_trait]
impl LedgerStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %entry.subaccount_id))]
    async fn apply_ledger_entry(
        &self,
        entry: &LedgerEntry,
        audit: &AuditEntry,
    ) -> Result<Balance, OperatorError> {
        let entry = *entry;
        let mut conn = self.conn().await?;
        let (available, pending) = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(ledger_entries::table)
                    .values((
                        ledger_entries::id.eq(entry.id.as_uuid()),
                        ledger_entries::subaccount_id.eq(entry.subaccount_id.as_uuid()),
                        ledger_entries::asset.eq(entry.asset.code()),
                        ledger_entries::kind.eq(entry.kind.as_str()),
                        ledger_entries::available_delta.eq(entry.available_delta),
                        ledger_entries::pending_delta.eq(entry.pending_delta),
                        ledger_entries::created_at.eq(entry.created_at),
                    ))
                    .execute(conn)
                    .await?;
                let (available, pending) = diesel::insert_into(balances::table)
                    .values((
                        balances::subaccount_id.eq(entry.subaccount_id.as_uuid()),
                        balances::asset.eq(entry.asset.code()),
                        balances::available.eq(entry.available_delta),
                        balances::pending.eq(entry.pending_delta),
                        balances::updated_at.eq(entry.created_at),
                    ))
                    .on_conflict((balances::subaccount_id, balances::asset))
                    .do_update()
                    .set((
                        balances::available.eq(balances::available + excluded(balances::available)),
                        balances::pending.eq(balances::pending + excluded(balances::pending)),
                        balances::updated_at.eq(excluded(balances::updated_at)),
                    ))
                    .returning((balances::available, balances::pending))
                    .get_result::<(i64, i64)>(conn)
                    .await?;
                insert_audit(conn, audit).await?;
                Ok((available, pending))
            })
            .await
            .map_err(fk_or_port)?;
        Ok(Balance {
            asset: entry.asset,
            available,
            pending,
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn check_ledger(&self) -> Result<LedgerCheck, OperatorError> {
        self.ledger_check().await
    }
}

#[async_trait]
impl EventHistoryStore for PgStore {
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, limit = limit)
    )]
    async fn list_events(
        &self,
        subaccount: SubaccountId,
        status: Option<EventStatus>,
        since: Option<DateTime<Utc>>,
        before: Option<EventId>,
        limit: u32,
    ) -> Result<Vec<EventSummary>, OperatorError> {
        self.event_summaries(subaccount, None, status, since, before, limit)
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn resend_events(
        &self,
        selection: &ResendSelection,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<u64, OperatorError> {
        self.requeue(selection, now, audit).await
    }
}
