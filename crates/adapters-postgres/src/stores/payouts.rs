//! `PayoutStore` on PostgreSQL: the hold is one conditional update on `balances`, in the same
//! transaction as the ledger entries, the payout row and its events.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ids::{BatchId, FeeGroupId, FeeTemplateId, PayoutId, ReceiverAccountId, SubaccountId};
use domain::ledger::LedgerEntry;
use domain::money::{Asset, MinorUnits, Percentage};
use domain::payout::ports::{
    BulkItemOutcome, BulkPayoutResult, BulkSlot, InsertPayoutError, NewPayout, PayoutStore,
    PlanningFacts, PlanningQuery, bulk_item_error,
};
use domain::payout::{Payout, PayoutStatus};
use domain::subaccount::FeeTemplate;
use uuid::Uuid;

use super::PgStore;
use super::accounts::AccountRow;
use super::outbox::insert_events;
use super::payout_sets::{
    Planned, SetPlans, Verdict, accepted, decide, in_set_transaction, party_status, write_set,
    write_whole, write_whole_then,
};
use super::planning_reads::{
    PlanningRead, PlanningRow, TemplateRow, read_planning, template_columns,
};
use super::transitions::{
    PayoutAbort, apply_change, insert_entries, join_open_batch, with_batch, written_key,
};
use crate::cached::CachedExt;
use crate::errors::{TxError, from_diesel, from_tx};
use crate::rows::{EntryRow, PayoutRow, entry};
use crate::schema::{
    balances, fee_templates, ledger_entries, payouts, receiver_accounts, receivers,
};
use domain::account::ReceiverAccount;
use domain::paging::PageRequest;
use domain::payout::change::PayoutChange;
use domain::payout::ports::PayoutListItem;
use domain::payout::query::PayoutFilter;
use domain::receiver::Receiver;
use std::collections::HashMap;

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
        let sub = subaccount.as_uuid();
        if let Some(one) = OnePayoutFacts::of(query) {
            // Before the connection is taken: the first check takes one of its own.
            let citus = self.detect_citus().await?;
            let read = one.planning_read(query.since);
            let row = match &self.payout_groups {
                // With group commit, the reads of concurrent requests share statements.
                Some(groups) => groups.planning_reads().read(self, sub, read, citus).await?,
                None => {
                    let conn = self.conn().await?;
                    read_planning(&conn, sub, &[read], citus)
                        .await
                        .map_err(from_diesel)?
                        .pop()
                        .ok_or_else(|| PortError::unknown("a planning read answered no row"))?
                }
            };
            return self.facts_from_one(&one, row);
        }
        let pooled = self.conn().await?;
        let conn: &AsyncPgConnection = &pooled;
        // Four independent reads, pipelined on one connection: sent together, answered in
        // one round trip's time. A single payout's reads compare with one value (`= $2`), not
        // with an array (`= ANY($2)`): PostgreSQL plans a prepared statement with an array
        // afresh on every call (its generic plan, costed for an array of unknown length, never
        // looks cheaper than one planned for the array it is given), which cost a single payout
        // about 0.25 ms of planning; with one value it settles on the generic plan.
        let receiver_ids: Vec<Uuid> = query.receivers.iter().map(|id| id.as_uuid()).collect();
        let account_ids: Vec<Uuid> = query.accounts.iter().map(|id| id.as_uuid()).collect();
        let assets: Vec<&str> = query.assets.iter().map(|a| a.code()).collect();
        let receivers_read = async {
            if receiver_ids.is_empty() {
                return Ok(Vec::new());
            }
            let mut conn = conn;
            let read = receivers::table
                .filter(receivers::subaccount_id.eq(sub))
                .select(crate::rows::ReceiverRow::as_select())
                .into_boxed();
            match receiver_ids.as_slice() {
                [one] => read.filter(receivers::id.eq(*one)),
                many => read.filter(receivers::id.eq_any(many)),
            }
            .cached()
            .load::<crate::rows::ReceiverRow>(&mut conn)
            .await
        };
        let accounts_read = async {
            if account_ids.is_empty() {
                return Ok(Vec::new());
            }
            let mut conn = conn;
            let read = receiver_accounts::table
                .filter(receiver_accounts::subaccount_id.eq(sub))
                .select(AccountRow::as_select())
                .into_boxed();
            match account_ids.as_slice() {
                [one] => read.filter(receiver_accounts::id.eq(*one)),
                many => read.filter(receiver_accounts::id.eq_any(many)),
            }
            .cached()
            .load::<AccountRow>(&mut conn)
            .await
        };
        let templates_read = async {
            if assets.is_empty() {
                return Ok(Vec::new());
            }
            let mut conn = conn;
            fee_templates::table
                .filter(fee_templates::subaccount_id.eq(sub))
                .filter(fee_templates::asset.eq_any(&assets))
                .select(template_columns())
                .load::<TemplateRow>(&mut conn)
                .await
        };
        let similar_read = async {
            if query.similar.is_empty() {
                return Ok(Vec::new());
            }
            let mut conn = conn;
            if let [(account, amount, asset)] = query.similar.as_slice() {
                return diesel::sql_query(PAID_SINCE_ONE)
                    .bind::<diesel::sql_types::Uuid, _>(sub)
                    .bind::<diesel::sql_types::Timestamptz, _>(query.since)
                    .bind::<diesel::sql_types::Uuid, _>(account.as_uuid())
                    .bind::<BigInt, _>(amount.get())
                    .bind::<Text, _>(asset.code())
                    .cached()
                    .load::<PaidSince>(&mut conn)
                    .await;
            }
            let count = query.similar.len();
            let (mut accounts, mut amounts, mut assets) = (
                Vec::with_capacity(count),
                Vec::with_capacity(count),
                Vec::with_capacity(count),
            );
            for (account, amount, asset) in &query.similar {
                accounts.push(account.as_uuid());
                amounts.push(amount.get());
                assets.push(asset.code());
            }
            diesel::sql_query(PAID_SINCE)
                .bind::<diesel::sql_types::Uuid, _>(sub)
                .bind::<diesel::sql_types::Timestamptz, _>(query.since)
                .bind::<Array<diesel::sql_types::Uuid>, _>(accounts)
                .bind::<Array<BigInt>, _>(amounts)
                .bind::<Array<Text>, _>(assets)
                .cached()
                .load::<PaidSince>(&mut conn)
                .await
        };
        let (receivers, accounts, templates, paid) = futures_util::future::try_join4(
            receivers_read,
            accounts_read,
            templates_read,
            similar_read,
        )
        .await
        .map_err(from_diesel)?;
        self.facts_from_rows(receivers, accounts, templates, paid)
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

    #[tracing::instrument(level = "debug", skip_all, fields(items = slots.len(), atomic))]
    async fn insert_payout_bulk(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, PortError> {
        match self.insert_bulk_set(slots, atomic, key).await {
            Ok(result) | Err(BulkAbort::Refused(result)) => Ok(result),
            Err(BulkAbort::Payout(e)) if !may_write_again(&e, key.claim().is_some()) => {
                Err(e.into_port("inserting bulk payouts as a set"))
            }
            Err(BulkAbort::Payout(e)) => {
                // Rolled back as a whole (a reference written meanwhile by another request, a
                // lost deadlock), or keyed: item by item, each refusal is its item's alone.
                tracing::debug!(
                    error = %e.into_port("inserting bulk payouts as a set"),
                    "bulk payouts could not be written as a set; writing them item by item"
                );
                self.insert_bulk_by_item(slots, atomic, key).await
            }
        }
    }
}

