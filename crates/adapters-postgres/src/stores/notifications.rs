//! `NotificationStore` on PostgreSQL: queued confirmation requests, recipients and links sealed
//! by the vault; claims with `FOR UPDATE SKIP LOCKED` (on Citus, one subaccount at a time) and a
//! lease in `next_attempt_at`; outcomes recorded with conditional updates.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bytea, Integer, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::account::AccountField;
use domain::account::notification::ports::{NotificationStore, Resend};
use domain::account::notification::{
    Channel, Notification, NotificationId, NotificationOutcome, NotificationStatus,
    NotificationSummary,
};
use domain::account::ports::ConfirmationRequest;
use domain::audit::AuditEntry;
use domain::ids::{ReceiverAccountId, SubaccountId};
use domain::masking::Secret;
use uuid::Uuid;

use super::PgStore;
use super::claims::claim_by_subaccount;
use super::console::insert_audit;
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::schema::{account_confirmations, notifications};
use crate::vault::Vault;

/// A new `notifications` row.
#[derive(Debug, Insertable)]
#[diesel(table_name = notifications, check_for_backend(diesel::pg::Pg))]
pub(crate) struct NewNotificationRow {
    id: Uuid,
    subaccount_id: Uuid,
    account_id: Uuid,
    channel: String,
    recipient_ciphertext: Vec<u8>,
    link_ciphertext: Vec<u8>,
    masked_details: serde_json::Value,
    status: String,
    attempts: i32,
    next_attempt_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

/// Who a notification goes to, sealed as one JSON value: `[email, phone, name]`.
type Recipient = (String, String, String);

/// The associated data that binds a notification's recipient to its row.
pub(crate) fn recipient_context(id: Uuid) -> Vec<u8> {
    [b"notification:".as_slice(), id.as_bytes()].concat()
}

/// The associated data that binds a notification's link to its row (not the recipient's, so
/// the two columns cannot be swapped either).
pub(crate) fn link_context(id: Uuid) -> Vec<u8> {
    [b"notification-link:".as_slice(), id.as_bytes()].concat()
}

impl NewNotificationRow {
    /// The row of `new`, sealing its recipient and link.
    pub(crate) fn new(vault: &Vault, n: &Notification) -> Result<Self, PortError> {
        let id = n.id.as_uuid();
        let recipient = serde_json::to_vec(&(
            &n.request.to_email,
            &n.request.to_phone,
            &n.request.receiver_name,
        ))
        .map_err(|e| PortError::Unknown(e.into()))?;
        let recipient_ciphertext = vault
            .seal(&recipient, &recipient_context(id))
            .map_err(|e| PortError::unknown(format!("sealing notification {id}: {e}")))?;
        let link_ciphertext = vault
            .seal(n.request.confirm_url.expose().as_bytes(), &link_context(id))
            .map_err(|e| PortError::unknown(format!("sealing notification {id}: {e}")))?;
        let masked: Vec<(&str, &str)> = n
            .request
            .masked_details
            .iter()
            .map(|(field, value)| (field.name(), value.as_str()))
            .collect();
        Ok(Self {
            id,
            subaccount_id: n.request.subaccount_id.as_uuid(),
            account_id: n.request.account_id.as_uuid(),
            channel: n.channel.as_str().to_owned(),
            recipient_ciphertext,
            link_ciphertext,
            masked_details: serde_json::to_value(masked)
                .map_err(|e| PortError::Unknown(e.into()))?,
            status: NotificationStatus::Pending.as_str().to_owned(),
            attempts: i32::try_from(n.attempt).unwrap_or(i32::MAX),
            next_attempt_at: Some(n.claimed_until),
            created_at: n.created_at,
            updated_at: n.created_at,
        })
    }
}

/// A claimed row, with what sending needs.
#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    account_id: Uuid,
    #[diesel(sql_type = Text)]
    channel: String,
    #[diesel(sql_type = Bytea)]
    recipient_ciphertext: Vec<u8>,
    #[diesel(sql_type = Bytea)]
    link_ciphertext: Vec<u8>,
    #[diesel(sql_type = Jsonb)]
    masked_details: serde_json::Value,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    next_attempt_at: DateTime<Utc>,
}

