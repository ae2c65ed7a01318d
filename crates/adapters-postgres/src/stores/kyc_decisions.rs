//! `KycDecisionStore` on PostgreSQL: the operator's KYC decisions (`payoutd admin kyc`),
//! applied like the provider's and recorded in `kyc_decisions` in the same transaction.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::audit::AuditEntry;
use domain::events::OutboxEvent;
use domain::ids::ReceiverId;
use domain::payout::change::PayoutReaction;
use domain::receiver::operator::{KycDecisionRecord, KycDecisionStore, decision_name};
use domain::receiver::{KycStatus, Receiver};
use uuid::Uuid;

use super::PgStore;
use super::payout_write::transitions::PayoutAbort;
use super::receivers::decide_kyc;
use crate::errors::from_diesel;
use crate::rows::ReceiverRow;
use crate::schema::{kyc_decisions, receivers};

#[async_trait]
impl KycDecisionStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(receiver = %id))]
    async fn find_receiver_anywhere(&self, id: ReceiverId) -> Result<Option<Receiver>, PortError> {
        let mut conn = self.conn().await?;
        let row = receivers::table
            .filter(receivers::id.eq(id.as_uuid()))
            .select(ReceiverRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        row.map(|r| Receiver::try_from(r).map_err(PortError::Unknown))
            .transpose()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %receiver.subaccount_id, receiver = %receiver.id)
    )]
    async fn apply_operator_kyc(
        &self,
        receiver: &Receiver,
        expected: KycStatus,
        events: &[OutboxEvent],
        reaction: &PayoutReaction,
        record: &KycDecisionRecord,
        audit: &AuditEntry,
    ) -> Result<bool, PortError> {
        let schedule = &self.batch_schedule;
        let trail = (
            kyc_decisions::id.eq(Uuid::new_v4()),
            kyc_decisions::receiver_id.eq(record.receiver_id.as_uuid()),
            kyc_decisions::subaccount_id.eq(record.subaccount_id.as_uuid()),
            kyc_decisions::decision.eq(decision_name(record.decision)),
            kyc_decisions::reason.eq(record.reason.clone()),
            kyc_decisions::decided_by.eq(record.decided_by.clone()),
            kyc_decisions::decided_at.eq(record.decided_at),
        );
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, PayoutAbort, _>(async |conn| {
                decide_kyc(conn, receiver, expected, events, None, reaction, schedule).await?;
                diesel::insert_into(kyc_decisions::table)
                    .values(trail)
                    .execute(conn)
                    .await?;
                super::console::insert_audit(conn, audit).await?;
                Ok(())
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(()) => Ok(true),
            Err(PayoutAbort::Superseded) => Ok(false),
            Err(e) => Err(e.into_port("applying an operator's KYC decision")),
        }
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn pending_kyc(
        &self,
        after: Option<ReceiverId>,
        limit: u32,
    ) -> Result<Vec<Receiver>, PortError> {
        let pending = i16::from(KycStatus::Pending.code());
        let mut conn = self.conn().await?;
        let mut query = receivers::table
            .filter(receivers::kyc_status.eq(pending))
            .order((receivers::created_at.asc(), receivers::id.asc()))
            .limit(i64::from(limit))
            .select(ReceiverRow::as_select())
            .into_boxed();
        if let Some(after) = after {
            let position: Option<chrono::DateTime<chrono::Utc>> = receivers::table
                .filter(receivers::id.eq(after.as_uuid()))
                .select(receivers::created_at)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            let Some(created) = position else {
                return Ok(Vec::new());
            };
            query = query.filter(
                receivers::created_at.gt(created).or(receivers::created_at
                    .eq(created)
                    .and(receivers::id.gt(after.as_uuid()))),
            );
        }
        let rows = query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter()
            .map(|r| Receiver::try_from(r).map_err(PortError::Unknown))
            .collect()
    }
}