/// What one payout's planning asks ([`PlanningQuery`] with one receiver, one account, one asset
/// and that account's amount): read in one statement instead of the four pipelined reads a
/// larger query takes. Each statement PostgreSQL runs costs it a bind, an executor start and
/// end, an implicit transaction and a reply of its own, and the server an encoded request and a
/// decoded answer, whatever the statement reads; the single payout is the common request, so it
/// pays for one, and shares it with concurrent requests of its subaccount
/// ([`super::planning_reads`]).
struct OnePayoutFacts {
    receiver: Uuid,
    account: Uuid,
    asset: Asset,
    amount: MinorUnits,
}

impl OnePayoutFacts {
    fn of(query: &PlanningQuery) -> Option<Self> {
        match (
            query.receivers.as_slice(),
            query.accounts.as_slice(),
            query.assets.as_slice(),
            query.similar.as_slice(),
        ) {
            ([receiver], [account], [asset], [(similar_account, amount, similar_asset)])
                if similar_account == account && similar_asset == asset =>
            {
                Some(Self {
                    receiver: receiver.as_uuid(),
                    account: account.as_uuid(),
                    asset: *asset,
                    amount: *amount,
                })
            }
            _ => None,
        }
    }

    /// This query as a read of [`super::planning_reads`], looking back to `since`.
    fn planning_read(&self, since: DateTime<Utc>) -> PlanningRead {
        PlanningRead {
            receiver: self.receiver,
            account: self.account,
            asset: self.asset,
            amount: self.amount,
            since,
        }
    }
}

