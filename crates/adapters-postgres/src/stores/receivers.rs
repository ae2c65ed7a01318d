//! `ReceiverStore` on PostgreSQL.

use async_trait::async_trait;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::events::OutboxEvent;
use domain::idempotency::{KeyCommit, WriteKey};
use domain::ids::{ReceiverId, SubaccountId};
use domain::paging::PageRequest;
use domain::rail::schedule::BatchSchedule;
use domain::receiver::ports::{InsertReceiverError, ReceiverStore};
use domain::receiver::query::ReceiverFilter;
use domain::receiver::values::normalize_email;
use domain::receiver::{KycStatus, Receiver};

use super::PgStore;
use super::outbox::insert_events;
use super::payout_write::transitions::{PayoutAbort, Waiting, react};
use crate::cached::CachedExt;
use crate::errors::{TxError, from_diesel, from_tx};
use crate::rows::ReceiverRow;
use crate::schema::receivers;
use domain::payout::change::PayoutReaction;

/// Inside a transaction: applies a KYC decision to `receiver` (its `status`, `kyc_status` and
/// `updated_at`) where its stored KYC status is still `expected`, writes `events` (applying
/// `commit`), and applies `reaction` to the receiver's waiting payouts.
/// `PayoutAbort::Superseded` when the receiver is no longer `expected` (nothing written).
/// Shared by `ReceiverStore::apply_kyc` and the operator's `KycDecisionStore`.
pub(super) async fn decide_kyc(
    conn: &mut AsyncPgConnection,
    receiver: &Receiver,
    expected: KycStatus,
    events: &[OutboxEvent],
    commit: Option<&KeyCommit<'_>>,
    reaction: &PayoutReaction,
    schedule: &BatchSchedule,
) -> Result<(), PayoutAbort> {
    let id = receiver.id.as_uuid();
    let subaccount = receiver.subaccount_id.as_uuid();
    let updated = diesel::update(receivers::table)
        .filter(receivers::id.eq(id))
        .filter(receivers::subaccount_id.eq(subaccount))
        .filter(receivers::kyc_status.eq(i16::from(expected.code())))
        .set((
            receivers::status.eq(i16::from(receiver.status.code())),
            receivers::kyc_status.eq(i16::from(receiver.kyc_status.code())),
            receivers::updated_at.eq(receiver.updated_at),
        ))
        .cached()
        .execute(conn)
        .await?;
    if updated != 1 {
        // Decided meanwhile: nothing to write, and nothing written.
        return Err(PayoutAbort::Superseded);
    }
    insert_events(conn, events, commit).await?;
    react(
        conn,
        subaccount,
        Waiting::OfReceiver(id),
        reaction,
        schedule,
    )
    .await
}

fn to_domain(row: ReceiverRow) -> Result<Receiver, PortError> {
    Receiver::try_from(row).map_err(PortError::Unknown)
}

