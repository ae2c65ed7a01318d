//! `InboundStore` on PostgreSQL: inbound bank files, once per (method, name, content), and what
//! each said.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::account::PayoutMethod;
use domain::ids::{BankReportId, InboundFileId, PayoutId, RailFileId, SubaccountId};
use domain::rail::file::RailFileState;
use domain::rail::inbound_ports::{
    DecidingReport, InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind,
    ReportListing, Resolution, SentItem,
};
use uuid::Uuid;

use super::PgStore;
use crate::cached::{BoxedSql, CachedExt};
use crate::errors::from_diesel;
use crate::schema::{bank_reports, inbound_files, rail_file_items, rail_files};

diesel::alias!(bank_reports as contradicted: Contradicted);

/// The columns of a [`ReportRow`]'s line.
type LineColumns = (
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
    bank_reports::contradicts,
    bank_reports::created_at,
);

const LINE_COLUMNS: LineColumns = (
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
    bank_reports::contradicts,
    bank_reports::created_at,
);

/// A `bank_reports` row.
#[derive(Debug, Queryable)]
struct LineRow {
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
    contradicts: Option<Uuid>,
    created_at: DateTime<Utc>,
}

/// A line with its file's id, method and name, and the document of the line it contradicts.
#[derive(Debug, Queryable)]
struct ReportRow {
    line: LineRow,
    inbound_file_id: Uuid,
    method: String,
    file_name: String,
    contradicted_file: Option<Uuid>,
}

/// The file of the line an anomaly contradicts.
type ContradictedFile = diesel::dsl::Nullable<
    diesel::query_source::AliasedField<Contradicted, bank_reports::inbound_file_id>,
>;

/// Report lines joined with their inbound file and the line they contradict.
type ListingSource = diesel::dsl::LeftJoinOn<
    diesel::dsl::InnerJoin<bank_reports::table, inbound_files::table>,
    diesel::query_source::Alias<Contradicted>,
    diesel::dsl::Eq<
        bank_reports::contradicts,
        diesel::dsl::Nullable<diesel::query_source::AliasedField<Contradicted, bank_reports::id>>,
    >,
>;

/// What [`listings`] selects.
type ListingColumns = (
    LineColumns,
    bank_reports::inbound_file_id,
    bank_reports::method,
    inbound_files::name,
    ContradictedFile,
);

/// The boxed listing query.
type Listings = diesel::helper_types::IntoBoxed<
    'static,
    diesel::dsl::Select<ListingSource, ListingColumns>,
    diesel::pg::Pg,
>;

/// Report lines with the inbound file each came in and, for an anomaly, the file of the line it
/// contradicts: what operators list.
fn listings() -> Listings {
    bank_reports::table
        .inner_join(inbound_files::table)
        .left_join(
            contradicted
                .on(bank_reports::contradicts.eq(contradicted.field(bank_reports::id).nullable())),
        )
        .select((
            LINE_COLUMNS,
            bank_reports::inbound_file_id,
            bank_reports::method,
            inbound_files::name,
            contradicted.field(bank_reports::inbound_file_id).nullable(),
        ))
        .into_boxed()
}

impl PgStore {
    /// Every report line about `payout`, and those about the whole of `file` (its
    /// acknowledgement, rejection or settlement), oldest first.
    pub(crate) async fn reports_about(
        &self,
        payout: PayoutId,
        file: Option<RailFileId>,
    ) -> Result<Vec<ReportListing>, PortError> {
        let mut conn = self.conn().await?;
        let mut query = listings().filter(bank_reports::payout_id.eq(payout.as_uuid()));
        if let Some(file) = file {
            query = query.or_filter(
                bank_reports::rail_file_id
                    .eq(file.as_uuid())
                    .and(bank_reports::payout_id.is_null()),
            );
        }
        let rows: Vec<ReportRow> = query
            .order((
                bank_reports::created_at.asc(),
                bank_reports::inbound_file_id.asc(),
                bank_reports::position.asc(),
            ))
            .limit(STORY_LINES)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter().map(ReportRow::into_listing).collect()
    }
}

/// The most report lines a payout's story shows (a payout has a handful).
const STORY_LINES: i64 = 1_000;

/// The most report lines a file's page shows (`InboundStore::reports_of_file`).
const FILE_LINES: i64 = 10_000;

