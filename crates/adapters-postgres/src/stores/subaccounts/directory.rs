//! `SubaccountDirectory` on PostgreSQL: the console's subaccount list and profiles. Each read
//! names the subaccounts it wants, so on Citus it goes to their shards; the parts of a profile
//! are read one after the other, not in one snapshot.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::ids::{FeeGroupId, FeeTemplateId, SubaccountId};
use domain::money::{Asset, Percentage};
use domain::paging::Position;
use domain::subaccount::directory::{
    ApiKeyListing, SubaccountDirectory, SubaccountListing, SubaccountProfile, WebhookEndpointState,
};
use domain::subaccount::{Balance, FeeTemplate, Subaccount};
use uuid::Uuid;

use crate::errors::from_diesel;
use crate::rows::SubaccountRow;
use crate::schema::{api_keys, balances, fee_templates, subaccounts, webhook_endpoints};
use crate::stores::PgStore;

/// The most API keys a profile lists (issued keys are a handful; revoked ones stay listed).
const KEYS_SHOWN: i64 = 200;

/// `s` as a `LIKE` pattern matching it literally anywhere (`\` escapes, PostgreSQL's default).
fn contains_pattern(s: &str) -> String {
    let mut pattern = String::with_capacity(s.len() + 2);
    pattern.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

fn balance(asset: &str, available: i64, pending: i64) -> Result<Balance, PortError> {
    Ok(Balance {
        asset: Asset::parse(asset)
            .ok_or_else(|| PortError::unknown(format!("a balance has asset {asset}")))?,
        available,
        pending,
    })
}

type FeeRow = (String, Uuid, Uuid, i64, i32, i64);

fn fee_template(
    (asset, id, group_id, fixed, percentage, min_amount): FeeRow,
) -> Result<FeeTemplate, PortError> {
    Ok(FeeTemplate {
        id: FeeTemplateId::from_uuid(id),
        group_id: FeeGroupId::from_uuid(group_id),
        asset: Asset::parse(&asset)
            .ok_or_else(|| PortError::unknown(format!("fee template {id} has asset {asset}")))?,
        fixed,
        percentage: u32::try_from(percentage)
            .ok()
            .and_then(|p| Percentage::from_ten_thousandths(p).ok())
            .ok_or_else(|| {
                PortError::unknown(format!("fee template {id} has percentage {percentage}"))
            })?,
        min_amount,
    })
}

#[async_trait]
impl SubaccountDirectory for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn list_subaccounts(
        &self,
        name: Option<String>,
        after: Option<Position>,
        limit: u32,
    ) -> Result<Vec<SubaccountListing>, PortError> {
        let mut query = subaccounts::table
            .select(SubaccountRow::as_select())
            .into_boxed();
        if let Some(name) = &name {
            query = query.filter(subaccounts::name.ilike(contains_pattern(name)));
        }
        if let Some(after) = after {
            query = query.filter(
                subaccounts::created_at
                    .lt(after.created_at)
                    .or(subaccounts::created_at
                        .eq(after.created_at)
                        .and(subaccounts::id.lt(after.id))),
            );
        }
        let mut conn = self.conn().await?;
        let rows: Vec<SubaccountRow> = query
            .order((subaccounts::created_at.desc(), subaccounts::id.desc()))
            .limit(i64::from(limit))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let held: Vec<(Uuid, String, i64, i64)> = if ids.is_empty() {
            Vec::new()
        } else {
            balances::table
                .filter(balances::subaccount_id.eq_any(&ids))
                .order((balances::subaccount_id, balances::asset))
                .select((
                    balances::subaccount_id,
                    balances::asset,
                    balances::available,
                    balances::pending,
                ))
                .load(&mut conn)
                .await
                .map_err(from_diesel)?
        };
        let mut by_subaccount: HashMap<Uuid, Vec<Balance>> = HashMap::new();
        for (id, asset, available, pending) in held {
            by_subaccount
                .entry(id)
                .or_default()
                .push(balance(&asset, available, pending)?);
        }
        Ok(rows
            .into_iter()
            .map(|row| {
                let balances = by_subaccount.remove(&row.id).unwrap_or_default();
                SubaccountListing {
                    subaccount: Subaccount::from(row),
                    balances,
                }
            })
            .collect())
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %id))]
    async fn subaccount_profile(
        &self,
        id: SubaccountId,
    ) -> Result<Option<SubaccountProfile>, PortError> {
        let sub = id.as_uuid();
        let mut conn = self.conn().await?;
        let Some(row) = subaccounts::table
            .find(sub)
            .select(SubaccountRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?
        else {
            return Ok(None);
        };
        let held: Vec<(String, i64, i64)> = balances::table
            .filter(balances::subaccount_id.eq(sub))
            .order(balances::asset)
            .select((balances::asset, balances::available, balances::pending))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let fees: Vec<FeeRow> = fee_templates::table
            .filter(fee_templates::subaccount_id.eq(sub))
            .order(fee_templates::asset)
            .select((
                fee_templates::asset,
                fee_templates::id,
                fee_templates::group_id,
                fee_templates::fixed,
                fee_templates::percentage,
                fee_templates::min_amount,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let keys: Vec<(String, DateTime<Utc>, Option<DateTime<Utc>>)> = api_keys::table
            .filter(api_keys::subaccount_id.eq(sub))
            .order((api_keys::created_at.desc(), api_keys::id.desc()))
            .limit(KEYS_SHOWN)
            .select((
                api_keys::api_key,
                api_keys::created_at,
                api_keys::revoked_at,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let webhook: Option<(Option<DateTime<Utc>>, Option<DateTime<Utc>>, DateTime<Utc>)> =
            webhook_endpoints::table
                .find(sub)
                .select((
                    webhook_endpoints::previous_until,
                    webhook_endpoints::disabled_at,
                    webhook_endpoints::updated_at,
                ))
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
        Ok(Some(SubaccountProfile {
            subaccount: Subaccount::from(row),
            balances: held
                .iter()
                .map(|(asset, available, pending)| balance(asset, *available, *pending))
                .collect::<Result<_, _>>()?,
            fees: fees
                .into_iter()
                .map(fee_template)
                .collect::<Result<_, _>>()?,
            keys: keys
                .into_iter()
                .map(|(api_key, created_at, revoked_at)| ApiKeyListing {
                    api_key,
                    created_at,
                    revoked_at,
                })
                .collect(),
            webhook: webhook.map(|(previous_until, disabled_at, updated_at)| {
                WebhookEndpointState {
                    previous_until,
                    disabled_at,
                    updated_at,
                }
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_filter_is_taken_literally() {
        assert_eq!(contains_pattern("acme"), "%acme%");
        assert_eq!(contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
