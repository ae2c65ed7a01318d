//! `PayoutStore` on PostgreSQL: its reads and transitions here, its new payouts through the
//! write path's strategies (see the parent module). A payout's hold is one conditional update
//! on `balances`, in the same transaction as its ledger entries, its row and its events.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ids::{BatchId, PayoutId, SubaccountId};
use domain::ledger::LedgerEntry;
use domain::payout::Payout;
use domain::payout::ports::{
    BulkPayoutResult, BulkSlot, InsertPayoutError, PayoutStore, PlanningFacts, PlanningQuery,
};
use uuid::Uuid;

use super::PgStore;
use super::transitions::{PayoutAbort, apply_change, apply_changes};
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::rows::{EntryRow, PayoutRow, entry};
use crate::schema::{ledger_entries, payouts, receiver_accounts, receivers};
use crate::stores::account_rows::AccountRow;
use domain::account::ReceiverAccount;
use domain::paging::PageRequest;
use domain::payout::change::PayoutChange;
use domain::payout::ports::PayoutListItem;
use domain::payout::query::PayoutFilter;
use domain::receiver::Receiver;
use std::collections::{BTreeMap, HashMap, HashSet};

impl PgStore {
    /// Applies `changes` (one subaccount's) in one transaction, with set statements where
    /// [`apply_changes`] can. `Ok(false)` when one payout is no longer in the status its
    /// change expects; then nothing was written.
    async fn apply_set(&self, changes: &[PayoutChange]) -> Result<bool, PortError> {
        let schedule = &self.batch_schedule;
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, PayoutAbort, _>(async |conn| {
                apply_changes(conn, changes, schedule).await
            })
            .await;
        match self.after_commit(result) {
            Ok(()) => Ok(true),
            Err(PayoutAbort::Superseded) => Ok(false),
            Err(PayoutAbort::InsufficientBalance) => Err(PortError::unknown(format!(
                "{} payout transitions: a balance cannot absorb them; ledger and balance disagree",
                changes.len()
            ))),
            Err(e) => Err(e.into_port("applying payout transitions")),
        }
    }
}