impl PgStore {
    /// The answer to `one`'s query from its row.
    fn facts_from_one(
        &self,
        one: &OnePayoutFacts,
        (receiver, account, template, paid): PlanningRow,
    ) -> Result<PlanningFacts, PortError> {
        let paid = paid
            .then(|| PaidSince {
                account_id: one.account,
                amount: one.amount.get(),
                asset: one.asset.code().to_owned(),
            })
            .into_iter()
            .collect();
        self.facts_from_rows(
            receiver.into_iter().collect(),
            account.into_iter().collect(),
            template.into_iter().collect(),
            paid,
        )
    }

    /// The answer to a [`PlanningQuery`] from the rows read for it.
    fn facts_from_rows(
        &self,
        receivers: Vec<crate::rows::ReceiverRow>,
        accounts: Vec<AccountRow>,
        templates: Vec<TemplateRow>,
        paid: Vec<PaidSince>,
    ) -> Result<PlanningFacts, PortError> {
        let mut facts = PlanningFacts::default();
        for row in receivers {
            let receiver = Receiver::try_from(row).map_err(PortError::Unknown)?;
            facts.receivers.insert(receiver.id, receiver);
        }
        for row in accounts {
            let account = row.into_domain(&self.vault)?;
            facts.accounts.insert(account.id, account);
        }
        for (asset, id, group_id, fixed, percentage, min_amount) in templates {
            let asset = Asset::parse(&asset).ok_or_else(|| {
                PortError::unknown(format!("fee template {id} has asset {asset}"))
            })?;
            let percentage = u32::try_from(percentage)
                .ok()
                .and_then(|p| Percentage::from_ten_thousandths(p).ok())
                .ok_or_else(|| {
                    PortError::unknown(format!("fee template {id} has percentage {percentage}"))
                })?;
            facts.fee_templates.insert(
                asset,
                FeeTemplate {
                    id: FeeTemplateId::from_uuid(id),
                    group_id: FeeGroupId::from_uuid(group_id),
                    asset,
                    fixed,
                    percentage,
                    min_amount,
                },
            );
        }
        for row in paid {
            let (Some(amount), Some(asset)) =
                (MinorUnits::new(row.amount).ok(), Asset::parse(&row.asset))
            else {
                continue;
            };
            facts
                .paid_since
                .insert((ReceiverAccountId::from_uuid(row.account_id), amount, asset));
        }
        Ok(facts)
    }
}

