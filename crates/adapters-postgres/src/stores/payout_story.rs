//! A payout's story and the payout search, for operators (the console): composed of the reads
//! the other stores already make, each named with the payout's subaccount so that on Citus it
//! goes to the payout's shard alone. The parts are read one after the other, not in one
//! snapshot: a payout that moves meanwhile may show a part newer than another.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::batch::ports::BatchStore;
use domain::error::OperatorError;
use domain::ids::{PayoutId, SubaccountId};
use domain::payout::Payout;
use domain::payout::ports::PayoutStore;
use domain::payout_story::{PayoutCursor, PayoutSearch, PayoutStory, PayoutStoryStore};
use uuid::Uuid;

use super::PgStore;
use crate::errors::from_diesel;
use crate::rows::PayoutRow;
use crate::schema::payouts;

/// The most events a payout's story shows (a payout has a handful).
const STORY_EVENTS: u32 = 1_000;

fn port(e: OperatorError) -> PortError {
    match e {
        OperatorError::Port(e) => e,
        other => PortError::unknown(other.to_string()),
    }
}

#[async_trait]
impl PayoutStoryStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(payout = %id))]
    async fn payout_story(&self, id: PayoutId) -> Result<Option<PayoutStory>, PortError> {
        // The one read without the subaccount (on Citus it asks every shard): the rest is
        // named with the subaccount it gives.
        let subaccount: Option<Uuid> = {
            let mut conn = self.conn().await?;
            payouts::table
                .filter(payouts::id.eq(id.as_uuid()))
                .select(payouts::subaccount_id)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?
        };
        let Some(subaccount) = subaccount.map(SubaccountId::from_uuid) else {
            return Ok(None);
        };
        let Some((payout, ledger)) = self.find_payout(subaccount, id).await? else {
            return Ok(None);
        };
        let mut events = self
            .event_summaries(
                subaccount,
                Some(id.as_uuid()),
                None,
                None,
                None,
                STORY_EVENTS,
            )
            .await
            .map_err(port)?;
        // Read newest first; the story runs oldest first.
        events.reverse();
        let batch = match payout.batch_id {
            Some(batch) => self.find_batch(subaccount, batch).await?,
            None => None,
        };
        let file = self.filed_payment(subaccount, id).await?;
        let answers = self
            .reports_about(id, file.as_ref().map(|f| f.file.id))
            .await?;
        Ok(Some(PayoutStory {
            payout,
            events,
            ledger,
            batch,
            file,
            answers,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn search_payouts(
        &self,
        search: &PayoutSearch,
        after: Option<PayoutCursor>,
        limit: u32,
    ) -> Result<Vec<Payout>, PortError> {
        let mut query = payouts::table.select(PayoutRow::as_select()).into_boxed();
        if let Some(subaccount) = search.subaccount {
            query = query.filter(payouts::subaccount_id.eq(subaccount.as_uuid()));
        }
        if let Some(receiver) = search.receiver {
            query = query.filter(payouts::receiver_id.eq(receiver.as_uuid()));
        }
        let filter = &search.filter;
        if let Some(status) = filter.status {
            query = query.filter(payouts::status.eq(i16::from(status.code())));
        }
        if let Some(from) = filter.created_from {
            query = query.filter(payouts::created_at.ge(from));
        }
        if let Some(before) = filter.created_before {
            query = query.filter(payouts::created_at.lt(before));
        }
        if let Some(reference) = &filter.reference {
            query = query.filter(payouts::reference.eq(reference.clone()));
        }
        if let Some(after) = after {
            query = query.filter(
                payouts::created_at
                    .lt(after.created_at)
                    .or(payouts::created_at
                        .eq(after.created_at)
                        .and(payouts::id.lt(after.id.as_uuid()))),
            );
        }
        let mut conn = self.conn().await?;
        let rows: Vec<PayoutRow> = query
            .order((payouts::created_at.desc(), payouts::id.desc()))
            .limit(i64::from(limit))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter().map(Payout::try_from).collect()
    }
}