fn method_of(raw: &str, what: impl std::fmt::Display) -> Result<PayoutMethod, PortError> {
    PayoutMethod::from_route(raw)
        .ok_or_else(|| PortError::unknown(format!("{what} has method {raw}")))
}

impl ReportRow {
    fn into_listing(self) -> Result<ReportListing, PortError> {
        let method = method_of(&self.method, format_args!("bank report {}", self.line.id))?;
        Ok(ReportListing {
            method,
            inbound_file_id: InboundFileId::from_uuid(self.inbound_file_id),
            file_name: self.file_name,
            report: self.line.into_report()?,
            contradicted_file: self.contradicted_file.map(InboundFileId::from_uuid),
        })
    }
}

impl LineRow {
    fn into_report(self) -> Result<RecordedReport, PortError> {
        let kind = ReportKind::parse(&self.kind).ok_or_else(|| {
            PortError::unknown(format!("bank report {} has kind {}", self.id, self.kind))
        })?;
        let resolution = Resolution::parse(&self.resolution).ok_or_else(|| {
            PortError::unknown(format!(
                "bank report {} has resolution {}",
                self.id, self.resolution
            ))
        })?;
        Ok(RecordedReport {
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
            contradicts: self.contradicts.map(BankReportId::from_uuid),
            created_at: self.created_at,
        })
    }
}

/// An `inbound_files` row (its bytes only where asked for).
#[derive(Debug, Queryable)]
struct InboundRow {
    id: Uuid,
    method: String,
    name: String,
    sha256: Vec<u8>,
    outcome: String,
    detail: Option<String>,
    original_id: Option<Uuid>,
    bytes: Option<Vec<u8>>,
    received_at: DateTime<Utc>,
}

impl InboundRow {
    fn into_file(self) -> Result<InboundFile, PortError> {
        let what = format_args!("inbound file {}", self.id);
        let method = method_of(&self.method, what)?;
        let outcome = InboundOutcome::parse(&self.outcome).ok_or_else(|| {
            PortError::unknown(format!(
                "inbound file {} has outcome {}",
                self.id, self.outcome
            ))
        })?;
        let sha256 = <[u8; 32]>::try_from(self.sha256.as_slice()).map_err(|_| {
            PortError::unknown(format!("inbound file {} has a malformed digest", self.id))
        })?;
        Ok(InboundFile {
            id: InboundFileId::from_uuid(self.id),
            method,
            name: self.name,
            sha256,
            outcome,
            detail: self.detail,
            original: self.original_id.map(InboundFileId::from_uuid),
            bytes: self.bytes,
            received_at: self.received_at,
        })
    }
}

/// The line that decided one query of `deciding_reports`.
#[derive(QueryableByName)]
struct DecidingRow {
    /// The query's number, from 1.
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    query: i64,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Text)]
    kind: String,
}

/// The line that decided each (payout, file) asked. (`inbound/deciding_reports.sql`)
const DECIDING_REPORTS: &str = include_str!("inbound/deciding_reports.sql");

/// A document's report lines in one statement. (`inbound/insert_reports.sql`)
const INSERT_REPORTS: &str = include_str!("inbound/insert_reports.sql");

/// The insert of a document's lines, its file and method bound.
struct LinesInsert<'a> {
    query: BoxedSql<'a>,
}

fn insert_reports(file: Uuid, method: &str) -> LinesInsert<'_> {
    use diesel::sql_types::{Text, Uuid as SqlUuid};
    LinesInsert {
        query: diesel::sql_query(INSERT_REPORTS)
            .into_boxed()
            .bind::<SqlUuid, _>(file)
            .bind::<Text, _>(method),
    }
}