impl ClaimedRow {
    fn into_domain(self, vault: &Vault) -> Result<Notification, PortError> {
        let id = self.id;
        let recipient = vault
            .open(&self.recipient_ciphertext, &recipient_context(id))
            .map_err(|e| PortError::unknown(format!("opening notification {id}: {e}")))?;
        let (email, phone, name): Recipient =
            serde_json::from_slice(&recipient).map_err(|e| PortError::Unknown(e.into()))?;
        let link = vault
            .open_secret(&self.link_ciphertext, &link_context(id))
            .map_err(|e| PortError::unknown(format!("opening notification {id}: {e}")))?;
        let named: Vec<(String, String)> = serde_json::from_value(self.masked_details)
            .map_err(|e| PortError::Unknown(e.into()))?;
        let masked_details = named
            .into_iter()
            .map(|(name, value)| {
                AccountField::from_name(&name)
                    .map(|field| (field, value))
                    .ok_or_else(|| {
                        PortError::unknown(format!("notification {id} has unknown field {name}"))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Notification {
            id: NotificationId::from_uuid(id),
            channel: Channel::parse(&self.channel).ok_or_else(|| {
                PortError::unknown(format!("notification {id} has unknown channel"))
            })?,
            request: ConfirmationRequest {
                account_id: ReceiverAccountId::from_uuid(self.account_id),
                subaccount_id: SubaccountId::from_uuid(self.subaccount_id),
                to_email: email,
                to_phone: phone,
                receiver_name: name,
                confirm_url: Secret::new(link.expose().clone()),
                masked_details,
            },
            attempt: u32::try_from(self.attempts).unwrap_or(0),
            created_at: self.created_at,
            claimed_until: self.next_attempt_at,
        })
    }
}

/// Takes due pending rows in one statement (so atomically), oldest due first, skipping rows
/// another instance holds locked: each one's attempt count goes up and its `next_attempt_at`
/// becomes the claim's end.
///
/// Parameters: now, limit, claimed until; `$subaccount` is a further condition on the rows
/// (empty, or one on `$4`).
macro_rules! claim_due {
    ($subaccount:literal) => {
        concat!(
            "WITH due AS ( \
               SELECT id FROM notifications \
               WHERE status = 'pending' AND next_attempt_at <= $1",
            $subaccount,
            " ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
             UPDATE notifications n \
             SET attempts = n.attempts + 1, next_attempt_at = $3, updated_at = $1 \
             FROM due WHERE n.id = due.id",
            $subaccount,
            " RETURNING n.id, n.subaccount_id, n.account_id, n.channel, \
               n.recipient_ciphertext, n.link_ciphertext, n.masked_details, n.attempts, \
               n.created_at, n.next_attempt_at"
        )
    };
}

/// The claim of due rows of every subaccount (plain PostgreSQL).
const CLAIM_DUE: &str = claim_due!("");

/// The claim of one subaccount's due rows (`$4`), on Citus, where `FOR UPDATE` works only in a
/// statement that runs on one shard, which the subaccount picks.
const CLAIM_DUE_OF_SUBACCOUNT: &str = claim_due!(" AND subaccount_id = $4");

/// The subaccounts of the `$2` (limit) oldest due rows (`$1` now), the one with the oldest due
/// row first: a plain read, which Citus runs on every shard, to choose the subaccounts to claim
/// from with [`CLAIM_DUE_OF_SUBACCOUNT`] (see [`claim_by_subaccount`]). Each shard walks its due
/// index (`notifications_due`) for its `$2` oldest, so the read costs the limit, not the
/// backlog (as the events' claim, `delivery.rs`).
pub(super) const SUBACCOUNTS_WITH_DUE_ROWS: &str = "\
    SELECT subaccount_id FROM ( \
      SELECT subaccount_id, next_attempt_at FROM notifications \
      WHERE status = 'pending' AND next_attempt_at <= $1 \
      ORDER BY next_attempt_at LIMIT $2) oldest \
    GROUP BY subaccount_id ORDER BY min(next_attempt_at)";

/// A listed row: no recipient, no link.
#[derive(Queryable, Selectable)]
#[diesel(table_name = notifications, check_for_backend(diesel::pg::Pg))]
struct SummaryRow {
    id: Uuid,
    subaccount_id: Uuid,
    account_id: Uuid,
    channel: String,
    status: String,
    attempts: i32,
    next_attempt_at: Option<DateTime<Utc>>,
    last_error: Option<String>,
    created_at: DateTime<Utc>,
    sent_at: Option<DateTime<Utc>>,
}

impl SummaryRow {
    fn into_domain(self) -> Result<NotificationSummary, PortError> {
        let id = self.id;
        Ok(NotificationSummary {
            id: NotificationId::from_uuid(id),
            subaccount_id: SubaccountId::from_uuid(self.subaccount_id),
            account_id: ReceiverAccountId::from_uuid(self.account_id),
            channel: Channel::parse(&self.channel).ok_or_else(|| {
                PortError::unknown(format!("notification {id} has unknown channel"))
            })?,
            status: NotificationStatus::parse(&self.status).ok_or_else(|| {
                PortError::unknown(format!("notification {id} has unknown status"))
            })?,
            attempts: u32::try_from(self.attempts).unwrap_or(0),
            next_attempt_at: self.next_attempt_at,
            last_error: self.last_error,
            created_at: self.created_at,
            sent_at: self.sent_at,
        })
    }
}

#[async_trait]
impl NotificationStore for PgStore {
    #[tracing::instrument(level = "trace", skip_all, fields(limit = limit))]
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        claimed_until: DateTime<Utc>,
    ) -> Result<Vec<Notification>, PortError> {
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        let rows: Vec<ClaimedRow> = if citus {
            claim_by_subaccount(
                &mut conn,
                SUBACCOUNTS_WITH_DUE_ROWS,
                now,
                limit,
                |subaccount, remaining| {
                    diesel::sql_query(CLAIM_DUE_OF_SUBACCOUNT)
                        .bind::<Timestamptz, _>(now)
                        .bind::<Integer, _>(remaining)
                        .bind::<Timestamptz, _>(claimed_until)
                        .bind::<SqlUuid, _>(subaccount)
                        .cached()
                },
            )
            .await?
        } else {
            diesel::sql_query(CLAIM_DUE)
                .bind::<Timestamptz, _>(now)
                .bind::<Integer, _>(limit)
                .bind::<Timestamptz, _>(claimed_until)
                .cached()
                .load(&mut conn)
                .await
                .map_err(from_diesel)?
        };
        drop(conn);
        rows.into_iter()
            .map(|row| row.into_domain(&self.vault))
            .collect()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(
            notification = %notification.id,
            attempt = notification.attempt,
            status = outcome.status().as_str()
        )
    )]
    async fn record_outcome(
        &self,
        notification: &Notification,
        outcome: &NotificationOutcome,
    ) -> Result<bool, PortError> {
        let (next_attempt_at, last_error, sent_at) = match outcome {
            NotificationOutcome::Sent { at } => (None, None, Some(*at)),
            NotificationOutcome::Retry { retry_at, error } => {
                (Some(*retry_at), Some(error.clone()), None)
            }
            NotificationOutcome::Failed { error, .. } => (None, Some(error.clone()), None),
        };
        let mut conn = self.conn().await?;
        let updated = diesel::update(notifications::table)
            .filter(notifications::id.eq(notification.id.as_uuid()))
            // Redundant with the id, but it lets Citus send the update to one shard.
            .filter(notifications::subaccount_id.eq(notification.request.subaccount_id.as_uuid()))
            .filter(
                notifications::attempts.eq(i32::try_from(notification.attempt).unwrap_or(i32::MAX)),
            )
            .filter(notifications::status.eq(NotificationStatus::Pending.as_str()))
            .filter(notifications::next_attempt_at.eq(notification.claimed_until))
            .set((
                notifications::status.eq(outcome.status().as_str()),
                notifications::next_attempt_at.eq(next_attempt_at),
                notifications::last_error.eq(last_error),
                notifications::sent_at.eq(sent_at),
                notifications::updated_at.eq(diesel::dsl::now),
            ))
            .cached()
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(updated == 1)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(notification = %id))]
    async fn resend_failed(
        &self,
        id: NotificationId,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<Resend, PortError> {
        let mut conn = self.conn().await?;
        // Found by id alone (on Citus, on every shard); then locked on its own shard.
        let subaccount: Option<Uuid> = notifications::table
            .filter(notifications::id.eq(id.as_uuid()))
            .select(notifications::subaccount_id)
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some(subaccount) = subaccount else {
            return Ok(Resend::NotFound);
        };
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let locked: Option<(Uuid, String)> = notifications::table
                .filter(notifications::id.eq(id.as_uuid()))
                .filter(notifications::subaccount_id.eq(subaccount))
                .select((notifications::account_id, notifications::status))
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let Some((account, status)) = locked else {
                return Ok(Resend::NotFound);
            };
            let status = NotificationStatus::parse(&status).ok_or_else(|| {
                diesel::result::Error::DeserializationError(
                    format!("notification {id} has status {status}").into(),
                )
            })?;
            if status != NotificationStatus::Failed {
                return Ok(Resend::NotFailed(status));
            }
            let live_link: i64 = account_confirmations::table
                .filter(account_confirmations::subaccount_id.eq(subaccount))
                .filter(account_confirmations::account_id.eq(account))
                .filter(account_confirmations::used_at.is_null())
                .filter(account_confirmations::expires_at.gt(now))
                .count()
                .get_result(conn)
                .await?;
            if live_link == 0 {
                return Ok(Resend::LinkSpent);
            }
            let updated = diesel::update(notifications::table)
                .filter(notifications::id.eq(id.as_uuid()))
                .filter(notifications::subaccount_id.eq(subaccount))
                .filter(notifications::status.eq(NotificationStatus::Failed.as_str()))
                .set((
                    notifications::status.eq(NotificationStatus::Pending.as_str()),
                    notifications::attempts.eq(0),
                    notifications::next_attempt_at.eq(Some(now)),
                    notifications::last_error.eq(None::<String>),
                    notifications::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            // The row is locked, so this holds; the conditional write keeps it true anyway.
            if updated != 1 {
                return Ok(Resend::NotFailed(NotificationStatus::Pending));
            }
            insert_audit(conn, audit).await?;
            Ok(Resend::Queued)
        })
        .await
        .map_err(from_diesel)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn list_notifications(
        &self,
        status: Option<NotificationStatus>,
        before: Option<NotificationId>,
        limit: u32,
    ) -> Result<Vec<NotificationSummary>, PortError> {
        let mut query = notifications::table
            .select(SummaryRow::as_select())
            .order((notifications::created_at.desc(), notifications::id.desc()))
            .limit(i64::from(limit))
            .into_boxed();
        if let Some(status) = status {
            query = query.filter(notifications::status.eq(status.as_str()));
        }
        let mut conn = self.conn().await?;
        if let Some(id) = before {
            // The position first, then one range of the listing index.
            let at: Option<DateTime<Utc>> = notifications::table
                .find(id.as_uuid())
                .select(notifications::created_at)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            // An unknown position pages from nothing.
            let Some(at) = at else {
                return Ok(Vec::new());
            };
            query = query.filter(
                notifications::created_at
                    .lt(at)
                    .or(notifications::created_at
                        .eq(at)
                        .and(notifications::id.lt(id.as_uuid()))),
            );
        }
        let rows: Vec<SummaryRow> = query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter().map(SummaryRow::into_domain).collect()
    }
}
