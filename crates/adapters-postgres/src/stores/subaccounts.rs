//! `SubaccountStore` on PostgreSQL, and the operators' `SubaccountDirectory` ([`directory`]).

mod directory;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::ids::SubaccountId;
use domain::money::Asset;
use domain::subaccount::ports::SubaccountStore;
use domain::subaccount::{Balance, Subaccount};

use super::PgStore;
use crate::errors::from_diesel;
use crate::rows::SubaccountRow;
use crate::schema::{balances, subaccounts};

#[async_trait]
impl SubaccountStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %id))]
    async fn find_subaccount(&self, id: SubaccountId) -> Result<Option<Subaccount>, PortError> {
        let mut conn = self.conn().await?;
        let row = subaccounts::table
            .find(id.as_uuid())
            .select(SubaccountRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        Ok(row.map(Subaccount::from))
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, asset = %asset)
    )]
    async fn balance(&self, subaccount: SubaccountId, asset: Asset) -> Result<Balance, PortError> {
        let mut conn = self.conn().await?;
        let found: Option<(i64, i64)> = balances::table
            .find((subaccount.as_uuid(), asset.code()))
            .select((balances::available, balances::pending))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        Ok(match found {
            Some((available, pending)) => Balance {
                asset,
                available,
                pending,
            },
            None => Balance::zero(asset),
        })
    }
}