#[async_trait]
impl ReceiverStore for PgStore {
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %receiver.subaccount_id, receiver = %receiver.id)
    )]
    async fn insert_receiver(
        &self,
        receiver: &Receiver,
        events: &[OutboxEvent],
        key: &WriteKey<Receiver>,
    ) -> Result<(), InsertReceiverError> {
        let row = ReceiverRow::from(receiver);
        let commit = key.commit(receiver);
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                diesel::insert_into(receivers::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                insert_events(conn, events, commit.as_ref()).await
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(match e.unique_violation() {
                Some("receivers_email_unique") => InsertReceiverError::DuplicateEmail,
                Some("receivers_reference_unique") => InsertReceiverError::DuplicateReference,
                _ => InsertReceiverError::Port(from_tx(e)),
            }),
        }
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, receiver = %id)
    )]
    async fn find_receiver(
        &self,
        subaccount: SubaccountId,
        id: ReceiverId,
    ) -> Result<Option<Receiver>, PortError> {
        // The subaccount is compared with `=` on Citus, which routes the read to its shard, and
        // with `IS NOT DISTINCT FROM` on plain PostgreSQL, which no index serves, so that the
        // generic plan finds the receiver by its primary key however the subaccounts' sizes are
        // spread (as a single payout's reads do: OPERATIONS, Group commit).
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        let read = receivers::table
            .filter(receivers::id.eq(id.as_uuid()))
            .select(ReceiverRow::as_select());
        let row = if citus {
            read.filter(receivers::subaccount_id.eq(subaccount.as_uuid()))
                .first(&mut conn)
                .await
        } else {
            read.filter(receivers::subaccount_id.is_not_distinct_from(subaccount.as_uuid()))
                .first(&mut conn)
                .await
        }
        .optional()
        .map_err(from_diesel)?;
        row.map(to_domain).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount, ids = ids.len()))]
    async fn find_receivers(
        &self,
        subaccount: SubaccountId,
        ids: &[ReceiverId],
    ) -> Result<Vec<Receiver>, PortError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // As `find_receiver`: `=` routes to the shard on Citus; on plain PostgreSQL the ids'
        // primary key finds them whatever the subaccount's size.
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        let ids: Vec<uuid::Uuid> = ids.iter().map(|id| id.as_uuid()).collect();
        let read = receivers::table
            .filter(receivers::id.eq_any(&ids))
            .select(ReceiverRow::as_select());
        let rows: Vec<ReceiverRow> = if citus {
            read.filter(receivers::subaccount_id.eq(subaccount.as_uuid()))
                .load(&mut conn)
                .await
        } else {
            read.filter(receivers::subaccount_id.is_not_distinct_from(subaccount.as_uuid()))
                .load(&mut conn)
                .await
        }
        .map_err(from_diesel)?;
        rows.into_iter().map(to_domain).collect()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %receiver.subaccount_id, receiver = %receiver.id)
    )]
    async fn apply_kyc(
        &self,
        receiver: &Receiver,
        expected: KycStatus,
        events: &[OutboxEvent],
        reaction: &PayoutReaction,
        key: &WriteKey<Receiver>,
    ) -> Result<bool, PortError> {
        let schedule = &self.batch_schedule;
        let commit = key.commit(receiver);
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, PayoutAbort, _>(async |conn| {
                decide_kyc(
                    conn,
                    receiver,
                    expected,
                    events,
                    commit.as_ref(),
                    reaction,
                    schedule,
                )
                .await
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(()) => Ok(true),
            Err(PayoutAbort::Superseded) => Ok(false),
            Err(e) => Err(e.into_port("applying a KYC decision")),
        }
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, limit = page.limit)
    )]
    async fn list_receivers(
        &self,
        subaccount: SubaccountId,
        filter: &ReceiverFilter,
        page: &PageRequest,
    ) -> Result<Vec<Receiver>, PortError> {
        let mut query = receivers::table
            .filter(receivers::subaccount_id.eq(subaccount.as_uuid()))
            .select(ReceiverRow::as_select())
            .into_boxed();
        if let Some(status) = filter.status {
            query = query.filter(receivers::status.eq(i16::from(status.code())));
        }
        if let Some(kyc) = filter.kyc_status {
            query = query.filter(receivers::kyc_status.eq(i16::from(kyc.code())));
        }
        if let Some(gender) = filter.gender {
            query = query.filter(receivers::gender.eq(gender.as_str()));
        }
        if let Some(dob) = filter.dob {
            query = query.filter(receivers::dob.eq(dob));
        }
        if let Some(country) = &filter.country {
            query = query.filter(receivers::country.eq(country.as_str().to_owned()));
        }
        if let Some(email) = &filter.email {
            query = query.filter(receivers::email_normalized.eq(normalize_email(email)));
        }
        macro_rules! exact {
            ($($field:ident),+) => {$(
                if let Some(value) = &filter.$field {
                    query = query.filter(receivers::$field.eq(value.clone()));
                }
            )+};
        }
        exact!(
            first_name,
            last_name,
            middle_name,
            dialcode,
            phone,
            address,
            address2,
            city,
            state,
            postcode
        );
        if let Some(reference) = &filter.reference {
            query = query.filter(receivers::reference.eq(reference.clone()));
        }
        if let Some(after) = page.after {
            // A row comparison, so the (subaccount_id, created_at DESC, id DESC) index serves it.
            query = query.filter(
                sql::<Bool>("(receivers.created_at, receivers.id) < (")
                    .bind::<Timestamptz, _>(after.created_at)
                    .sql(", ")
                    .bind::<SqlUuid, _>(after.id)
                    .sql(")"),
            );
        }
        let mut conn = self.conn().await?;
        let rows = query
            .order((receivers::created_at.desc(), receivers::id.desc()))
            .limit(i64::from(page.limit) + 1)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter().map(to_domain).collect()
    }
}