impl PgStore {
    /// A bulk request in one transaction of set statements ([`super::payout_sets`]): on plain
    /// PostgreSQL first written whole with its key applied; when anything would refuse an
    /// item (and on Citus), every item decided in request order, then the accepted ones
    /// written together and the key applied. `Refused` for an atomic request with a refused
    /// item (nothing written).
    async fn insert_bulk_set(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, BulkAbort> {
        let schedule = &self.batch_schedule;
        let planned: Vec<Planned<'_>> = slots
            .iter()
            .filter_map(|slot| match slot {
                BulkSlot::Insert(new) => Some(Planned {
                    payout: &new.payout,
                    entries: &new.entries,
                    events: &new.events,
                    key: None,
                }),
                BulkSlot::Rejected(_) => None,
            })
            .collect();
        // Detected before the transaction's connection is taken (the first detection takes a
        // connection of its own).
        let plans = SetPlans::on_citus(
            self.detect_citus()
                .await
                .map_err(|e| BulkAbort::Payout(PayoutAbort::Tx(TxError::invariant(e))))?,
        );
        let mut conn = self
            .conn()
            .await
            .map_err(|e| BulkAbort::Payout(PayoutAbort::Tx(TxError::invariant(e))))?;
        let rejected = slots.iter().any(|s| matches!(s, BulkSlot::Rejected(_)));
        if let (SetPlans::Generic, Some(first), false) =
            (plans, planned.as_slice().first(), atomic && rejected)
        {
            // Most bulk requests are accepted whole: written at once, as a group of single
            // requests is, the balance locked only by the write's last part (its guarded
            // update) until the commit, instead of from before the writes, so concurrent bulk
            // requests of a subaccount write their payouts side by side rather than one after
            // another. Anything that would refuse an item rolls the attempt back, and the
            // request is then decided item by item below.
            let result = BulkPayoutResult {
                atomic,
                items: slots
                    .iter()
                    .map(|slot| match slot {
                        BulkSlot::Rejected(errors) => BulkItemOutcome::Failed(errors.clone()),
                        BulkSlot::Insert(new) => BulkItemOutcome::Created(new.payout.id),
                    })
                    .collect(),
            };
            let subaccount = first.payout.subaccount_id.as_uuid();
            let written =
                write_whole_then(&mut conn, subaccount, &planned, schedule, async |conn| {
                    super::idempotency::mark_committed(conn, key.commit(&result).as_ref())
                        .await
                        .map_err(PayoutAbort::Tx)
                })
                .await;
            match written {
                Ok(_) => return self.after_commit(Ok(result)),
                // Nothing written: decided item by item.
                Err(e) if rolled_back_whole(&e) => tracing::debug!(
                    items = planned.len(),
                    reason = %e.into_port("writing a bulk request whole"),
                    "a bulk request was not accepted whole; deciding its items one by one"
                ),
                // Perhaps committed: the caller writes a keyed request again item by item
                // (its key marking then finds the key committed, if it was, and writes
                // nothing) and answers an unkeyed one with the failure.
                Err(e) => return Err(BulkAbort::Payout(e)),
            }
        }
        let result = in_set_transaction::<_, BulkAbort, _>(&mut conn, plans, async |conn| {
            let verdicts = match planned.as_slice().first() {
                Some(first) => {
                    decide(conn, first.payout.subaccount_id.as_uuid(), &planned, plans).await?
                }
                None => Vec::new(),
            };
            let mut verdict = verdicts.iter();
            let mut items = Vec::with_capacity(slots.len());
            for slot in slots {
                // Only the inserted items were decided: a rejected one takes no verdict.
                let decided = match slot {
                    BulkSlot::Rejected(_) => None,
                    BulkSlot::Insert(_) => verdict.next(),
                };
                items.push(match (slot, decided) {
                    (BulkSlot::Rejected(errors), _) => BulkItemOutcome::Failed(errors.clone()),
                    (BulkSlot::Insert(new), Some(Verdict::Write)) => {
                        BulkItemOutcome::Created(new.payout.id)
                    }
                    (BulkSlot::Insert(_), Some(Verdict::Refuse(refusal))) => {
                        BulkItemOutcome::Failed(bulk_item_error(&refusal.error()).ok_or_else(
                            || {
                                PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
                                    "a refusal without an item error"
                                )))
                            },
                        )?)
                    }
                    (BulkSlot::Insert(_), None) => {
                        return Err(BulkAbort::Payout(PayoutAbort::Tx(TxError::invariant(
                            anyhow::anyhow!("fewer decisions than bulk items"),
                        ))));
                    }
                });
            }
            let result = BulkPayoutResult { atomic, items };
            if atomic && result.failed() > 0 {
                return Err(BulkAbort::Refused(result));
            }
            let written = accepted(&planned, &verdicts);
            if let Some(first) = written.as_slice().first() {
                let subaccount = first.payout.subaccount_id.as_uuid();
                write_set(conn, subaccount, &written, schedule, plans).await?;
            }
            super::idempotency::mark_committed(conn, key.commit(&result).as_ref())
                .await
                .map_err(PayoutAbort::Tx)?;
            Ok(result)
        })
        .await;
        self.after_commit(result)
    }

    /// A bulk request item by item, each in its own savepoint, in one transaction; run again
    /// when PostgreSQL rolls that transaction back to break a deadlock, as a single payout is
    /// (the first attempt of a bulk request is often a deadlock's victim already, and its
    /// items lock the balance row one after another while others wait to take it whole).
    async fn insert_bulk_by_item(
        &self,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, PortError> {
        let citus = self.detect_citus().await?;
        let mut conn = self.conn().await?;
        let mut attempt = 1;
        loop {
            let result = self
                .insert_bulk_by_item_once(&mut conn, citus, slots, atomic, key)
                .await;
            match self.after_commit(result) {
                Err(BulkAbort::Payout(PayoutAbort::Tx(ref e)))
                    if runs_again(e, &mut attempt, "a bulk request's items") => {}
                Ok(result) | Err(BulkAbort::Refused(result)) => return Ok(result),
                Err(BulkAbort::Payout(e)) => return Err(e.into_port("inserting bulk payouts")),
            }
        }
    }

    /// One attempt of [`Self::insert_bulk_by_item`].
    async fn insert_bulk_by_item_once(
        &self,
        conn: &mut AsyncPgConnection,
        citus: bool,
        slots: &[BulkSlot],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, BulkAbort> {
        let schedule = &self.batch_schedule;
        conn.transaction::<_, BulkAbort, _>(async |conn| {
            // Every receiver and account first (`FOR SHARE`, as a single payout locks
            // them), so no party lock is awaited while the balance row is held.
            let mut stale = Vec::with_capacity(slots.len());
            for slot in slots {
                stale.push(match slot {
                    BulkSlot::Insert(new) => match check_parties(conn, &new.payout, citus).await {
                        Ok(()) => false,
                        Err(PayoutAbort::Stale) => true,
                        Err(e) => return Err(BulkAbort::Payout(e)),
                    },
                    BulkSlot::Rejected(_) => false,
                });
            }
            let mut items = Vec::with_capacity(slots.len());
            for (slot, stale) in slots.iter().zip(stale) {
                let refused = match slot {
                    BulkSlot::Rejected(errors) => Some(errors.clone()),
                    BulkSlot::Insert(_) if stale => bulk_item_error(&InsertPayoutError::Stale),
                    BulkSlot::Insert(new) => {
                        // A savepoint per item: a refused item leaves no trace and the
                        // transaction goes on with the next.
                        let attempt = conn
                            .transaction::<_, PayoutAbort, _>(async |conn| {
                                insert_planned(conn, new, schedule).await
                            })
                            .await;
                        match attempt {
                            Ok(()) => None,
                            Err(PayoutAbort::InsufficientBalance) => {
                                bulk_item_error(&InsertPayoutError::InsufficientBalance)
                            }
                            Err(PayoutAbort::Tx(e))
                                if e.unique_violation() == Some("payouts_reference_unique") =>
                            {
                                bulk_item_error(&InsertPayoutError::DuplicateReference)
                            }
                            Err(e) => return Err(BulkAbort::Payout(e)),
                        }
                    }
                };
                items.push(match (refused, slot) {
                    (Some(errors), _) => BulkItemOutcome::Failed(errors),
                    (None, BulkSlot::Insert(new)) => BulkItemOutcome::Created(new.payout.id),
                    (None, BulkSlot::Rejected(errors)) => BulkItemOutcome::Failed(errors.clone()),
                });
            }
            let result = BulkPayoutResult { atomic, items };
            if atomic && result.failed() > 0 {
                return Err(BulkAbort::Refused(result));
            }
            super::idempotency::mark_committed(conn, key.commit(&result).as_ref())
                .await
                .map_err(PayoutAbort::Tx)
                .map_err(BulkAbort::Payout)?;
            Ok(result)
        })
        .await
    }
}

impl PgStore {
    /// A new payout in a transaction of its own: its parties checked, the payout, its ledger
    /// entries and its events (with its key) written, and the hold taken last.
    pub(crate) async fn insert_payout_alone(
        &self,
        payout: &Payout,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
        key: &WriteKey<Payout>,
    ) -> Result<Option<BatchId>, InsertPayoutError> {
        let schedule = &self.batch_schedule;
        let citus = self.detect_citus().await?;
        let admitting = key.admission().is_some();
        if citus && admitting {
            return Err(InsertPayoutError::NotAdmitted);
        }
        let mut conn = self.conn().await?;
        let plans = SetPlans::on_citus(citus);
        let mut attempt = 1;
        let result = loop {
            let result = if citus {
                in_set_transaction::<_, PayoutAbort, _>(&mut conn, plans, async |conn| {
                    // The hold comes last: one conditional update, so concurrent payouts can
                    // never take the balance below zero (and a subaccount with no balance row
                    // has nothing to hold). The balance row is every payout's of the
                    // subaccount, so it is locked only for the commit: the statements before
                    // run concurrently.
                    check_parties(conn, payout, citus).await?;
                    let batch =
                        write_payout(conn, payout, entries, events, Some(key), schedule).await?;
                    hold(conn, payout).await?;
                    Ok(batch.map(|(id, _)| BatchId::from_uuid(id)))
                })
                .await
            } else {
                // On plain PostgreSQL the payout is a set of one written whole, as a group is:
                // its party check, then its writes in one statement, hold last, with their
                // generic plans.
                let alone = [Planned {
                    payout,
                    entries,
                    events,
                    key: Some(key),
                }];
                write_whole(
                    &mut conn,
                    payout.subaccount_id.as_uuid(),
                    &alone,
                    schedule,
                    &self.open_batches,
                )
                .await
                .map(|joined| {
                    joined
                        .into_iter()
                        .next()
                        .flatten()
                        .map(|(id, _)| BatchId::from_uuid(id))
                })
            };
            // A deadlock victim was rolled back whole; run it again rather than answer 503.
            // One arises when this payout creates its currency's open batch while a group or
            // bulk request of the subaccount, holding the balance row, waits to create it too.
            match result {
                Err(PayoutAbort::Tx(ref e)) if runs_again(e, &mut attempt, "a payout") => {}
                result => break result,
            }
        };
        let result = self.after_commit(result);
        match result {
            Ok(batch) => Ok(batch),
            // Whatever refused the payout, the request it was to admit is admitted on its own
            // and run again (see `InsertPayoutError::NotAdmitted`). An error that leaves the
            // commit in doubt stays a port error: the request's nonce may be recorded.
            Err(abort) if admitting && rolled_back_whole(&abort) => {
                Err(InsertPayoutError::NotAdmitted)
            }
            Err(PayoutAbort::InsufficientBalance) => Err(InsertPayoutError::InsufficientBalance),
            Err(PayoutAbort::Stale) => Err(InsertPayoutError::Stale),
            Err(PayoutAbort::Tx(e)) => Err(match e.unique_violation() {
                Some("payouts_reference_unique") => InsertPayoutError::DuplicateReference,
                _ => InsertPayoutError::Port(from_tx(e)),
            }),
            Err(e) => Err(InsertPayoutError::Port(e.into_port("inserting a payout"))),
        }
    }
}

/// Whether a payout transaction that failed with `abort` certainly wrote nothing: it refused
/// (a balance short, a party changed, a request it could not admit, a key no longer its
/// request's, a taken reference) or lost a deadlock, each of which rolls it back before its
/// commit. Any other failure (a lost connection, say) may have come after the commit.
pub(crate) fn rolled_back_whole(abort: &PayoutAbort) -> bool {
    match abort {
        PayoutAbort::InsufficientBalance
        | PayoutAbort::Stale
        | PayoutAbort::NotAdmitted
        | PayoutAbort::Tx(TxError::KeyNotOwn) => true,
        PayoutAbort::Tx(e) => e.unique_violation().is_some() || e.lost_a_conflict(),
        PayoutAbort::Superseded => false,
    }
}

/// Whether a bulk request whose set transaction failed with `abort` may be written again item
/// by item: when the failure rolled it back before its commit, or when the request is keyed,
/// since the item-by-item transaction marks the same claim and so writes nothing if the first
/// one did commit. An unkeyed request whose failure may have come after its commit (a lost
/// connection) is answered with the failure instead: writing it again could pay twice.
fn may_write_again(abort: &PayoutAbort, keyed: bool) -> bool {
    keyed || rolled_back_whole(abort)
}

/// How many times a single payout's or a bulk request's item-by-item transaction runs when
/// PostgreSQL keeps rolling it back to break deadlocks ([`TxError::lost_a_conflict`]).
const CONFLICT_ATTEMPTS: u32 = 3;

/// Whether a transaction that failed with `error` on its `attempt`-th run is run again: when it
/// was rolled back to break a deadlock and has runs left. Counts the new run in `attempt`.
fn runs_again(error: &TxError, attempt: &mut u32, what: &'static str) -> bool {
    if !error.lost_a_conflict() || *attempt >= CONFLICT_ATTEMPTS {
        return false;
    }
    *attempt += 1;
    tracing::debug!(
        attempt = *attempt,
        "{what} lost a lock conflict; writing again"
    );
    true
}

/// The (account, amount, asset) triples of `$3`–`$5` the subaccount `$1` paid since `$2`.
const PAID_SINCE: &str = "\
    SELECT DISTINCT q.account_id, q.amount, q.asset \
    FROM unnest($3::uuid[], $4::int8[], $5::text[]) AS q(account_id, amount, asset) \
    WHERE EXISTS (SELECT 1 FROM payouts p WHERE p.subaccount_id = $1 \
      AND p.account_id = q.account_id AND p.amount = q.amount AND p.asset = q.asset \
      AND p.created_at >= $2)";

/// [`PAID_SINCE`] for one triple (`$3`–`$5`), with scalar parameters (see `planning_facts`).
const PAID_SINCE_ONE: &str = "\
    SELECT $3::uuid AS account_id, $4::int8 AS amount, $5::text AS asset \
    WHERE EXISTS (SELECT 1 FROM payouts p WHERE p.subaccount_id = $1 \
      AND p.account_id = $3 AND p.amount = $4 AND p.asset = $5 AND p.created_at >= $2)";

#[derive(QueryableByName)]
struct PaidSince {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    account_id: Uuid,
    #[diesel(sql_type = BigInt)]
    amount: i64,
    #[diesel(sql_type = Text)]
    asset: String,
}

/// Locks the payout's receiver and account against changes until the transaction ends
/// (`FOR SHARE`: concurrent payouts do not wait for each other) and checks that they still give
/// the status the payout was planned with and may still be paid. A KYC decision or a
/// confirmation updates these rows, so it either committed before (and the check sees it) or
/// waits for this transaction (and then sees the new payout among those waiting for it).
///
/// The parties' subaccount is compared with `=` on Citus (`citus`), which routes the lock to one
/// shard, and with `IS NOT DISTINCT FROM` on plain PostgreSQL, so that the generic plan locks
/// both rows through their primary keys (as in [`super::planning_reads`]).
async fn check_parties(
    conn: &mut AsyncPgConnection,
    payout: &Payout,
    citus: bool,
) -> Result<(), PayoutAbort> {
    /// The locking read, with `$same` comparing a party's subaccount with the payout's.
    macro_rules! lock_parties {
        ($same:ident) => {
            receivers::table
                .inner_join(receiver_accounts::table)
                .filter(receivers::id.eq(payout.receiver_id.as_uuid()))
                .filter(receivers::subaccount_id.$same(payout.subaccount_id.as_uuid()))
                .filter(receiver_accounts::id.eq(payout.account_id.as_uuid()))
                // Implied by the receiver's subaccount; said so that Citus routes the lock to
                // one shard.
                .filter(receiver_accounts::subaccount_id.$same(payout.subaccount_id.as_uuid()))
                .select((
                    receivers::status,
                    receivers::kyc_status,
                    receiver_accounts::status,
                    receiver_accounts::confirm_status,
                ))
                .for_share()
        };
    }
    let parties: Option<(i16, i16, String, String)> = if citus {
        lock_parties!(eq).first(conn).await.optional()?
    } else {
        lock_parties!(is_not_distinct_from)
            .first(conn)
            .await
            .optional()?
    };
    let Some((receiver_status, kyc, account_status, confirm)) = parties else {
        return Err(PayoutAbort::Stale);
    };
    let (status, payable) = party_status(receiver_status, kyc, &account_status, &confirm);
    if payable && status == payout.status {
        Ok(())
    } else {
        Err(PayoutAbort::Stale)
    }
}

/// Why a bulk insert rolled back as a whole.
#[derive(Debug)]
enum BulkAbort {
    /// An atomic request had a refused item: its result, nothing written.
    Refused(BulkPayoutResult),
    /// A failure no item can absorb.
    Payout(PayoutAbort),
}

impl From<PayoutAbort> for BulkAbort {
    fn from(e: PayoutAbort) -> Self {
        Self::Payout(e)
    }
}

impl From<diesel::result::Error> for BulkAbort {
    fn from(e: diesel::result::Error) -> Self {
        Self::Payout(PayoutAbort::from(e))
    }
}

/// One planned payout of a bulk request, its parties already checked: the hold first (one
/// conditional update: the balance row stays locked by the request's transaction, so each
/// item sees what the items before it left), then the payout in its batch, its ledger entries
/// and its events.
async fn insert_planned(
    conn: &mut AsyncPgConnection,
    new: &NewPayout,
    schedule: &domain::rail::schedule::BatchSchedule,
) -> Result<(), PayoutAbort> {
    hold(conn, &new.payout).await?;
    write_payout(conn, &new.payout, &new.entries, &new.events, None, schedule).await?;
    Ok(())
}

/// Moves the payout's total from `available` to `pending` with one conditional update, so no
/// concurrency can take the balance below zero; `InsufficientBalance` when it does not cover
/// the total (or the subaccount has no balance in the asset).
async fn hold(conn: &mut AsyncPgConnection, payout: &Payout) -> Result<(), PayoutAbort> {
    let total = payout.total();
    let held =
        diesel::update(balances::table.find((payout.subaccount_id.as_uuid(), payout.asset.code())))
            .filter(balances::available.ge(total))
            .set((
                balances::available.eq(balances::available - total),
                balances::pending.eq(balances::pending + total),
                balances::updated_at.eq(payout.created_at),
            ))
            .cached()
            .execute(conn)
            .await?;
    if held != 1 {
        return Err(PayoutAbort::InsufficientBalance);
    }
    Ok(())
}

/// Writes a new payout: joins the open batch of its subaccount and asset when it starts
/// `pending`, inserts the row, appends its ledger entries and writes its events (with the
/// batch), committing `key` in the events' statement when given. Returns the batch joined.
async fn write_payout(
    conn: &mut AsyncPgConnection,
    payout: &Payout,
    entries: &[LedgerEntry],
    events: &[OutboxEvent],
    key: Option<&WriteKey<Payout>>,
    schedule: &domain::rail::schedule::BatchSchedule,
) -> Result<Option<(Uuid, DateTime<Utc>)>, PayoutAbort> {
    let row = PayoutRow::from(payout);
    let batch = if payout.status == PayoutStatus::Pending {
        Some(
            join_open_batch(
                conn,
                row.subaccount_id,
                &row.asset,
                row.created_at,
                schedule,
            )
            .await?,
        )
    } else {
        None
    };
    let row = PayoutRow {
        batch_id: batch.map(|(id, _)| id),
        ..row
    };
    diesel::insert_into(payouts::table)
        .values(&row)
        .execute(conn)
        .await?;
    insert_entries(conn, entries).await?;
    let commit = key.and_then(|key| written_key(key, payout, batch));
    insert_events(conn, &with_batch(events, payout.id, batch), commit.as_ref()).await?;
    Ok(batch)
}

#[cfg(test)]
mod bulk_retry_tests {
    use super::{PayoutAbort, may_write_again};
    use crate::errors::TxError;

    #[test]
    fn only_a_keyed_or_rolled_back_bulk_request_is_written_again() {
        let in_doubt = || PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!("connection lost")));
        assert!(!may_write_again(&in_doubt(), false));
        assert!(may_write_again(&in_doubt(), true));
        for rolled_back in [PayoutAbort::InsufficientBalance, PayoutAbort::Stale] {
            assert!(may_write_again(&rolled_back, false));
        }
    }
}
