//! `InboundStore` on PostgreSQL: inbound bank files, once per (method, name, content), and what
//! each said.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::account::PayoutMethod;
use domain::ids::{BankReportId, PayoutId, RailFileId, SubaccountId};
use domain::rail::inbound_ports::{
    InboundFile, InboundStore, RecordedReport, ReportKind, ReportListing, Resolution, SentItem,
};
use uuid::Uuid;

use super::PgStore;
use crate::errors::from_diesel;
use crate::schema::{bank_reports, inbound_files, rail_file_items, rail_files};

/// A `bank_reports` row with its file's method and name.
#[derive(Debug, Queryable)]
struct ReportRow {
    id: Uuid,
    position: i32,
    kind: String,
    reference: String,
    code: Option<String>,
    reason: Option<String>,
    account_invalid: bool,
    amount: Option<i64>,
    subaccount_id: Option<Uuid>,
    payout_id: Option<Uuid>,
    rail_file_id: Option<Uuid>,
    resolution: String,
    created_at: DateTime<Utc>,
    method: String,
    file_name: String,
}

impl ReportRow {
    fn into_listing(self) -> Result<ReportListing, PortError> {
        let method = PayoutMethod::from_route(&self.method).ok_or_else(|| {
            PortError::unknown(format!(
                "bank report {} has method {}",
                self.id, self.method
            ))
        })?;
        let kind = ReportKind::parse(&self.kind).ok_or_else(|| {
            PortError::unknown(format!("bank report {} has kind {}", self.id, self.kind))
        })?;
        let resolution = Resolution::parse(&self.resolution).ok_or_else(|| {
            PortError::unknown(format!(
                "bank report {} has resolution {}",
                self.id, self.resolution
            ))
        })?;
        Ok(ReportListing {
            method,
            file_name: self.file_name,
            report: RecordedReport {
                id: BankReportId::from_uuid(self.id),
                position: u32::try_from(self.position).unwrap_or(0),
                kind,
                reference: self.reference,
                code: self.code,
                reason: self.reason,
                account_invalid: self.account_invalid,
                amount: self.amount,
                subaccount_id: self.subaccount_id.map(SubaccountId::from_uuid),
                payout_id: self.payout_id.map(PayoutId::from_uuid),
                rail_file_id: self.rail_file_id.map(RailFileId::from_uuid),
                resolution,
                created_at: self.created_at,
            },
        })
    }
}

#[async_trait]
impl InboundStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(method = method.route()))]
    async fn inbound_known(
        &self,
        method: PayoutMethod,
        name: &str,
        sha256: [u8; 32],
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        diesel::select(diesel::dsl::exists(
            inbound_files::table
                .filter(inbound_files::method.eq(method.route()))
                .filter(inbound_files::name.eq(name))
                .filter(inbound_files::sha256.eq(sha256.as_slice())),
        ))
        .get_result(&mut conn)
        .await
        .map_err(from_diesel)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(method = method.route()))]
    async fn sent_items(
        &self,
        method: PayoutMethod,
        reference: &str,
    ) -> Result<Vec<SentItem>, PortError> {
        let mut conn = self.conn().await?;
        // Joined on the subaccount too (an item's file is its subaccount's): Citus joins
        // distributed tables only on their distribution column.
        let rows: Vec<(Uuid, DateTime<Utc>, Uuid, Uuid)> = rail_file_items::table
            .inner_join(
                rail_files::table.on(rail_file_items::file_id
                    .eq(rail_files::id)
                    .and(rail_file_items::subaccount_id.eq(rail_files::subaccount_id))),
            )
            .filter(rail_file_items::reference.eq(reference))
            .filter(rail_files::method.eq(method.route()))
            .order((rail_files::created_at.desc(), rail_files::id.desc()))
            .select((
                rail_files::id,
                rail_files::created_at,
                rail_file_items::subaccount_id,
                rail_file_items::payout_id,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(rows
            .into_iter()
            .map(|(file, created, subaccount, payout)| SentItem {
                file_id: RailFileId::from_uuid(file),
                file_created_at: created,
                subaccount_id: SubaccountId::from_uuid(subaccount),
                payout_id: PayoutId::from_uuid(payout),
            })
            .collect())
    }

    #[tracing::instrument(level = "debug", skip_all, fields(reports = reports.len()))]
    async fn record_inbound(
        &self,
        file: &InboundFile,
        reports: &[RecordedReport],
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        let file_id = file.id.as_uuid();
        let method = file.method.route();
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let inserted = diesel::insert_into(inbound_files::table)
                .values((
                    inbound_files::id.eq(file_id),
                    inbound_files::method.eq(&method),
                    inbound_files::name.eq(&file.name),
                    inbound_files::sha256.eq(file.sha256.as_slice()),
                    inbound_files::outcome.eq(file.outcome.as_str()),
                    inbound_files::detail.eq(&file.detail),
                    inbound_files::received_at.eq(file.received_at),
                ))
                .on_conflict((
                    inbound_files::method,
                    inbound_files::name,
                    inbound_files::sha256,
                ))
                .do_nothing()
                .execute(conn)
                .await?;
            if inserted == 0 {
                return Ok(false);
            }
            if reports.is_empty() {
                return Ok(true);
            }
            let rows: Vec<_> = reports
                .iter()
                .map(|r| {
                    (
                        bank_reports::id.eq(r.id.as_uuid()),
                        bank_reports::inbound_file_id.eq(file_id),
                        bank_reports::position.eq(i32::try_from(r.position).unwrap_or(i32::MAX)),
                        bank_reports::method.eq(&method),
                        bank_reports::kind.eq(r.kind.as_str()),
                        bank_reports::reference.eq(&r.reference),
                        bank_reports::code.eq(&r.code),
                        bank_reports::reason.eq(&r.reason),
                        bank_reports::account_invalid.eq(r.account_invalid),
                        bank_reports::amount.eq(r.amount),
                        bank_reports::subaccount_id.eq(r.subaccount_id.map(|s| s.as_uuid())),
                        bank_reports::payout_id.eq(r.payout_id.map(|p| p.as_uuid())),
                        bank_reports::rail_file_id.eq(r.rail_file_id.map(|f| f.as_uuid())),
                        bank_reports::resolution.eq(r.resolution.as_str()),
                        bank_reports::created_at.eq(r.created_at),
                    )
                })
                .collect();
            diesel::insert_into(bank_reports::table)
                .values(rows)
                .execute(conn)
                .await?;
            Ok(true)
        })
        .await
        .map_err(from_diesel)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn list_reports(
        &self,
        resolution: Option<Resolution>,
        limit: u32,
    ) -> Result<Vec<ReportListing>, PortError> {
        let mut conn = self.conn().await?;
        let mut query = bank_reports::table
            .inner_join(inbound_files::table)
            .select((
                bank_reports::id,
                bank_reports::position,
                bank_reports::kind,
                bank_reports::reference,
                bank_reports::code,
                bank_reports::reason,
                bank_reports::account_invalid,
                bank_reports::amount,
                bank_reports::subaccount_id,
                bank_reports::payout_id,
                bank_reports::rail_file_id,
                bank_reports::resolution,
                bank_reports::created_at,
                bank_reports::method,
                inbound_files::name,
            ))
            .order((
                bank_reports::created_at.desc(),
                bank_reports::inbound_file_id.desc(),
                bank_reports::position,
            ))
            .limit(i64::from(limit))
            .into_boxed();
        if let Some(resolution) = resolution {
            query = query.filter(bank_reports::resolution.eq(resolution.as_str()));
        }
        let rows: Vec<ReportRow> = query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter().map(ReportRow::into_listing).collect()
    }
}
