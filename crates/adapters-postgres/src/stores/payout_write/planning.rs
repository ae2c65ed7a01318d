//! The planning reads of new payouts: what the service plans them with (the receivers, the
//! accounts, the fee templates, and which (account, amount, currency) were paid lately). One
//! payout's in one statement, shared with concurrent requests of its subaccount under group
//! commit (`planning_reads`); a larger query's as four reads pipelined on one connection.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::ids::{FeeGroupId, FeeTemplateId, ReceiverAccountId, SubaccountId};
use domain::money::{Asset, MinorUnits, Percentage};
use domain::payout::ports::{PlanningFacts, PlanningQuery};
use domain::receiver::Receiver;
use domain::subaccount::FeeTemplate;
use uuid::Uuid;

use super::PgStore;
use super::planning_reads::{
    PlanningRead, PlanningRow, TemplateRow, read_planning, template_columns,
};
use super::statements;
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::schema::{fee_templates, receiver_accounts, receivers};
use crate::stores::account_rows::AccountRow;

impl PgStore {
    /// [`PayoutStore::planning_facts`](domain::payout::ports::PayoutStore::planning_facts).
    pub(super) async fn read_planning_facts(
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
                return diesel::sql_query(statements::PAID_SINCE_ONE)
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
            diesel::sql_query(statements::PAID_SINCE)
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

/// A row of `sql/paid_since.sql` (or `sql/paid_since_one.sql`).
#[derive(QueryableByName)]
struct PaidSince {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    account_id: Uuid,
    #[diesel(sql_type = BigInt)]
    amount: i64,
    #[diesel(sql_type = Text)]
    asset: String,
}
