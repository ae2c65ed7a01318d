//! The operators' overview (`OverviewStore`): aggregate reads across every subaccount. Each
//! works on Citus (see each statement's comment). What each costs is in docs/CONSOLE.md
//! (Overview).

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use diesel::dsl::{count_star, min};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Date, Int2, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::account::PayoutMethod;
use domain::ids::{RailFileId, SubaccountId};
use domain::money::Asset;
use domain::overview::{
    AwaitingFile, AwaitingFiles, DayStatusCount, FailingEndpoint, KycBacklog, OpenBatches,
    OverviewStore, ReturnCount, SubaccountBalance,
};
use domain::payout::PayoutStatus;
use domain::rail::file::RailFileState;
use domain::receiver::KycStatus;
use uuid::Uuid;

use super::PgStore;
use crate::errors::from_diesel;
use crate::schema::{balances, rail_files, receivers, subaccounts};

#[derive(QueryableByName)]
struct DayRow {
    #[diesel(sql_type = Date)]
    day: NaiveDate,
    #[diesel(sql_type = Int2)]
    status: i16,
    #[diesel(sql_type = BigInt)]
    count: i64,
}

#[derive(QueryableByName)]
struct ReturnRow {
    #[diesel(sql_type = Text)]
    method: String,
    #[diesel(sql_type = BigInt)]
    count: i64,
    #[diesel(sql_type = BigInt)]
    amount: i64,
}

#[derive(QueryableByName)]
struct OpenRow {
    #[diesel(sql_type = Text)]
    asset: String,
    #[diesel(sql_type = BigInt)]
    batches: i64,
    #[diesel(sql_type = BigInt)]
    payouts: i64,
}

#[derive(QueryableByName)]
struct FailingRow {
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = BigInt)]
    retrying: i64,
    #[diesel(sql_type = BigInt)]
    exhausted: i64,
    #[diesel(sql_type = Timestamptz)]
    latest: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    disabled_at: Option<DateTime<Utc>>,
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn method(name: &str) -> Result<PayoutMethod, PortError> {
    PayoutMethod::from_route(name)
        .ok_or_else(|| PortError::unknown(format!("unknown payout method {name:?} stored")))
}

#[async_trait]
impl OverviewStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn payouts_per_day(
        &self,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<DayStatusCount>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<DayRow> = diesel::sql_query(include_str!("overview/payouts_per_day.sql"))
            .bind::<Timestamptz, _>(from)
            .bind::<Timestamptz, _>(until)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|row| {
                let status = u8::try_from(row.status)
                    .ok()
                    .and_then(PayoutStatus::from_code)
                    .ok_or_else(|| {
                        PortError::unknown(format!("unknown payout status {} stored", row.status))
                    })?;
                Ok(DayStatusCount {
                    day: row.day,
                    status,
                    count: count(row.count),
                })
            })
            .collect()
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn balances(&self, limit: u32) -> Result<Vec<SubaccountBalance>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<(Uuid, String, String, i64, i64)> = balances::table
            .inner_join(subaccounts::table)
            .select((
                balances::subaccount_id,
                subaccounts::name,
                balances::asset,
                balances::available,
                balances::pending,
            ))
            .order((
                subaccounts::name.asc(),
                balances::subaccount_id.asc(),
                balances::asset.asc(),
            ))
            .limit(i64::from(limit))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|(id, name, asset, available, pending)| {
                let asset = Asset::parse(&asset)
                    .ok_or_else(|| PortError::unknown(format!("unknown asset {asset:?} stored")))?;
                Ok(SubaccountBalance {
                    subaccount_id: SubaccountId::from_uuid(id),
                    name,
                    asset,
                    available,
                    pending,
                })
            })
            .collect()
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn awaiting_files(&self, limit: u32) -> Result<AwaitingFiles, PortError> {
        let uploaded = RailFileState::Uploaded.as_str();
        let mut conn = self.conn().await?;
        // Both read `rail_files_by_state (state, created_at DESC, id DESC)`.
        let total: i64 = rail_files::table
            .filter(rail_files::state.eq(uploaded))
            .count()
            .get_result(&mut conn)
            .await
            .map_err(from_diesel)?;
        type FileRow = (Uuid, String, String, DateTime<Utc>, Option<DateTime<Utc>>);
        let rows: Vec<FileRow> = rail_files::table
            .filter(rail_files::state.eq(uploaded))
            .select((
                rail_files::id,
                rail_files::name,
                rail_files::method,
                rail_files::created_at,
                rail_files::uploaded_at,
            ))
            .order((rail_files::created_at.asc(), rail_files::id.asc()))
            .limit(i64::from(limit))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let oldest = rows
            .into_iter()
            .map(|(id, name, stored_method, created_at, uploaded_at)| {
                Ok(AwaitingFile {
                    id: RailFileId::from_uuid(id),
                    name,
                    method: method(&stored_method)?,
                    uploaded_at: uploaded_at.unwrap_or(created_at),
                })
            })
            .collect::<Result<_, PortError>>()?;
        Ok(AwaitingFiles {
            count: count(total),
            oldest,
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn returns_since(&self, since: DateTime<Utc>) -> Result<Vec<ReturnCount>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<ReturnRow> = diesel::sql_query(include_str!("overview/returns_since.sql"))
            .bind::<Timestamptz, _>(since)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|row| {
                Ok(ReturnCount {
                    method: method(&row.method)?,
                    count: count(row.count),
                    amount: row.amount,
                })
            })
            .collect()
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn kyc_backlog(&self) -> Result<KycBacklog, PortError> {
        let mut conn = self.conn().await?;
        // The partial index `receivers_kyc_pending` holds exactly these receivers.
        let (total, oldest): (i64, Option<DateTime<Utc>>) = receivers::table
            .filter(receivers::kyc_status.eq(i16::from(KycStatus::Pending.code())))
            .select((count_star(), min(receivers::created_at)))
            .get_result(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(KycBacklog {
            count: count(total),
            oldest,
        })
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn failing_endpoints(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<FailingEndpoint>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<FailingRow> =
            diesel::sql_query(include_str!("overview/failing_endpoints.sql"))
                .bind::<Timestamptz, _>(since)
                .bind::<BigInt, _>(i64::from(limit))
                .load(&mut conn)
                .await
                .map_err(from_diesel)?;
        Ok(rows
            .into_iter()
            .map(|row| FailingEndpoint {
                subaccount_id: SubaccountId::from_uuid(row.subaccount_id),
                name: row.name,
                retrying: count(row.retrying),
                exhausted: count(row.exhausted),
                latest: row.latest,
                last_error: row.last_error,
                disabled_at: row.disabled_at,
            })
            .collect())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn open_batches(&self) -> Result<Vec<OpenBatches>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<OpenRow> = diesel::sql_query(include_str!("overview/open_batches.sql"))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|row| {
                let asset = Asset::parse(&row.asset).ok_or_else(|| {
                    PortError::unknown(format!("unknown asset {:?} stored", row.asset))
                })?;
                Ok(OpenBatches {
                    asset,
                    batches: count(row.batches),
                    payouts: count(row.payouts),
                })
            })
            .collect()
    }
}