#[async_trait]
impl PayoutStore for PgStore {
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, receivers = query.receivers.len())
    )]
    async fn planning_facts(
        &self,
        subaccount: SubaccountId,
        query: &PlanningQuery,
    ) -> Result<PlanningFacts, PortError> {
        self.read_planning_facts(subaccount, query).await
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, payout = %id)
    )]
    async fn find_payout(
        &self,
        subaccount: SubaccountId,
        id: PayoutId,
    ) -> Result<Option<(Payout, Vec<LedgerEntry>)>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<PayoutRow> = payouts::table
            .filter(payouts::id.eq(id.as_uuid()))
            .filter(payouts::subaccount_id.eq(subaccount.as_uuid()))
            .select(PayoutRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some(row) = row else {
            return Ok(None);
        };
        // Named with the subaccount too, so on Citus the read goes to the payout's shard alone
        // rather than to every shard.
        let entries: Vec<EntryRow> = ledger_entries::table
            .filter(ledger_entries::payout_id.eq(id.as_uuid()))
            .filter(ledger_entries::subaccount_id.eq(subaccount.as_uuid()))
            .order(ledger_entries::seq.asc())
            .select((
                ledger_entries::id,
                ledger_entries::subaccount_id,
                ledger_entries::asset,
                ledger_entries::kind,
                ledger_entries::available_delta,
                ledger_entries::pending_delta,
                ledger_entries::payout_id,
                ledger_entries::created_at,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let entries = entries
            .into_iter()
            .map(entry)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some((Payout::try_from(row)?, entries)))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(payouts = keys.len()))]
    async fn find_payouts(
        &self,
        keys: &[(SubaccountId, PayoutId)],
    ) -> Result<Vec<Payout>, PortError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut subaccounts: Vec<Uuid> = keys.iter().map(|(s, _)| s.as_uuid()).collect();
        subaccounts.sort_unstable();
        subaccounts.dedup();
        let ids: Vec<Uuid> = keys.iter().map(|(_, p)| p.as_uuid()).collect();
        let mut conn = self.conn().await?;
        // One statement: `id = ANY($ids)` by the primary key, with the subaccounts named too
        // (`subaccount_id = ANY($subaccounts)`), so that on Citus it goes to their shards
        // alone. A payout paired with another of the subaccounts than its own is left out.
        let rows: Vec<PayoutRow> = payouts::table
            .filter(payouts::subaccount_id.eq_any(&subaccounts))
            .filter(payouts::id.eq_any(&ids))
            .select(PayoutRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let wanted: HashSet<(Uuid, Uuid)> = keys
            .iter()
            .map(|(s, p)| (s.as_uuid(), p.as_uuid()))
            .collect();
        rows.into_iter()
            .filter(|row| wanted.contains(&(row.subaccount_id, row.id)))
            .map(Payout::try_from)
            .collect()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %change.payout.subaccount_id, payout = %change.payout.id)
    )]
    async fn apply_transition(
        &self,
        change: &PayoutChange,
        key: &WriteKey<Payout>,
    ) -> Result<bool, PortError> {
        let schedule = &self.batch_schedule;
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, PayoutAbort, _>(async |conn| {
                apply_change(conn, change, schedule, key).await
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(()) => Ok(true),
            Err(PayoutAbort::Superseded) => Ok(false),
            Err(PayoutAbort::InsufficientBalance) => Err(PortError::unknown(format!(
                "payout {}: the balance cannot absorb its transition; ledger and balance disagree",
                change.payout.id
            ))),
            Err(e) => Err(e.into_port("applying a payout transition")),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(changes = changes.len()))]
    async fn apply_transitions(&self, changes: &[PayoutChange]) -> Result<Vec<bool>, PortError> {
        // One set per subaccount: its payouts, balances and batches are one shard on Citus,
        // and a payout changed meanwhile holds back only its own subaccount's set.
        let mut groups: BTreeMap<SubaccountId, Vec<usize>> = BTreeMap::new();
        for (i, change) in changes.iter().enumerate() {
            groups
                .entry(change.payout.subaccount_id)
                .or_default()
                .push(i);
        }
        let mut applied = vec![false; changes.len()];
        for positions in groups.into_values() {
            let group: Vec<PayoutChange> = positions.iter().map(|&i| changes[i].clone()).collect();
            if self.apply_set(&group).await? {
                for i in positions {
                    applied[i] = true;
                }
                continue;
            }
            // One of them changed meanwhile: each on its own.
            for (i, change) in positions.into_iter().zip(&group) {
                applied[i] = self.apply_transition(change, &WriteKey::none()).await?;
            }
        }
        Ok(applied)
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, limit = page.limit)
    )]
    async fn list_payouts(
        &self,
        subaccount: SubaccountId,
        filter: &PayoutFilter,
        page: &PageRequest,
    ) -> Result<Vec<PayoutListItem>, PortError> {
        let mut query = payouts::table
            .filter(payouts::subaccount_id.eq(subaccount.as_uuid()))
            .select(PayoutRow::as_select())
            .into_boxed();
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
        if let Some(after) = page.after {
            // A row comparison, so the (subaccount_id, created_at DESC, id DESC) index serves it.
            query = query.filter(
                diesel::dsl::sql::<diesel::sql_types::Bool>("(payouts.created_at, payouts.id) < (")
                    .bind::<diesel::sql_types::Timestamptz, _>(after.created_at)
                    .sql(", ")
                    .bind::<diesel::sql_types::Uuid, _>(after.id)
                    .sql(")"),
            );
        }
        let mut conn = self.conn().await?;
        let rows: Vec<PayoutRow> = query
            .order((payouts::created_at.desc(), payouts::id.desc()))
            .limit(i64::from(page.limit) + 1)
            // Bounded: one text per combination of filters.
            .cached()
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let receiver_ids: Vec<Uuid> = rows.iter().map(|r| r.receiver_id).collect();
        let account_ids: Vec<Uuid> = rows.iter().map(|r| r.account_id).collect();
        let receivers: Vec<crate::rows::ReceiverRow> = receivers::table
            .filter(receivers::subaccount_id.eq(subaccount.as_uuid()))
            .filter(receivers::id.eq_any(&receiver_ids))
            .select(crate::rows::ReceiverRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let accounts: Vec<AccountRow> = receiver_accounts::table
            .filter(receiver_accounts::subaccount_id.eq(subaccount.as_uuid()))
            .filter(receiver_accounts::id.eq_any(&account_ids))
            .select(AccountRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let receivers: HashMap<Uuid, Receiver> = receivers
            .into_iter()
            .map(|r| Ok((r.id, Receiver::try_from(r).map_err(PortError::Unknown)?)))
            .collect::<Result<_, PortError>>()?;
        let accounts: HashMap<Uuid, ReceiverAccount> = accounts
            .into_iter()
            .map(|a| Ok((a.id, a.into_domain(&self.vault)?)))
            .collect::<Result<_, PortError>>()?;
        rows.into_iter()
            .map(|row| {
                let receiver = receivers.get(&row.receiver_id).cloned();
                let account = accounts.get(&row.account_id).cloned();
                let (Some(receiver), Some(account)) = (receiver, account) else {
                    return Err(PortError::unknown(format!(
                        "payout {} lost its receiver or account",
                        row.id
                    )));
                };
                Ok(PayoutListItem {
                    payout: Payout::try_from(row)?,
                    receiver,
                    account,
                })
            })
            .collect()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %payout.subaccount_id, payout = %payout.id)
    )]
    async fn insert_payout(
        &self,
        payout: &Payout,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
        key: &WriteKey<Payout>,
    ) -> Result<Option<BatchId>, InsertPayoutError> {
        match &self.payout_groups {
            Some(groups) => groups.submit(self, payout, entries, events, key).await,
            None => self.insert_payout_alone(payout, entries, events, key).await,
        }
    }

    /// On plain PostgreSQL: the set statement that writes a payout records its request's nonce
    /// and key too. On Citus a set is written statement by statement, and requests are
    /// admitted before they run.
    async fn admits_in_write(&self) -> Result<bool, PortError> {
        Ok(!self.detect_citus().await?)
    }

    async fn insert_payout_bulk(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, PortError> {
        self.insert_bulk(slots, atomic, key).await
    }
}