impl<'a> LinesInsert<'a> {
    /// Binds `reports` as the fourteen arrays `inbound/insert_reports.sql` unnests.
    fn bind_lines(self, reports: &[RecordedReport]) -> crate::cached::Cached<BoxedSql<'a>> {
        use diesel::sql_types::{
            Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
        };
        let ids: Vec<Uuid> = reports.iter().map(|r| r.id.as_uuid()).collect();
        let positions: Vec<i32> = reports
            .iter()
            .map(|r| i32::try_from(r.position).unwrap_or(i32::MAX))
            .collect();
        let kinds: Vec<&'static str> = reports.iter().map(|r| r.kind.as_str()).collect();
        let references: Vec<String> = reports.iter().map(|r| r.reference.clone()).collect();
        let resolutions: Vec<&'static str> =
            reports.iter().map(|r| r.resolution.as_str()).collect();
        let codes: Vec<Option<String>> = reports.iter().map(|r| r.code.clone()).collect();
        let reasons: Vec<Option<String>> = reports.iter().map(|r| r.reason.clone()).collect();
        let invalid: Vec<bool> = reports.iter().map(|r| r.account_invalid).collect();
        let amounts: Vec<Option<i64>> = reports.iter().map(|r| r.amount).collect();
        let subaccounts: Vec<Option<Uuid>> = reports
            .iter()
            .map(|r| r.subaccount_id.map(|s| s.as_uuid()))
            .collect();
        let payouts: Vec<Option<Uuid>> = reports
            .iter()
            .map(|r| r.payout_id.map(|p| p.as_uuid()))
            .collect();
        let files: Vec<Option<Uuid>> = reports
            .iter()
            .map(|r| r.rail_file_id.map(|f| f.as_uuid()))
            .collect();
        let contradicts: Vec<Option<Uuid>> = reports
            .iter()
            .map(|r| r.contradicts.map(|c| c.as_uuid()))
            .collect();
        let created: Vec<DateTime<Utc>> = reports.iter().map(|r| r.created_at).collect();
        self.query
            .bind::<Array<SqlUuid>, _>(ids)
            .bind::<Array<Integer>, _>(positions)
            .bind::<Array<Text>, _>(kinds)
            .bind::<Array<Text>, _>(references)
            .bind::<Array<Text>, _>(resolutions)
            .bind::<Array<Nullable<Text>>, _>(codes)
            .bind::<Array<Nullable<Text>>, _>(reasons)
            .bind::<Array<Bool>, _>(invalid)
            .bind::<Array<Nullable<BigInt>>, _>(amounts)
            .bind::<Array<Nullable<SqlUuid>>, _>(subaccounts)
            .bind::<Array<Nullable<SqlUuid>>, _>(payouts)
            .bind::<Array<Nullable<SqlUuid>>, _>(files)
            .bind::<Array<Nullable<SqlUuid>>, _>(contradicts)
            .bind::<Array<Timestamptz>, _>(created)
            .cached()
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

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(method = method.route(), references = references.len())
    )]
    async fn sent_items_of(
        &self,
        method: PayoutMethod,
        references: &[String],
    ) -> Result<Vec<(String, SentItem)>, PortError> {
        if references.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        // One statement for a whole report (`reference = ANY($1)`). Joined on the subaccount
        // too (an item's file is its subaccount's): Citus joins distributed tables only on
        // their distribution column.
        let rows: Vec<(String, Uuid, DateTime<Utc>, String, Uuid, Uuid)> = rail_file_items::table
            .inner_join(
                rail_files::table.on(rail_file_items::file_id
                    .eq(rail_files::id)
                    .and(rail_file_items::subaccount_id.eq(rail_files::subaccount_id))),
            )
            .filter(rail_file_items::reference.eq_any(references))
            .filter(rail_files::method.eq(method.route()))
            .order((
                rail_file_items::reference,
                rail_files::created_at.desc(),
                rail_files::id.desc(),
            ))
            .select((
                rail_file_items::reference,
                rail_files::id,
                rail_files::created_at,
                rail_files::state,
                rail_file_items::subaccount_id,
                rail_file_items::payout_id,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|(reference, file, created, state, subaccount, payout)| {
                let item = SentItem {
                    file_id: RailFileId::from_uuid(file),
                    file_created_at: created,
                    file_state: RailFileState::parse(&state).ok_or_else(|| {
                        PortError::unknown(format!("rail file {file} has state {state}"))
                    })?,
                    subaccount_id: SubaccountId::from_uuid(subaccount),
                    payout_id: PayoutId::from_uuid(payout),
                };
                Ok((reference, item))
            })
            .collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(method = method.route()))]
    async fn read_under(
        &self,
        method: PayoutMethod,
        name: &str,
    ) -> Result<Option<InboundFileId>, PortError> {
        let mut conn = self.conn().await?;
        let first: Option<Uuid> = inbound_files::table
            .filter(inbound_files::method.eq(method.route()))
            .filter(inbound_files::name.eq(name))
            .filter(inbound_files::outcome.eq(InboundOutcome::Read.as_str()))
            .order((inbound_files::received_at, inbound_files::id))
            .select(inbound_files::id)
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        Ok(first.map(InboundFileId::from_uuid))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(file = %file))]
    async fn deciding_report(
        &self,
        payout: Option<PayoutId>,
        file: RailFileId,
    ) -> Result<Option<DecidingReport>, PortError> {
        let mut conn = self.conn().await?;
        let applied = bank_reports::table
            .filter(bank_reports::resolution.eq(Resolution::Applied.as_str()))
            .order((
                bank_reports::created_at.desc(),
                bank_reports::position.desc(),
            ))
            .select((
                bank_reports::id,
                bank_reports::kind,
                bank_reports::created_at,
            ));
        // The whole file's newest line, and the payout's own (each by its partial index).
        let whole_file = [
            ReportKind::FileSettled,
            ReportKind::FileRejected,
            ReportKind::FileAccepted,
        ];
        let mut file_kinds: Vec<&str> = whole_file.iter().map(|k| k.as_str()).collect();
        if payout.is_some() {
            // A payout is decided by what settled or rejected its file, not by an acceptance.
            file_kinds.retain(|k| *k != ReportKind::FileAccepted.as_str());
        }
        let mut newest: Vec<(Uuid, String, DateTime<Utc>)> = applied
            .filter(bank_reports::payout_id.is_null())
            .filter(bank_reports::rail_file_id.eq(file.as_uuid()))
            .filter(bank_reports::kind.eq_any(file_kinds))
            .limit(1)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        if let Some(payout) = payout {
            newest.extend(
                applied
                    .filter(bank_reports::payout_id.eq(payout.as_uuid()))
                    .limit(1)
                    .load::<(Uuid, String, DateTime<Utc>)>(&mut conn)
                    .await
                    .map_err(from_diesel)?,
            );
        }
        newest
            .into_iter()
            .max_by_key(|(_, _, created)| *created)
            .map(|(id, kind, _)| {
                Ok(DecidingReport {
                    id: BankReportId::from_uuid(id),
                    kind: ReportKind::parse(&kind).ok_or_else(|| {
                        PortError::unknown(format!("bank report {id} has kind {kind}"))
                    })?,
                })
            })
            .transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(queries = queries.len()))]
    async fn deciding_reports(
        &self,
        queries: &[(Option<PayoutId>, RailFileId)],
    ) -> Result<Vec<Option<DecidingReport>>, PortError> {
        use diesel::sql_types::{Array, Nullable, Uuid as SqlUuid};
        let mut answers = vec![None; queries.len()];
        if queries.is_empty() {
            return Ok(answers);
        }
        let payouts: Vec<Option<Uuid>> = queries
            .iter()
            .map(|(p, _)| p.map(|p| p.as_uuid()))
            .collect();
        let files: Vec<Uuid> = queries.iter().map(|(_, f)| f.as_uuid()).collect();
        let mut conn = self.conn().await?;
        let rows: Vec<DecidingRow> = diesel::sql_query(DECIDING_REPORTS)
            .bind::<Array<Nullable<SqlUuid>>, _>(payouts)
            .bind::<Array<SqlUuid>, _>(files)
            .cached()
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        for row in rows {
            let kind = ReportKind::parse(&row.kind).ok_or_else(|| {
                PortError::unknown(format!("bank report {} has kind {}", row.id, row.kind))
            })?;
            let answer = usize::try_from(row.query)
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|n| answers.get_mut(n))
                .ok_or_else(|| {
                    PortError::unknown(format!("deciding line for query {} not asked", row.query))
                })?;
            *answer = Some(DecidingReport {
                id: BankReportId::from_uuid(row.id),
                kind,
            });
        }
        Ok(answers)
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
        let recorded = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let inserted = diesel::insert_into(inbound_files::table)
                    .values((
                        inbound_files::id.eq(file_id),
                        inbound_files::method.eq(&method),
                        inbound_files::name.eq(&file.name),
                        inbound_files::sha256.eq(file.sha256.as_slice()),
                        inbound_files::outcome.eq(file.outcome.as_str()),
                        inbound_files::detail.eq(&file.detail),
                        inbound_files::original_id.eq(file.original.map(|o| o.as_uuid())),
                        inbound_files::bytes.eq(&file.bytes),
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
                insert_reports(file_id, &method)
                    .bind_lines(reports)
                    .execute(conn)
                    .await?;
                Ok(true)
            })
            .await
            .map_err(from_diesel);
        // Whether or not it committed: the bytes were sent.
        super::release(conn, file.bytes.as_ref().map_or(0, Vec::len));
        recorded
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn list_reports(
        &self,
        resolution: Option<Resolution>,
        kind: Option<ReportKind>,
        before: Option<BankReportId>,
        limit: u32,
    ) -> Result<Vec<ReportListing>, PortError> {
        let mut conn = self.conn().await?;
        // The position's place in the order (when the page is not the first), read first.
        let position: Option<(DateTime<Utc>, Uuid, i32)> = match before {
            None => None,
            Some(id) => {
                let found = bank_reports::table
                    .find(id.as_uuid())
                    .select((
                        bank_reports::created_at,
                        bank_reports::inbound_file_id,
                        bank_reports::position,
                    ))
                    .first(&mut conn)
                    .await
                    .optional()
                    .map_err(from_diesel)?;
                // An unknown position pages from nothing.
                let Some(found) = found else {
                    return Ok(Vec::new());
                };
                Some(found)
            }
        };
        let mut query = listings()
            .order((
                bank_reports::created_at.desc(),
                bank_reports::inbound_file_id.desc(),
                bank_reports::position,
            ))
            .limit(i64::from(limit));
        if let Some(resolution) = resolution {
            query = query.filter(bank_reports::resolution.eq_any(resolution.stored_names()));
        }
        if let Some(kind) = kind {
            query = query.filter(bank_reports::kind.eq(kind.as_str()));
        }
        if let Some((at, document, line)) = position {
            // After the position in (created_at DESC, inbound_file_id DESC, position ASC).
            query = query.filter(
                bank_reports::created_at
                    .lt(at)
                    .or(bank_reports::created_at.eq(at).and(
                        bank_reports::inbound_file_id.lt(document).or(
                            bank_reports::inbound_file_id
                                .eq(document)
                                .and(bank_reports::position.gt(line)),
                        ),
                    )),
            );
        }
        let rows: Vec<ReportRow> = query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter().map(ReportRow::into_listing).collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(file = %file))]
    async fn reports_of_file(&self, file: RailFileId) -> Result<Vec<ReportListing>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<ReportRow> = listings()
            .filter(bank_reports::rail_file_id.eq(file.as_uuid()))
            .order((
                bank_reports::created_at.asc(),
                bank_reports::inbound_file_id.asc(),
                bank_reports::position.asc(),
            ))
            .limit(FILE_LINES)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter().map(ReportRow::into_listing).collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn list_inbound(
        &self,
        outcome: Option<InboundOutcome>,
        limit: u32,
    ) -> Result<Vec<InboundFile>, PortError> {
        let mut conn = self.conn().await?;
        let mut query = inbound_files::table
            .select((
                inbound_files::id,
                inbound_files::method,
                inbound_files::name,
                inbound_files::sha256,
                inbound_files::outcome,
                inbound_files::detail,
                inbound_files::original_id,
                None::<Vec<u8>>.into_sql::<diesel::sql_types::Nullable<diesel::sql_types::Bytea>>(),
                inbound_files::received_at,
            ))
            .order((inbound_files::received_at.desc(), inbound_files::id.desc()))
            .limit(i64::from(limit))
            .into_boxed();
        if let Some(outcome) = outcome {
            query = query.filter(inbound_files::outcome.eq(outcome.as_str()));
        }
        let rows: Vec<InboundRow> = query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter().map(InboundRow::into_file).collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(file = %id))]
    async fn get_inbound(
        &self,
        id: InboundFileId,
    ) -> Result<Option<(InboundFile, Vec<RecordedReport>)>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<InboundRow> = inbound_files::table
            .filter(inbound_files::id.eq(id.as_uuid()))
            .select((
                inbound_files::id,
                inbound_files::method,
                inbound_files::name,
                inbound_files::sha256,
                inbound_files::outcome,
                inbound_files::detail,
                inbound_files::original_id,
                inbound_files::bytes,
                inbound_files::received_at,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let lines: Vec<LineRow> = bank_reports::table
            .filter(bank_reports::inbound_file_id.eq(id.as_uuid()))
            .order(bank_reports::position)
            .select(LINE_COLUMNS)
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        super::release(conn, row.bytes.as_ref().map_or(0, Vec::len));
        Ok(Some((
            row.into_file()?,
            lines
                .into_iter()
                .map(LineRow::into_report)
                .collect::<Result<_, _>>()?,
        )))
    }
}
